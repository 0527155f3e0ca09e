/* SPDX-License-Identifier: MIT */
/* The fake operations table's rpm, dnf and zypper (spec item rpm=DIR):
 * what src/install/install-rpm.c runs, answered in the tools' own formats
 * and words, so a first boot through NVIDIA's dnf repository (RHEL) or
 * zypper repository (SLES) leaves what the real tools leave, read back by
 * the next query.
 *
 * DIR/Packages lists the repositories' packages: stanzas, an empty line
 * between them, of
 *   Name: nvidia-open
 *   Version: 3:580.173.02-1.el9     EPOCH:VERSION-RELEASE (no epoch: 0)
 *   Arch: noarch
 *   Repo: gpuboot-cuda-rhel9-x86_64 the repository's id, as dnf lists it
 *   Module: nvidia-driver:580-open  the module streams it belongs to: dnf
 *                                   sees it only while one of them is enabled
 *   Requires: nvidia-driver kmod-nvidia-open-dkms   names installed with it
 * DIR/<name>/ is the tree the package's install leaves in the root (for a
 * DKMS package, the module DKMS would build); it is the package's file
 * list too (rpm -qf, rpm -V).
 *
 * rpm's own database is binary (sqlite on RHEL 9, ndb on SLES 15), so the
 * fake's is kept beside the archive, never in the root: DIR/rpmdb, the
 * database of the one root this archive serves, a line per installed
 * package, "NAME\tEPOCH:VERSION-RELEASE\tARCH\tFROM" (FROM: the repository
 * it came from, as dnf's history keeps it; @System for what the image came
 * with). An imported key is a package gpg-pubkey-KEYID8-CREATED of arch
 * (none), as rpm keeps it.
 *
 *   rpm -q [--qf QF] NAME...      each installed NAME; "package NAME is not
 *                                 installed" and the exit status the count missing
 *   rpm -qa [--qf QF] [GLOB...]   every package a glob matches (the globs ORed)
 *   rpm -qf [--qf QF] FILE...     the owner, or "file FILE is not owned by any package"
 *   rpm --import FILE...          an armored key under the root
 *   rpm -V [--no...] NAME...      "missing     /path" for each file of the
 *                                 package's tree not in the root: exit 1
 *   QF: %{NAME} %{EPOCHNUM} %{EPOCH} %{VERSION} %{RELEASE} %{ARCH}, \t \n
 *   dnf -y module enable M:S      etc/dnf/modules.d/M.module as dnf writes it;
 *                                 another stream enabled or none such: refused
 *   dnf -y makecache [--repo=ID]
 *   dnf -q list [--showduplicates] SPEC   Installed and Available Packages
 *   dnf -y install SPEC...        the newest match dnf sees of each (NAME,
 *                                 NAME-V, NAME-V-R, NAME-E:V-R, [.ARCH], globs)
 *                                 and what it requires; one missing: "No match
 *                                 for argument", exit 1, nothing installed
 *   dnf -y reinstall NAME...      the trees again, at the installed version
 *   dnf -y remove --duplicates    the older of a name at two versions
 *   dnf versionlock add|delete SPEC...   etc/dnf/plugins/versionlock.list, the
 *                                 plugin's format and words (without the plugin
 *                                 installed: no such command)
 *   zypper --non-interactive refresh
 *   zypper ... install [--dry-run] [--force] [--auto-agree-with-licenses]
 *              NAME[=VERSION]...  "No provider of 'NAME = VERSION' found." exit 104
 *   zypper ... addlock|removelock NAME...   etc/zypp/locks, zypp's blocks
 * Not modelled: locks refusing an install (dnf's excludes, zypper's
 * problems), Provides, kernels installed side by side, scriptlets. */
#include "fake-rpm.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "fake-kernel.h"
#include "fileio.h"
#include "macro.h"
#include "util.h"

#define TEXT_MAX (16u << 20)
#define LOCKLIST "etc/dnf/plugins/versionlock.list"
#define ZYPP_LOCKS "etc/zypp/locks"
#define PLUGIN "python3-dnf-plugin-versionlock"
#define MAX_ARGS 64

struct rpkg {
	char name[128], evr[128], arch[32], repo[96], module[192], requires[512];
};

struct pset {
	struct rpkg *p;
	size_t n;
};

struct evr {
	char e[16], v[128], r[128];
};

static void pset_done(struct pset *s)
{
	free(s->p);
	*s = (struct pset){ 0 };
}

static struct rpkg *pset_add(struct pset *s, const struct rpkg *from)
{
	struct rpkg *n = realloc(s->p, (s->n + 1) * sizeof(*n));
	if (!n)
		return NULL;
	s->p = n;
	n[s->n] = from ? *from : (struct rpkg){ 0 };
	return &n[s->n++];
}

static const struct rpkg *pset_name(const struct pset *s, const char *name)
{
	for (size_t i = 0; i < s->n; i++)
		if (streq(s->p[i].name, name))
			return &s->p[i];
	return NULL;
}

_printf_(2, 3) static void out(struct gb_cmd_result *ret, const char *fmt, ...)
{
	size_t room = sizeof(ret->output) - ret->output_len;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(ret->output + ret->output_len, room, fmt, ap);
	va_end(ap);
	if (n > 0)
		ret->output_len += (size_t)n < room ? (size_t)n : room - 1;
}

static void fail(struct gb_cmd_result *ret, int status)
{
	ret->status = (status & 0xff) << 8;
}

/* The words of argv that are not options. */
static size_t words(const char *const *argv, const char **w)
{
	size_t n = 0;
	for (size_t i = 0; argv[i]; i++)
		if (argv[i][0] != '-' && n < MAX_ARGS)
			w[n++] = argv[i];
	return n;
}

static bool has_arg(const char *const *argv, const char *a)
{
	for (size_t i = 0; argv[i]; i++)
		if (streq(argv[i], a))
			return true;
	return false;
}

/* ---- versions ---- */

static void evr_norm(const char *in, char *outb, size_t n)
{
	if (strchr(in, ':'))
		gb_strscpy(outb, n, in);
	else
		snprintf(outb, n, "0:%s", in);
}

static void evr_split(const char *evr, struct evr *x)
{
	const char *c = strchr(evr, ':'), *d;
	snprintf(x->e, sizeof(x->e), "%.*s", c ? (int)(c - evr) : 1, c ? evr : "0");
	gb_strscpy(x->v, sizeof(x->v), c ? c + 1 : evr);
	x->r[0] = '\0';
	if ((d = strrchr(x->v, '-'))) {
		gb_strscpy(x->r, sizeof(x->r), d + 1);
		x->v[d - x->v] = '\0';
	}
}

/* One segment of rpmvercmp: digits against digits (numerically), letters
 * against letters; a number is newer than letters. */
static int segment(const char **pa, const char **pb)
{
	const char *a = *pa, *b = *pb, *sa = a, *sb = b;
	bool num = isdigit((unsigned char)*a);
	size_t la, lb;
	int c;

	while (*a && (num ? isdigit((unsigned char)*a) : isalpha((unsigned char)*a)))
		a++;
	while (*b && (num ? isdigit((unsigned char)*b) : isalpha((unsigned char)*b)))
		b++;
	*pa = a, *pb = b;
	if (b == sb)
		return num ? 1 : -1;
	if (num) {
		while (sa < a && *sa == '0')
			sa++;
		while (sb < b && *sb == '0')
			sb++;
	}
	la = (size_t)(a - sa), lb = (size_t)(b - sb);
	if (num && la != lb)
		return la > lb ? 1 : -1;
	c = strncmp(sa, sb, la < lb ? la : lb);
	if (c)
		return c > 0 ? 1 : -1;
	return la == lb ? 0 : la > lb ? 1 : -1;
}

/* rpm's rpmvercmp: '~' sorts before anything, '^' after the end. */
static int vercmp(const char *a, const char *b)
{
	while (*a || *b) {
		int c;
		while (*a && !isalnum((unsigned char)*a) && *a != '~' && *a != '^')
			a++;
		while (*b && !isalnum((unsigned char)*b) && *b != '~' && *b != '^')
			b++;
		if (*a == '~' || *b == '~') {
			if (*a != '~' || *b != '~')
				return *a == '~' ? -1 : 1;
			a++, b++;
			continue;
		}
		if (*a == '^' || *b == '^') {
			if (!*a || !*b)
				return !*a ? -1 : 1;
			if (*a != '^' || *b != '^')
				return *a == '^' ? -1 : 1;
			a++, b++;
			continue;
		}
		if (!*a || !*b)
			break;
		c = segment(&a, &b);
		if (c)
			return c;
	}
	return *a ? 1 : *b ? -1 : 0;
}

static int evr_cmp(const char *a, const char *b)
{
	struct evr x = { 0 }, y = { 0 };
	uint32_t ea = 0, eb = 0;
	int c;

	evr_split(a, &x);
	evr_split(b, &y);
	(void)gb_safe_atou32(x.e, 10, &ea);
	(void)gb_safe_atou32(y.e, 10, &eb);
	if (ea != eb)
		return ea < eb ? -1 : 1;
	c = vercmp(x.v, y.v);
	return c ? c : vercmp(x.r, y.r);
}

/* dnf and zypper show epoch 0 as none. */
static const char *evr_shown(const struct rpkg *p)
{
	const char *v = gb_startswith(p->evr, "0:");
	return v ? v : p->evr;
}

static const char *nevra(const struct rpkg *p, char *buf, size_t n)
{
	snprintf(buf, n, "%s-%s.%s", p->name, evr_shown(p), p->arch);
	return buf;
}

/* ---- the archive and the database ---- */

static int archive_read(const char *dir, struct pset *s)
{
	_cleanup_free_ char *text = NULL;
	char path[1200];
	struct rpkg *cur = NULL;
	size_t len;
	int r;

	*s = (struct pset){ 0 };
	snprintf(path, sizeof(path), "%s/Packages", dir);
	r = gb_read_file(path, TEXT_MAX, &text, &len);
	if (r < 0)
		return r == -ENOENT ? 0 : r;
	for (char *line = text, *nl; line && *line; line = nl) {
		const char *v;
		nl = strchr(line, '\n');
		if (nl)
			*nl++ = '\0';
		if (!*line)
			cur = NULL;
		else if ((v = gb_startswith(line, "Name: "))) {
			if (!(cur = pset_add(s, NULL)))
				return -ENOMEM;
			gb_strscpy(cur->name, sizeof(cur->name), v);
		} else if (cur && (v = gb_startswith(line, "Version: ")))
			evr_norm(v, cur->evr, sizeof(cur->evr));
		else if (cur && (v = gb_startswith(line, "Arch: ")))
			gb_strscpy(cur->arch, sizeof(cur->arch), v);
		else if (cur && (v = gb_startswith(line, "Repo: ")))
			gb_strscpy(cur->repo, sizeof(cur->repo), v);
		else if (cur && (v = gb_startswith(line, "Module: ")))
			gb_strscpy(cur->module, sizeof(cur->module), v);
		else if (cur && (v = gb_startswith(line, "Requires: ")))
			gb_strscpy(cur->requires, sizeof(cur->requires), v);
	}
	return 0;
}

static int db_read(const char *dir, struct pset *s)
{
	_cleanup_free_ char *text = NULL;
	char path[1200];
	size_t len;
	int r;

	*s = (struct pset){ 0 };
	snprintf(path, sizeof(path), "%s/rpmdb", dir);
	r = gb_read_file(path, TEXT_MAX, &text, &len);
	if (r < 0)
		return r == -ENOENT ? 0 : r;
	for (char *save = NULL, *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char *f[4] = { l, NULL, NULL, NULL };
		struct rpkg *p;
		for (size_t i = 1; i < ARRAY_SIZE(f) && f[i - 1]; i++)
			if ((f[i] = strchr(f[i - 1], '\t')))
				*f[i]++ = '\0';
		if (!f[2])
			continue;
		if (!(p = pset_add(s, NULL)))
			return -ENOMEM;
		gb_strscpy(p->name, sizeof(p->name), f[0]);
		evr_norm(f[1], p->evr, sizeof(p->evr));
		gb_strscpy(p->arch, sizeof(p->arch), f[2]);
		gb_strscpy(p->repo, sizeof(p->repo), f[3] ? f[3] : "@System");
	}
	return 0;
}

static int db_write(const char *dir, const struct pset *s)
{
	size_t cap = s->n * 400 + 1, o = 0;
	_cleanup_free_ char *text = malloc(cap);
	char path[1200];

	if (!text)
		return -ENOMEM;
	text[0] = '\0';
	for (size_t i = 0; i < s->n; i++)
		o += (size_t)snprintf(text + o, cap - o, "%s\t%s\t%s\t%s\n", s->p[i].name, s->p[i].evr, s->p[i].arch,
		                      s->p[i].repo);
	snprintf(path, sizeof(path), "%s/rpmdb", dir);
	return gb_write_file_atomic(path, text, o, 0644);
}

static bool installed_exactly(const struct pset *d, const struct rpkg *p)
{
	for (size_t i = 0; i < d->n; i++)
		if (streq(d->p[i].name, p->name) && streq(d->p[i].evr, p->evr) && streq(d->p[i].arch, p->arch))
			return true;
	return false;
}

/* Each package's tree into the root, its entry in the database (in place
 * of the same name at another version: an upgrade), FROM its repository. */
static int apply(const char *root, const char *dir, struct pset *d, const struct pset *todo)
{
	for (size_t i = 0; i < todo->n; i++) {
		const struct rpkg *t = &todo->p[i];
		struct rpkg *p = NULL;
		char path[1200];
		struct stat st;
		int r;
		snprintf(path, sizeof(path), "%s/%s", dir, t->name);
		if (stat(path, &st) == 0 && S_ISDIR(st.st_mode) && (r = gb_fake_copy_tree(path, root)) < 0)
			return r;
		for (size_t k = 0; k < d->n && !p; k++)
			if (streq(d->p[k].name, t->name) && streq(d->p[k].arch, t->arch))
				p = &d->p[k];
		if (!p && !(p = pset_add(d, NULL)))
			return -ENOMEM;
		*p = *t;
		if (!p->repo[0])
			gb_strscpy(p->repo, sizeof(p->repo), "@System");
	}
	return db_write(dir, d);
}

/* ---- rpm ---- */

static void qf_out(struct gb_cmd_result *ret, const char *qf, const struct rpkg *p)
{
	struct evr x = { 0 };
	evr_split(p->evr, &x);
	for (const char *c = qf; *c; c++) {
		const char *e = c[0] == '%' && c[1] == '{' ? strchr(c, '}') : NULL;
		if (c[0] == '\\' && c[1]) {
			c++;
			out(ret, "%c", *c == 't' ? '\t' : *c == 'n' ? '\n' : *c);
		} else if (e) {
			char tag[32];
			snprintf(tag, sizeof(tag), "%.*s", (int)(e - c - 2), c + 2);
			out(ret, "%s",
			    streq(tag, "NAME")       ? p->name
			    : streq(tag, "EPOCHNUM") ? x.e
			    : streq(tag, "EPOCH")    ? (streq(x.e, "0") ? "(none)" : x.e)
			    : streq(tag, "VERSION")  ? x.v
			    : streq(tag, "RELEASE")  ? x.r
			    : streq(tag, "ARCH")     ? p->arch
			                             : "(none)");
			c = e;
		} else {
			out(ret, "%c", *c);
		}
	}
}

struct rpmargs {
	const char *qf;
	const char *w[MAX_ARGS];
	size_t n;
};

static void rpm_args(const char *const *argv, struct rpmargs *a)
{
	*a = (struct rpmargs){ .qf = "%{NAME}-%{VERSION}-%{RELEASE}.%{ARCH}\\n" };
	for (size_t i = 2; argv[i]; i++) {
		if ((streq(argv[i], "--qf") || streq(argv[i], "--queryformat")) && argv[i + 1])
			a->qf = argv[++i];
		else if (argv[i][0] != '-' && a->n < MAX_ARGS)
			a->w[a->n++] = argv[i];
	}
}

static void rpm_q(const struct pset *d, const struct rpmargs *a, struct gb_cmd_result *ret)
{
	unsigned missing = 0;
	for (size_t i = 0; i < a->n; i++) {
		bool found = false;
		for (size_t k = 0; k < d->n; k++)
			if (streq(d->p[k].name, a->w[i])) {
				qf_out(ret, a->qf, &d->p[k]);
				found = true;
			}
		if (!found) {
			out(ret, "package %s is not installed\n", a->w[i]);
			missing++;
		}
	}
	fail(ret, missing > 255 ? 255 : (int)missing);
}

static void rpm_qa(const struct pset *d, const struct rpmargs *a, struct gb_cmd_result *ret)
{
	for (size_t k = 0; k < d->n; k++) {
		bool match = a->n == 0;
		for (size_t i = 0; i < a->n && !match; i++)
			match = fnmatch(a->w[i], d->p[k].name, 0) == 0;
		if (match)
			qf_out(ret, a->qf, &d->p[k]);
	}
}

static void rpm_qf(const char *root, const char *dir, const struct pset *d, const struct rpmargs *a,
                   struct gb_cmd_result *ret)
{
	unsigned bad = 0;
	for (size_t i = 0; i < a->n; i++) {
		char path[1400];
		struct stat st;
		bool found = false;
		snprintf(path, sizeof(path), "%s%s", root, a->w[i]);
		if (lstat(path, &st) < 0) {
			out(ret, "error: file %s: No such file or directory\n", a->w[i]);
			bad++;
			continue;
		}
		for (size_t k = 0; k < d->n; k++) {
			snprintf(path, sizeof(path), "%s/%s%s", dir, d->p[k].name, a->w[i]);
			if (lstat(path, &st) == 0) {
				qf_out(ret, a->qf, &d->p[k]);
				found = true;
			}
		}
		if (!found) {
			out(ret, "file %s is not owned by any package\n", a->w[i]);
			bad++;
		}
	}
	fail(ret, bad > 255 ? 255 : (int)bad);
}

/* Every file and link of the tree below REL that the root lacks. */
static void verify_tree(const char *root, const char *tree, const char *rel, struct gb_cmd_result *ret,
                        unsigned *missing)
{
	char path[1400];
	struct dirent *e;
	DIR *dd;

	snprintf(path, sizeof(path), "%s%s", tree, rel);
	if (!(dd = opendir(path)))
		return;
	while ((e = readdir(dd))) {
		char sub[1200];
		struct stat st;
		if (streq(e->d_name, ".") || streq(e->d_name, ".."))
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", rel, e->d_name);
		snprintf(path, sizeof(path), "%s%s", tree, sub);
		if (lstat(path, &st) < 0)
			continue;
		if (S_ISDIR(st.st_mode)) {
			verify_tree(root, tree, sub, ret, missing);
			continue;
		}
		snprintf(path, sizeof(path), "%s%s", root, sub);
		if (lstat(path, &st) < 0) {
			out(ret, "missing     %s\n", sub); /* rpm's "missing   %c %s": no attribute */
			(*missing)++;
		}
	}
	closedir(dd);
}

static void rpm_verify(const char *root, const char *dir, const struct pset *d, const struct rpmargs *a,
                       struct gb_cmd_result *ret)
{
	unsigned bad = 0;
	for (size_t i = 0; i < a->n; i++) {
		char tree[1200];
		unsigned missing = 0;
		if (!pset_name(d, a->w[i])) {
			out(ret, "package %s is not installed\n", a->w[i]);
			bad++;
			continue;
		}
		snprintf(tree, sizeof(tree), "%s/%s", dir, a->w[i]);
		verify_tree(root, tree, "", ret, &missing);
		bad += missing > 0;
	}
	fail(ret, bad ? 1 : 0);
}

static uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* The base64 between an armor's headers and its CRC line: *ret malloc'd. */
static int dearmor(const char *text, unsigned char **ret, size_t *ret_len)
{
	const char *l = strstr(text, "-----BEGIN PGP PUBLIC KEY BLOCK-----");
	_cleanup_free_ char *b64 = NULL;
	unsigned char *bin;
	size_t n = 0, pad;
	int got;

	if (!l || !(l = strchr(l, '\n')))
		return -EBADMSG;
	for (l++; *l;) { /* the armor headers ("Version: ..."), up to the empty line */
		size_t ll = strcspn(l, "\n");
		bool header = memchr(l, ':', ll) != NULL, empty = ll == 0 || (ll == 1 && l[0] == '\r');
		if (!header && !empty)
			break;
		l += ll + (l[ll] == '\n');
		if (empty)
			break;
	}
	if (!(b64 = malloc(strlen(l) + 1)))
		return -ENOMEM;
	while (*l && l[0] != '=' && !gb_startswith(l, "-----")) {
		size_t ll = strcspn(l, "\n");
		for (size_t i = 0; i < ll; i++)
			if (isalnum((unsigned char)l[i]) || strchr("+/=", l[i]))
				b64[n++] = l[i];
		l += ll + (l[ll] == '\n');
	}
	if (n < 4 || n % 4 || n > (1u << 20))
		return -EBADMSG;
	pad = (b64[n - 1] == '=') + (b64[n - 2] == '=');
	if (!(bin = malloc(n / 4 * 3 + 1)))
		return -ENOMEM;
	got = EVP_DecodeBlock(bin, (unsigned char *)b64, (int)n);
	if (got < 0 || (size_t)got < pad) {
		free(bin);
		return -EBADMSG;
	}
	*ret = bin;
	*ret_len = (size_t)got - pad;
	return 0;
}

/* gpg-pubkey's VERSION and RELEASE, as rpm names an imported v4 key: the
 * key ID's last 8 hex digits (of the SHA-1 fingerprint over 0x99, the
 * length and the key packet's body) and the creation time in hex. */
static int key_name(const unsigned char *d, size_t n, char ver[9], char rel[9])
{
	unsigned char md[EVP_MAX_MD_SIZE], *buf;
	unsigned mdlen = 0;
	size_t hl, bl = 0;
	bool ok;

	if (n < 2 || !(d[0] & 0x80))
		return -EBADMSG;
	if (d[0] & 0x40) { /* a new-format packet header */
		if ((d[0] & 0x3f) != 6)
			return -EBADMSG;
		if (d[1] < 192)
			hl = 2, bl = d[1];
		else if (d[1] < 224 && n >= 3)
			hl = 3, bl = ((size_t)(d[1] - 192) << 8) + d[2] + 192;
		else if (d[1] == 255 && n >= 6)
			hl = 6, bl = be32(d + 2);
		else
			return -EBADMSG;
	} else { /* old format: tag in bits 5-2, the length's size in 1-0 */
		if (((d[0] >> 2) & 0xf) != 6 || (d[0] & 3) == 3)
			return -EBADMSG;
		hl = 1 + (1u << (d[0] & 3));
		if (n < hl)
			return -EBADMSG;
		for (size_t i = 1; i < hl; i++)
			bl = bl << 8 | d[i];
	}
	if (n < hl + bl || bl < 6 || bl > 0xffff || d[hl] != 4)
		return -EBADMSG;
	if (!(buf = malloc(bl + 3)))
		return -ENOMEM;
	buf[0] = 0x99, buf[1] = (unsigned char)(bl >> 8), buf[2] = (unsigned char)bl;
	memcpy(buf + 3, d + hl, bl);
	ok = EVP_Digest(buf, bl + 3, md, &mdlen, EVP_sha1(), NULL) == 1 && mdlen == 20;
	free(buf);
	if (!ok)
		return -EIO;
	snprintf(ver, 9, "%02x%02x%02x%02x", md[16], md[17], md[18], md[19]);
	snprintf(rel, 9, "%08x", be32(d + hl + 1));
	return 0;
}

static int rpm_import(const char *root, const char *dir, struct pset *d, const struct rpmargs *a,
                      struct gb_cmd_result *ret)
{
	bool changed = false;
	for (size_t i = 0; i < a->n; i++) {
		_cleanup_free_ char *text = NULL;
		_cleanup_free_ unsigned char *bin = NULL;
		char path[1400], ver[9], rel[9];
		struct rpkg k = { .name = "gpg-pubkey", .arch = "(none)", .repo = "@System" };
		size_t len, bl;
		int r;
		snprintf(path, sizeof(path), "%s%s", root, a->w[i]);
		r = gb_read_file(path, 1u << 20, &text, &len);
		if (r < 0) {
			out(ret, "error: %s: import read failed(%d).\n", a->w[i], -r);
			fail(ret, 1);
			continue;
		}
		r = dearmor(text, &bin, &bl);
		if (r == -ENOMEM)
			return r;
		if (r < 0)
			out(ret, "error: %s: key 1 not an armored public key.\n", a->w[i]);
		else if ((r = key_name(bin, bl, ver, rel)) == -ENOMEM)
			return r;
		else if (r < 0)
			out(ret, "error: %s: key 1 import failed.\n", a->w[i]);
		if (r < 0) {
			fail(ret, 1);
			continue;
		}
		snprintf(k.evr, sizeof(k.evr), "0:%s-%s", ver, rel);
		if (installed_exactly(d, &k))
			continue;
		if (!pset_add(d, &k))
			return -ENOMEM;
		changed = true;
	}
	return changed ? db_write(dir, d) : 0;
}

static int rpm_run(const char *root, const char *dir, const char *const *argv, struct gb_cmd_result *ret)
{
	const char *mode = argv[1];
	struct rpmargs a;
	struct pset d;
	int r = 0;

	if (!mode || (!streq(mode, "-q") && !streq(mode, "-qa") && !streq(mode, "-qf") && !streq(mode, "-V") &&
	              !streq(mode, "--import")))
		return 0;
	rpm_args(argv, &a);
	r = db_read(dir, &d);
	if (r >= 0 && streq(mode, "-q"))
		rpm_q(&d, &a, ret);
	else if (r >= 0 && streq(mode, "-qa"))
		rpm_qa(&d, &a, ret);
	else if (r >= 0 && streq(mode, "-qf"))
		rpm_qf(root, dir, &d, &a, ret);
	else if (r >= 0 && streq(mode, "-V"))
		rpm_verify(root, dir, &d, &a, ret);
	else if (r >= 0)
		r = rpm_import(root, dir, &d, &a, ret);
	pset_done(&d);
	return r < 0 ? r : 1;
}

/* ---- dnf ---- */

/* The stream etc/dnf/modules.d/MODULE.module has enabled, "" when none. */
static void module_stream(const char *root, const char *module, char *stream, size_t n)
{
	_cleanup_free_ char *text = NULL;
	char path[1400], s[128] = "";
	bool enabled = false;
	size_t len;

	stream[0] = '\0';
	snprintf(path, sizeof(path), "%s/etc/dnf/modules.d/%s.module", root, module);
	if (gb_read_file(path, 1u << 20, &text, &len) < 0)
		return;
	for (char *save = NULL, *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		const char *v;
		if ((v = gb_startswith(gb_strstrip(l), "stream=")))
			gb_strscpy(s, sizeof(s), v);
		else if ((v = gb_startswith(l, "state=")))
			enabled = streq(v, "enabled");
	}
	if (enabled)
		gb_strscpy(stream, n, s);
}

/* dnf's modular filtering: a package of a module is seen only while one
 * of its streams is enabled. */
static bool visible(const char *root, const struct rpkg *p)
{
	char mods[sizeof(p->module)];
	gb_strscpy(mods, sizeof(mods), p->module);
	if (!mods[0])
		return true;
	for (char *save = NULL, *w = strtok_r(mods, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
		char *colon = strchr(w, ':'), on[128];
		if (!colon)
			continue;
		*colon = '\0';
		module_stream(root, w, on, sizeof(on));
		if (on[0] && streq(on, colon + 1))
			return true;
	}
	return false;
}

/* dnf's forms of a package spec, each with .ARCH too; globs as dnf has them. */
static bool spec_match(const struct rpkg *p, const char *spec)
{
	struct evr x = { 0 };
	char f[4][400];

	evr_split(p->evr, &x);
	snprintf(f[0], sizeof(f[0]), "%s", p->name);
	snprintf(f[1], sizeof(f[1]), "%s-%s", p->name, x.v);
	snprintf(f[2], sizeof(f[2]), "%s-%s-%s", p->name, x.v, x.r);
	snprintf(f[3], sizeof(f[3]), "%s-%s:%s-%s", p->name, x.e, x.v, x.r);
	for (size_t i = 0; i < ARRAY_SIZE(f); i++) {
		char a[440];
		snprintf(a, sizeof(a), "%s.%s", f[i], p->arch);
		if (fnmatch(spec, f[i], 0) == 0 || fnmatch(spec, a, 0) == 0)
			return true;
	}
	return false;
}

/* The newest package of the archive matching spec (or, by_name, named it)
 * that dnf sees (modular: its filtering) or zypper does. */
static const struct rpkg *newest(const char *root, const struct pset *a, const char *spec, bool by_name, bool modular)
{
	const struct rpkg *best = NULL;
	for (size_t i = 0; i < a->n; i++) {
		const struct rpkg *p = &a->p[i];
		if ((by_name ? !streq(p->name, spec) : !spec_match(p, spec)) || (modular && !visible(root, p)))
			continue;
		if (!best || evr_cmp(p->evr, best->evr) > 0)
			best = p;
	}
	return best;
}

/* What the packages to install require, added to todo (each name once,
 * none already installed); -ENOPKG with the solver's words when nothing
 * provides one. */
static int closure(const char *root, const struct pset *a, const struct pset *d, struct pset *todo, bool modular,
                   struct gb_cmd_result *ret)
{
	for (size_t i = 0; i < todo->n; i++) {
		char reqs[sizeof(todo->p[i].requires)], by[400];
		gb_strscpy(reqs, sizeof(reqs), todo->p[i].requires);
		for (char *save = NULL, *w = strtok_r(reqs, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
			const struct rpkg *q;
			if (pset_name(d, w) || pset_name(todo, w))
				continue;
			if (!(q = newest(root, a, w, true, modular))) {
				out(ret, "%s conflicting requests\n  - nothing provides %s needed by %s\n",
				    modular ? "Error: \n Problem:" : "Problem:", w, nevra(&todo->p[i], by, sizeof(by)));
				return -ENOPKG;
			}
			if (!pset_add(todo, q))
				return -ENOMEM;
		}
	}
	return 0;
}

static int dnf_module_enable(const char *root, const struct pset *a, const char *arg, struct gb_cmd_result *ret)
{
	char module[128], path[1400], text[600], on[128];
	const char *colon = strchr(arg, ':');
	bool known = false;

	for (size_t i = 0; i < a->n && !known; i++) {
		char mods[sizeof(a->p[i].module)];
		gb_strscpy(mods, sizeof(mods), a->p[i].module);
		for (char *save = NULL, *w = strtok_r(mods, " ", &save); w && !known; w = strtok_r(NULL, " ", &save))
			known = streq(w, arg);
	}
	if (!colon || !known) {
		out(ret, "Unable to resolve argument %s\nError: Problems in request:\nmissing groups or modules: %s\n",
		    arg, arg);
		fail(ret, 1);
		return 0;
	}
	snprintf(module, sizeof(module), "%.*s", (int)(colon - arg), arg);
	module_stream(root, module, on, sizeof(on));
	if (on[0] && !streq(on, colon + 1)) {
		out(ret,
		    "The operation would result in switching of module '%s' stream '%s' to stream '%s'\nError: It is "
		    "not possible to switch enabled streams of a module unless explicitly enabled via configuration "
		    "option module_stream_switch.\n",
		    module, on, colon + 1);
		fail(ret, 1);
		return 0;
	}
	if (on[0]) {
		out(ret, "Dependencies resolved.\nNothing to do.\nComplete!\n");
		return 0;
	}
	snprintf(path, sizeof(path), "%s/etc/dnf/modules.d", root);
	(void)gb_mkdir_p(path, 0755);
	snprintf(path, sizeof(path), "%s/etc/dnf/modules.d/%s.module", root, module);
	snprintf(text, sizeof(text), "[%s]\nname=%s\nstream=%s\nprofiles=\nstate=enabled\n", module, module, colon + 1);
	out(ret, "Dependencies resolved.\n\nEnabling module streams:\n %-20s %s\n\nComplete!\n", module, colon + 1);
	return gb_write_file_atomic(path, text, strlen(text), 0644);
}

/* NAME.ARCH, the version and the repository: "@REPO" for an installed one. */
static void list_row(struct gb_cmd_result *ret, const char **header, const struct rpkg *p, bool installed)
{
	char na[200];
	if (*header)
		out(ret, "%s\n", *header);
	*header = NULL;
	snprintf(na, sizeof(na), "%s.%s", p->name, p->arch);
	out(ret, "%-40s %-28s %s%s\n", na, evr_shown(p), installed && p->repo[0] != '@' ? "@" : "", p->repo);
}

static bool newer_seen(const char *root, const struct pset *a, const struct rpkg *p, const char *spec)
{
	for (size_t i = 0; i < a->n; i++)
		if (streq(a->p[i].name, p->name) && streq(a->p[i].arch, p->arch) && spec_match(&a->p[i], spec) &&
		    visible(root, &a->p[i]) && evr_cmp(a->p[i].evr, p->evr) > 0)
			return true;
	return false;
}

/* dnf list: the installed matches, then the ones the repositories have
 * (the newest of each unless --showduplicates). */
static void dnf_list(const char *root, const struct pset *a, const struct pset *d, const char *const *argv,
                     struct gb_cmd_result *ret)
{
	const char *w[MAX_ARGS], *inst = "Installed Packages", *avail = "Available Packages";
	bool dups = has_arg(argv, "--showduplicates"), any = false;
	size_t n = words(argv, w);

	for (size_t s = 0; s < n; s++)
		for (size_t i = 0; i < d->n; i++)
			if (spec_match(&d->p[i], w[s])) {
				list_row(ret, &inst, &d->p[i], true);
				any = true;
			}
	for (size_t s = 0; s < n; s++)
		for (size_t i = 0; i < a->n; i++) {
			const struct rpkg *p = &a->p[i];
			if (!spec_match(p, w[s]) || !visible(root, p) || installed_exactly(d, p) ||
			    (!dups && newer_seen(root, a, p, w[s])))
				continue;
			list_row(ret, &avail, p, false);
			any = true;
		}
	if (!any) {
		out(ret, "Error: No matching Packages to list\n");
		fail(ret, 1);
	}
}

static int dnf_install(const char *root, const char *dir, const struct pset *a, struct pset *d, const char *const *argv,
                       struct gb_cmd_result *ret)
{
	const char *w[MAX_ARGS];
	struct pset todo = { 0 };
	char missing[1024] = "", buf[400];
	size_t n = words(argv, w), o = 0;
	int r = 0;

	for (size_t s = 0; s < n; s++) {
		const struct rpkg *p = newest(root, a, w[s], false, true);
		if (!p) {
			out(ret, "No match for argument: %s\n", w[s]);
			o += (size_t)snprintf(missing + o, sizeof(missing) - o, " %s", w[s]);
			o = o < sizeof(missing) ? o : sizeof(missing) - 1;
		} else if (installed_exactly(d, p))
			out(ret, "Package %s is already installed.\n", nevra(p, buf, sizeof(buf)));
		else if (!pset_name(&todo, p->name) && !pset_add(&todo, p))
			r = -ENOMEM;
	}
	if (r >= 0 && missing[0]) {
		out(ret, "Error: Unable to find a match:%s\n", missing);
		fail(ret, 1);
	} else if (r >= 0 && (r = closure(root, a, d, &todo, true, ret)) == -ENOPKG) {
		fail(ret, 1);
		r = 0;
	} else if (r >= 0 && todo.n == 0) {
		out(ret, "Dependencies resolved.\nNothing to do.\nComplete!\n");
	} else if (r >= 0 && (r = apply(root, dir, d, &todo)) >= 0) {
		out(ret, "Dependencies resolved.\n\nInstalled:\n");
		for (size_t i = 0; i < todo.n; i++)
			out(ret, "  %s\n", nevra(&todo.p[i], buf, sizeof(buf)));
		out(ret, "\nComplete!\n");
	}
	pset_done(&todo);
	return r;
}

static int dnf_reinstall(const char *root, const char *dir, const struct pset *a, struct pset *d,
                         const char *const *argv, struct gb_cmd_result *ret)
{
	const char *w[MAX_ARGS];
	struct pset todo = { 0 };
	size_t n = words(argv, w);
	char buf[400];
	bool bad = false;
	int r = 0;

	for (size_t s = 0; s < n && r >= 0; s++) {
		const struct rpkg *have = NULL, *p = NULL;
		for (size_t i = 0; i < d->n && !have; i++)
			if (spec_match(&d->p[i], w[s]))
				have = &d->p[i];
		for (size_t i = 0; have && i < a->n && !p; i++)
			if (streq(a->p[i].name, have->name) && streq(a->p[i].evr, have->evr) && visible(root, &a->p[i]))
				p = &a->p[i];
		if (!have)
			out(ret, "Package %s available, but not installed.\nNo match for argument: %s\n", w[s], w[s]);
		else if (!p)
			out(ret, "Installed package %s not available.\n", nevra(have, buf, sizeof(buf)));
		else if (!pset_add(&todo, p))
			r = -ENOMEM;
		bad |= !have || !p;
	}
	if (r >= 0 && bad) {
		out(ret, "Error: No packages marked for reinstall.\n");
		fail(ret, 1);
	} else if (r >= 0 && (r = apply(root, dir, d, &todo)) >= 0) {
		out(ret, "Dependencies resolved.\n\nReinstalled:\n");
		for (size_t i = 0; i < todo.n; i++)
			out(ret, "  %s\n", nevra(&todo.p[i], buf, sizeof(buf)));
		out(ret, "\nComplete!\n");
	}
	pset_done(&todo);
	return r;
}

/* The older entry of each name at two versions (an upgrade a kill cut);
 * kernels are installed side by side on purpose. */
static int dnf_remove_duplicates(const char *dir, struct pset *d, struct gb_cmd_result *ret)
{
	size_t keep = 0, removed = 0;
	char buf[400];

	for (size_t i = 0; i < d->n; i++) {
		bool older = false;
		for (size_t k = 0; k < d->n && !older; k++)
			older = k != i && streq(d->p[k].name, d->p[i].name) && streq(d->p[k].arch, d->p[i].arch) &&
			        !gb_startswith(d->p[i].name, "kernel") && !streq(d->p[i].name, "gpg-pubkey") &&
			        evr_cmp(d->p[k].evr, d->p[i].evr) > 0;
		if (older) {
			out(ret, "%s  %s\n", removed++ ? "" : "Removed:\n", nevra(&d->p[i], buf, sizeof(buf)));
			continue;
		}
		d->p[keep++] = d->p[i];
	}
	if (!removed) {
		out(ret, "No duplicated packages found for removal.\n");
		return 0;
	}
	d->n = keep;
	out(ret, "\nComplete!\n");
	return db_write(dir, d);
}

/* The plugin's _match: a lock entry NAME-[E:]V-R.ARCH against a pattern,
 * in each of the forms it tries (fnmatch). */
static bool lock_match(const char *ent, const char *pat)
{
	char b[400], f[400], *dash, *dot, *colon;
	const char *name, *e = "0", *v, *rel, *arch = "";

	ent += ent[0] == '!';
	if (streq(ent, pat))
		return true;
	gb_strscpy(b, sizeof(b), ent);
	if (!(dash = strrchr(b, '-')))
		return false;
	if ((dot = strrchr(dash, '.')))
		*dot = '\0', arch = dot + 1;
	*dash = '\0', rel = dash + 1;
	if (!(dash = strrchr(b, '-')))
		return false;
	*dash = '\0', name = b, v = dash + 1;
	if ((colon = strchr(v, ':')))
		*colon = '\0', e = v, v = colon + 1;
	for (size_t i = 0; i < 9; i++) {
		switch (i) {
		case 0: snprintf(f, sizeof(f), "%s", name); break;
		case 1: snprintf(f, sizeof(f), "%s.%s", name, arch); break;
		case 2: snprintf(f, sizeof(f), "%s-%s", name, v); break;
		case 3: snprintf(f, sizeof(f), "%s-%s-%s", name, v, rel); break;
		case 4: snprintf(f, sizeof(f), "%s-%s:%s", name, e, v); break;
		case 5: snprintf(f, sizeof(f), "%s-%s-%s.%s", name, v, rel, arch); break;
		case 6: snprintf(f, sizeof(f), "%s-%s:%s-%s", name, e, v, rel); break;
		case 7: snprintf(f, sizeof(f), "%s:%s-%s-%s.%s", e, name, v, rel, arch); break;
		default: snprintf(f, sizeof(f), "%s-%s:%s-%s.%s", name, e, v, rel, arch); break;
		}
		if (fnmatch(pat, f, 0) == 0)
			return true;
	}
	return false;
}

/* versionlock add: each spec not locked yet, resolved against what is
 * installed (else what the repositories have), appended under its own
 * "# Added lock on" comment as NAME-EPOCH:VERSION-RELEASE.* */
static int lock_add(const char *root, const struct pset *a, const struct pset *d, const char *text, const char **w,
                    size_t n, struct gb_cmd_result *ret, char **ret_text)
{
	size_t cap = strlen(text) + n * 600 + 1, o;
	char *t = malloc(cap);

	if (!t)
		return -ENOMEM;
	o = (size_t)snprintf(t, cap, "%s", text);
	for (size_t s = 0; s < n; s++) {
		const struct rpkg *p = NULL;
		bool locked = false;
		char when[64], ent[400];
		time_t now = time(NULL);
		for (const char *l = text; *l && !locked; l += strcspn(l, "\n") + (l[strcspn(l, "\n")] == '\n')) {
			snprintf(ent, sizeof(ent), "%.*s", (int)strcspn(l, "\n"), l);
			gb_strstrip(ent);
			locked = ent[0] && ent[0] != '#' && lock_match(ent, w[s]);
		}
		if (locked) {
			out(ret, "Package already locked in equivalent form: %s\n", ent);
			continue;
		}
		for (size_t i = 0; i < d->n && !p; i++)
			if (spec_match(&d->p[i], w[s]))
				p = &d->p[i];
		if (!p)
			p = newest(root, a, w[s], false, true);
		if (!p) {
			out(ret, "No package found for: %s\n", w[s]);
			continue;
		}
		if (!ctime_r(&now, when))
			gb_strscpy(when, sizeof(when), "\n");
		o += (size_t)snprintf(t + o, cap - o, "\n# Added lock on %s%s-%s.*\n", when, p->name, p->evr);
		out(ret, "Adding versionlock on: %s-%s.*\n", p->name, p->evr);
	}
	*ret_text = t;
	return 0;
}

/* versionlock delete: the entries a spec matches go, and with them, as the
 * plugin rewrites the file, the comments. */
static int lock_delete(const char *text, const char **w, size_t n, struct gb_cmd_result *ret, char **ret_text)
{
	size_t cap = strlen(text) + 1, o = 0, count = 0;
	char *t = malloc(cap);

	if (!t)
		return -ENOMEM;
	t[0] = '\0';
	for (const char *l = text; *l; l += strcspn(l, "\n") + (l[strcspn(l, "\n")] == '\n')) {
		char ent[400];
		bool match = false;
		snprintf(ent, sizeof(ent), "%.*s", (int)strcspn(l, "\n"), l);
		gb_strstrip(ent);
		if (!ent[0] || ent[0] == '#')
			continue;
		for (size_t s = 0; s < n && !match; s++)
			match = lock_match(ent, w[s]);
		if (match) {
			out(ret, "Deleting versionlock for: %s\n", ent);
			count++;
		} else {
			o += (size_t)snprintf(t + o, cap - o, "%s\n", ent);
		}
	}
	if (!count) { /* the file as it was */
		free(t);
		t = strdup(text);
	}
	*ret_text = t;
	return t ? 0 : -ENOMEM;
}

static int dnf_versionlock(const char *root, const struct pset *a, const struct pset *d, const char *const *argv,
                           struct gb_cmd_result *ret)
{
	_cleanup_free_ char *text = NULL, *next = NULL;
	const char *w[MAX_ARGS];
	char path[1400];
	size_t n = words(argv + 1, w), len;
	int r;

	if (!pset_name(d, PLUGIN)) {
		out(ret, "No such command: versionlock. Please use /usr/bin/dnf --help\nIt could be a DNF plugin "
		         "command, try: \"dnf install 'dnf-command(versionlock)'\"\n");
		fail(ret, 1);
		return 0;
	}
	snprintf(path, sizeof(path), "%s/" LOCKLIST, root);
	r = gb_read_file(path, TEXT_MAX, &text, &len);
	if (r == -ENOENT)
		r = (text = strdup("")) ? 0 : -ENOMEM;
	if (r < 0)
		return r;
	r = streq(argv[0], "add") ? lock_add(root, a, d, text, w, n, ret, &next) : lock_delete(text, w, n, ret, &next);
	if (r < 0 || streq(next, text))
		return r;
	return gb_write_file_atomic(path, next, strlen(next), 0644);
}

static int dnf_run(const char *root, const char *dir, const char *const *argv, struct gb_cmd_result *ret)
{
	struct pset a = { 0 }, d = { 0 };
	const char *cmd;
	size_t i = 1;
	int r = 1;

	while (argv[i] && argv[i][0] == '-')
		i++; /* -y, -q, --repo=... */
	cmd = argv[i];
	if (!cmd || !(streq(cmd, "module") || streq(cmd, "makecache") || streq(cmd, "list") || streq(cmd, "install") ||
	              streq(cmd, "reinstall") || streq(cmd, "remove") || streq(cmd, "versionlock")))
		return 0;
	if ((streq(cmd, "module") && !(argv[i + 1] && streq(argv[i + 1], "enable") && argv[i + 2])) ||
	    (streq(cmd, "remove") && !has_arg(argv, "--duplicates")) ||
	    (streq(cmd, "versionlock") &&
	     !(argv[i + 1] && (streq(argv[i + 1], "add") || streq(argv[i + 1], "delete")))))
		return 0;
	if (streq(cmd, "makecache")) {
		out(ret, "Metadata cache created.\n");
		return 1;
	}
	r = archive_read(dir, &a);
	r = r < 0 ? r : db_read(dir, &d);
	if (r >= 0 && streq(cmd, "module"))
		r = dnf_module_enable(root, &a, argv[i + 2], ret);
	else if (r >= 0 && streq(cmd, "list"))
		dnf_list(root, &a, &d, argv + i + 1, ret);
	else if (r >= 0 && streq(cmd, "install"))
		r = dnf_install(root, dir, &a, &d, argv + i + 1, ret);
	else if (r >= 0 && streq(cmd, "reinstall"))
		r = dnf_reinstall(root, dir, &a, &d, argv + i + 1, ret);
	else if (r >= 0 && streq(cmd, "remove"))
		r = dnf_remove_duplicates(dir, &d, ret);
	else if (r >= 0)
		r = dnf_versionlock(root, &a, &d, argv + i + 1, ret);
	pset_done(&a);
	pset_done(&d);
	return r < 0 ? r : 1;
}

/* ---- zypper ---- */

/* NAME=VERSION: VERSION, VERSION-RELEASE or EPOCH:VERSION-RELEASE, as
 * zypper compares the capability "NAME = VERSION". */
static bool zypper_version(const struct rpkg *p, const char *want)
{
	struct evr x = { 0 };
	char vr[260];
	evr_split(p->evr, &x);
	snprintf(vr, sizeof(vr), "%s-%s", x.v, x.r);
	if (strchr(want, ':'))
		return streq(p->evr, want);
	return streq(want, strchr(want, '-') ? vr : x.v);
}

static const struct rpkg *zypper_find(const struct pset *a, const char *name, const char *want)
{
	const struct rpkg *best = NULL;
	for (size_t i = 0; i < a->n; i++)
		if (streq(a->p[i].name, name) && (!want || zypper_version(&a->p[i], want)) &&
		    (!best || evr_cmp(a->p[i].evr, best->evr) > 0))
			best = &a->p[i];
	return best;
}

/* zypper's summary of what it installs: the new ones, the reinstalled. */
static void zypper_summary(const struct pset *d, const struct pset *todo, struct gb_cmd_result *ret)
{
	size_t fresh = 0;
	for (size_t i = 0; i < todo->n; i++)
		fresh += !pset_name(d, todo->p[i].name);
	if (fresh) {
		out(ret, "\nThe following %zu NEW package%s going to be installed:\n ", fresh,
		    fresh == 1 ? " is" : "s are");
		for (size_t i = 0; i < todo->n; i++)
			if (!pset_name(d, todo->p[i].name))
				out(ret, " %s", todo->p[i].name);
		out(ret, "\n");
	}
	if (todo->n > fresh) {
		out(ret, "\nThe following %zu package%s going to be reinstalled:\n ", todo->n - fresh,
		    todo->n - fresh == 1 ? " is" : "s are");
		for (size_t i = 0; i < todo->n; i++)
			if (pset_name(d, todo->p[i].name))
				out(ret, " %s", todo->p[i].name);
		out(ret, "\n");
	}
	if (fresh && todo->n > fresh)
		out(ret, "\n%zu new package%s to install, %zu to reinstall.\n", fresh, fresh == 1 ? "" : "s",
		    todo->n - fresh);
	else if (fresh)
		out(ret, "\n%zu new package%s to install.\n", fresh, fresh == 1 ? "" : "s");
	else
		out(ret, "\n%zu package%s to reinstall.\n", todo->n, todo->n == 1 ? "" : "s");
}

static int zypper_install(const char *root, const char *dir, const struct pset *a, struct pset *d,
                          const char *const *argv, struct gb_cmd_result *ret)
{
	bool dry = has_arg(argv, "--dry-run"), force = has_arg(argv, "--force") || has_arg(argv, "-f");
	const char *w[MAX_ARGS];
	struct pset todo = { 0 };
	size_t n = words(argv, w), missing = 0;
	char buf[400];
	int r = 0;

	out(ret, "Loading repository data...\nReading installed packages...\n");
	for (size_t s = 0; s < n && r >= 0; s++) {
		char name[200];
		const char *eq = strchr(w[s], '='), *want = eq ? eq + 1 : NULL;
		const struct rpkg *p;
		snprintf(name, sizeof(name), "%.*s", eq ? (int)(eq - w[s]) : (int)strlen(w[s]), w[s]);
		p = zypper_find(a, name, want);
		if (!p) {
			if (!zypper_find(a, name, NULL))
				out(ret, "'%s' not found in package names. Trying capabilities.\n", name);
			out(ret, want ? "No provider of '%s = %s' found.\n" : "No provider of '%s%s' found.\n", name,
			    want ? want : "");
			missing++;
		} else if (installed_exactly(d, p) && !force)
			out(ret, "'%s' is already installed.\n", w[s]);
		else if (!pset_name(&todo, p->name) && !pset_add(&todo, p))
			r = -ENOMEM;
	}
	if (r >= 0 && missing) {
		fail(ret, 104); /* ZYPPER_EXIT_INF_CAP_NOT_FOUND */
		goto done;
	}
	if (r >= 0)
		out(ret, "Resolving package dependencies...\n");
	if (r >= 0 && (r = closure(root, a, d, &todo, false, ret)) == -ENOPKG) {
		fail(ret, 4); /* ZYPPER_EXIT_ERR_ZYPP: a problem --non-interactive cannot solve */
		r = 0;
	} else if (r >= 0 && todo.n == 0)
		out(ret, "\nNothing to do.\n");
	else if (r >= 0) {
		zypper_summary(d, &todo, ret);
		if (!dry && (r = apply(root, dir, d, &todo)) >= 0)
			for (size_t i = 0; i < todo.n; i++)
				out(ret, "(%zu/%zu) Installing: %s ...[done]\n", i + 1, todo.n,
				    nevra(&todo.p[i], buf, sizeof(buf)));
	}
done:
	pset_done(&todo);
	return r;
}

/* The next block of zypp's locks file (lines up to an empty one) into b,
 * its solvable_name and whether it restricts the version. */
static bool lock_block(const char **p, char *b, size_t bsz, char *name, size_t nsz, bool *versioned)
{
	size_t o = 0;
	name[0] = '\0';
	*versioned = false;
	b[0] = '\0';
	while (**p == '\n')
		(*p)++;
	if (!**p)
		return false;
	while (**p && **p != '\n') {
		size_t ll = strcspn(*p, "\n");
		char line[400];
		const char *v;
		snprintf(line, sizeof(line), "%.*s", (int)ll, *p);
		if ((v = gb_startswith(line, "solvable_name:")))
			snprintf(name, nsz, "%s", v + strspn(v, " \t"));
		*versioned |= gb_startswith(line, "version:") != NULL;
		o += (size_t)snprintf(b + o, o < bsz ? bsz - o : 0, "%s\n", line);
		*p += ll + ((*p)[ll] == '\n');
	}
	return true;
}

static bool named(const char **w, size_t n, const char *name)
{
	for (size_t s = 0; s < n; s++)
		if (streq(w[s], name))
			return true;
	return false;
}

/* addlock NAME: a block "type: package", "match_type: glob", "case_sensitive:
 * on", "solvable_name: NAME"; removelock NAME: the blocks of that name go. */
static int zypper_locks(const char *root, bool add, const char *const *argv, struct gb_cmd_result *ret)
{
	_cleanup_free_ char *text = NULL, *next = NULL;
	const char *w[MAX_ARGS], *p;
	char path[1400], b[2048], name[200];
	size_t n = words(argv, w), len = 0, cap, o = 0, removed = 0;
	bool versioned;
	int r;

	snprintf(path, sizeof(path), "%s/" ZYPP_LOCKS, root);
	r = gb_read_file(path, TEXT_MAX, &text, &len);
	if (r < 0 && r != -ENOENT)
		return r;
	cap = len + n * 200 + 2;
	if (!(next = malloc(cap)))
		return -ENOMEM;
	next[0] = '\0';
	for (p = text ? text : ""; lock_block(&p, b, sizeof(b), name, sizeof(name), &versioned);) {
		if (!add && !versioned && named(w, n, name)) {
			removed++;
			continue;
		}
		if (add && !versioned)
			for (size_t s = 0; s < n; s++)
				if (streq(w[s], name))
					w[s] = ""; /* locked already */
		o += (size_t)snprintf(next + o, cap - o, "%s%s", o ? "\n" : "", b);
	}
	for (size_t s = 0; add && s < n; s++)
		if (w[s][0])
			o += (size_t)snprintf(
			    next + o, cap - o,
			    "%stype: package\nmatch_type: glob\ncase_sensitive: on\nsolvable_name: %s\n", o ? "\n" : "",
			    w[s]);
	if (add)
		out(ret, n == 1 ? "Specified lock has been successfully added.\n"
		                : "Specified locks have been successfully added.\n");
	else
		out(ret,
		    removed == 1 ? "%zu lock has been successfully removed.\n"
		                 : "%zu locks have been successfully removed.\n",
		    removed);
	if (text && streq(next, text))
		return 0;
	snprintf(b, sizeof(b), "%s/etc/zypp", root);
	(void)gb_mkdir_p(b, 0755);
	return gb_write_file_atomic(path, next, o, 0644);
}

static int zypper_run(const char *root, const char *dir, const char *const *argv, struct gb_cmd_result *ret)
{
	struct pset a = { 0 }, d = { 0 };
	const char *cmd;
	size_t i = 1;
	int r;

	while (argv[i] && argv[i][0] == '-')
		i++; /* --non-interactive, --no-refresh */
	cmd = argv[i];
	if (!cmd)
		return 0;
	if (streq(cmd, "refresh") || streq(cmd, "ref")) {
		out(ret, "All repositories have been refreshed.\n");
		return 1;
	}
	if (streq(cmd, "addlock") || streq(cmd, "al") || streq(cmd, "removelock") || streq(cmd, "rl")) {
		r = zypper_locks(root, cmd[0] == 'a', argv + i + 1, ret);
		return r < 0 ? r : 1;
	}
	if (!streq(cmd, "install") && !streq(cmd, "in"))
		return 0;
	r = archive_read(dir, &a);
	r = r < 0 ? r : db_read(dir, &d);
	if (r >= 0)
		r = zypper_install(root, dir, &a, &d, argv + i + 1, ret);
	pset_done(&a);
	pset_done(&d);
	return r < 0 ? r : 1;
}

int gb_fake_rpm_run(const char *root, const char *dir, const char *const *argv, struct gb_cmd_result *ret)
{
	int r;

	if (!root[0] || !dir[0] || !argv[0])
		return 0;
	if (streq(argv[0], "rpm"))
		r = rpm_run(root, dir, argv, ret);
	else if (streq(argv[0], "dnf"))
		r = dnf_run(root, dir, argv, ret);
	else if (streq(argv[0], "zypper"))
		r = zypper_run(root, dir, argv, ret);
	else
		return 0;
	return r < 0 ? -EIO : r;
}
