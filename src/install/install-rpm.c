/* SPDX-License-Identifier: MIT */
/* The packages method on rpm roots: NVIDIA's dnf repository (RHEL, Rocky,
 * AlmaLinux, Oracle, CentOS 8/9/10, Amazon Linux 2023) and its zypper
 * repository (SLES 15, openSUSE Leap 15). The repository's key is
 * downloaded and checked against the catalog's pin before anything is
 * written, kept armored under etc/pki/rpm-gpg and imported with rpm; one
 * repo file names it; the module stream is enabled (RHEL 8/9, Amazon
 * Linux 2023); every package is resolved to the exact version the plan
 * pinned before anything is installed; then the driver's packages are
 * locked at what was installed (dnf versionlock, zypper addlock) so an
 * automatic upgrade cannot split the userspace from the kernel module.
 * The Container Toolkit (in->userspace_only) takes the same path without
 * the kernel: no development packages, no module stream, no blacklist, no
 * module check; its repository signs its metadata, not each package
 * (GB_REPO_SIGNS_METADATA), and only its own packages are locked.
 * What it does, file by file and command by command, and how to undo it:
 * docs/install.md, "The packages method on dnf and zypper". */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "catalog/catalog.h"
#include "context.h"
#include "detect/detect.h"
#include "fetch/pgpkey.h"
#include "install-internal.h"
#include "effect/journal.h"
#include "shared/log.h"
#include "shared/macro.h"
#include "shared/ops.h"
#include "shared/root.h"
#include "shared/util.h"

#define STAGE "install"
#define QUERY_TIMEOUT_MS (10 * 60 * 1000) /* dnf list and zypper's dry run may load metadata */
#define SHORT_TIMEOUT_MS (5 * 60 * 1000)
#define REFRESH_TIMEOUT_MS (15 * 60 * 1000)
#define DEFAULT_INSTALL_MS (60 * 60 * 1000)
#define KEY_MAX (64u * 1024u)
#define REPO_MAX (256u * 1024u)
#define MAX_FAMILY 64

#define KEY_DIR "etc/pki/rpm-gpg"
#define DNF_REPO_DIR "etc/yum.repos.d"
#define ZYPP_REPO_DIR "etc/zypp/repos.d"
#define VERSIONLOCK_LIST "etc/dnf/plugins/versionlock.list"
#define ZYPP_LOCKS "etc/zypp/locks"
#define VERSIONLOCK_PLUGIN "python3-dnf-plugin-versionlock"
#define VERSIONLOCK_CONF "etc/dnf/plugins/versionlock.conf"
/* The same file, and the same words, as the apt engine's (install-distro.c). */
/* rpm turns the \t and \n of a query format into bytes itself. */
#define QF "%{NAME}\\t%{EPOCHNUM}:%{VERSION}-%{RELEASE}\\t%{ARCH}\\n"

struct rinst {
	struct gb_pkg_engine e; /* first: the walk's state (install-internal.h) */
	enum gb_pkgmgr pm;
	unsigned major; /* VERSION_ID's first number */
	char module[64], stream[64]; /* "@nvidia-driver:595-open"; "" when none */
	bool module_enabled, key_imported, family_read;
	char keyfile[160], alias[96], repofile[192];
	char fpr[GB_PGP_FPR_LEN];
	/* rpm -qa of the driver's packages (and the plan's): before the
	 * install to lift stale locks, after it to check and lock */
	struct gb_rpm_pkg family[MAX_FAMILY];
	size_t n_family;
	/* rpm's trace of an upgrade a kill cut: a package at two versions
	 * (the old one never erased), "" when none (rpm_audit) */
	char duplicates[256];
	/* the plan's packages rpm has at their version whose files are not all
	 * there (rpm -V: "missing"), a space between names; "" when none */
	char damaged[256];
};

#define FAIL(s, r, ...) (snprintf((s)->e.ret->error, sizeof((s)->e.ret->error), __VA_ARGS__), (r))

static bool is_dnf(const struct rinst *s)
{
	return s->pm == GB_PKGMGR_DNF;
}

static const char *pm_name(const struct rinst *s)
{
	return is_dnf(s) ? "dnf" : "zypper";
}

/* "0:1.2-3" is "1.2-3" to every tool; other epochs stay. */
static const char *evr_plain(const char *evr)
{
	const char *p = gb_startswith(evr, "0:");
	return p ? p : evr;
}

/* ---- os-release ---- */

static enum gb_pkgmgr rpm_pm(const struct gb_os_release *osr)
{
	const struct gb_os *os = gb_os_lookup(osr->id, osr->id_like);
	if (!os || !os->repo || (os->pkgmgr != GB_PKGMGR_DNF && os->pkgmgr != GB_PKGMGR_ZYPPER))
		return GB_PKGMGR_NONE;
	return os->pkgmgr;
}

enum gb_pkgmgr gb_rpm_os_parse(const char *text, char ret_id[32], char ret_version[32])
{
	struct gb_os_release osr;

	ret_id[0] = ret_version[0] = '\0';
	if (gb_os_release_words(text, text ? strlen(text) : 0, &osr) < 0)
		return GB_PKGMGR_NONE;
	gb_strscpy(ret_id, 32, osr.id);
	gb_strscpy(ret_version, 32, osr.version_id);
	return rpm_pm(&osr);
}

enum gb_pkgmgr gb_rpm_root_pm(struct gb_ctx *ctx)
{
	struct gb_os_release osr;
	return gb_os_release_read(ctx, &osr) < 0 ? GB_PKGMGR_NONE : rpm_pm(&osr);
}

static int os_release(struct rinst *s)
{
	_cleanup_free_ char *dnf = NULL;
	struct gb_os_release osr;
	uint32_t major = 0;
	char num[16];
	int r = gb_os_release_read(s->e.ctx, &osr);

	if (r < 0)
		return FAIL(s, r, "Failed to read os-release in %s: %s", s->e.ctx->root->path, strerror(-r));
	gb_strscpy(s->e.ret->distro, sizeof(s->e.ret->distro), osr.id);
	gb_strscpy(s->e.ret->codename, sizeof(s->e.ret->codename), osr.version_id);
	s->pm = rpm_pm(&osr);
	if (s->pm == GB_PKGMGR_NONE || s->e.in->method != GB_INSTALL_PACKAGES)
		return FAIL(s, -EOPNOTSUPP,
		            "%s ('%s' %s) is not a distribution whose NVIDIA repository gpuboot drives with dnf or "
		            "zypper; use the runfile method",
		            s->e.ctx->root->path, s->e.ret->distro, s->e.ret->codename);
	gb_strscpy(num, sizeof(num), s->e.ret->codename);
	num[strcspn(num, ".")] = '\0';
	if (gb_safe_atou32(num, 10, &major) < 0)
		return FAIL(s, -EOPNOTSUPP, "os-release in %s has no usable VERSION_ID ('%s')", s->e.ctx->root->path,
		            s->e.ret->codename);
	s->major = major;
	/* dnf 5 keeps its locks elsewhere (versionlock.toml): not driven here. */
	if (is_dnf(s) && gb_root_readlink(s->e.ctx->root, "usr/bin/dnf", &dnf) == 0 && strstr(dnf, "dnf5"))
		return FAIL(s, -EOPNOTSUPP,
		            "dnf in %s is dnf 5, whose versionlock gpuboot does not drive; use the runfile method",
		            s->e.ctx->root->path);
	return 0;
}

/* ---- the package list ---- */

static int add_pkg(struct rinst *s, const char *name, const char *version, bool hold)
{
	struct gb_install_pkg_result *p;
	/* one name at two versions is two kernels' development packages */
	for (size_t i = 0; i < s->e.ret->n_pkgs; i++)
		if (streq(s->e.ret->pkgs[i].name, name) && streq(s->e.ret->pkgs[i].wanted, evr_plain(version)))
			return 0;
	if (s->e.ret->n_pkgs >= GB_INSTALL_MAX_PKGS)
		return FAIL(s, -E2BIG, "More than %d packages to install", GB_INSTALL_MAX_PKGS);
	if (!gb_rpm_name_valid(name) || (version[0] && !gb_rpm_evr_valid(version)))
		return FAIL(s, -EINVAL, "'%s' '%s' is not an rpm package name and version", name, version);
	p = &s->e.ret->pkgs[s->e.ret->n_pkgs++];
	gb_strscpy(p->name, sizeof(p->name), name);
	gb_strscpy(p->wanted, sizeof(p->wanted), evr_plain(version));
	p->hold = hold;
	return 0;
}

/* Run a read-only query (chrooted in an image): not an effect, not
 * journaled; its output is in s->e.res. whole: the output must be all there
 * (it is parsed), else only its tail is read. */
static int query(struct rinst *s, const char *const *argv, bool whole)
{
	return gb_pkg_query(&s->e, argv, whole);
}

/* A module stream (GB_PKG_STREAM, the plan's "@nvidia-driver:595-open"):
 * enable the stream (dnf, where there are streams), install its
 * metapackage: nvidia-open for the open streams, cuda-drivers for the
 * proprietary ones (NVIDIA's driver installation guide, Kernel Modules and
 * Advanced Options). */
static int add_module(struct rinst *s, const struct gb_pkg_spec *p)
{
	const struct gb_distro *d = gb_distro_find(s->e.ret->distro, s->e.ret->codename);
	bool streams = is_dnf(s) && d && d->module_streams;
	char spec[GB_INSTALL_NAME + 72];

	if (gb_pkg_spec_format(p, spec, sizeof(spec)) < 0 || !gb_rpm_name_valid(p->name) ||
	    !gb_rpm_name_valid(p->stream) || strlen(p->name) >= sizeof(s->module) ||
	    strlen(p->stream) >= sizeof(s->stream))
		return FAIL(s, -EINVAL, "'%s' '%s' is not a module stream (MODULE:STREAM)", p->name, p->stream);
	if (s->e.in->userspace_only)
		return FAIL(s, -EINVAL, "'%s' is a kernel module stream; this install is userspace only", spec);
	if (!streams)
		return FAIL(s, -EINVAL,
		            "%s %s has no module streams: the plan's %s is for RHEL 8/9 and Amazon Linux 2023; "
		            "make the plan for this system",
		            s->e.ret->distro, s->e.ret->codename, spec);
	if (s->module[0] && !(streq(s->module, p->name) && streq(s->stream, p->stream)))
		return FAIL(s, -EINVAL, "Two module streams in one plan: @%s:%s and %s", s->module, s->stream, spec);
	gb_strscpy(s->module, sizeof(s->module), p->name);
	gb_strscpy(s->stream, sizeof(s->stream), p->stream);
	return add_pkg(s, gb_pkg_stream_open(p->stream) ? "nvidia-open" : "cuda-drivers", p->version, p->hold);
}

/* The development package of each kernel, at the kernel package's own
 * version: the package that owns boot/vmlinuz-<kver> ("kernel-core",
 * "kernel", "kernel6.12", "kernel-64k-core", "kernel-default") without
 * "-core", plus "-devel" (NVIDIA's driver installation guide, Preparation:
 * kernel-devel for the running kernel; SUSE: kernel-<variant>-devel). */
static int add_kernel_devel(struct rinst *s)
{
	struct gb_rpm_pkg k[4];
	char file[GB_INSTALL_KVER + 32], base[GB_INSTALL_NAME], name[GB_INSTALL_NAME + 8];
	int n, r = 0;

	for (size_t i = 0; i < s->e.n_kernels && r >= 0; i++) {
		snprintf(file, sizeof(file), "/boot/vmlinuz-%s", s->e.kernels[i]);
		const char *argv[] = { "rpm", "-qf", "--qf", QF, file, NULL };
		r = query(s, argv, true);
		n = r < 0 ? r : gb_rpm_qf_parse(s->e.res->output, k, ARRAY_SIZE(k));
		if (n == -EINVAL || n == -E2BIG)
			return FAIL(s, -EINVAL, "rpm -qf %s printed what gpuboot cannot read", file);
		if (r < 0)
			return r;
		if (n == 0)
			return FAIL(s, -ENOPKG,
			            "The kernel %s is not from a package (no package owns %s): no development package "
			            "can match it; install a packaged kernel or use the runfile method",
			            s->e.kernels[i], file);
		gb_strscpy(base, sizeof(base), k[0].name);
		if (strlen(base) > 5 && streq(base + strlen(base) - 5, "-core"))
			base[strlen(base) - 5] = '\0';
		if (snprintf(name, sizeof(name), "%s-devel", base) >= (int)sizeof(name))
			return FAIL(s, -EINVAL, "The kernel package name '%s' is too long", k[0].name);
		r = add_pkg(s, name, k[0].evr, false);
	}
	/* "kernel-headers" (unversioned) with it on dnf, as the guide's Preparation lists */
	return r < 0 || !is_dnf(s) ? r : add_pkg(s, "kernel-headers", "", false);
}

static int build_list(struct rinst *s)
{
	const char *flavor = s->e.in->flavor ? s->e.in->flavor : "open";
	const char *ver = s->e.in->driver_version ? s->e.in->driver_version : "";
	int r = 0;

	if (!streq(flavor, "open") && !streq(flavor, "proprietary"))
		return FAIL(s, -EINVAL, "Unknown module flavour '%s' (open or proprietary)", flavor);
	if (ver[0] && !gb_rpm_evr_valid(ver))
		return FAIL(s, -EINVAL, "'%s' is not a driver version", ver);
	if (!s->e.in->packages || !s->e.in->n_packages || !s->e.in->repo)
		return FAIL(s, -EINVAL, "The packages method needs the repository and the plan's packages");
	for (size_t i = 0; i < s->e.in->n_packages && r >= 0; i++) {
		const struct gb_pkg_spec *p = &s->e.in->packages[i];
		/* the toolkit is installed at the plan's version or not at all; a
		 * kept driver's fabric manager (driver_version given) may bring
		 * NVLSM and infiniband-diags at their own versions, held */
		if (s->e.in->userspace_only && !ver[0] && p->hold && !p->version[0])
			return FAIL(s, -EINVAL,
			            "%s has no version: a userspace install is locked at the plan's exact version; "
			            "give the version (the plan's toolkit.version)",
			            p->name);
		if (p->kind == GB_PKG_STREAM)
			r = add_module(s, p);
		else if (p->kind == GB_PKG_BRANCH_LOCK)
			continue; /* a branch glob: gpuboot locks the exact versions instead */
		else
			r = add_pkg(s, p->name, p->version, p->hold);
	}
	if (r >= 0 && is_dnf(s))
		r = add_pkg(s, VERSIONLOCK_PLUGIN, "", false);
	return r < 0 || s->e.in->userspace_only ? r : add_kernel_devel(s);
}

/* ---- what is installed, locked, enabled ---- */

static int read_opt(struct rinst *s, const char *path, size_t max, char **ret)
{
	size_t len;
	int r = gb_root_read_file(s->e.ctx->root, path, max, ret, &len);
	if (r == -ENOENT)
		return *ret = NULL, 0;
	return r < 0 ? FAIL(s, r, "Failed to read %s in %s: %s", path, s->e.ctx->root->path, strerror(-r)) : 0;
}

static bool locked(const struct rinst *s, const char *locks, const char *name, const char *evr)
{
	return is_dnf(s) ? gb_dnf_versionlock_has(locks, name, evr) : gb_zypp_locks_has(locks, name);
}

/* rpm -q of the plan's packages: each one's installed version (the one
 * that satisfies it when several are) and whether it is locked there. */
static int query_before(struct rinst *s)
{
	const char *argv[GB_INSTALL_MAX_PKGS + 8] = { "rpm", "-q", "--qf", QF };
	struct gb_rpm_pkg got[MAX_FAMILY];
	_cleanup_free_ char *locks = NULL;
	size_t a = 4;
	int n, r;

	for (size_t i = 0; i < s->e.ret->n_pkgs; i++)
		argv[a++] = s->e.ret->pkgs[i].name;
	argv[a] = NULL;
	r = query(s, argv, true); /* exit status: how many are not installed */
	n = r < 0 ? r : gb_rpm_qf_parse(s->e.res->output, got, ARRAY_SIZE(got));
	if (n < 0)
		return r < 0 ? r : FAIL(s, n, "rpm -q printed what gpuboot cannot read");
	r = read_opt(s, is_dnf(s) ? VERSIONLOCK_LIST : ZYPP_LOCKS, REPO_MAX, &locks);
	for (size_t i = 0; r >= 0 && i < s->e.ret->n_pkgs; i++) {
		struct gb_install_pkg_result *p = &s->e.ret->pkgs[i];
		const struct gb_rpm_pkg *g = gb_rpm_pkg_find(got, (size_t)n, p->name, p->wanted);
		gb_strscpy(p->before, sizeof(p->before), g ? g->evr : "");
		p->held_before = g && locked(s, locks, p->name, g->evr);
	}
	return r;
}

/* rpm -qa of every package with "nvidia" in its name and the plan's. */
static int query_family(struct rinst *s)
{
	const char *argv[GB_INSTALL_MAX_PKGS + 8] = { "rpm", "-qa", "--qf", QF, "*nvidia*" };
	size_t a = 5;
	int n, r;

	for (size_t i = 0; i < s->e.ret->n_pkgs; i++)
		argv[a++] = s->e.ret->pkgs[i].name;
	argv[a] = NULL;
	r = query(s, argv, true);
	n = r < 0 ? r : gb_rpm_qf_parse(s->e.res->output, s->family, ARRAY_SIZE(s->family));
	if (n < 0)
		return r < 0 ? r : FAIL(s, n, "rpm -qa printed what gpuboot cannot read");
	s->n_family = (size_t)n;
	s->family_read = true;
	return 0;
}

/* A driver's version: "580.95.05", "595.84" (a first number of 100 or
 * more), not the Container Toolkit's "1.17.8" nor a kernel's. */
static bool driver_like(const char *evr)
{
	const char *v = strchr(evr, ':') ? strchr(evr, ':') + 1 : evr;
	char num[8];
	uint32_t major;
	size_t n = strspn(v, "0123456789");
	if (n == 0 || n >= sizeof(num) || v[n] != '.')
		return false;
	memcpy(num, v, n);
	num[n] = '\0';
	return gb_safe_atou32(num, 10, &major) == 0 && major >= 100;
}

/* At the driver's version: "3:595.84-1.el9" for 595.84, and SUSE's
 * kernel module packages, whose version carries the kernel's after "_k"
 * ("595.84_k5.14.21_150500.55.39-1"). */
static bool at_driver_version(const char *evr, const char *ver)
{
	const char *v = strchr(evr, ':') ? strchr(evr, ':') + 1 : evr;
	const char *k = gb_startswith(v, ver);
	return gb_rpm_version_matches(evr, ver) || (k && gb_startswith(k, "_k"));
}

static const struct gb_install_pkg_result *plan_pkg(const struct rinst *s, const char *name)
{
	for (size_t i = 0; i < s->e.ret->n_pkgs; i++)
		if (streq(s->e.ret->pkgs[i].name, name))
			return &s->e.ret->pkgs[i];
	return NULL;
}

/* The packages to lock: the plan's held ones, and every installed package
 * with "nvidia" in its name at the driver's version (the metapackage's
 * dependencies: nvidia-driver, kmod-nvidia-open-dkms, libnvidia-*...). */
static bool to_lock(const struct rinst *s, const struct gb_rpm_pkg *f)
{
	const struct gb_install_pkg_result *p = plan_pkg(s, f->name);
	const char *ver = s->e.in->driver_version;
	if (p)
		return p->hold && gb_rpm_version_matches(f->evr, p->wanted);
	return ver && ver[0] && strstr(f->name, "nvidia") && at_driver_version(f->evr, ver);
}

/* Is every package to lock locked? */
static int family_locked(struct rinst *s, bool *ret)
{
	_cleanup_free_ char *locks = NULL;
	int r = read_opt(s, is_dnf(s) ? VERSIONLOCK_LIST : ZYPP_LOCKS, REPO_MAX, &locks);
	*ret = r >= 0;
	for (size_t i = 0; r >= 0 && i < s->n_family; i++)
		if (to_lock(s, &s->family[i]) && !locked(s, locks, s->family[i].name, s->family[i].evr))
			*ret = false;
	return r;
}

/* nvidia.ko (compressed or not) for kver: DKMS puts it under extra/ on
 * RHEL and Amazon Linux, SUSE's KMPs under updates/; a few levels deep. */
static bool find_ko(struct rinst *s, const char *dir, unsigned depth, char *out, size_t outsz)
{
	char **ents = NULL, sub[512];
	size_t n = 0;
	bool found = false;

	for (size_t i = 0; gb_kmod_suffixes[i] && !found; i++) {
		snprintf(out, outsz, "%s/nvidia%s", dir, gb_kmod_suffixes[i]);
		found = gb_root_exists(s->e.ctx->root, out);
	}
	if (found || depth == 0 || gb_root_list_dir(s->e.ctx->root, dir, &ents, &n) < 0) {
		if (!found)
			out[0] = '\0';
		return found;
	}
	for (size_t i = 0; i < n && !found; i++)
		if (ents[i][0] != '.' && snprintf(sub, sizeof(sub), "%s/%s", dir, ents[i]) < (int)sizeof(sub))
			found = find_ko(s, sub, depth - 1, out, outsz);
	gb_strv_free(ents);
	if (!found)
		out[0] = '\0';
	return found;
}

/* In each of gb_module_dirs(GB_MODULES_RPM) in turn. */
static void find_module(struct rinst *s, const char *kver, char *out, size_t outsz)
{
	char dir[GB_INSTALL_KVER + 32];
	out[0] = '\0';
	for (const char *const *d = gb_module_dirs(GB_MODULES_RPM); *d; d++) {
		snprintf(dir, sizeof(dir), "lib/modules/%s/%s", kver, *d);
		if (find_ko(s, dir, 4, out, outsz))
			return;
	}
}

/* The module stream's state: enabled already, or another stream enabled
 * (refused: switching branches is NVIDIA's `dnf module switch-to`, not a
 * silent enable). */
static int module_state(struct rinst *s)
{
	_cleanup_free_ char *text = NULL;
	char path[128], stream[64];
	bool enabled;
	int r;

	if (!s->module[0])
		return 0;
	snprintf(path, sizeof(path), "etc/dnf/modules.d/%s.module", s->module);
	r = read_opt(s, path, 64 * 1024, &text);
	if (r < 0 || !text)
		return r;
	if (gb_dnf_module_parse(text, s->module, stream, &enabled) < 0)
		return FAIL(s, -EINVAL, "/%s names a stream gpuboot cannot read", path);
	if (enabled && stream[0] && !streq(stream, s->stream))
		return FAIL(s, -EEXIST,
		            "The module stream %s:%s is enabled (/%s), not the plan's %s; switching branches is "
		            "`dnf module switch-to %s:%s --allowerasing` (NVIDIA's guide, Advanced Options): do it, "
		            "or make the plan for %s, then run again",
		            s->module, stream, path, s->stream, s->module, s->stream, stream);
	s->module_enabled = enabled && streq(stream, s->stream);
	return 0;
}

static int key_state(struct rinst *s)
{
	const char *argv[] = { "rpm", "-q", "gpg-pubkey", "--qf", "%{VERSION}-%{RELEASE}\\n", NULL };
	int r = query(s, argv, false);
	if (r >= 0)
		s->key_imported = gb_rpm_pubkey_present(s->e.res->output, s->fpr);
	return r;
}

/* Everything in place (versions, module stream, key, locks, modules): nothing to run. */
static int satisfied(struct rinst *s, bool *ret)
{
	char ko[256];
	int r;

	*ret = false;
	for (size_t i = 0; i < s->e.ret->n_pkgs; i++)
		if (!gb_rpm_version_matches(s->e.ret->pkgs[i].before, s->e.ret->pkgs[i].wanted))
			return 0;
	if ((s->module[0] && !s->module_enabled) || !s->key_imported)
		return 0;
	for (size_t i = 0; i < s->e.n_kernels; i++) {
		find_module(s, s->e.kernels[i], ko, sizeof(ko));
		if (!ko[0])
			return 0;
	}
	r = query_family(s);
	return r < 0 ? r : family_locked(s, ret);
}

/* ---- the key and the repository ---- */

/* line names uri ("…/x86_64" or "…/x86_64/", not "…/x86_64-old"). */
static bool names_uri(const char *line, const char *uri)
{
	const char *u = strstr(line, uri);
	return u && strchr("/ \t", u[strlen(uri)]);
}

/* Another repo file with the same baseurl (NVIDIA's cuda-rhel9.repo, added
 * with `dnf config-manager --add-repo`; NVIDIA's nvidia-container-toolkit.repo,
 * whose baseurl ends in $basearch) would give the package manager two
 * definitions of one repository, the other trusting a key by URL:
 * refused, naming it. */
static int conflicting_repo(struct rinst *s, const char *dir)
{
	char **names = NULL, path[512], uri[520], alt[540], line[1024];
	size_t n = 0;
	int res = 0;

	gb_strscpy(uri, sizeof(uri), s->e.in->repo->uri);
	uri[strlen(uri) - 1] = '\0'; /* "…/x86_64" and "…/x86_64/" both match */
	snprintf(alt, sizeof(alt), "%.*s/$basearch", (int)(strrchr(uri, '/') - uri), uri);
	if (gb_root_list_dir(s->e.ctx->root, dir, &names, &n) < 0)
		n = 0;
	for (size_t i = 0; i < n && !res; i++) {
		_cleanup_free_ char *text = NULL;
		size_t len, ln = strlen(names[i]);
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		if (ln < 6 || !streq(names[i] + ln - 5, ".repo") || streq(path, s->repofile) ||
		    gb_root_read_file(s->e.ctx->root, path, REPO_MAX, &text, &len) < 0)
			continue;
		for (const char *p = text; *p && !res;) {
			size_t l = strcspn(p, "\n");
			snprintf(line, sizeof(line), "%.*s", (int)(l < sizeof(line) ? l : sizeof(line) - 1), p);
			p += l + (p[l] == '\n');
			gb_strstrip(line);
			if (!gb_startswith(line, "baseurl") || !(names_uri(line, uri) || names_uri(line, alt)))
				continue;
			res = FAIL(s, -EEXIST,
			           "The repository %s is already configured in /%s (NVIDIA's .repo file or by hand); "
			           "remove that file so gpuboot's, whose key is checked against the pinned "
			           "fingerprint, is the only one",
			           s->e.in->repo->uri, path);
		}
	}
	gb_strv_free(names);
	return res;
}

/* The bytes of the key file: the download when it came armored (with a
 * last newline: rpm, CentOS 8's at least, refuses armor without one), else
 * gpuboot's armor of the binary key. *ret malloc'd. */
static int key_text(const struct gb_pgp_key *k, const char *raw, size_t raw_len, char **ret, size_t *ret_len)
{
	char *t;
	if (!k->armored)
		return gb_pgp_armor(k->bin, k->bin_len, ret, ret_len);
	t = malloc(raw_len + 2);
	if (!t)
		return -ENOMEM;
	memcpy(t, raw, raw_len);
	*ret_len = raw_len;
	if (raw_len == 0 || raw[raw_len - 1] != '\n')
		t[(*ret_len)++] = '\n';
	t[*ret_len] = '\0';
	*ret = t;
	return 0;
}

/* The key file: downloaded and checked unless it already holds the pinned
 * key; kept armored (rpm --import reads only armor). Then its
 * fingerprint, for the gpg-pubkey check. */
static int key_file(struct rinst *s)
{
	_cleanup_free_ char *raw = NULL, *text = NULL, *data = NULL;
	struct gb_pgp_key k;
	size_t raw_len = 0, text_len = 0, len;
	char err[320];
	int r;

	if (!gb_repo_key_file_ok(s->e.ctx, s->keyfile, s->e.in->repo->key_pin)) {
		r = gb_repo_key_fetch(s->e.in->repo, &k, &raw, &raw_len, s->e.ret->error, sizeof(s->e.ret->error));
		if (r < 0)
			return r;
		r = key_text(&k, raw, raw_len, &text, &text_len);
		gb_pgp_key_free(&k);
		if (r >= 0)
			r = gb_journal_write_file(s->e.j, STAGE, s->keyfile, text, text_len, 0644);
		if (r < 0)
			return FAIL(s, r, "Failed to write the key /%s: %s", s->keyfile, strerror(-r));
		s->e.ret->sources_changed = true;
	}
	r = gb_root_read_file(s->e.ctx->root, s->keyfile, KEY_MAX, &data, &len);
	if (r >= 0)
		r = gb_pgp_key_read(data, len, &k, err, sizeof(err));
	if (r < 0)
		return FAIL(s, r, "Failed to read the key /%s back: %s", s->keyfile, strerror(-r));
	gb_strscpy(s->fpr, sizeof(s->fpr), k.fpr);
	gb_pgp_key_free(&k);
	return 0;
}

/* The repo file. Each package signed (CUDA's): gpgcheck=1, as NVIDIA's
 * cuda-<repo>.repo. Only repomd.xml signed (the Container Toolkit's; its
 * packages are checked by their sums in that metadata): repo_gpgcheck=1
 * and gpgcheck=0, as NVIDIA's nvidia-container-toolkit.repo; dnf reads
 * the key for repomd.xml from gpgkey=, zypper from rpm's database. */
static void repo_text(const struct rinst *s, char *text, size_t sz)
{
	const struct gb_apt_repo *repo = s->e.in->repo;
	bool meta = repo->signing == GB_REPO_SIGNS_METADATA;
	char head[256], check[64];

	if (meta)
		snprintf(head, sizeof(head),
		         "# Written by gpuboot: %s, its metadata (repomd.xml) signed by the key pinned in gpuboot's "
		         "catalog (%s).\n",
		         repo->id, repo->key_pin);
	else
		snprintf(head, sizeof(head),
		         "# Written by gpuboot: %s, signed by the key pinned in gpuboot's catalog (%s).\n", repo->id,
		         repo->key_pin);
	snprintf(check, sizeof(check), "%s", meta ? "gpgcheck=0\nrepo_gpgcheck=1\n" : "gpgcheck=1\n");
	if (is_dnf(s))
		snprintf(text, sz,
		         "%s[%s]\nname=%s\nbaseurl=%s\nenabled=1\nskip_if_unavailable=False\n%sgpgkey=file:///%s\n",
		         head, s->alias, s->alias, repo->uri, check, s->keyfile);
	else
		snprintf(text, sz,
		         "%s[%s]\nname=%s\nenabled=1\nautorefresh=1\nbaseurl=%s\ntype=rpm-md\n%sgpgkey=file:///%s\n",
		         head, s->alias, s->alias, repo->uri, check, s->keyfile);
}

static int repo_setup(struct rinst *s)
{
	const struct gb_apt_repo *repo = s->e.in->repo;
	const char *dir = is_dnf(s) ? DNF_REPO_DIR : ZYPP_REPO_DIR;
	char text[1600], id[160];
	int r;

	if (!gb_apt_repo_id_valid(repo->id) || !gb_repo_uri_valid(repo->uri) || !repo->key_url || !repo->key_pin ||
	    (repo->signing != GB_REPO_SIGNS_PACKAGES && repo->signing != GB_REPO_SIGNS_METADATA))
		return FAIL(s, -EINVAL, "The repository '%s' at '%s' is not usable (an https:// URI ending in '/')",
		            repo->id ? repo->id : "", repo->uri ? repo->uri : "");
	if (!gb_repo_key_find(repo->key_pin))
		return FAIL(s, -ENOKEY,
		            "No signing key is pinned for %s (%s): gpuboot trusts no repository key it has not "
		            "pinned; use the runfile method there",
		            repo->id, repo->key_pin);
	snprintf(s->keyfile, sizeof(s->keyfile), KEY_DIR "/RPM-GPG-KEY-gpuboot-%s", repo->id);
	snprintf(s->alias, sizeof(s->alias), "gpuboot-%s", repo->id);
	snprintf(s->repofile, sizeof(s->repofile), "%s/%s.repo", dir, s->alias);
	r = conflicting_repo(s, dir);
	if (r >= 0)
		r = key_file(s);
	if (r < 0)
		return r;
	repo_text(s, text, sizeof(text));
	r = gb_journal_write_file(s->e.j, STAGE, s->repofile, text, strlen(text), 0644);
	if (r < 0)
		return FAIL(s, r, "Failed to write /%s: %s", s->repofile, strerror(-r));
	snprintf(id, sizeof(id), "file:%s", s->repofile);
	if (gb_journal_step_changed(s->e.j, id))
		s->e.ret->sources_changed = true;
	return 0;
}

/* ---- effects ---- */

/* A journaled command, after the package managers' locks are free;
 * -EIO when it exits non-zero (its tail is in the journal and the error). */
static void add_missing(char *missing, size_t sz, size_t *o, const struct gb_install_pkg_result *p, const char *why)
{
	if (*o < sz)
		*o += (size_t)snprintf(missing + *o, sz - *o, "%s%s%s%s (%s)", *o ? ", " : "", p->name,
		                       p->wanted[0] ? " " : "", p->wanted, why);
}

/* dnf: each package's versions in the repositories (`dnf -q list
 * --showduplicates NAME-VERSION`); the newest that satisfies it is the
 * one installed. */
static int resolve_dnf(struct rinst *s, char *missing, size_t sz)
{
	struct gb_rpm_pkg v[24];
	char spec[GB_INSTALL_NAME + GB_INSTALL_VERSION + 2];
	size_t o = 0;

	for (size_t i = 0; i < s->e.ret->n_pkgs; i++) {
		struct gb_install_pkg_result *p = &s->e.ret->pkgs[i];
		const char *argv[] = { "dnf", "-q", "list", "--showduplicates", spec, NULL };
		const struct gb_rpm_pkg *best = NULL;
		int n, r;
		snprintf(spec, sizeof(spec), "%s%s%s", p->name, p->wanted[0] ? "-" : "", p->wanted);
		if (!p->wanted[0])
			argv[3] = spec,
			argv[4] = NULL; /* the newest only: every version of an unpinned package is too many */
		r = query(s, argv, true);
		if (r < 0)
			return r;
		n = gb_dnf_list_parse(s->e.res->output, p->name, v, ARRAY_SIZE(v));
		if (n < 0)
			return FAIL(s, n, "dnf list %s printed what gpuboot cannot read", spec);
		for (int k = 0; k < n; k++)
			if (gb_rpm_version_matches(v[k].evr, p->wanted) &&
			    (!best || gb_rpm_evr_cmp(v[k].evr, best->evr) > 0))
				best = &v[k];
		if (!best) {
			add_missing(missing, sz, &o, p, n > 0 ? "not this version" : "no such package or version");
			continue;
		}
		gb_strscpy(p->resolved, sizeof(p->resolved), best->evr);
		gb_strscpy(p->suite, sizeof(p->suite), best->repo[0] == '@' ? best->repo + 1 : best->repo);
	}
	return 0;
}

/* argv: the verb's words, then each package as NAME-EVR (dnf: the
 * resolved version) or NAME=VERSION (zypper: the plan's). */
static size_t pkg_argv(struct rinst *s, const char **argv, size_t n, char (*buf)[GB_INSTALL_NAME + GB_INSTALL_VERSION])
{
	for (size_t i = 0; i < s->e.ret->n_pkgs; i++) {
		const struct gb_install_pkg_result *p = &s->e.ret->pkgs[i];
		const char *v = is_dnf(s) ? evr_plain(p->resolved) : p->wanted;
		if (v[0])
			snprintf(buf[i], sizeof(buf[i]), "%s%s%s", p->name, is_dnf(s) ? "-" : "=", v);
		else
			snprintf(buf[i], sizeof(buf[i]), "%s", p->name);
		argv[n++] = buf[i];
	}
	argv[n] = NULL;
	return n;
}

/* zypper: a dry run of the install (`--dry-run`) says which request no
 * repository can satisfy ("No provider of 'NAME = VERSION' found."). */
static int resolve_zypper(struct rinst *s, char *missing, size_t sz)
{
	static char buf[GB_INSTALL_MAX_PKGS][GB_INSTALL_NAME + GB_INSTALL_VERSION];
	const char *argv[GB_INSTALL_MAX_PKGS + 12] = { "zypper",  "--non-interactive", "--no-refresh",
		                                       "install", "--dry-run",         "--auto-agree-with-licenses" };
	size_t o = 0;
	int r;

	pkg_argv(s, argv, 6, buf);
	r = query(s, argv, false);
	if (r < 0)
		return r;
	if (WIFEXITED(s->e.res->status) && WEXITSTATUS(s->e.res->status) == 0) {
		for (size_t i = 0; i < s->e.ret->n_pkgs; i++)
			gb_strscpy(s->e.ret->pkgs[i].resolved, sizeof(s->e.ret->pkgs[i].resolved),
			           s->e.ret->pkgs[i].wanted);
		return 0;
	}
	for (size_t i = 0; i < s->e.ret->n_pkgs; i++)
		if (gb_zypper_missing(s->e.res->output, s->e.ret->pkgs[i].name))
			add_missing(missing, sz, &o, &s->e.ret->pkgs[i], "no such package or version");
	if (!missing[0]) {
		char esc[700];
		gb_log_escape(esc, sizeof(esc),
		              s->e.res->output_len > 300 ? s->e.res->output + s->e.res->output_len - 300
		                                         : s->e.res->output);
		return FAIL(s, -EIO, "zypper's dry run of the install failed (exit status %d): %s",
		            WIFEXITED(s->e.res->status) ? WEXITSTATUS(s->e.res->status) : -1, esc);
	}
	return 0;
}

/* Every package at a version the repositories have, before anything is
 * installed; a missing one is a refusal naming all that are missing. */
static int resolve(struct rinst *s)
{
	char missing[512] = "";
	int r = is_dnf(s) ? resolve_dnf(s, missing, sizeof(missing)) : resolve_zypper(s, missing, sizeof(missing));
	if (r < 0)
		return r;
	if (missing[0])
		return FAIL(s, -ENOPKG, "Not in %s or the system's repositories: %s; nothing was installed",
		            s->e.in->repo->uri, missing);
	return 0;
}

/* Locks of an earlier run on packages this install changes: an installed
 * driver package at another driver version, or a plan package not at its
 * version. Lifted first (dnf versionlock delete NAME, zypper removelock
 * NAME); the new versions are locked after the install. */
static int lift_locks(struct rinst *s)
{
	static char names[MAX_FAMILY][GB_INSTALL_NAME];
	_cleanup_free_ char *locks = NULL;
	const char *argv[MAX_FAMILY + 8];
	const char *ver = s->e.in->driver_version ? s->e.in->driver_version : "";
	size_t a, n = 0;
	int r = read_opt(s, is_dnf(s) ? VERSIONLOCK_LIST : ZYPP_LOCKS, REPO_MAX, &locks);

	if (r < 0 || !locks)
		return r;
	for (size_t i = 0; i < s->n_family + s->e.ret->n_pkgs && n < MAX_FAMILY; i++) {
		const char *name, *evr;
		bool stale;
		if (i < s->n_family) {
			const struct gb_install_pkg_result *p = plan_pkg(s, s->family[i].name);
			name = s->family[i].name, evr = s->family[i].evr;
			stale = p ? !gb_rpm_version_matches(evr, p->wanted)
			          : ver[0] && driver_like(evr) && !at_driver_version(evr, ver);
		} else {
			name = s->e.ret->pkgs[i - s->n_family].name, evr = s->e.ret->pkgs[i - s->n_family].before;
			stale = evr[0] && !gb_rpm_version_matches(evr, s->e.ret->pkgs[i - s->n_family].wanted);
		}
		if (!stale || !(is_dnf(s) ? gb_dnf_versionlock_names(locks, name) : gb_zypp_locks_has(locks, name)))
			continue;
		bool dup = false;
		for (size_t k = 0; k < n && !dup; k++)
			dup = streq(names[k], name);
		if (!dup)
			gb_strscpy(names[n++], GB_INSTALL_NAME, name);
	}
	if (n == 0)
		return 0;
	a = 0;
	if (is_dnf(s))
		argv[a++] = "dnf", argv[a++] = "versionlock", argv[a++] = "delete";
	else
		argv[a++] = "zypper", argv[a++] = "--non-interactive", argv[a++] = "removelock";
	for (size_t k = 0; k < n; k++)
		argv[a++] = names[k];
	argv[a] = NULL;
	return gb_pkg_effect(&s->e, is_dnf(s) ? "dnf-versionlock-delete" : "zypper-removelock", argv, SHORT_TIMEOUT_MS);
}

/* After the install: every driver package at the driver's version (a
 * package at another driver version is a split the locks would keep). */
static int check_split(struct rinst *s)
{
	const char *ver = s->e.in->driver_version;
	if (!ver || !ver[0])
		return 0;
	for (size_t i = 0; i < s->n_family; i++) {
		const struct gb_rpm_pkg *f = &s->family[i];
		if (strstr(f->name, "nvidia") && driver_like(f->evr) && !at_driver_version(f->evr, ver) &&
		    !plan_pkg(s, f->name))
			return FAIL(s, -EIO,
			            "After %s install, %s is at %s, not the driver's %s: the userspace and the kernel "
			            "module would be split; nothing was locked",
			            pm_name(s), f->name, f->evr, ver);
	}
	return 0;
}

/* Lock every package to lock that is not locked yet: dnf versionlock add
 * NAME-EVR (written as NAME-EPOCH:VERSION-RELEASE.*), zypper addlock NAME. */
static int add_locks(struct rinst *s)
{
	static char specs[MAX_FAMILY][GB_INSTALL_NAME + GB_INSTALL_VERSION];
	_cleanup_free_ char *locks = NULL;
	const char *argv[MAX_FAMILY + 8];
	size_t a = 0, n = 0;
	int r = read_opt(s, is_dnf(s) ? VERSIONLOCK_LIST : ZYPP_LOCKS, REPO_MAX, &locks);

	if (r < 0)
		return r;
	if (is_dnf(s))
		argv[a++] = "dnf", argv[a++] = "versionlock", argv[a++] = "add";
	else
		argv[a++] = "zypper", argv[a++] = "--non-interactive", argv[a++] = "addlock";
	for (size_t i = 0; i < s->n_family; i++) {
		const struct gb_rpm_pkg *f = &s->family[i];
		bool dup = false;
		if (!to_lock(s, f) || locked(s, locks, f->name, f->evr))
			continue;
		if (is_dnf(s))
			snprintf(specs[n], sizeof(specs[n]), "%s-%s", f->name, f->evr);
		else
			snprintf(specs[n], sizeof(specs[n]), "%s", f->name);
		for (size_t k = 0; k < n && !dup; k++)
			dup = streq(specs[k], specs[n]);
		if (!dup)
			argv[a++] = specs[n++];
	}
	argv[a] = NULL;
	if (n == 0)
		return 0;
	return gb_pkg_effect(&s->e, is_dnf(s) ? "dnf-versionlock-add" : "zypper-addlock", argv, SHORT_TIMEOUT_MS);
}

/* dnf: before the install, every package with "nvidia" in its name that
 * the repositories have at the driver's version is versionlocked there
 * (`dnf versionlock add '*nvidia*-VERSION-*'`, the plugin writing each
 * NAME-EPOCH:VERSION-RELEASE.*). The plan names only the metapackage; a
 * loose dependency of it (cuda-drivers' "nvidia-driver-cuda >= 3:V") is
 * resolved by dnf to the newest version the enabled stream has, every
 * module version of a stream being active: real dnf 4.14 installed
 * 580.199.01's nvidia-driver-cuda under cuda-drivers 580.173.02
 * (vm-tests/image-rpm.sh). The locks make the resolver keep the whole
 * family at the driver's version, as the apt pin does. */
static int prelock_family(struct rinst *s)
{
	char glob[GB_INSTALL_VERSION + 16];
	const char *argv[] = { "dnf", "versionlock", "add", glob, NULL };
	const char *ver = s->e.in->driver_version;

	if (!is_dnf(s) || s->e.in->userspace_only || !ver || !ver[0])
		return 0;
	if (snprintf(glob, sizeof(glob), "*nvidia*-%s-*", ver) >= (int)sizeof(glob))
		return FAIL(s, -EINVAL, "The driver version '%s' is too long", ver);
	/* the versionlock command is a plugin a fresh RHEL does not have yet
	 * ("No such command: versionlock"): installed first, alone */
	if (!gb_root_exists(s->e.ctx->root, VERSIONLOCK_CONF)) {
		const char *pv[] = { "dnf", "-y", "install", VERSIONLOCK_PLUGIN, NULL };
		int r = gb_pkg_effect(&s->e, "dnf-install-versionlock", pv,
		                      s->e.in->apt_timeout_ms ? s->e.in->apt_timeout_ms : DEFAULT_INSTALL_MS);
		if (r < 0)
			return r;
	}
	return gb_pkg_effect(&s->e, "dnf-versionlock-family", argv, SHORT_TIMEOUT_MS);
}

static int install_pkgs(struct rinst *s)
{
	static char buf[GB_INSTALL_MAX_PKGS][GB_INSTALL_NAME + GB_INSTALL_VERSION];
	const char *argv[GB_INSTALL_MAX_PKGS + 8];
	unsigned ms = s->e.in->apt_timeout_ms ? s->e.in->apt_timeout_ms : DEFAULT_INSTALL_MS;
	size_t a = 0;
	int r;

	if (is_dnf(s))
		argv[a++] = "dnf", argv[a++] = "-y", argv[a++] = "install";
	else
		argv[a++] = "zypper", argv[a++] = "--non-interactive", argv[a++] = "install",
		argv[a++] = "--auto-agree-with-licenses";
	pkg_argv(s, argv, a, buf);
	r = gb_pkg_effect(&s->e, is_dnf(s) ? "dnf-install" : "zypper-install", argv, ms);
	s->e.ret->packages_changed = true;
	return r;
}

/* An rpm transaction killed half-way (power, OOM, a Packer timeout) leaves
 * the old and the new version of what it upgraded both in rpm's database;
 * dnf then refuses to go on with them ("package ... is a duplicate").
 * Read only: s->duplicates names them ("nvidia-driver 3:595.80-1.el9 and
 * 3:595.84-1.el9"). Kernels and their -devel are installed side by side on
 * purpose: never duplicates. The pid locks of a package manager that died
 * are no lock (gb_rpm_lock_wait). */
static int rpm_audit(struct rinst *s)
{
	size_t o = 0;
	int r = query_family(s);

	s->duplicates[0] = '\0';
	if (r < 0)
		return r;
	for (size_t i = 0; i < s->n_family; i++)
		for (size_t k = i + 1; k < s->n_family; k++) {
			const struct gb_rpm_pkg *a = &s->family[i], *b = &s->family[k];
			if (!streq(a->name, b->name) || streq(a->evr, b->evr) || !streq(a->arch, b->arch) ||
			    gb_startswith(a->name, "kernel") || o >= sizeof(s->duplicates) - 1)
				continue;
			o += (size_t)snprintf(s->duplicates + o, sizeof(s->duplicates) - o, "%s%s %s and %s",
			                      o ? ", " : "", a->name, a->evr, b->evr);
		}
	return 0;
}

/* rpm -V with every attribute check off: only files that are gone. */
#define RPM_V_FLAGS                                                                                                \
	"rpm", "-V", "--nodeps", "--noscripts", "--nofiledigest", "--nosize", "--nomtime", "--nomode", "--nordev", \
	    "--nouser", "--nogroup", "--nolinkto", "--nocaps"
#define RPM_V_NFLAGS 13

/* rpm -V of names (NULL-terminated after the flags) printed a "missing" line? */
static int verify_missing(struct rinst *s, const char *const *argv, bool *ret)
{
	int r = query(s, argv, false);
	*ret = false;
	if (r < 0)
		return r;
	for (const char *l = s->e.res->output; l && *l && !*ret; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		*ret = gb_startswith(l, "missing ") != NULL;
	return 0;
}

/* rpm -V of each plan package at its version: a file rpm installed and
 * that is gone (a kill inside the transaction, a disk repaired after a
 * power cut, a hand's rm) makes the package damaged; only the "missing"
 * lines count (attributes an admin may change are not checked). Read only:
 * s->damaged. */
static int rpm_verify(struct rinst *s)
{
	const char *argv[RPM_V_NFLAGS + GB_INSTALL_MAX_PKGS + 1] = { RPM_V_FLAGS };
	size_t a = RPM_V_NFLAGS, o = 0;
	bool missing;
	int r;

	s->damaged[0] = '\0';
	for (size_t i = 0; i < s->e.ret->n_pkgs && a < ARRAY_SIZE(argv) - 1; i++) {
		const struct gb_install_pkg_result *p = &s->e.ret->pkgs[i];
		if (p->before[0] && gb_rpm_version_matches(p->before, p->wanted))
			argv[a++] = p->name; /* not there: the install puts it on whole */
	}
	argv[a] = NULL;
	if (a == RPM_V_NFLAGS)
		return 0;
	/* one query for all (a rerun's whole cost); only when something is
	 * missing, one per package to say which (rpm -V names no package) */
	r = verify_missing(s, argv, &missing);
	for (size_t i = RPM_V_NFLAGS; r >= 0 && missing && argv[i]; i++) {
		const char *one[RPM_V_NFLAGS + 2] = { RPM_V_FLAGS, argv[i], NULL };
		bool m;
		r = verify_missing(s, one, &m);
		if (r >= 0 && m && o + strlen(argv[i]) + 2 < sizeof(s->damaged))
			o += (size_t)snprintf(s->damaged + o, sizeof(s->damaged) - o, "%s%s", o ? " " : "", argv[i]);
	}
	return r < 0 ? r : 0;
}

/* The damaged packages reinstalled at the version they are at (dnf -y
 * reinstall, zypper install --force with their locks lifted first: a
 * zypper lock refuses even the same version), journaled, said. */
static int rpm_reinstall(struct rinst *s)
{
	static char names[GB_INSTALL_MAX_PKGS][GB_INSTALL_NAME];
	const char *argv[GB_INSTALL_MAX_PKGS + 8];
	const char *unlock[GB_INSTALL_MAX_PKGS + 8];
	char id[128], list[sizeof(s->damaged)];
	size_t a = 0, u = 0, n = 0;
	int r = 0;

	_cleanup_free_ char *locks = NULL;

	gb_strscpy(list, sizeof(list), s->damaged);
	if (!is_dnf(s) && (r = read_opt(s, ZYPP_LOCKS, REPO_MAX, &locks)) < 0)
		return r;
	if (is_dnf(s))
		argv[a++] = "dnf", argv[a++] = "-y", argv[a++] = "reinstall";
	else {
		argv[a++] = "zypper", argv[a++] = "--non-interactive", argv[a++] = "install", argv[a++] = "--force";
		unlock[u++] = "zypper", unlock[u++] = "--non-interactive", unlock[u++] = "removelock";
	}
	for (char *save = NULL, *w = strtok_r(list, " ", &save); w && n < GB_INSTALL_MAX_PKGS;
	     w = strtok_r(NULL, " ", &save)) {
		gb_strscpy(names[n], sizeof(names[n]), w);
		argv[a++] = names[n];
		if (!is_dnf(s) && locks && gb_zypp_locks_has(locks, names[n]))
			unlock[u++] = names[n];
		n++;
	}
	argv[a] = NULL, unlock[u] = NULL;
	gb_log_warning("files of %s are missing in %s (rpm -V): reinstalling them at their version", s->damaged,
	               s->e.ctx->root->path);
	if (u > 3) {
		gb_journal_repeat_id(s->e.j, "zypper-removelock-damaged", id, sizeof(id));
		r = gb_pkg_effect(&s->e, id, unlock, SHORT_TIMEOUT_MS);
	}
	gb_journal_repeat_id(s->e.j, is_dnf(s) ? "dnf-reinstall" : "zypper-install-force", id, sizeof(id));
	if (r >= 0)
		r = gb_pkg_effect(&s->e, id, argv, DEFAULT_INSTALL_MS);
	if (r < 0)
		return r;
	snprintf(s->e.ret->recovered, sizeof(s->e.ret->recovered),
	         "files of %s were missing (rpm -V): reinstalled by %s", s->damaged,
	         is_dnf(s) ? "dnf reinstall" : "zypper install --force");
	s->e.ret->packages_changed = true;
	s->family_read = false;
	return 0;
}

/* dnf's own repair of an interrupted upgrade: remove --duplicates (the
 * older of each pair, without its scriptlets' side effects on the newer),
 * journaled; zypper has none, and the error says what to run. */
static int rpm_recover(struct rinst *s)
{
	const char *dedupe[] = { "dnf", "-y", "remove", "--duplicates", NULL };
	char id[128], found[sizeof(s->duplicates)];
	int r;

	gb_strscpy(found, sizeof(found), s->duplicates);
	if (!is_dnf(s))
		return FAIL(s, -EIO,
		            "rpm's database in %s holds two versions of %s: an upgrade was interrupted; zypper has no "
		            "repair for it: remove the older with rpm -e --noscripts NAME-VERSION, then run again",
		            s->e.ctx->root->path, found);
	gb_log_warning("rpm's database in %s holds two versions of %s (an upgrade was interrupted): repairing it "
	               "the package manager's way (dnf remove --duplicates)",
	               s->e.ctx->root->path, found);
	gb_journal_repeat_id(s->e.j, "dnf-remove-duplicates", id, sizeof(id));
	r = gb_pkg_effect(&s->e, id, dedupe, DEFAULT_INSTALL_MS);
	if (r < 0)
		return r;
	snprintf(s->e.ret->recovered, sizeof(s->e.ret->recovered),
	         "rpm held two versions of %s (an interrupted upgrade): repaired by dnf remove --duplicates", found);
	s->e.ret->packages_changed = true;
	s->family_read = false;
	return 0;
}

/* A dnf or zypper command that failed because it refused the repository's
 * metadata or a package's signature (a tampered or foreign mirror):
 * refused as a verification failure (exit 13), the line that says it in
 * the error. The dnf repo file sets skip_if_unavailable=False: where
 * dnf.conf says True (Debian's does; an admin's may), dnf would otherwise
 * skip the refused repository and the failure would read "no such
 * package". zypper (libzypp 17) says "Signature verification failed for
 * file 'repomd.xml' from repository …", "File '…' from repository '…' is
 * unsigned." or "Digest verification failed for file …", and its refresh
 * exits 4 ("Skipping repository … because of the above error"): real
 * zypper 1.14 in vm-tests/image-rpm-sles15.sh. */
static int pm_refused(struct rinst *s, int r)
{
	static const char *const signs[] = { "GPG signature verification error",
		                             "Checksum doesn't match",
		                             "GPG check FAILED",
		                             "is not signed",
		                             "Public key for",
		                             "Signature verification failed",
		                             "is unsigned",
		                             "Digest verification failed" };
	const char *why = NULL, *out = s->e.res->output;
	char line[200];

	for (size_t i = 0; out && i < ARRAY_SIZE(signs) && !why; i++)
		why = strstr(out, signs[i]);
	if (r >= 0 || !why)
		return r;
	while (why > out && why[-1] != '\n')
		why--;
	snprintf(line, sizeof(line), "%.*s", (int)strcspn(why, "\n"), why);
	return FAIL(s, -EKEYREJECTED, "%s refused %s (%s): nothing was installed from it; check the mirror", pm_name(s),
	            s->e.in->repo->uri, line);
}

/* The commands, in order: the key into rpm's database, the module stream
 * (dnf) or a refresh of the repository (zypper), the resolution, the
 * blacklist, stale locks lifted, the driver's family locked at its
 * version (dnf), the install, the check, the locks. A repository that
 * signs its metadata is fetched first on dnf with -y: dnf asks before it
 * puts the key of gpgkey= into that repository's keyring (for
 * repomd.xml), and the queries after it must not be asked. */
static int rpm_install(struct rinst *s)
{
	char key[200], ms[160], repo[120];
	const char *import[] = { "rpm", "--import", key, NULL };
	const char *module[] = { "dnf", "-y", "module", "enable", ms, NULL };
	const char *makecache[] = { "dnf", "-y", "makecache", repo, NULL };
	const char *refresh[] = { "zypper", "--non-interactive", "refresh", NULL };
	bool versions_ok = true;
	int r = 0;

	snprintf(key, sizeof(key), "/%s", s->keyfile);
	snprintf(ms, sizeof(ms), "%s:%s", s->module, s->stream);
	snprintf(repo, sizeof(repo), "--repo=%s", s->alias);
	if (s->duplicates[0])
		r = rpm_recover(s);
	if (r >= 0 && !s->key_imported)
		r = gb_pkg_effect(&s->e, "rpm-import", import, SHORT_TIMEOUT_MS);
	if (r >= 0 && s->module[0] && !s->module_enabled)
		r = gb_pkg_effect(&s->e, "dnf-module-enable", module, REFRESH_TIMEOUT_MS);
	if (r >= 0 && is_dnf(s) && s->e.in->repo->signing == GB_REPO_SIGNS_METADATA)
		r = gb_pkg_effect(&s->e, "dnf-makecache", makecache, REFRESH_TIMEOUT_MS);
	if (r >= 0 && !is_dnf(s))
		r = gb_pkg_effect(&s->e, "zypper-refresh", refresh, REFRESH_TIMEOUT_MS);
	if (r >= 0 && s->damaged[0]) /* from the repository, its key imported and its metadata fresh */
		r = rpm_reinstall(s);
	/* every version in place (only a lock or the key missing): nothing to install */
	for (size_t i = 0; i < s->e.ret->n_pkgs; i++)
		versions_ok &= gb_rpm_version_matches(s->e.ret->pkgs[i].before, s->e.ret->pkgs[i].wanted);
	if (r >= 0 && !versions_ok)
		r = resolve(s);
	if (r >= 0)
		r = gb_pkg_write_blacklist(&s->e);
	if (r >= 0)
		r = query_family(s);
	if (r >= 0 && !versions_ok)
		r = lift_locks(s);
	if (r >= 0 && !versions_ok)
		r = prelock_family(s);
	if (r >= 0 && !versions_ok)
		r = install_pkgs(s);
	if (r >= 0 && !versions_ok)
		r = query_family(s);
	if (r >= 0)
		r = check_split(s);
	return r < 0 ? pm_refused(s, r) : add_locks(s);
}

/* After: every package at its version (the resolved one, on dnf) and
 * locked as asked. */
static int check_after(struct rinst *s)
{
	_cleanup_free_ char *locks = NULL;
	int r = s->family_read ? 0 : query_family(s);

	if (r >= 0)
		r = read_opt(s, is_dnf(s) ? VERSIONLOCK_LIST : ZYPP_LOCKS, REPO_MAX, &locks);
	for (size_t i = 0; r >= 0 && i < s->e.ret->n_pkgs; i++) {
		struct gb_install_pkg_result *p = &s->e.ret->pkgs[i];
		const struct gb_rpm_pkg *f = gb_rpm_pkg_find(s->family, s->n_family, p->name, p->wanted);
		gb_strscpy(p->after, sizeof(p->after), f ? f->evr : "");
		if (!p->resolved[0])
			gb_strscpy(p->resolved, sizeof(p->resolved), p->after);
		if (!gb_rpm_version_matches(p->after, p->wanted) ||
		    (is_dnf(s) && p->resolved[0] && gb_rpm_evr_cmp(p->after, p->resolved) != 0))
			return FAIL(s, -EIO, "After %s install, %s is at '%s', not %s", pm_name(s), p->name, p->after,
			            p->resolved[0] ? p->resolved : p->wanted);
		p->held_after = locked(s, locks, p->name, p->after);
		if (p->hold && !p->held_after)
			return FAIL(s, -EIO, "After %s, %s is not locked at %s",
			            is_dnf(s) ? "dnf versionlock" : "zypper addlock", p->name, p->after);
	}
	return r;
}

/* ---- the rpm backend (dnf, zypper) ---- */

static int rpm_os(struct gb_pkg_engine *e)
{
	return os_release((struct rinst *)e);
}

static int rpm_list(struct gb_pkg_engine *e)
{
	return build_list((struct rinst *)e);
}

static int rpm_before(struct gb_pkg_engine *e)
{
	return query_before((struct rinst *)e);
}

/* The stream (a refusal before anything is written), the repository and
 * its key, what a killed rpm left (a package at two versions, files
 * missing); done when none of that needs work and everything is in place. */
static int rpm_prepare(struct gb_pkg_engine *e, bool *ret_done)
{
	struct rinst *s = (struct rinst *)e;
	int r = module_state(s);

	*ret_done = false;
	if (r >= 0)
		r = repo_setup(s);
	if (r >= 0)
		r = key_state(s);
	if (r >= 0)
		r = rpm_audit(s);
	if (r >= 0 && !s->duplicates[0])
		r = rpm_verify(s);
	if (r >= 0 && !s->duplicates[0] && !s->damaged[0])
		r = satisfied(s, ret_done);
	if (r >= 0 && !*ret_done)
		s->family_read = false;
	return r;
}

/* Everything is there: the blacklist is made sure of (unchanged on a
 * rerun), no command runs. */
static int rpm_settle(struct gb_pkg_engine *e)
{
	return gb_pkg_write_blacklist(e);
}

static int rpm_install_op(struct gb_pkg_engine *e)
{
	return rpm_install((struct rinst *)e);
}

static int rpm_after(struct gb_pkg_engine *e)
{
	return check_after((struct rinst *)e);
}

static void rpm_find_module(struct gb_pkg_engine *e, const char *kver, char *out, size_t outsz)
{
	find_module((struct rinst *)e, kver, out, outsz);
}

static int rpm_no_module(struct gb_pkg_engine *e, const char *kver)
{
	return FAIL((struct rinst *)e, -ENOENT,
	            "No nvidia.ko for the kernel %s under lib/modules/%s/extra or updates in %s; DKMS's log is "
	            "under var/lib/dkms/",
	            kver, kver, e->ctx->root->path);
}

static const struct gb_pkg_backend rpm_backend = {
	.name = "rpm",
	.state_size = sizeof(struct rinst),
	.lock_wait = gb_rpm_lock_wait,
	.query_timeout_ms = QUERY_TIMEOUT_MS,
	.os = rpm_os,
	.list = rpm_list,
	.before = rpm_before,
	.prepare = rpm_prepare,
	.settle = rpm_settle,
	.install = rpm_install_op,
	.after = rpm_after,
	.find_module = rpm_find_module,
	.no_module = rpm_no_module,
};

int gb_install_rpm(struct gb_ctx *ctx, const struct gb_install_input *in, struct gb_journal *j,
                   struct gb_install_result *ret)
{
	return gb_pkg_engine_run(&rpm_backend, ctx, in, j, ret);
}
