/* SPDX-License-Identifier: MIT */
/* The module built once per kernel, in an image root, and published in the
 * site's mirror as a Debian package (modules-build.h). The build is
 * DKMS's, in the image (gb_repair builds what is missing); the package is
 * written in-process (install/deb-write.c) with the files DKMS installed,
 * signed by the site's key when the site has one (load/modsign.c). */
#include "modules-build.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "catalog/catalog.h"
#include "context.h"
#include "detect/detect.h"
#include "exit-codes.h"
#include "effect/journal.h"
#include "effect/pkg.h"
#include "fetch/fetch-plan.h"
#include "fetch/manifest.h"
#include "install/deb-write.h"
#include "load/modsign.h"
#include "repair.h"
#include "shared/digest.h"
#include "shared/fileio.h"
#include "shared/json-util.h"
#include "shared/log.h"
#include "shared/macro.h"
#include "shared/ops.h"
#include "shared/root.h"
#include "shared/util.h"

#define MAX_FILES 8
#define MODULE_READ_MAX (512u << 20)
#define FAIL(code, ...) (snprintf(err, errsz, __VA_ARGS__), (code))

/* What the image holds: its os-release, the Debian DKMS package, the
 * kernels' image packages. */
struct image {
	struct gb_os_release osr;
	const struct gb_debian_driver *deb;
	const char *dkms_version; /* the DKMS package's full version */
	char driver[32];
	bool gsp, support; /* firmware-nvidia-gsp, nvidia-kernel-support installed */
	struct gb_package *pkgs;
	size_t n_pkgs;
};

/* One kernel's package, as it is being made. */
struct kpkg {
	const char *kver, *kernel_version;
	struct gb_nvidia_module m;
	char names[MAX_FILES][96];
	unsigned char *data[MAX_FILES];
	size_t len[MAX_FILES], n;
	char arch[16], signer[128];
	bool built;
};

static bool want(const char *name)
{
	return gb_startswith(name, "linux-image-") || streq(name, "nvidia-kernel-dkms") ||
	       streq(name, "nvidia-open-kernel-dkms") || streq(name, "firmware-nvidia-gsp") ||
	       streq(name, "nvidia-kernel-support");
}

static const char *pkg_version(const struct image *im, const char *name)
{
	for (size_t i = 0; i < im->n_pkgs; i++)
		if (streq(im->pkgs[i].name, name))
			return im->pkgs[i].version;
	return NULL;
}

static int image_read(struct gb_ctx *ctx, struct image *im, char *err, size_t errsz)
{
	_cleanup_free_ char *text = NULL, *drv = NULL;
	const struct gb_os *os;
	size_t len = 0;
	unsigned bad = 0;
	int r;

	r = gb_os_release_read(ctx, &im->osr);
	os = r >= 0 ? gb_os_find(im->osr.id) : NULL;
	if (!os || os->pkgmgr != GB_PKGMGR_APT)
		return FAIL(GB_EXIT_UNSUPPORTED,
		            "%s is '%s': prebuilt module packages are Debian packages, built in a Debian image root "
		            "(the rpm families are not built yet)",
		            ctx->root->path, im->osr.id[0] ? im->osr.id : "no os-release");
	r = gb_root_read_file(ctx->root, "var/lib/dpkg/status", 64u << 20, &text, &len);
	if (r >= 0)
		r = gb_dpkg_status_parse(text, len, want, &im->pkgs, &im->n_pkgs, &bad);
	if (r < 0)
		return FAIL(GB_EXIT_FAILED, "cannot read var/lib/dpkg/status in %s: %s", ctx->root->path, strerror(-r));
	for (const struct gb_debian_driver *d = gb_debian_drivers; d->flavor && !im->deb; d++)
		if ((im->dkms_version = pkg_version(im, d->kmod_package)))
			im->deb = d;
	if (!im->deb)
		return FAIL(GB_EXIT_USAGE,
		            "%s has no Debian NVIDIA DKMS package (nvidia-kernel-dkms, nvidia-open-kernel-dkms): run "
		            "gpuboot's image install with --method distro in it first, then build its modules",
		            ctx->root->path);
	for (size_t i = 0; i < im->n_pkgs; i++)
		if (streq(im->pkgs[i].name, im->deb->kmod_package))
			drv = gb_package_driver_version(&im->pkgs[i]);
	if (!drv || gb_strscpy(im->driver, sizeof(im->driver), drv) < 0)
		return FAIL(GB_EXIT_FAILED, "%s's version '%s' carries no driver version", im->deb->kmod_package,
		            im->dkms_version);
	im->gsp = pkg_version(im, "firmware-nvidia-gsp") != NULL;
	im->support = pkg_version(im, "nvidia-kernel-support") != NULL;
	return 0;
}

/* The architecture the module was built for: its ELF machine, else the
 * Debian kernel release's last word. */
static int module_arch(const struct kpkg *k, char *out, size_t outsz)
{
	const unsigned char *e = k->data[0];
	const char *last = strrchr(k->kver, '-');

	if (k->len[0] > 20 && memcmp(e, "\177ELF", 4) == 0 && e[5] == 1) {
		unsigned mach = e[18] | (e[19] << 8);
		if (mach == 62)
			return gb_strscpy(out, outsz, "amd64");
		if (mach == 183)
			return gb_strscpy(out, outsz, "arm64");
		return -EOPNOTSUPP;
	}
	if (last && (streq(last + 1, "amd64") || streq(last + 1, "arm64")))
		return gb_strscpy(out, outsz, last + 1);
	return -EOPNOTSUPP;
}

/* Every file of the DKMS package's module set beside the module detect
 * found (nvidia-current.ko, nvidia-current-modeset.ko, ...), read, and
 * signed with the site's pair when given. */
static int read_files(struct gb_ctx *ctx, const struct gb_modules_build_opts *o, const struct image *im, struct kpkg *k,
                      char *err, size_t errsz)
{
	char dir[256], path[400], **names = NULL;
	int r;

	snprintf(dir, sizeof(dir), "%s", k->m.path + 1);
	*strrchr(dir, '/') = '\0';
	r = gb_root_list_dir(ctx->root, dir, &names, NULL);
	if (r < 0)
		return FAIL(GB_EXIT_FAILED, "cannot list %s in %s: %s", dir, ctx->root->path, strerror(-r));
	for (char **n = names; *n && r >= 0; n++) {
		const char *rest = gb_startswith(*n, im->deb->module);
		if (!rest || (rest[0] != '.' && rest[0] != '-') || !strstr(rest, ".ko"))
			continue;
		if (k->n >= MAX_FILES) {
			r = FAIL(GB_EXIT_FAILED, "more than %d module files in %s", MAX_FILES, dir);
			break;
		}
		snprintf(path, sizeof(path), "%s/%s", dir, *n);
		gb_strscpy(k->names[k->n], sizeof(k->names[k->n]), *n);
		r = gb_root_read_file(ctx->root, path, MODULE_READ_MAX, (char **)&k->data[k->n], &k->len[k->n]);
		if (r < 0) {
			r = FAIL(GB_EXIT_FAILED, "cannot read %s in %s: %s", path, ctx->root->path, strerror(-r));
			break;
		}
		/* the main module first: its ELF header names the architecture */
		if (rest[0] == '.' && k->n) {
			unsigned char *d = k->data[0];
			size_t l = k->len[0];
			char t[96];
			k->data[0] = k->data[k->n];
			k->len[0] = k->len[k->n];
			k->data[k->n] = d;
			k->len[k->n] = l;
			memcpy(t, k->names[0], sizeof(t));
			memcpy(k->names[0], k->names[k->n], sizeof(t));
			memcpy(k->names[k->n], t, sizeof(t));
		}
		k->n++;
	}
	gb_strv_free(names);
	if (r < 0)
		return r;
	if (!o->module_key)
		return 0;
	for (size_t i = 0; i < k->n; i++) {
		unsigned char *signed_mod = NULL;
		size_t slen = 0;
		size_t nl = strlen(k->names[i]);
		if (nl < 3 || !streq(k->names[i] + nl - 3, ".ko"))
			return FAIL(
			    GB_EXIT_UNSUPPORTED,
			    "%s/%s is compressed: gpuboot signs uncompressed modules only; give DKMS the site key "
			    "instead (its mok_signing_key and mok_certificate in the image), and build without "
			    "--module-key",
			    dir, k->names[i]);
		r = gb_modsign_sign(k->data[i], k->len[i], o->module_key, o->module_cert, &signed_mod, &slen, err,
		                    errsz);
		if (r < 0)
			return r == -ENOMEM ? GB_EXIT_FAILED : GB_EXIT_USAGE;
		free(k->data[i]);
		k->data[i] = signed_mod;
		k->len[i] = slen;
	}
	return 0;
}

/* The kernel's module, built by DKMS in the image when it is not there. */
static int kernel_module(struct gb_ctx *ctx, const struct gb_modules_build_opts *o, struct gb_journal *j,
                         const struct image *im, struct kpkg *k, char *err, size_t errsz)
{
	_cleanup_free_ struct gb_repair_result *rr = calloc(1, sizeof(*rr));
	struct gb_kmod *kmod = NULL;
	unsigned warnings = 0;
	int r;

	if (!rr)
		return FAIL(GB_EXIT_FAILED, "out of memory");
	r = gb_repair(ctx, k->kver, o->build_timeout_min, j, rr);
	if (r < 0)
		return FAIL(rr->exit_code ? rr->exit_code : GB_EXIT_FAILED, "%s: %s%s%s", k->kver,
		            rr->error[0] ? rr->error : strerror(-r), rr->hint[0] ? "; " : "", rr->hint);
	k->built = rr->built;
	r = gb_nvidia_module_find(ctx, &kmod, k->kver, &k->m, &warnings);
	gb_kmod_free(kmod);
	if (r < 0)
		return FAIL(GB_EXIT_FAILED, "%s: no NVIDIA module under lib/modules/%s after DKMS (%s)", k->kver,
		            k->kver, strerror(-r));
	if (!k->m.version || !streq(k->m.version, im->driver) || !k->m.flavor || !streq(k->m.flavor, im->deb->flavor))
		return FAIL(GB_EXIT_FAILED, "%s: the module %s is %s %s, the image's %s is %s %s", k->kver, k->m.path,
		            k->m.version ? k->m.version : "of no readable version", k->m.flavor ? k->m.flavor : "",
		            im->deb->kmod_package, im->driver, im->deb->flavor);
	if (!k->m.vermagic || !gb_startswith(k->m.vermagic, k->kver) || k->m.vermagic[strlen(k->kver)] != ' ')
		return FAIL(GB_EXIT_FAILED, "%s: the module %s was built for another kernel (vermagic '%s')", k->kver,
		            k->m.path, k->m.vermagic ? k->m.vermagic : "unreadable");
	return read_files(ctx, o, im, k, err, errsz);
}

static void deb_version(const struct image *im, const struct kpkg *k, char *out, size_t outsz)
{
	/* the driver's package version, then the kernel package's, so an ABI
	 * rebuild of the same release is a newer package ('-' is the Debian
	 * revision's separator: '.' instead) */
	size_t o = (size_t)snprintf(out, outsz, "%s+k", im->dkms_version);
	for (const char *c = k->kernel_version; *c && o + 1 < outsz; c++)
		out[o++] = *c == '-' || *c == ':' ? '.' : *c;
	out[o < outsz ? o : outsz - 1] = '\0';
}

static int write_package(struct gb_ctx *ctx, const struct gb_modules_build_opts *o, const struct image *im,
                         struct kpkg *k, struct gb_manifest *man, json_object *out, char *err, size_t errsz)
{
	char pkg[128], ver[200], control[2400], postinst[300], postrm[300], rel[512], path[1100], sha[65],
	    files[MAX_FILES][200];
	struct gb_deb_file df[MAX_FILES];
	_cleanup_free_ unsigned char *deb = NULL;
	struct gb_mirror_module mod;
	struct gb_manifest_entry e;
	struct gb_sha256 h;
	size_t len = 0, total = 0;
	const char *open = streq(im->deb->flavor, "open") ? "open-" : "";
	int r;

	snprintf(pkg, sizeof(pkg), "gpuboot-nvidia-%smodules-%s", open, k->kver);
	deb_version(im, k, ver, sizeof(ver));
	if (!gb_deb_name_valid(pkg) || !gb_deb_version_valid(ver))
		return FAIL(GB_EXIT_FAILED, "'%s' '%s' is not a Debian package name and version", pkg, ver);
	for (size_t i = 0; i < k->n; i++) {
		snprintf(files[i], sizeof(files[i]), "lib/modules/%s/updates/gpuboot/%s", k->kver, k->names[i]);
		df[i] = (struct gb_deb_file){ .path = files[i], .data = k->data[i], .len = k->len[i], .mode = 0644 };
		total += k->len[i];
	}
	snprintf(
	    control, sizeof(control),
	    "Package: %s\nSource: gpuboot\nVersion: %s\nArchitecture: %s\n"
	    "Maintainer: gpuboot modules build <root@localhost>\nInstalled-Size: %zu\n"
	    "Depends: linux-image-%s (= %s)%s%s%s%s%s\nProvides: nvidia-%skernel-%s\n"
	    "Conflicts: nvidia-kernel-dkms, nvidia-open-kernel-dkms\nSection: non-free/kernel\nPriority: optional\n"
	    "Description: NVIDIA %s kernel module %s for Linux %s, prebuilt\n"
	    " Built once by DKMS from %s %s in an image root and published in the site's\n"
	    " mirror by gpuboot modules build. vermagic: %s\n",
	    pkg, ver, k->arch, (total + 1023) / 1024, k->kver, k->kernel_version,
	    im->support ? ", nvidia-kernel-support--v1" : "", im->gsp ? ", firmware-nvidia-gsp (= " : "",
	    im->gsp ? im->driver : "", im->gsp ? ") | firmware-nvidia-gsp-" : "", im->gsp ? im->driver : "", open,
	    im->driver, im->deb->flavor, im->driver, k->kver, im->deb->kmod_package, im->dkms_version, k->m.vermagic);
	snprintf(postinst, sizeof(postinst), "#!/bin/sh\nset -e\nif [ \"$1\" = configure ]; then\n\tdepmod -a %s\nfi\n",
	         k->kver);
	snprintf(postrm, sizeof(postrm),
	         "#!/bin/sh\nset -e\nif [ \"$1\" = remove ] && [ -d /lib/modules/%s ]; then\n\tdepmod -a %s\nfi\n",
	         k->kver, k->kver);
	r = gb_deb_write(
	    &(struct gb_deb_spec){ .control = control,
	                           .postinst = postinst,
	                           .postrm = postrm,
	                           .files = df,
	                           .n_files = k->n,
	                           .mtime = (time_t)(ctx->ops->now_realtime_ns(ctx->ops) / 1000000000ull) },
	    &deb, &len, err, errsz);
	if (r < 0)
		return GB_EXIT_FAILED;
	snprintf(rel, sizeof(rel), "modules/%s-%s/%s/%s_%s_%s.deb", im->osr.id, im->osr.version_id, k->kver, pkg, ver,
	         k->arch);
	snprintf(path, sizeof(path), "%s/%s", o->out_dir, rel);
	*strrchr(path, '/') = '\0';
	r = gb_mkdir_p(path, 0755);
	path[strlen(path)] = '/';
	if (r >= 0)
		r = gb_write_file_atomic(path, deb, len, 0644);
	if (r < 0)
		return FAIL(GB_EXIT_FAILED, "cannot write %s: %s", path, strerror(-r));
	r = gb_sha256_init(&h);
	if (r >= 0 && (r = gb_sha256_update(&h, deb, len)) >= 0)
		r = gb_sha256_final(&h, sha);
	gb_sha256_done(&h);
	if (r < 0)
		return FAIL(GB_EXIT_FAILED, "hashing %s: %s", path, strerror(-r));
	memset(&e, 0, sizeof(e));
	gb_strscpy(e.path, sizeof(e.path), rel);
	gb_strscpy(e.sha256, sizeof(e.sha256), sha);
	e.size = len;
	memset(&mod, 0, sizeof(mod));
	gb_strscpy(mod.path, sizeof(mod.path), rel);
	snprintf(mod.distro, sizeof(mod.distro), "%s:%s", im->osr.id, im->osr.version_id);
	gb_strscpy(mod.arch, sizeof(mod.arch), k->arch);
	gb_strscpy(mod.kernel, sizeof(mod.kernel), k->kver);
	snprintf(mod.kernel_package, sizeof(mod.kernel_package), "linux-image-%s", k->kver);
	gb_strscpy(mod.kernel_package_version, sizeof(mod.kernel_package_version), k->kernel_version);
	gb_strscpy(mod.vermagic, sizeof(mod.vermagic), k->m.vermagic);
	gb_strscpy(mod.driver, sizeof(mod.driver), im->driver);
	gb_strscpy(mod.flavor, sizeof(mod.flavor), im->deb->flavor);
	gb_strscpy(mod.package, sizeof(mod.package), pkg);
	gb_strscpy(mod.package_version, sizeof(mod.package_version), ver);
	gb_strscpy(mod.signer, sizeof(mod.signer), k->signer);
	r = gb_manifest_put(man, &e);
	if (r >= 0)
		r = gb_mirror_module_put(man, &mod);
	if (r < 0)
		return FAIL(GB_EXIT_FAILED, "out of memory");
	json_object *o1 = gb_json_new_object();
	gb_json_add(o1, "kernel", gb_json_new_string(k->kver));
	gb_json_add(o1, "kernel_package_version", gb_json_new_string(k->kernel_version));
	gb_json_add(o1, "built", gb_json_new_boolean(k->built));
	gb_json_add(o1, "vermagic", gb_json_new_string(k->m.vermagic));
	gb_json_add(o1, "signer", k->signer[0] ? gb_json_new_string(k->signer) : NULL);
	gb_json_add(o1, "files", gb_json_new_int((int)k->n));
	gb_json_add(o1, "package", gb_json_new_string(pkg));
	gb_json_add(o1, "version", gb_json_new_string(ver));
	gb_json_add(o1, "path", gb_json_new_string(rel));
	gb_json_add(o1, "sha256", gb_json_new_string(sha));
	gb_json_add(o1, "size", gb_json_new_int64((int64_t)len));
	gb_json_append(out, o1);
	gb_log_info("Published %s %s for %s (%zu module files, %zu bytes): %s", pkg, ver, k->kver, k->n, len, rel);
	return 0;
}

static void kpkg_done(struct kpkg *k)
{
	for (size_t i = 0; i < k->n; i++)
		free(k->data[i]);
	gb_nvidia_module_done(&k->m);
}

static int one_kernel(struct gb_ctx *ctx, const struct gb_modules_build_opts *o, struct gb_journal *j,
                      const struct image *im, const char *kver, struct gb_manifest *man, json_object *out, char *err,
                      size_t errsz)
{
	struct kpkg k = { .kver = kver };
	char name[GB_KVER_MAX + 16];
	int code;

	if (!gb_repair_kver_valid(kver))
		return FAIL(GB_EXIT_USAGE, "'%s' is not a kernel release", kver);
	snprintf(name, sizeof(name), "linux-image-%s", kver);
	k.kernel_version = pkg_version(im, name);
	if (!k.kernel_version)
		return FAIL(GB_EXIT_USAGE,
		            "the kernel %s of %s is not from a package (%s is not installed): a prebuilt module "
		            "names the kernel package it fits",
		            kver, ctx->root->path, name);
	code = kernel_module(ctx, o, j, im, &k, err, errsz);
	if (!code && (k.n == 0 || module_arch(&k, k.arch, sizeof(k.arch)) < 0))
		code = FAIL(GB_EXIT_FAILED, "%s: no module file of %s, or one of an unknown architecture", kver,
		            im->deb->module);
	if (!code && o->module_key) {
		char kid[130];
		if (gb_modsign_cert_id(o->module_cert, k.signer, sizeof(k.signer), kid, sizeof(kid), err, errsz) < 0)
			code = GB_EXIT_USAGE;
	} else if (!code && k.m.signer) {
		gb_strscpy(k.signer, sizeof(k.signer), k.m.signer);
	}
	if (!code)
		code = write_package(ctx, o, im, &k, man, out, err, errsz);
	kpkg_done(&k);
	return code;
}

/* The image's kernels: lib/modules/KVER with boot/vmlinuz-KVER. */
static int image_kernels(struct gb_ctx *ctx, char ***ret, char *err, size_t errsz)
{
	char **names = NULL, **v;
	size_t n = 0, k = 0;
	int r = gb_root_list_dir(ctx->root, "lib/modules", &names, &n);

	if (r < 0)
		return FAIL(GB_EXIT_USAGE, "%s has no lib/modules: %s", ctx->root->path, strerror(-r));
	v = calloc(n + 1, sizeof(*v));
	for (size_t i = 0; v && i < n; i++) {
		char p[GB_KVER_MAX + 32];
		snprintf(p, sizeof(p), "boot/vmlinuz-%s", names[i]);
		if (gb_repair_kver_valid(names[i]) && gb_root_exists(ctx->root, p))
			v[k++] = TAKE_PTR(names[i]);
	}
	gb_strv_free(names);
	if (!v)
		return FAIL(GB_EXIT_FAILED, "out of memory");
	if (!k) {
		free(v);
		return FAIL(GB_EXIT_USAGE, "%s has no kernel (lib/modules/KVER with boot/vmlinuz-KVER)",
		            ctx->root->path);
	}
	*ret = v;
	return 0;
}

int gb_modules_build(struct gb_ctx *ctx, const struct gb_modules_build_opts *o, struct gb_journal *j,
                     json_object **ret_json, char *err, size_t errsz)
{
	struct image im = { 0 };
	struct gb_manifest man = { 0 };
	json_object *doc = gb_json_new_object(), *ks = gb_json_new_array();
	char **own = NULL;
	char *const *kernels = o->kernels;
	size_t nk = o->n_kernels;
	int code;

	gb_json_add(doc, "kernels", ks);
	*ret_json = doc;
	code = image_read(ctx, &im, err, errsz);
	if (!code && !kernels && !(code = image_kernels(ctx, &own, err, errsz))) {
		kernels = own;
		for (nk = 0; own[nk]; nk++)
			;
	}
	if (!code) {
		int r = gb_mirror_load_own(o->out_dir, o->sign_key, &man, err, errsz);
		if (r < 0)
			code = r == -EPERM ? GB_EXIT_USAGE : GB_EXIT_FAILED;
	}
	if (!code) {
		gb_json_add(doc, "driver", gb_json_new_string(im.driver));
		gb_json_add(doc, "flavor", gb_json_new_string(im.deb->flavor));
		gb_json_add(doc, "dkms_package", gb_json_new_string(im.deb->kmod_package));
	}
	for (size_t i = 0; !code && i < nk; i++)
		code = one_kernel(ctx, o, j, &im, kernels[i], &man, ks, err, errsz);
	if (!code && gb_mirror_publish(ctx, o->out_dir, &man, o->sign_key, o->version, err, errsz) < 0)
		code = GB_EXIT_FAILED;
	if (!code)
		gb_json_add(doc, "manifest_version", gb_json_new_int64((int64_t)man.version));
	gb_strv_free(own);
	gb_manifest_done(&man);
	gb_packages_free(im.pkgs, im.n_pkgs);
	return code;
}
