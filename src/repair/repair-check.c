/* SPDX-License-Identifier: MIT */
/* The repair decision: for one kernel, is the NVIDIA module there at the
 * installed version, loaded (the running kernel), buildable (DKMS's
 * source and the kernel's headers), or none of these and why. Reads only.
 * The common answer at boot ("loaded at the installed version") costs a
 * uname, one sysfs attribute, a few readlinks and one lstat. */
#include "repair.h"
#include "repair-internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "catalog/catalog.h"
#include "context.h"
#include "detect/detect.h"
#include "prepare/prepare.h"
#include "shared/macro.h"
#include "shared/root.h"
#include "shared/util.h"

#define DPKG_STATUS_MAX (32u << 20)
#define OS_RELEASE_MAX 8192

const char *gb_repair_verdict_name(enum gb_repair_verdict v)
{
	switch (v) {
	case GB_REPAIR_OK: return "ok";
	case GB_REPAIR_LOAD: return "load";
	case GB_REPAIR_BUILD: return "build";
	case GB_REPAIR_CANNOT: return "cannot";
	}
	return "?";
}

/* A kernel release that can stand in a path and in an argv: no '/', no
 * "..", no blank or shell byte. */
bool gb_repair_kver_valid(const char *k)
{
	size_t n = k ? strlen(k) : 0;
	if (n == 0 || n >= GB_KVER_MAX || k[0] == '.' || k[0] == '-' || strstr(k, ".."))
		return false;
	for (const char *p = k; *p; p++)
		if (!(('a' <= *p && *p <= 'z') || ('A' <= *p && *p <= 'Z') || ('0' <= *p && *p <= '9') ||
		      strchr("._+-~", *p)))
			return false;
	return true;
}

/* "libnvidia-ml.so.535.261.03" (a name or a link target's last part) -> "535.261.03". */
static bool lib_version(const char *name, char *ret, size_t retsz)
{
	const char *base = strrchr(name, '/') ? strrchr(name, '/') + 1 : name;
	const char *v = gb_startswith(base, "libnvidia-ml.so.");
	if (!v || !strchr(v, '.') || !gb_version_valid(v))
		return false;
	return gb_strscpy(ret, retsz, v) == 0;
}

/* libnvidia-ml.so.1, followed through its links (Debian's go through
 * etc/alternatives): the version is in the last name. */
static bool installed_by_link(struct gb_ctx *ctx, char *ret, size_t retsz)
{
	for (size_t i = 0; gb_nvidia_lib_dirs[i]; i++) {
		char path[512], dir[512];
		snprintf(path, sizeof(path), "%s/libnvidia-ml.so.1", gb_nvidia_lib_dirs[i]);
		for (int hop = 0; hop < 6; hop++) {
			_cleanup_free_ char *t = NULL;
			char *slash;
			if (gb_root_readlink(ctx->root, path, &t) < 0)
				break;
			if (lib_version(t, ret, retsz))
				return true;
			gb_strscpy(dir, sizeof(dir), path);
			slash = strrchr(dir, '/');
			if (slash)
				*slash = '\0';
			else
				dir[0] = '\0';
			if (gb_path_join_in_root(dir, t, path, sizeof(path)) < 0)
				break;
		}
	}
	return false;
}

/* libnvidia-ml.so.<version> in a library directory, by listing it. */
static bool installed_by_listing(struct gb_ctx *ctx, char *ret, size_t retsz)
{
	for (size_t i = 0; gb_nvidia_lib_dirs[i]; i++) {
		char **names = NULL;
		bool found = false;
		if (gb_root_list_dir(ctx->root, gb_nvidia_lib_dirs[i], &names, NULL) < 0)
			continue;
		for (char **n = names; *n && !found; n++)
			found = lib_version(*n, ret, retsz);
		gb_strv_free(names);
		if (found)
			return true;
	}
	return false;
}

/* The driver version of the installed NVIDIA packages (dpkg). */
static bool installed_by_package(struct gb_ctx *ctx, char *ret, size_t retsz)
{
	_cleanup_free_ char *text = NULL;
	struct gb_package *p = NULL;
	size_t len, n = 0;
	unsigned bad = 0;
	bool found = false;

	if (gb_root_read_file(ctx->root, "var/lib/dpkg/status", DPKG_STATUS_MAX, &text, &len) < 0)
		return false;
	if (gb_dpkg_status_parse(text, len, gb_package_is_nvidia, &p, &n, &bad) < 0)
		return false;
	for (size_t i = 0; i < n && !found; i++) {
		_cleanup_free_ char *v = gb_package_driver_version(&p[i]);
		found = v && gb_strscpy(ret, retsz, v) == 0;
	}
	gb_packages_free(p, n);
	return found;
}

static void find_installed(struct gb_ctx *ctx, struct gb_repair_state *s)
{
	if (installed_by_link(ctx, s->installed_version, sizeof(s->installed_version)) ||
	    installed_by_listing(ctx, s->installed_version, sizeof(s->installed_version)))
		s->installed_from = "libnvidia-ml";
	else if (installed_by_package(ctx, s->installed_version, sizeof(s->installed_version)))
		s->installed_from = "package";
	else
		s->installed_version[0] = '\0';
}

/* The version of the loaded nvidia module: sys/module/nvidia/version,
 * else the NVRM line of proc/driver/nvidia/version. */
static void find_loaded(struct gb_ctx *ctx, struct gb_repair_state *s)
{
	_cleanup_free_ char *v = NULL, *text = NULL;
	const char *flavor;

	if (gb_root_read_attr(ctx->root, "sys/module/nvidia/version", &v) >= 0 && gb_version_valid(v)) {
		s->loaded = gb_strscpy(s->loaded_version, sizeof(s->loaded_version), v) == 0;
		return;
	}
	free(v);
	v = NULL;
	if (gb_root_read_file(ctx->root, "proc/driver/nvidia/version", 4096, &text, NULL) >= 0 &&
	    gb_nvrm_version_parse(text, &v, &flavor) >= 0 && v)
		s->loaded = gb_strscpy(s->loaded_version, sizeof(s->loaded_version), v) == 0;
}

static int strverscmp_desc(const void *a, const void *b)
{
	return -strverscmp((const char *)a, (const char *)b);
}

/* The kernel to check when none is named. */
static int running_kernel(struct gb_ctx *ctx, struct gb_repair_state *s)
{
	_cleanup_free_ char *rel = NULL;
	struct utsname u;

	if (gb_root_read_attr(ctx->root, "proc/sys/kernel/osrelease", &rel) >= 0 && gb_repair_kver_valid(rel)) {
		s->running = true;
		return gb_strscpy(s->kver, sizeof(s->kver), rel) < 0 ? -EINVAL : 0;
	}
	if (ctx->root->is_host && ctx->ops->uname(ctx->ops, &u) >= 0 && gb_repair_kver_valid(u.release)) {
		s->running = true;
		return gb_strscpy(s->kver, sizeof(s->kver), u.release) < 0 ? -EINVAL : 0;
	}
	/* An image root: the newest kernel it has is the one it will boot. */
	return gb_repair_newest_kernel(ctx, s->kver, sizeof(s->kver));
}

int gb_repair_newest_kernel(struct gb_ctx *ctx, char *ret, size_t n)
{
	char ks[GB_PREPARE_MAX_KERNELS][GB_KVER_MAX];
	size_t nk = 0;

	if (gb_prepare_kernels(ctx->root, ks, ARRAY_SIZE(ks), &nk) < 0 || nk == 0)
		return -ENOENT;
	qsort(ks, nk, sizeof(ks[0]), strverscmp_desc);
	return gb_strscpy(ret, n, ks[0]) < 0 ? -EINVAL : 0;
}

static bool marker_exists(struct gb_ctx *ctx, const char *kver)
{
	char p[GB_KVER_MAX + 64];
	snprintf(p, sizeof(p), "%s/%s%s", GB_REPAIR_MARKER_DIR, GB_REPAIR_MARKER_PREFIX, kver);
	return gb_root_lexists(ctx->root, p);
}

/* The module file for the kernel (the install methods' directories, then
 * modules.dep) and its version from .modinfo. */
static int find_module(struct gb_ctx *ctx, struct gb_repair_state *s)
{
	_cleanup_(gb_kmodp) struct gb_kmod *k = NULL;
	struct gb_nvidia_module m = { 0 };
	unsigned warnings = 0;
	int r;

	s->module_checked = true;
	r = gb_nvidia_module_find(ctx, &k, s->kver, &m, &warnings);
	if (r == -ENOMEM)
		return r;
	if (r < 0)
		return 0;
	s->module_present = true;
	gb_strscpy(s->module_path, sizeof(s->module_path), m.path[0] == '/' ? m.path + 1 : m.path);
	if (m.version)
		gb_strscpy(s->module_version, sizeof(s->module_version), m.version);
	gb_nvidia_module_done(&m);
	return 0;
}

int gb_repair_check(struct gb_ctx *ctx, const char *kver, struct gb_repair_state *ret)
{
	struct gb_repair_state s = { .verdict = GB_REPAIR_OK };
	int r;

	if (kver) {
		if (!gb_repair_kver_valid(kver))
			return -EINVAL;
		struct gb_repair_state run = { 0 };
		gb_strscpy(s.kver, sizeof(s.kver), kver);
		s.running = running_kernel(ctx, &run) == 0 && run.running && streq(run.kver, kver);
	} else {
		r = running_kernel(ctx, &s);
		if (r < 0)
			return r;
	}
	s.marker = marker_exists(ctx, s.kver);
	if (s.running)
		find_loaded(ctx, &s);
	find_installed(ctx, &s);
	/* The boot path: loaded at the installed version; nothing more to read. */
	if (s.running && s.loaded && (!s.installed_version[0] || streq(s.loaded_version, s.installed_version))) {
		snprintf(s.reason, sizeof(s.reason), "the NVIDIA module %s is loaded in %s%s%s", s.loaded_version,
		         s.kver, s.installed_version[0] ? ", the installed version" : "",
		         s.installed_version[0] ? "" : " (no userspace driver found to compare)");
		*ret = s;
		return 0;
	}
	r = find_module(ctx, &s);
	if (r < 0)
		return r;
	r = gb_repair_decide(ctx, &s);
	if (r < 0)
		return r;
	*ret = s;
	return 0;
}
