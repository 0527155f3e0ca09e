/* SPDX-License-Identifier: MIT */
/* The apt engine of two methods. "distro" on Debian: the archive's own
 * NVIDIA packages (contrib, non-free, non-free-firmware), every one at the
 * driver version the plan chose, the kernel headers of the root's kernels
 * so DKMS builds for them, then held. "packages" on Debian and Ubuntu:
 * the same steps against NVIDIA's repository (apt-repo.c adds it, its key
 * pinned by fingerprint), the plan's packages, the pin and the holds; the
 * Container Toolkit is this method too, userspace only. What it does to a
 * machine, file by file and command by command, and how to undo it:
 * docs/install.md. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "catalog/catalog.h"
#include "context.h"
#include "detect/detect.h"
#include "install-internal.h"
#include "effect/journal.h"
#include "shared/fileio.h"
#include "shared/log.h"
#include "shared/macro.h"
#include "shared/ops.h"
#include "effect/root-write.h"
#include "shared/root.h"
#include "shared/util.h"

#define STAGE "install"
#define QUERY_TIMEOUT_MS (2 * 60 * 1000)
#define UPDATE_TIMEOUT_MS (15 * 60 * 1000)
#define MARK_TIMEOUT_MS (2 * 60 * 1000)
#define DEFAULT_APT_MS (60 * 60 * 1000)

#define PIN_DIR "etc/apt/preferences.d"
#define UU_DIR "etc/apt/apt.conf.d"

/* What DKMS names the module with NVIDIA's packages: "nvidia" (Ubuntu's
 * nvidia-dkms-<branch>[-open], the runfile's DKMS tree) or Debian's names
 * (NVIDIA's debian12/13 packages follow Debian's packaging). */
static const char *const nvidia_repo_modules[] = { "nvidia", "nvidia-current", "nvidia-current-open" };
/* The binaries of NVIDIA's driver in its apt repositories, for the version
 * pin (apt_preferences(5) globs). The Container Toolkit's own pin file
 * sorts first and names its packages exactly. */
static const char *const nvidia_repo_pin =
    "cuda-drivers* nvidia-* libnvidia-* libcuda* libnvcuvid* libnvoptix* libxnvctrl* firmware-nvidia-* "
    "xserver-xorg-video-nvidia* libgl1-nvidia-* libegl-nvidia* libgles-nvidia* libglx-nvidia* libnvidia*";
/* The source packages whose binaries must all stay at the driver's version (Debian). */
static const char *const debian_pin_sources = "src:nvidia-graphics-drivers src:nvidia-open-gpu-kernel-modules";

struct inst {
	struct gb_pkg_engine e; /* first: the walk's state (install-internal.h) */
	const char *module; /* the module file DKMS builds, without .ko (distro) */
	bool packages; /* the packages method (NVIDIA's repository) */
	bool kernel; /* prepare's newer kernel (GB_INSTALL_KERNEL): no driver, pin, hold or module */
	char interrupted[160]; /* why dpkg needs repairing first (dpkg_audit), "" when it does not */
	char unreachable[256]; /* the first source apt-get update could not fetch, "" when none */
	struct {
		const char *path;
		char *text; /* the file as it was before this run enabled the components */
		size_t len;
		mode_t mode;
	} undo[2]; /* the Debian sources files this run changed */
	size_t n_undo;
};

#define FAIL(s, r, ...) (snprintf((s)->e.ret->error, sizeof((s)->e.ret->error), __VA_ARGS__), (r))

static int os_release(struct inst *s)
{
	struct gb_os_release osr;
	int r = gb_os_release_read(s->e.ctx, &osr);
	const struct gb_os *os;

	if (r < 0)
		return FAIL(s, r, "Failed to read os-release in %s: %s", s->e.ctx->root->path, strerror(-r));
	gb_strscpy(s->e.ret->distro, sizeof(s->e.ret->distro), osr.id);
	gb_strscpy(s->e.ret->codename, sizeof(s->e.ret->codename), osr.version_codename);
	os = gb_os_find(osr.id);
	if ((s->packages || s->kernel) && os && os->pkgmgr == GB_PKGMGR_APT)
		return 0;
	if (s->kernel)
		return FAIL(s, -EOPNOTSUPP, "A newer kernel is installed with apt here; %s is '%s', which has not apt",
		            s->e.ctx->root->path, s->e.ret->distro);
	if (s->packages)
		return FAIL(s, -EOPNOTSUPP,
		            "The packages method on %s ('%s') needs dnf or zypper, which this version does not drive; "
		            "use the runfile method",
		            s->e.ctx->root->path, s->e.ret->distro);
	if (!streq(s->e.ret->distro, "debian") || !gb_deb_name_valid(s->e.ret->codename))
		return FAIL(s, -EOPNOTSUPP,
		            "The distro method installs Debian's packages; %s is '%s' '%s' (use the packages or "
		            "runfile method)",
		            s->e.ctx->root->path, s->e.ret->distro, s->e.ret->codename);
	return 0;
}

static int add_pkg(struct inst *s, const char *name, const char *version, bool hold)
{
	struct gb_install_pkg_result *p;
	for (size_t i = 0; i < s->e.ret->n_pkgs; i++)
		if (streq(s->e.ret->pkgs[i].name, name))
			return 0;
	if (s->e.ret->n_pkgs >= GB_INSTALL_MAX_PKGS)
		return FAIL(s, -E2BIG, "More than %d packages to install", GB_INSTALL_MAX_PKGS);
	if (!gb_deb_name_valid(name) || (version[0] && !gb_deb_version_valid(version)))
		return FAIL(s, -EINVAL, "'%s' '%s' is not a package name and version", name, version);
	p = &s->e.ret->pkgs[s->e.ret->n_pkgs++];
	gb_strscpy(p->name, sizeof(p->name), name);
	gb_strscpy(p->wanted, sizeof(p->wanted), version);
	p->hold = hold;
	return 0;
}

static int query(struct inst *s, const char *const *argv)
{
	return gb_pkg_query(&s->e, argv, true);
}

/* dpkg-query for every package (and extra names); before or after. */
static int query_installed(struct inst *s, const char *const *extra, size_t n_extra, bool after)
{
	const char *argv[GB_INSTALL_MAX_PKGS + 8] = { "dpkg-query", "-W", "-f",
		                                      "${Package}\\t${Version}\\t${Status}\\n" };
	size_t n = 4;
	int r;

	for (size_t i = 0; i < s->e.ret->n_pkgs; i++)
		argv[n++] = s->e.ret->pkgs[i].name;
	for (size_t i = 0; i < n_extra && n < ARRAY_SIZE(argv) - 1; i++)
		argv[n++] = extra[i];
	argv[n] = NULL;
	r = query(s, argv); /* exit status 1 when one is unknown: the lines say which */
	for (size_t i = 0; r >= 0 && i < s->e.ret->n_pkgs; i++) {
		struct gb_install_pkg_result *p = &s->e.ret->pkgs[i];
		r = after ? gb_dpkg_query_parse(s->e.res->output, p->name, p->after, &p->held_after)
		          : gb_dpkg_query_parse(s->e.res->output, p->name, p->before, &p->held_before);
		if (r < 0)
			(void)FAIL(s, r, "dpkg-query printed an invalid version for %s", p->name);
	}
	return r;
}

/* The headers of each kernel at its image package's version, and the
 * flavour's metapackage where the image has one (later kernels then bring
 * their headers, and DKMS builds for them). */
static int add_headers(struct inst *s)
{
	const char *extra[2 * GB_INSTALL_MAX_KERNELS];
	char names[2 * GB_INSTALL_MAX_KERNELS][GB_INSTALL_NAME], name[GB_INSTALL_NAME + 16],
	    flav[GB_INSTALL_MAX_KERNELS][48], v[GB_INSTALL_VERSION];
	bool held;
	int r;

	for (size_t i = 0; i < s->e.n_kernels; i++) {
		snprintf(names[2 * i], GB_INSTALL_NAME, "linux-image-%s", s->e.kernels[i]);
		_cleanup_free_ char *f = NULL;
		if (gb_kernel_flavour(s->e.kernels[i], &f) < 0)
			return FAIL(s, -ENOMEM, "out of memory");
		if (!f || gb_strscpy(flav[i], sizeof(flav[i]), f) < 0 || !gb_deb_name_valid(f))
			flav[i][0] = '\0';
		snprintf(names[2 * i + 1], GB_INSTALL_NAME, "linux-image-%s", flav[i][0] ? flav[i] : s->e.kernels[i]);
		extra[2 * i] = names[2 * i];
		extra[2 * i + 1] = names[2 * i + 1];
	}
	r = query_installed(s, extra, 2 * s->e.n_kernels, false);
	for (size_t i = 0; r >= 0 && i < s->e.n_kernels; i++) {
		if (gb_dpkg_query_parse(s->e.res->output, names[2 * i], v, &held) < 0 || !v[0])
			return FAIL(s, -ENOPKG,
			            "The kernel %s is not from a package (%s is not installed): no headers package "
			            "can match it; install a Debian kernel or use the runfile method",
			            s->e.kernels[i], names[2 * i]);
		snprintf(name, sizeof(name), "linux-headers-%s", s->e.kernels[i]);
		r = add_pkg(s, name, v, false);
		if (r >= 0 && flav[i][0] && gb_dpkg_query_parse(s->e.res->output, names[2 * i + 1], v, &held) == 0 &&
		    v[0]) {
			snprintf(name, sizeof(name), "linux-headers-%s", flav[i]);
			r = add_pkg(s, name, v, false);
		}
	}
	return r < 0 ? r : query_installed(s, NULL, 0, false);
}

/* The distro method with the mirror's prebuilt modules: each kernel's
 * package (a local .deb, put in the root for apt) in place of the DKMS
 * package, and no headers: nothing is compiled. Every kernel of the root
 * must have one. */
static int prebuilt_list(struct inst *s, const char *ver)
{
	const struct gb_install_input *in = s->e.in;
	int r = 0;

	for (size_t k = 0; k < s->e.n_kernels; k++) {
		bool found = false;
		for (size_t i = 0; i < in->n_prebuilt && !found; i++)
			found = streq(in->prebuilt[i].kernel, s->e.kernels[k]);
		if (!found)
			return FAIL(
			    s, -ENOPKG,
			    "The plan's prebuilt modules do not cover the kernel %s of %s: nothing was installed; "
			    "run gpuboot modules build for it, or install with DKMS",
			    s->e.kernels[k], s->e.ctx->root->path);
	}
	for (size_t i = 0; i < in->n_prebuilt && r >= 0; i++) {
		struct gb_install_pkg_result *p;
		r = add_pkg(s, in->prebuilt[i].package, in->prebuilt[i].version, true);
		if (r < 0)
			break;
		p = &s->e.ret->pkgs[s->e.ret->n_pkgs - 1];
		snprintf(p->file, sizeof(p->file), "var/cache/gpuboot/modules/%s.deb", in->prebuilt[i].package);
		p->source = in->prebuilt[i].file;
	}
	for (size_t i = 0; gb_debian_userspace[i] && r >= 0; i++)
		r = add_pkg(s, gb_debian_userspace[i], ver, true);
	return r < 0 ? r : query_installed(s, NULL, 0, false);
}

/* The prebuilt packages into the root, journaled, where apt reads them. */
static int prebuilt_stage(struct inst *s)
{
	for (size_t i = 0; i < s->e.ret->n_pkgs; i++) {
		struct gb_install_pkg_result *p = &s->e.ret->pkgs[i];
		_cleanup_free_ char *data = NULL;
		size_t len = 0;
		int r;

		if (!p->file[0])
			continue;
		r = gb_read_file(p->source, 1u << 30, &data, &len);
		if (r >= 0)
			r = gb_journal_write_file(s->e.j, STAGE, p->file, data, len, 0644);
		if (r < 0)
			return FAIL(s, r, "Failed to put the prebuilt module package %s into %s: %s", p->name,
			            s->e.ctx->root->path, strerror(-r));
	}
	return 0;
}

static int build_list(struct inst *s)
{
	const char *flavor = s->e.in->flavor ? s->e.in->flavor : "open";
	const char *ver = s->e.in->driver_version ? s->e.in->driver_version : "";
	int r = 0;

	const struct gb_debian_driver *deb = gb_debian_driver_find(flavor);

	if (!deb)
		return FAIL(s, -EINVAL, "Unknown module flavour '%s' (open or proprietary)", flavor);
	s->module = deb->module;
	if (ver[0] && !gb_deb_version_valid(ver))
		return FAIL(s, -EINVAL, "'%s' is not a driver version", ver);
	if (s->packages && (!s->e.in->packages || !s->e.in->n_packages || !s->e.in->repo))
		return FAIL(s, -EINVAL, "The packages method needs the repository and the plan's packages");
	if (s->e.in->packages) {
		for (size_t i = 0; i < s->e.in->n_packages && r >= 0; i++) {
			const struct gb_pkg_spec *p = &s->e.in->packages[i];
			if (p->kind != GB_PKG_NAME)
				return FAIL(s, -EINVAL,
				            "'%s' is a module stream or a version lock, which apt has not; "
				            "make the plan for this system",
				            p->name);
			r = add_pkg(s, p->name, p->version, p->hold);
		}
	} else if (s->e.in->prebuilt) {
		return prebuilt_list(s, ver);
	} else {
		r = add_pkg(s, deb->kmod_package, ver, true);
		for (size_t i = 0; gb_debian_userspace[i] && r >= 0; i++)
			r = add_pkg(s, gb_debian_userspace[i], ver, true);
	}
	if (r >= 0 && s->e.in->userspace_only)
		return query_installed(s, NULL, 0, false);
	return r < 0 ? r : add_headers(s);
}

/* The module DKMS built for kver, below the root (gb_module_dirs, any of
 * the kernel's module suffixes); "" when none. */
static void find_module(struct inst *s, const char *kver, char *out, size_t outsz)
{
	const char *const *names = s->packages ? nvidia_repo_modules : &s->module;
	size_t n = s->packages ? ARRAY_SIZE(nvidia_repo_modules) : 1;
	out[0] = '\0';
	for (const char *const *d = gb_module_dirs(GB_MODULES_DEB); *d && !out[0]; d++)
		for (size_t k = 0; k < n && !out[0]; k++)
			for (size_t i = 0; gb_kmod_suffixes[i] && !out[0]; i++) {
				snprintf(out, outsz, "lib/modules/%s/%s/%s%s", kver, *d, names[k], gb_kmod_suffixes[i]);
				if (!gb_root_exists(s->e.ctx->root, out))
					out[0] = '\0';
			}
}

/* Everything in place (versions, holds, modules): nothing to run. */
static bool satisfied(struct inst *s)
{
	char ko[256];
	for (size_t i = 0; i < s->e.ret->n_pkgs; i++) {
		const struct gb_install_pkg_result *p = &s->e.ret->pkgs[i];
		if (!gb_deb_version_matches(p->before, p->wanted) || (p->hold && !p->held_before))
			return false;
	}
	for (size_t i = 0; i < s->e.n_kernels; i++) {
		find_module(s, s->e.kernels[i], ko, sizeof(ko));
		if (!ko[0])
			return false;
	}
	return true;
}

/* Edit one sources file, journaled; *entries counts Debian entries. */
static int sources_edit(struct inst *s, const char *path, bool deb822, unsigned *entries)
{
	_cleanup_free_ char *text = NULL, *out = NULL;
	size_t len, out_len;
	unsigned n = 0;
	bool changed = false;
	char hex[65];
	mode_t mode = 0644;
	int r = gb_root_read_file(s->e.ctx->root, path, GB_APT_SOURCES_MAX, &text, &len);

	if (r == -ENOENT)
		return 0;
	if (r >= 0)
		r = deb822 ? gb_apt_sources_deb822(text, len, s->e.ret->codename, &out, &out_len, &n, &changed)
		           : gb_apt_sources_oneline(text, len, s->e.ret->codename, &out, &out_len, &n, &changed);
	if (r < 0)
		return FAIL(s, r, "Failed to read the apt sources '%s' in %s: %s", path, s->e.ctx->root->path,
		            strerror(-r));
	*entries += n;
	if (!changed)
		return 0;
	(void)gb_root_sha256(s->e.ctx->root, path, hex, &mode);
	r = gb_journal_write_file(s->e.j, STAGE, path, out, out_len, mode & 07777);
	if (r < 0)
		return FAIL(s, r, "Failed to write '%s' in %s: %s", path, s->e.ctx->root->path, strerror(-r));
	if (r == 0 && s->n_undo < ARRAY_SIZE(s->undo)) { /* written by this run: kept to undo */
		s->undo[s->n_undo].path = path, s->undo[s->n_undo].len = len, s->undo[s->n_undo].mode = mode & 07777;
		s->undo[s->n_undo++].text = TAKE_PTR(text);
	}
	s->e.ret->sources_changed = true;
	return 0;
}

static int sources_enable(struct inst *s)
{
	unsigned entries = 0;
	int r = sources_edit(s, "etc/apt/sources.list.d/debian.sources", true, &entries);
	if (r >= 0)
		r = sources_edit(s, "etc/apt/sources.list", false, &entries);
	if (r < 0)
		return r;
	if (entries == 0)
		return FAIL(s, -ENOENT,
		            "No Debian archive entry for %s with 'main' in etc/apt/sources.list.d/debian.sources or "
		            "etc/apt/sources.list under %s",
		            s->e.ret->codename, s->e.ctx->root->path);
	return 0;
}

/* A journaled command; -EIO when it exits non-zero (its tail is in the
 * journal and in the error). */
/* The mount point and free space of the filesystem that holds path. */
static void fs_of(const char *path, char *mnt, size_t n, unsigned long long *ret_free)
{
	char cur[4096], up[4096];
	struct stat st, pst;
	struct statvfs vf;

	gb_strscpy(cur, sizeof(cur), path);
	*ret_free = statvfs(path, &vf) == 0 ? (unsigned long long)vf.f_bavail * vf.f_frsize : 0;
	if (stat(cur, &st) < 0) {
		gb_strscpy(mnt, n, path);
		return;
	}
	for (;;) {
		char *slash = strrchr(cur, '/');
		if (!slash || slash == cur) {
			snprintf(up, sizeof(up), "/");
		} else {
			memcpy(up, cur, (size_t)(slash - cur));
			up[slash - cur] = '\0';
		}
		if (streq(cur, "/") || stat(up, &pst) < 0 || pst.st_dev != st.st_dev)
			break;
		gb_strscpy(cur, sizeof(cur), up);
	}
	gb_strscpy(mnt, n, cur);
}

/* apt's words for what it needs ("Need to get 95.3 MB of archives.",
 * "After this operation, 402 MB of additional disk space will be used."). */
static void apt_needs(const char *out, char *buf, size_t n)
{
	const char *a = strstr(out, "Need to get "), *b = strstr(out, "After this operation, ");
	size_t o = 0;

	buf[0] = '\0';
	if (a)
		o += (size_t)snprintf(buf + o, n - o, "%.*s", (int)strcspn(a, "\n"), a);
	if (b && o < n)
		snprintf(buf + o, n - o, "%s%.*s", o ? " " : "", (int)strcspn(b, "\n"), b);
}

/* A command that failed for want of space names the filesystem, its free
 * space and what apt said it needs: apt's last lines alone cut that off. */
static int name_full_disk(struct inst *s, int r)
{
	char mnt[4096], needs[256], where[4200];
	unsigned long long avail;

	if (r >= 0 || !(strstr(s->e.res->output, "No space left on device") ||
	                strstr(s->e.res->output, "You don't have enough free space")))
		return r;
	snprintf(where, sizeof(where), "%s/var/cache/apt/archives", s->e.chroot_dir ? s->e.chroot_dir : "");
	if (access(where, F_OK) < 0)
		snprintf(where, sizeof(where), "%s", s->e.chroot_dir ? s->e.chroot_dir : "/");
	fs_of(where, mnt, sizeof(mnt), &avail);
	apt_needs(s->e.res->output, needs, sizeof(needs));
	snprintf(s->e.ret->error, sizeof(s->e.ret->error),
	         "No space left on device: the filesystem mounted at %s (holding %s) is full, %llu MiB free%s%s; free "
	         "space there or grow it, then run again: dpkg is repaired and the install continues",
	         mnt, s->e.chroot_dir ? s->e.chroot_dir : "/", avail >> 20, needs[0] ? "; apt: " : "", needs);
	return -ENOSPC;
}

static int effect(struct inst *s, const char *id, const char *const *argv, unsigned timeout_ms)
{
	return name_full_disk(s, gb_pkg_effect(&s->e, id, argv, timeout_ms));
}

/* apt-get update exits 0 when a source cannot be reached ("W: Failed to
 * fetch URL  reason", "Err:N URL" then the reason): kept, so a package
 * it then does not know is blamed on the source, not on the archive. */
static void update_failures(struct inst *s)
{
	const char *w = strstr(s->e.res->output, "W: Failed to fetch ");
	const char *e = w ? w : strstr(s->e.res->output, "E: Failed to fetch ");

	s->unreachable[0] = '\0';
	if (e) {
		e += strlen("W: Failed to fetch ");
		snprintf(s->unreachable, sizeof(s->unreachable), "%.*s", (int)strcspn(e, "\n"), e);
	}
}

/* An index apt refused: unsigned, signed by another key, or not what its
 * signed index says (tampered). Refused before any install (exit 13), and
 * for NVIDIA's repository the keyring and sources entry this run added
 * are taken out again: a hostile repository leaves no trace in the image. */
static int update_refused(struct inst *s, int r)
{
	static const char *const signs[] = { "is not signed",   "GPG error",
		                             "NO_PUBKEY",       "BADSIG",
		                             "EXPKEYSIG",       "Hash Sum mismatch",
		                             "unexpected size", "Signed file isn't valid" };
	const char *why = NULL;
	char keyring[256], sources[256], id[300], line[200] = "";

	for (size_t i = 0; i < ARRAY_SIZE(signs) && !why; i++)
		why = strstr(s->e.res->output, signs[i]);
	if (!why)
		return r;
	/* the line that says it */
	while (why > s->e.res->output && why[-1] != '\n')
		why--;
	snprintf(line, sizeof(line), "%.*s", (int)strcspn(why, "\n"), why);
	if (s->packages) {
		const char *paths[2];
		gb_apt_repo_paths(s->e.in->repo->id, keyring, sizeof(keyring), sources, sizeof(sources));
		paths[0] = sources, paths[1] = keyring;
		for (size_t i = 0; i < ARRAY_SIZE(paths); i++) {
			int k;
			snprintf(id, sizeof(id), "file:%s", paths[i]);
			if (!gb_journal_step_changed(s->e.j, id))
				continue; /* there before this run: not ours to take out */
			snprintf(id, sizeof(id), "remove:%s", paths[i]);
			(void)gb_journal_begin(s->e.j, STAGE, id, "file", NULL);
			k = gb_root_unlink(s->e.ctx->root, paths[i]);
			(void)gb_journal_end(s->e.j, id, k, NULL);
		}
		s->e.ret->sources_changed = false;
	}
	for (size_t i = 0; i < s->n_undo; i++) {
		int k;
		snprintf(id, sizeof(id), "restore:%s", s->undo[i].path);
		(void)gb_journal_begin(s->e.j, STAGE, id, "file", NULL);
		k = gb_root_write_file(s->e.ctx->root, s->undo[i].path, s->undo[i].text, s->undo[i].len,
		                       s->undo[i].mode);
		(void)gb_journal_end(s->e.j, id, k, NULL);
	}
	if (s->n_undo)
		s->e.ret->sources_changed = false;
	return FAIL(s, -EKEYREJECTED,
	            "apt refused %s's index (%s): nothing was installed%s; check the mirror or the network path",
	            s->packages ? s->e.in->repo->uri : s->e.ret->codename, line,
	            s->packages ? ", and the repository's keyring and sources entry this run added were removed"
	            : s->n_undo ? ", and the components this run enabled in Debian's sources were taken out again"
	                        : "");
}

/* The archive's version of each package (apt-cache madison), before
 * anything is installed: a package or version missing is a refusal. */
static int resolve(struct inst *s)
{
	struct gb_apt_version v[16];
	char missing[512] = "";
	size_t o = 0;

	for (size_t i = 0; i < s->e.ret->n_pkgs; i++) {
		struct gb_install_pkg_result *p = &s->e.ret->pkgs[i];
		const char *argv[] = { "apt-cache", "madison", p->name, NULL };
		int n, r;

		if (p->file[0]) { /* the mirror's package, verified by the fetch stage */
			gb_strscpy(p->resolved, sizeof(p->resolved), p->wanted);
			gb_strscpy(p->suite, sizeof(p->suite), "the site's mirror");
			continue;
		}
		r = query(s, argv);
		if (r < 0)
			return r;
		n = gb_apt_madison_parse(s->e.res->output, p->name, v, ARRAY_SIZE(v));
		for (int k = 0; k < n && !p->resolved[0]; k++)
			if (gb_deb_version_matches(v[k].version, p->wanted)) {
				memcpy(p->resolved, v[k].version, sizeof(p->resolved));
				memcpy(p->suite, v[k].suite, sizeof(p->suite));
			}
		if (!p->resolved[0] && o < sizeof(missing))
			o += (size_t)snprintf(missing + o, sizeof(missing) - o, "%s%s%s%s%s", o ? ", " : "", p->name,
			                      p->wanted[0] ? " " : "", p->wanted,
			                      n > 0 ? " (not this version)" : " (no such package)");
	}
	if (missing[0] && s->unreachable[0])
		return FAIL(s, -EHOSTUNREACH,
		            "apt-get update could not reach the archive (%s), so apt does not know %s; nothing was "
		            "installed: check the network and the sources (or --mirror), then run again",
		            s->unreachable, missing);
	if (missing[0])
		return FAIL(s, -ENOPKG, "Not in %s (after apt-get update%s): %s; nothing was installed",
		            s->packages ? s->e.in->repo->uri : s->e.ret->codename,
		            s->packages ? "" : ", with contrib non-free non-free-firmware", missing);
	return 0;
}

/* Pin every binary of the driver's source packages to its version: a
 * suite with a newer userspace (bookworm-security) must not split it from
 * the kernel module, neither while apt resolves nor later. */
static int write_pin(struct inst *s)
{
	const char *name = s->e.in->pin_name ? s->e.in->pin_name : "nvidia";
	const char *pkgs = s->e.in->pin_packages ? s->e.in->pin_packages
	                   : s->packages         ? nvidia_repo_pin
	                                         : debian_pin_sources;
	const char *ver = s->e.in->pin_version ? s->e.in->pin_version : s->e.in->driver_version;
	char text[1024], path[128];
	int r;
	if (!ver || !ver[0])
		return 0;
	if (!gb_apt_repo_id_valid(name) || !gb_deb_version_valid(ver) || strpbrk(pkgs, "\n\r"))
		return FAIL(s, -EINVAL, "The version pin '%s' of '%s' is not usable", ver, name);
	snprintf(path, sizeof(path), PIN_DIR "/gpuboot-%s.pref", name);
	snprintf(text, sizeof(text),
	         "# Written by gpuboot: these packages stay at %s, together (for the driver:\n"
	         "# kernel module and userspace). docs/install.md says how to undo it.\n"
	         "Package: %s\nPin: version %s-*\nPin-Priority: 1001\n",
	         ver, pkgs, ver);
	r = gb_journal_write_file(s->e.j, STAGE, path, text, strlen(text), 0644);
	return r < 0 ? FAIL(s, r, "Failed to write '%s': %s", path, strerror(-r)) : 0;
}

/* unattended-upgrades never upgrades what gpuboot holds (its
 * Package-Blacklist holds regular expressions: each name anchored, its
 * dots and pluses bracketed). */
static int write_uu_blacklist(struct inst *s)
{
	const char *name = s->e.in->pin_name ? s->e.in->pin_name : "nvidia";
	char text[4096], path[160];
	size_t o;
	int r;
	if (!s->packages)
		return 0;
	snprintf(path, sizeof(path), UU_DIR "/51gpuboot-%s-unattended-upgrades", name);
	o = (size_t)snprintf(text, sizeof(text),
	                     "// Written by gpuboot: unattended-upgrades leaves these packages alone;\n"
	                     "// gpuboot's apt pin and holds keep them at one version.\n"
	                     "Unattended-Upgrade::Package-Blacklist {\n");
	for (size_t i = 0; i < s->e.ret->n_pkgs && o < sizeof(text) - 256; i++) {
		const char *p = s->e.ret->pkgs[i].name;
		if (!s->e.ret->pkgs[i].hold)
			continue;
		o += (size_t)snprintf(text + o, sizeof(text) - o, "    \"^");
		for (; *p && o < sizeof(text) - 64; p++)
			o += (size_t)snprintf(text + o, sizeof(text) - o, strchr(".+", *p) ? "[%c]" : "%c", *p);
		o += (size_t)snprintf(text + o, sizeof(text) - o, "$\";\n");
	}
	o += (size_t)snprintf(text + o, sizeof(text) - o, "};\n");
	r = gb_journal_write_file(s->e.j, STAGE, path, text, strlen(text), 0644);
	return r < 0 ? FAIL(s, r, "Failed to write '%s': %s", path, strerror(-r)) : 0;
}

/* argv: the verb, then name=version (or names, for apt-mark) of the
 * packages selected by hold_only/held_only. */
static size_t pkg_argv(struct inst *s, const char **argv, size_t n, char (*buf)[GB_INSTALL_NAME + GB_INSTALL_VERSION],
                       int which)
{
	for (size_t i = 0; i < s->e.ret->n_pkgs; i++) {
		const struct gb_install_pkg_result *p = &s->e.ret->pkgs[i];
		if (which == 0 && p->file[0])
			snprintf(buf[i], sizeof(buf[i]), "/%s", p->file);
		else if (which == 0)
			snprintf(buf[i], sizeof(buf[i]), "%s=%s", p->name, p->resolved);
		else if ((which == 1 && p->hold) || (which == 2 && p->held_before && !streq(p->before, p->resolved)))
			snprintf(buf[i], sizeof(buf[i]), "%s", p->name);
		else
			continue;
		argv[n++] = buf[i];
	}
	argv[n] = NULL;
	return n;
}

/* Is dpkg interrupted? A kill (power, OOM, a Packer timeout) in the middle
 * of dpkg leaves its journal in var/lib/dpkg/updates/ or packages
 * half-installed, half-configured or awaiting triggers, which dpkg --audit
 * lists; apt then refuses everything ("dpkg was interrupted"). Read only;
 * s->interrupted says what was found. */
static int dpkg_audit(struct inst *s)
{
	const char *argv[] = { "dpkg", "--audit", NULL };
	char **names = NULL;
	size_t n = 0, pending = 0;
	int r = gb_root_list_dir(s->e.ctx->root, "var/lib/dpkg/updates", &names, &n);

	s->interrupted[0] = '\0';
	if (r < 0 && r != -ENOENT)
		return FAIL(s, r, "Failed to list var/lib/dpkg/updates in %s: %s", s->e.ctx->root->path, strerror(-r));
	for (size_t i = 0; i < n; i++)
		pending += strspn(names[i], "0123456789") == strlen(names[i]); /* dpkg's own: digits; not tmp.i */
	gb_strv_free(names);
	r = gb_pkg_query(&s->e, argv, false);
	if (r < 0)
		return r;
	if (pending)
		snprintf(s->interrupted, sizeof(s->interrupted),
		         "dpkg was interrupted (%zu record(s) in var/lib/dpkg/updates)", pending);
	else if (s->e.res->output_len > 0 && strspn(s->e.res->output, " \t\n") < s->e.res->output_len) {
		char first[96];
		gb_strscpy(first, sizeof(first), s->e.res->output);
		first[strcspn(first, "\n")] = '\0';
		snprintf(s->interrupted, sizeof(s->interrupted), "dpkg --audit: %s", first);
	}
	return 0;
}

/* The packages dpkg --audit lists (" name  description" lines): a package
 * a kill left half-installed must be reinstalled, which --configure -a
 * does not do. */
static size_t audit_names(const char *out, char (*names)[GB_INSTALL_NAME], size_t max)
{
	size_t n = 0;
	for (const char *l = out; l && *l && n < max; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		size_t len;
		if (l[0] != ' ' || !((l[1] >= 'a' && l[1] <= 'z') || (l[1] >= '0' && l[1] <= '9')))
			continue;
		len = strspn(l + 1, "abcdefghijklmnopqrstuvwxyz0123456789+-.:");
		if (len == 0 || len >= GB_INSTALL_NAME || (l[1 + len] != ' ' && l[1 + len] != '\n' && l[1 + len]))
			continue;
		memcpy(names[n], l + 1, len);
		names[n][len] = '\0';
		n++;
	}
	return n;
}

/* dpkg's own repair, journaled: dpkg --configure -a (finishes what was
 * unpacked, runs the pending triggers: DKMS, the initramfs); what is left
 * half-installed reinstalled (its .deb is in apt's cache); apt-get -f
 * install where dependencies stay broken; what remains is named. */
static int dpkg_recover(struct inst *s)
{
	static char names[GB_INSTALL_MAX_PKGS][GB_INSTALL_NAME];
	const char *configure[] = { "dpkg", "--force-confdef", "--force-confold", "--configure", "-a", NULL };
	const char *apt[GB_INSTALL_MAX_PKGS + 12] = { "apt-get",
		                                      "-f",
		                                      "install",
		                                      "-y",
		                                      "-q",
		                                      "-o",
		                                      "Dpkg::Options::=--force-confdef",
		                                      "-o",
		                                      "Dpkg::Options::=--force-confold",
		                                      NULL };
	unsigned apt_ms = s->e.in->apt_timeout_ms ? s->e.in->apt_timeout_ms : DEFAULT_APT_MS;
	char id[128], found[sizeof(s->interrupted)], how[96] = "dpkg --configure -a";
	size_t n;
	int r;

	gb_strscpy(found, sizeof(found), s->interrupted);
	gb_log_warning("%s in %s: repairing it the package manager's way (dpkg --configure -a)", found,
	               s->e.ctx->root->path);
	gb_journal_repeat_id(s->e.j, "dpkg-configure-a", id, sizeof(id));
	r = effect(s, id, configure, apt_ms);
	if (r == -EIO) {
		/* dpkg configures what it can and fails on a package a kill left
		 * half-installed ("reinstall it before attempting configuration"):
		 * the reinstall below mends that, and the audit after it judges */
		gb_log_warning("dpkg --configure -a did not finish in %s (%s): going on with the reinstall",
		               s->e.ctx->root->path, s->e.ret->error);
		s->e.ret->error[0] = '\0';
		r = 0;
	}
	if (r >= 0)
		r = dpkg_audit(s);
	if (r >= 0 && s->interrupted[0] && (n = audit_names(s->e.res->output, names, ARRAY_SIZE(names))) > 0) {
		/* apt-get install --reinstall -y -q -o ... NAME... */
		apt[1] = "install", apt[2] = "--reinstall";
		for (size_t i = 0; i < n; i++)
			apt[9 + i] = names[i];
		apt[9 + n] = NULL;
		gb_journal_repeat_id(s->e.j, "apt-get-reinstall", id, sizeof(id));
		r = effect(s, id, apt, apt_ms);
		if (r >= 0)
			r = dpkg_audit(s);
		snprintf(how, sizeof(how), "dpkg --configure -a, apt-get install --reinstall");
	}
	if (r >= 0 && s->interrupted[0]) {
		apt[1] = "-f", apt[2] = "install", apt[9] = NULL;
		gb_journal_repeat_id(s->e.j, "apt-get-f-install", id, sizeof(id));
		r = effect(s, id, apt, apt_ms);
		if (r >= 0)
			r = dpkg_audit(s);
		gb_strscpy(how + strlen(how), sizeof(how) - strlen(how), ", apt-get -f install");
	}
	if (r < 0)
		return r;
	if (s->interrupted[0])
		return FAIL(s, -EIO, "%s is still so after %s: %s; see dpkg --audit", s->e.ctx->root->path, how,
		            s->interrupted);
	snprintf(s->e.ret->recovered, sizeof(s->e.ret->recovered), "%s: repaired by %s", found, how);
	s->e.ret->packages_changed = true;
	return 0;
}

static int apt_install(struct inst *s)
{
	static char buf[GB_INSTALL_MAX_PKGS][GB_INSTALL_NAME + GB_INSTALL_VERSION];
	const char *argv[GB_INSTALL_MAX_PKGS + 12] = { "apt-get", "update", "-q", NULL };
	unsigned apt_ms = s->e.in->apt_timeout_ms ? s->e.in->apt_timeout_ms : DEFAULT_APT_MS;
	int r = s->interrupted[0] ? dpkg_recover(s) : 0;

	if (r >= 0 && (r = effect(s, "apt-get-update", argv, UPDATE_TIMEOUT_MS)) < 0)
		return update_refused(s, r);
	if (r >= 0)
		update_failures(s);
	if (r >= 0)
		r = resolve(s);
	if (r >= 0)
		r = gb_pkg_write_blacklist(&s->e);
	if (r >= 0)
		r = write_pin(s);
	if (r >= 0)
		r = write_uu_blacklist(s);
	if (r >= 0)
		r = prebuilt_stage(s);
	if (r < 0)
		return r;
	/* A package we must change that an earlier run held. */
	argv[0] = "apt-mark", argv[1] = "unhold";
	if (pkg_argv(s, argv, 2, buf, 2) > 2 && (r = effect(s, "apt-mark-unhold", argv, MARK_TIMEOUT_MS)) < 0)
		return r;
	argv[0] = "apt-get", argv[1] = "install", argv[2] = "-y", argv[3] = "-q", argv[4] = "--no-install-recommends";
	argv[5] = "-o", argv[6] = "Dpkg::Options::=--force-confdef", argv[7] = "-o",
	argv[8] = "Dpkg::Options::=--force-confold";
	pkg_argv(s, argv, 9, buf, 0);
	r = effect(s, "apt-get-install", argv, apt_ms);
	s->e.ret->packages_changed = true;
	if (r < 0)
		return r;
	argv[0] = "apt-mark", argv[1] = "hold";
	if (pkg_argv(s, argv, 2, buf, 1) > 2)
		r = effect(s, "apt-mark-hold", argv, MARK_TIMEOUT_MS);
	return r;
}

/* After apt: every package at its version and held as asked. */
static int check_after(struct inst *s)
{
	int r = query_installed(s, NULL, 0, true);
	for (size_t i = 0; r >= 0 && i < s->e.ret->n_pkgs; i++) {
		const struct gb_install_pkg_result *p = &s->e.ret->pkgs[i];
		if (!gb_deb_version_matches(p->after, p->wanted) || (p->resolved[0] && !streq(p->after, p->resolved)))
			return FAIL(s, -EIO, "After apt-get install, %s is at '%s', not %s", p->name, p->after,
			            p->resolved[0] ? p->resolved : p->wanted);
		if (p->hold && !p->held_after)
			return FAIL(s, -EIO, "After apt-mark hold, %s is not held", p->name);
	}
	return r;
}

static int sources(struct inst *s)
{
	bool changed = false;
	int r;
	if (!s->packages)
		return sources_enable(s);
	r = gb_apt_repo_setup(s->e.ctx, s->e.j, s->e.in->repo, &changed, s->e.ret->error, sizeof(s->e.ret->error));
	s->e.ret->sources_changed = changed;
	return r;
}

/* ---- prepare's newer kernel (GB_INSTALL_KERNEL) ---- */

/* Does an installed version ("6.12.48-1~bpo12+1", Ubuntu's
 * "6.8.0.49.52~22.04.1") reach the kernel's minimum major.minor? An epoch
 * is not a kernel's. */
static bool kernel_reaches(const char *version, const char *minimum)
{
	char xy[16];
	if (!version[0])
		return false;
	if (!minimum || !minimum[0])
		return true;
	gb_kernel_xy(version, xy, sizeof(xy));
	return xy[0] && gb_version_cmp(xy, minimum) >= 0;
}

/* The metapackage and its headers, unversioned, not held: the archive's
 * (the suite's) newest is the one. */
static int kernel_list(struct inst *s)
{
	int r = 0;
	if (!s->e.in->packages || !s->e.in->n_packages)
		return FAIL(s, -EINVAL, "A kernel install needs the kernel's packages");
	for (size_t i = 0; i < s->e.in->n_packages && r >= 0; i++) {
		const struct gb_pkg_spec *p = &s->e.in->packages[i];
		if (p->kind != GB_PKG_NAME || p->version[0] || p->hold)
			return FAIL(s, -EINVAL, "'%s' is not a kernel package to install (a name alone)", p->name);
		r = add_pkg(s, p->name, "", false);
	}
	if (r >= 0 && s->e.in->suite && s->e.in->suite[0] && !gb_deb_name_valid(s->e.in->suite))
		return FAIL(s, -EINVAL, "'%s' is not an apt suite", s->e.in->suite);
	return r < 0 ? r : query_installed(s, NULL, 0, false);
}

static bool kernel_satisfied(struct inst *s)
{
	for (size_t i = 0; i < s->e.ret->n_pkgs; i++)
		if (!kernel_reaches(s->e.ret->pkgs[i].before, s->e.in->kernel_minimum))
			return false;
	return true;
}

/* apt's words for a suite or package its sources do not have, named with
 * the fix; another failure as it was. */
static int kernel_unknown(struct inst *s, int r)
{
	const char *suite = s->e.in->suite && s->e.in->suite[0] ? s->e.in->suite : NULL;
	if (r != -EIO)
		return r;
	if (suite && strstr(s->e.res->output, "APT::Default-Release"))
		return FAIL(
		    s, -ENOPKG,
		    "apt's sources in %s have no suite %s%s%s: add it (deb http://deb.debian.org/debian %s main) "
		    "and run again; nothing was installed",
		    s->e.ctx->root->path, suite, s->unreachable[0] ? ", and apt-get update could not reach " : "",
		    s->unreachable, suite);
	if (strstr(s->e.res->output, "Unable to locate package") || strstr(s->e.res->output, "has no installation"))
		return FAIL(s, -ENOPKG, "Not in %s's archive%s%s%s: %s; nothing was installed", s->e.ret->distro,
		            suite ? " (" : "", suite ? suite : "", suite ? ")" : "", s->e.ret->pkgs[0].name);
	return r;
}

/* What a killed dpkg left repaired first (the package manager's way), then
 * apt-get update and the install from the suite; the kernel's postinst
 * makes its initramfs and updates GRUB, the headers' DKMS builds an
 * installed driver's module for it. */
static int kernel_install(struct inst *s)
{
	const char *argv[GB_INSTALL_MAX_PKGS + 12] = { "apt-get", "update", "-q", NULL };
	unsigned apt_ms = s->e.in->apt_timeout_ms ? s->e.in->apt_timeout_ms : DEFAULT_APT_MS;
	size_t n = 0;
	int r = s->interrupted[0] ? dpkg_recover(s) : 0;

	if (r >= 0 && (r = effect(s, "apt-get-update", argv, UPDATE_TIMEOUT_MS)) < 0)
		return update_refused(s, r);
	if (r < 0)
		return r;
	update_failures(s);
	argv[n++] = "apt-get", argv[n++] = "install", argv[n++] = "-y", argv[n++] = "-q";
	argv[n++] = "-o", argv[n++] = "Dpkg::Options::=--force-confdef";
	argv[n++] = "-o", argv[n++] = "Dpkg::Options::=--force-confold";
	if (s->e.in->suite && s->e.in->suite[0])
		argv[n++] = "-t", argv[n++] = s->e.in->suite;
	for (size_t i = 0; i < s->e.ret->n_pkgs; i++)
		argv[n++] = s->e.ret->pkgs[i].name;
	argv[n] = NULL;
	r = effect(s, "apt-get-install", argv, apt_ms);
	s->e.ret->packages_changed = true;
	return kernel_unknown(s, r);
}

/* After apt: each package installed, at a version reaching the minimum. */
static int kernel_after(struct inst *s)
{
	int r = query_installed(s, NULL, 0, true);
	for (size_t i = 0; r >= 0 && i < s->e.ret->n_pkgs; i++) {
		struct gb_install_pkg_result *p = &s->e.ret->pkgs[i];
		if (!kernel_reaches(p->after, s->e.in->kernel_minimum))
			return FAIL(s, -EIO, "After apt-get install, %s is at '%s', which does not reach %s", p->name,
			            p->after,
			            s->e.in->kernel_minimum ? s->e.in->kernel_minimum : "an installed version");
		memcpy(p->resolved, p->after, sizeof(p->resolved));
	}
	return r;
}

/* ---- the apt backend ---- */

static int apt_os(struct gb_pkg_engine *e)
{
	struct inst *s = (struct inst *)e;
	s->packages = e->in->method == GB_INSTALL_PACKAGES;
	s->kernel = e->in->method == GB_INSTALL_KERNEL;
	return os_release(s);
}

static int apt_list(struct gb_pkg_engine *e)
{
	struct inst *s = (struct inst *)e;
	return s->kernel ? kernel_list(s) : build_list(s);
}

/* The sources, then what a killed dpkg left; done when nothing needs
 * repairing and everything is in place. */
static int apt_prepare(struct gb_pkg_engine *e, bool *ret_done)
{
	struct inst *s = (struct inst *)e;
	int r = s->kernel ? 0 : sources(s);
	if (r >= 0)
		r = dpkg_audit(s);
	*ret_done = r >= 0 && !s->interrupted[0] && (s->kernel ? kernel_satisfied(s) : satisfied(s));
	return r;
}

/* Everything is there: the blacklist and the pin are made sure of
 * (unchanged on a rerun), no command runs. */
static int apt_settle(struct gb_pkg_engine *e)
{
	struct inst *s = (struct inst *)e;
	int r;
	for (size_t i = 0; i < e->ret->n_pkgs; i++) {
		struct gb_install_pkg_result *p = &e->ret->pkgs[i];
		memcpy(p->resolved, p->before, sizeof(p->resolved));
	}
	if (s->kernel)
		return 0;
	r = gb_pkg_write_blacklist(e);
	if (r >= 0)
		r = write_pin(s);
	return r < 0 ? r : write_uu_blacklist(s);
}

static int apt_install_op(struct gb_pkg_engine *e)
{
	struct inst *s = (struct inst *)e;
	return s->kernel ? kernel_install(s) : apt_install(s);
}

static int apt_after(struct gb_pkg_engine *e)
{
	struct inst *s = (struct inst *)e;
	return s->kernel ? kernel_after(s) : check_after(s);
}

static void apt_find_module(struct gb_pkg_engine *e, const char *kver, char *out, size_t outsz)
{
	find_module((struct inst *)e, kver, out, outsz);
}

static int apt_no_module(struct gb_pkg_engine *e, const char *kver)
{
	struct inst *s = (struct inst *)e;
	return FAIL(s, -ENOENT,
	            "DKMS built no %s module for the kernel %s (lib/modules/%s/updates/dkms/); its log is under "
	            "var/lib/dkms/ in %s",
	            s->module, kver, kver, e->ctx->root->path);
}

static void apt_done(struct gb_pkg_engine *e)
{
	struct inst *s = (struct inst *)e;
	for (size_t i = 0; i < s->n_undo; i++)
		free(s->undo[i].text);
}

static const struct gb_pkg_backend apt_backend = {
	.name = "apt",
	.state_size = sizeof(struct inst),
	.lock_wait = gb_pkg_lock_wait,
	.query_timeout_ms = QUERY_TIMEOUT_MS,
	.os = apt_os,
	.list = apt_list,
	.prepare = apt_prepare,
	.settle = apt_settle,
	.install = apt_install_op,
	.after = apt_after,
	.find_module = apt_find_module,
	.no_module = apt_no_module,
	.done = apt_done,
};

int gb_install_distro(struct gb_ctx *ctx, const struct gb_install_input *in, struct gb_journal *j,
                      struct gb_install_result *ret)
{
	return gb_pkg_engine_run(&apt_backend, ctx, in, j, ret);
}
