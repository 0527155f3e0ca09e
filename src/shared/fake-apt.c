/* SPDX-License-Identifier: MIT */
/* The fake operations table's apt and dpkg (spec item apt=DIR): enough of
 * them for a first boot through the distro and packages methods to leave
 * what the real ones leave, read back by the next query.
 *
 * DIR/Packages lists the archive, stanzas of "Package:" and "Version:" as
 * an apt Packages file has them; DIR/<package>/ is the tree a package's
 * install leaves (files, links, modes; for a DKMS package, the module DKMS
 * would build). The database is the root's var/lib/dpkg/status, in dpkg's
 * own format (Package, Status, Version):
 *   dpkg-query -W -f '${Package}\t${Version}\t${Status}\n' NAME...
 *       a line per installed package; exit 1 when one is not installed
 *   apt-cache madison NAME    the archive's versions, in apt's columns
 *   apt-get update            exit 0
 *   apt-get install [-t SUITE] ... NAME[=VERSION]...
 *       each from the archive (exit 100, "Unable to locate" or "Version ...
 *       was not found", and nothing installed when one is missing), its
 *       tree copied into the root, its stanza "install ok installed"
 *   apt-mark hold|unhold NAME...   "hold ok installed" / "install ok installed"
 * and what a dpkg killed half-way leaves, as dpkg has it: a package whose
 * Status is half-installed, unpacked, half-configured, triggers-awaited or
 * triggers-pending, and var/lib/dpkg/updates/ holding records (digits):
 *   dpkg --audit              those packages, in dpkg's words; exit 0
 *   dpkg [--force-...] --configure -a   each of them "ok installed" (but a
 *                             half-installed one, which only a reinstall
 *                             mends: dpkg's "very bad inconsistent state",
 *                             exit 1, as the real one), the records gone
 *   apt-get install ...       refused while records remain (exit 100, apt's
 *                             "dpkg was interrupted ..."), as apt does
 *   apt-get -f install        exit 0
 *   apt-get install --reinstall NAME...   as apt-get install */
#include "fake-apt.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fake-kernel.h"
#include "fileio.h"
#include "macro.h"
#include "util.h"

#define STATUS "var/lib/dpkg/status"

struct pkg {
	char name[128], version[128], status[64];
};

struct db {
	struct pkg *p;
	size_t n;
};

static void db_done(struct db *d)
{
	free(d->p);
	d->p = NULL;
	d->n = 0;
}

static struct pkg *db_find(struct db *d, const char *name)
{
	for (size_t i = 0; i < d->n; i++)
		if (streq(d->p[i].name, name))
			return &d->p[i];
	return NULL;
}

static struct pkg *db_add(struct db *d, const char *name)
{
	struct pkg *n = realloc(d->p, (d->n + 1) * sizeof(*n));
	if (!n)
		return NULL;
	d->p = n;
	memset(&n[d->n], 0, sizeof(n[d->n]));
	gb_strscpy(n[d->n].name, sizeof(n[d->n].name), name);
	return &n[d->n++];
}

/* Stanzas of "Key: value" lines; only Package, Version and Status kept. */
static int db_read(const char *path, struct db *d)
{
	_cleanup_free_ char *text = NULL;
	struct pkg *cur = NULL;
	size_t len;
	int r = gb_read_file(path, 64u << 20, &text, &len);

	memset(d, 0, sizeof(*d));
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	for (char *line = text, *nl; line && *line; line = nl) {
		const char *v;
		nl = strchr(line, '\n');
		if (nl)
			*nl++ = '\0';
		if (!*line) {
			cur = NULL;
		} else if ((v = gb_startswith(line, "Package: "))) {
			cur = db_add(d, v);
			if (!cur)
				return -ENOMEM;
		} else if (cur && (v = gb_startswith(line, "Version: "))) {
			gb_strscpy(cur->version, sizeof(cur->version), v);
		} else if (cur && (v = gb_startswith(line, "Status: "))) {
			gb_strscpy(cur->status, sizeof(cur->status), v);
		}
	}
	return 0;
}

/* The root's dpkg database. */
static int db_read_root(const char *root, struct db *d)
{
	char path[1200];
	snprintf(path, sizeof(path), "%s/" STATUS, root);
	return db_read(path, d);
}

static int db_write(const char *root, const struct db *d)
{
	char path[1200];
	size_t cap = d->n * 400 + 1, o = 0;
	_cleanup_free_ char *text = malloc(cap);
	if (!text)
		return -ENOMEM;
	text[0] = '\0';
	for (size_t i = 0; i < d->n; i++)
		o += (size_t)snprintf(text + o, cap - o, "Package: %s\nStatus: %s\nVersion: %s\n\n", d->p[i].name,
		                      d->p[i].status, d->p[i].version);
	snprintf(path, sizeof(path), "%s/var/lib/dpkg", root);
	(void)gb_mkdir_p(path, 0755);
	snprintf(path, sizeof(path), "%s/" STATUS, root);
	return gb_write_file_atomic(path, text, o, 0644);
}

static void out(struct gb_cmd_result *ret, const char *fmt, const char *a, const char *b, const char *c)
{
	size_t room = sizeof(ret->output) - ret->output_len;
	int n = snprintf(ret->output + ret->output_len, room, fmt, a, b, c);
	if (n > 0)
		ret->output_len += (size_t)n < room ? (size_t)n : room - 1;
}

static int dpkg_query(const char *root, const char *const *argv, struct gb_cmd_result *ret)
{
	struct db d;
	bool missing = false;
	int r;

	r = db_read_root(root, &d);
	if (r < 0)
		return r;
	for (size_t i = 4; argv[i]; i++) {
		const struct pkg *p = db_find(&d, argv[i]);
		if (p && !strstr(p->status, " not-installed"))
			out(ret, "%s\t%s\t%s\n", p->name, p->version, p->status);
		else {
			out(ret, "dpkg-query: no packages found matching %s%s%s\n", argv[i], "", "");
			missing = true;
		}
	}
	db_done(&d);
	ret->status = missing ? 1 << 8 : 0;
	return 0;
}

static bool half_done(const struct pkg *p)
{
	static const char *const states[] = { " half-installed", " unpacked", " half-configured", " triggers-awaited",
		                              " triggers-pending" };
	for (size_t i = 0; i < ARRAY_SIZE(states); i++)
		if (strstr(p->status, states[i]))
			return true;
	return false;
}

/* dpkg's journal of an interrupted run: var/lib/dpkg/updates/NNNN files. */
static int updates(const char *root, bool remove)
{
	char path[1200];
	struct dirent *e;
	int n = 0;
	DIR *d;

	snprintf(path, sizeof(path), "%s/var/lib/dpkg/updates", root);
	if (!(d = opendir(path)))
		return 0;
	while ((e = readdir(d)))
		if (e->d_name[0] && strspn(e->d_name, "0123456789") == strlen(e->d_name)) {
			n++;
			if (remove)
				(void)unlinkat(dirfd(d), e->d_name, 0);
		}
	closedir(d);
	return n;
}

/* One section of dpkg --audit: its header, then the packages whose state
 * reinstall says (a half-installed one) or not (the others half done). */
static void audit_section(const struct db *d, bool reinstall, const char *header, struct gb_cmd_result *ret)
{
	bool said = false;
	for (size_t i = 0; i < d->n; i++) {
		if (!half_done(&d->p[i]) || !!strstr(d->p[i].status, " half-installed") != reinstall)
			continue;
		if (!said)
			out(ret, "%s%s%s\n", header, "", "");
		said = true;
		out(ret, " %-18s %s%s\n", d->p[i].name, "NVIDIA", "");
	}
}

static int dpkg_audit(const char *root, struct gb_cmd_result *ret)
{
	struct db d;
	int r = db_read_root(root, &d);

	if (r >= 0) {
		audit_section(&d, false,
		              "The following packages are only half configured, probably due to problems\nconfiguring "
		              "them the first time.  The configuration should be retried using\ndpkg --configure "
		              "<package> or the configure menu option in dselect:",
		              ret);
		audit_section(
		    &d, true,
		    "The following packages are in a mess due to serious problems during\ninstallation.  They "
		    "must be reinstalled for them (and any dependencies) to\nwork properly:",
		    ret);
	}
	db_done(&d);
	return r;
}

static int dpkg_configure_all(const char *root, struct gb_cmd_result *ret)
{
	struct db d;
	int r;

	unsigned refused = 0;

	r = db_read_root(root, &d);
	for (size_t i = 0; r >= 0 && i < d.n; i++)
		if (half_done(&d.p[i]) && strstr(d.p[i].status, " half-installed")) {
			/* only a reinstall mends it: dpkg says so and fails (exit 1) */
			out(ret,
			    "dpkg: error processing package %s (--configure):\n package is in a very bad inconsistent "
			    "state; you should\n reinstall it before attempting configuration\n%s%s",
			    d.p[i].name, "", "");
			refused++;
		} else if (half_done(&d.p[i])) {
			gb_strscpy(d.p[i].status, sizeof(d.p[i].status),
			           gb_startswith(d.p[i].status, "hold ") ? "hold ok installed"
			                                                 : "install ok installed");
			out(ret, "Setting up %s (%s) ...%s\n", d.p[i].name, d.p[i].version, "");
		}
	if (refused) {
		out(ret, "Errors were encountered while processing:\n%s%s%s", "", "", "");
		ret->status = 1 << 8;
	}
	if (r >= 0)
		r = db_write(root, &d);
	if (r >= 0)
		(void)updates(root, true);
	db_done(&d);
	return r;
}

static int madison(const char *dir, const char *name, struct gb_cmd_result *ret)
{
	char path[1200];
	struct db a;
	int r;

	snprintf(path, sizeof(path), "%s/Packages", dir);
	r = db_read(path, &a);
	if (r < 0)
		return r;
	for (size_t i = 0; i < a.n; i++)
		if (streq(a.p[i].name, name))
			out(ret, "%10s | %s | http://deb.debian.org/debian %s Packages\n", a.p[i].name, a.p[i].version,
			    "bookworm/non-free amd64");
	db_done(&a);
	return 0;
}

static int apt_install(const char *root, const char *dir, const char *const *argv, struct gb_cmd_result *ret)
{
	char path[1200];
	struct db a, d;
	int r;

	if (updates(root, false) > 0) {
		out(ret,
		    "E: dpkg was interrupted, you must manually run 'dpkg --configure -a' to correct the problem. "
		    "%s%s%s\n",
		    "", "", "");
		ret->status = 100 << 8;
		return 0;
	}
	snprintf(path, sizeof(path), "%s/Packages", dir);
	r = db_read(path, &a);
	if (r >= 0)
		r = db_read_root(root, &d);
	else
		memset(&d, 0, sizeof(d));
	/* every one resolvable first, as apt does: else nothing is installed */
	for (size_t i = 2; r >= 0 && argv[i]; i++) {
		char name[128], *eq;
		const struct pkg *p;
		if (argv[i][0] == '-') {
			i += (streq(argv[i], "-o") || streq(argv[i], "-t")) && argv[i + 1];
			continue;
		}
		gb_strscpy(name, sizeof(name), argv[i]);
		eq = strchr(name, '=');
		if (eq)
			*eq++ = '\0';
		p = db_find(&a, name);
		if (!p || (eq && !streq(p->version, eq))) {
			out(ret,
			    p ? "E: Version '%s' for '%s' was not found%s\n" : "E: Unable to locate package %s%s%s\n",
			    p ? eq : name, p ? name : "", "");
			ret->status = 100 << 8;
			goto done;
		}
	}
	for (size_t i = 2; r >= 0 && argv[i]; i++) {
		char name[128], *eq;
		struct pkg *p;
		const struct pkg *ap;
		struct stat st;
		if (argv[i][0] == '-') {
			i += (streq(argv[i], "-o") || streq(argv[i], "-t")) && argv[i + 1];
			continue;
		}
		gb_strscpy(name, sizeof(name), argv[i]);
		if ((eq = strchr(name, '=')))
			*eq = '\0';
		ap = db_find(&a, name);
		snprintf(path, sizeof(path), "%s/%s", dir, name);
		if (stat(path, &st) == 0 && S_ISDIR(st.st_mode) && (r = gb_fake_copy_tree(path, root)) < 0)
			break;
		p = db_find(&d, name);
		if (!p && !(p = db_add(&d, name))) {
			r = -ENOMEM;
			break;
		}
		gb_strscpy(p->version, sizeof(p->version), ap->version);
		gb_strscpy(p->status, sizeof(p->status),
		           gb_startswith(p->status, "hold ") ? "hold ok installed" : "install ok installed");
		out(ret, "Setting up %s (%s) ...%s\n", name, ap->version, "");
	}
	if (r >= 0)
		r = db_write(root, &d);
done:
	db_done(&a);
	db_done(&d);
	return r;
}

static int apt_mark(const char *root, const char *const *argv, struct gb_cmd_result *ret)
{
	struct db d;
	bool hold = streq(argv[1], "hold");
	int r;

	r = db_read_root(root, &d);
	for (size_t i = 2; r >= 0 && argv[i]; i++) {
		struct pkg *p = db_find(&d, argv[i]);
		if (!p) {
			out(ret, "E: Unable to locate package %s%s%s\n", argv[i], "", "");
			ret->status = 100 << 8;
			db_done(&d);
			return 0;
		}
		gb_strscpy(p->status, sizeof(p->status), hold ? "hold ok installed" : "install ok installed");
		out(ret, hold ? "%s set on hold.%s%s\n" : "Canceled hold on %s.%s%s\n", argv[i], "", "");
	}
	if (r >= 0)
		r = db_write(root, &d);
	db_done(&d);
	return r;
}

static bool has_arg(const char *const *argv, const char *a)
{
	for (size_t i = 1; argv[i]; i++)
		if (streq(argv[i], a))
			return true;
	return false;
}

int gb_fake_apt_run(const char *root, const char *dir, const char *const *argv, struct gb_cmd_result *ret)
{
	if (!root[0] || !dir[0] || !argv[0])
		return 0;
	if (streq(argv[0], "dpkg-query") && argv[1] && streq(argv[1], "-W") && argv[2] && argv[3])
		return dpkg_query(root, argv, ret) < 0 ? -EIO : 1;
	if (streq(argv[0], "apt-cache") && argv[1] && streq(argv[1], "madison") && argv[2])
		return madison(dir, argv[2], ret) < 0 ? -EIO : 1;
	if (streq(argv[0], "apt-get") && argv[1] && streq(argv[1], "update"))
		return 1;
	if (streq(argv[0], "dpkg") && argv[1] && streq(argv[1], "--audit"))
		return dpkg_audit(root, ret) < 0 ? -EIO : 1;
	if (streq(argv[0], "dpkg") && has_arg(argv, "--configure") && has_arg(argv, "-a"))
		return dpkg_configure_all(root, ret) < 0 ? -EIO : 1;
	if (streq(argv[0], "apt-get") && argv[1] && streq(argv[1], "-f") && argv[2] && streq(argv[2], "install"))
		return 1;
	if (streq(argv[0], "apt-get") && argv[1] && streq(argv[1], "install"))
		return apt_install(root, dir, argv, ret) < 0 ? -EIO : 1;
	if (streq(argv[0], "apt-mark") && argv[1] && (streq(argv[1], "hold") || streq(argv[1], "unhold")))
		return apt_mark(root, argv, ret) < 0 ? -EIO : 1;
	return 0;
}
