/* SPDX-License-Identifier: MIT */
/* The kernel part of prepare: the newer kernel the plan chose when the
 * running kernel is older than the minimum (the driver branch's, the Grace
 * platform's, or the site's [kernel] minimum): Ubuntu's HWE metapackage
 * (linux-generic-hwe-<release>, linux-nvidia-64k-hwe-<release>), Debian's
 * linux-image-<arch> and linux-headers-<arch> from bookworm-backports;
 * installed through the apt backend the driver's install uses (install.h,
 * GB_INSTALL_KERNEL: the locks waited for, what a killed dpkg left repaired
 * first, an unsigned or unreachable index named, chrooted with /proc, /sys,
 * /dev bound below a root that is not "/"), its journal steps under the
 * scope "kernel"; then the kernel GRUB will boot next read from the boot
 * loader's files. On the live machine the
 * run then reboots into it (the resume unit finishes the run there); in an
 * image the install stage builds the modules for it, as for every kernel of
 * the image. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bootloader.h"
#include "context.h"
#include "effect/pkg.h"
#include "prepare.h"
#include "effect/journal.h"
#include "install/install.h"
#include "shared/json-util.h"
#include "shared/log.h"
#include "shared/macro.h"
#include "shared/ops.h"
#include "shared/util.h"

/* An optional name: none (NULL or "", as the plan leaves Ubuntu's headers
 * and suite: its HWE metapackage brings its headers, from the default
 * suites) or a valid one. */
static bool name_ok(const char *s)
{
	return !s || !s[0] || gb_deb_name_valid(s);
}

/* The install through the apt backend; ret filled from its result. */
static int install_kernel(struct gb_ctx *ctx, struct gb_journal *j, const struct gb_prepare_kernel_request *req,
                          struct gb_prepare_kernel_result *ret)
{
	_cleanup_free_ struct gb_install_result *res = calloc(1, sizeof(*res));
	struct gb_pkg_spec pkgs[2] = { { .kind = GB_PKG_NAME }, { .kind = GB_PKG_NAME } };
	struct gb_install_input in = { .method = GB_INSTALL_KERNEL,
		                       .packages = pkgs,
		                       .n_packages = 1,
		                       .suite = req->suite && req->suite[0] ? req->suite : NULL,
		                       .kernel_minimum = req->minimum && req->minimum[0] ? req->minimum : NULL };
	int r;

	if (!res)
		return -ENOMEM;
	gb_strscpy(pkgs[0].name, sizeof(pkgs[0].name), req->package);
	if (req->headers && req->headers[0])
		gb_strscpy(pkgs[in.n_packages++].name, sizeof(pkgs[1].name), req->headers);
	gb_journal_set_scope(j, "kernel");
	r = gb_install(ctx, &in, j, res);
	gb_journal_set_scope(j, NULL);
	gb_strscpy(ret->installed_version, sizeof(ret->installed_version), res->pkgs[0].before);
	ret->installed_now = r >= 0 && res->packages_changed;
	if (res->recovered[0])
		gb_log_warning("%s", res->recovered);
	if (r < 0)
		gb_strscpy(ret->error, sizeof(ret->error), res->error[0] ? res->error : strerror(-r));
	return r;
}

int gb_prepare_hwe(struct gb_ctx *ctx, struct gb_journal *j, const struct gb_prepare_kernel_request *req,
                   struct gb_prepare_kernel_result *ret)
{
	const char *minimum = req->minimum && req->minimum[0] ? req->minimum : NULL;
	char xy[16];
	int r;

	memset(ret, 0, sizeof(*ret));
	gb_strscpy(ret->package, sizeof(ret->package), req->package ? req->package : "");
	if (!req->package || !gb_deb_name_valid(req->package) || !name_ok(req->headers) || !name_ok(req->suite)) {
		snprintf(ret->error, sizeof(ret->error),
		         "'%s' (headers '%s', suite '%s') is not a kernel package to install", ret->package,
		         req->headers ? req->headers : "", req->suite ? req->suite : "");
		return -EINVAL;
	}
	r = install_kernel(ctx, j, req, ret);
	if (r < 0)
		return r;
	r = gb_prepare_next_kernel(ctx->root, ret->next_kernel, sizeof(ret->next_kernel));
	if (r < 0 && r != -ENOENT) {
		snprintf(ret->error, sizeof(ret->error),
		         "%s is installed, but the kernel GRUB boots next cannot be read under %s: %s", req->package,
		         ctx->root->path, strerror(-r));
		return r;
	}
	if (r < 0 || req->image || !minimum)
		return 0; /* no GRUB to read (another boot loader), or an image's first boot picks its newest */
	gb_kernel_xy(ret->next_kernel, xy, sizeof(xy));
	if (!xy[0] || gb_version_cmp(xy, minimum) < 0) {
		snprintf(
		    ret->error, sizeof(ret->error),
		    "%s is installed, but GRUB boots %s next, older than %s: a reboot would not bring the new kernel "
		    "up; make GRUB's default the new kernel (GRUB_DEFAULT in /etc/default/grub and update-grub, or "
		    "grub-set-default) and rerun",
		    req->package, ret->next_kernel, minimum);
		return -ERANGE;
	}
	return 0;
}

json_object *gb_prepare_kernel_result_to_json(const struct gb_prepare_kernel_result *r)
{
	json_object *o = gb_json_new_object();
	gb_json_add(o, "package", gb_json_new_string(r->package));
	gb_json_add(o, "installed_version", r->installed_version[0] ? gb_json_new_string(r->installed_version) : NULL);
	gb_json_add(o, "installed_now", gb_json_new_boolean(r->installed_now));
	gb_json_add(o, "next_kernel", r->next_kernel[0] ? gb_json_new_string(r->next_kernel) : NULL);
	gb_json_add(o, "error", r->error[0] ? gb_json_new_string(r->error) : NULL);
	return o;
}
