/* SPDX-License-Identifier: MIT */
/* install: put the driver the plan chose onto the machine (ctx->root is
 * "/") or into an image root (anything else: the package manager runs
 * chrooted, modules are built for the image's kernels, daemons are enabled
 * and not started). Every effect goes through the journal: files through
 * gb_journal_write_file, commands through gb_journal_run. A rerun that
 * finds everything in place runs no command and writes no file.
 *
 * Methods in this version: "distro" on Debian (Debian's own contrib and
 * non-free packages, pinned to one driver version, held). */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

struct gb_ctx;
struct gb_journal;

#define GB_INSTALL_MAX_PKGS 24
#define GB_INSTALL_MAX_KERNELS 8
#define GB_INSTALL_NAME 96
#define GB_INSTALL_VERSION 64
#define GB_INSTALL_KVER 80

enum gb_install_method {
	GB_INSTALL_DISTRO = 1, /* the distribution's own driver packages */
};

/* One package to install. version: an exact distribution version
 * ("535.261.03-1"), an upstream version that the distribution version
 * must carry ("535.261.03" matches "535.261.03-1" and "1:535.261.03-2"),
 * or "" for whatever the archive offers. */
struct gb_install_pkg {
	char name[GB_INSTALL_NAME];
	char version[GB_INSTALL_VERSION];
	bool hold; /* apt-mark hold after the install */
};

struct gb_install_input {
	enum gb_install_method method;
	const char *flavor; /* "open" | "proprietary" (the kernel module package) */
	const char *driver_version; /* "535.261.03": upstream version of every driver package */
	/* The driver packages; NULL: the distribution's list for flavor (see
	 * docs/install.md). Headers for the kernels are always added. */
	const struct gb_install_pkg *packages;
	size_t n_packages;
	/* The kernels to build for; NULL: every kernel installed in the root
	 * (lib/modules/<kver> with boot/vmlinuz-<kver>). */
	const char *const *kernels;
	size_t n_kernels;
	unsigned lock_timeout_ms; /* wait for the package manager's locks; 0: 5 minutes */
	unsigned apt_timeout_ms; /* one apt-get install (DKMS builds); 0: 60 minutes */
};

struct gb_install_pkg_result {
	char name[GB_INSTALL_NAME];
	char wanted[GB_INSTALL_VERSION]; /* as asked */
	char resolved[GB_INSTALL_VERSION]; /* the archive's version installed ("" when nothing was resolved) */
	char suite[64]; /* where it came from ("bookworm/non-free") */
	char before[GB_INSTALL_VERSION]; /* installed before ("" = not installed) */
	char after[GB_INSTALL_VERSION];
	bool hold, held_before, held_after;
};

struct gb_install_kernel_result {
	char kver[GB_INSTALL_KVER];
	char module[256]; /* the built module below the root, "" when none */
};

struct gb_install_result {
	const char *method; /* "distro" */
	bool image; /* installed into an image root, chrooted */
	char distro[32], codename[32];
	struct gb_install_pkg_result pkgs[GB_INSTALL_MAX_PKGS];
	size_t n_pkgs;
	struct gb_install_kernel_result kernels[GB_INSTALL_MAX_KERNELS];
	size_t n_kernels;
	bool sources_changed; /* components were enabled */
	bool packages_changed; /* apt ran */
	char error[768]; /* one line: what failed, on what, why (set on failure) */
};

/* Install per in into ctx->root. Returns 0, or a negative errno with
 * ret->error naming the cause: -ENOPKG (a package or version the archive
 * does not have; nothing was installed), -EBUSY (the package manager's
 * lock stayed held; the holder is named), -EOPNOTSUPP (a distribution or
 * method this version does not install), -EIO (a command failed; its
 * output tail is in the journal), -ENOENT (DKMS built no module for a
 * kernel). Bind mounts and policy-rc.d are undone on every path. */
int gb_install(struct gb_ctx *ctx, const struct gb_install_input *in, struct gb_journal *j,
               struct gb_install_result *ret);

/* The result for the status document: {method, image, distro, codename,
 * sources_changed, packages_changed, packages[{name, wanted, version,
 * suite, before, after, held}], modules[{kernel, path}], error}. */
json_object *gb_install_result_to_json(const struct gb_install_result *r);
