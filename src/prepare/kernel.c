/* SPDX-License-Identifier: MIT */
/* The kernel part of prepare: the newer kernel the plan chose when the
 * running kernel is older than the minimum (the driver branch's, the Grace
 * platform's, or the site's [kernel] minimum): Ubuntu's HWE metapackage
 * (linux-generic-hwe-<release>, linux-nvidia-64k-hwe-<release>), Debian's
 * linux-image-<arch> and linux-headers-<arch> from bookworm-backports; installed
 * with apt under the package manager's etiquette (the locks waited for,
 * chrooted with /proc, /sys, /dev bound for an image), then the kernel GRUB
 * will boot next read from the boot loader's files. On the live machine the
 * run then reboots into it (the resume unit finishes the run there); in an
 * image the install stage builds the modules for it, as for every kernel of
 * the image. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bootloader.h"
#include "context.h"
#include "effect/effect.h"
#include "effect/pkg.h"
#include "prepare.h"
#include "effect/journal.h"
#include "shared/json-util.h"
#include "shared/macro.h"
#include "shared/ops.h"
#include "shared/util.h"

#define QUERY_TIMEOUT_MS (2 * 60 * 1000)
#define UPDATE_TIMEOUT_MS (15 * 60 * 1000)
#define INSTALL_TIMEOUT_MS (30 * 60 * 1000)
#define LOCK_TIMEOUT_MS (5 * 60 * 1000)

struct hwe {
	struct gb_ctx *ctx;
	struct gb_journal *j;
	const char *package, *headers, *suite;
	struct gb_cmd_result *res;
	struct gb_prepare_kernel_result *ret;
	const char *chroot_dir;
};

static int apt_steps(void *p)
{
	struct hwe *h = p;
	const struct gb_install_effect e = { .ctx = h->ctx,
		                             .j = h->j,
		                             .chroot_dir = h->chroot_dir,
		                             .lock_wait = gb_pkg_lock_wait,
		                             .lock_ms = LOCK_TIMEOUT_MS,
		                             .res = h->res };
	const char *update[] = { "apt-get", "update", "-q", NULL };
	const char *install[16] = { "apt-get", "install",
		                    "-y",      "-q",
		                    "-o",      "Dpkg::Options::=--force-confdef",
		                    "-o",      "Dpkg::Options::=--force-confold" };
	size_t n = 8;
	int r;

	if (h->suite) {
		install[n++] = "-t";
		install[n++] = h->suite;
	}
	install[n++] = h->package;
	if (h->headers)
		install[n++] = h->headers;
	install[n] = NULL;
	r = gb_install_effect(&e, "kernel:apt-get-update", update, UPDATE_TIMEOUT_MS, h->ret->error,
	                      sizeof(h->ret->error));
	if (r >= 0)
		r = gb_install_effect(&e, "kernel:apt-get-install", install, INSTALL_TIMEOUT_MS, h->ret->error,
		                      sizeof(h->ret->error));
	if (r >= 0)
		h->ret->installed_now = true;
	return r;
}

/* Is the metapackage installed (dpkg's "install ok installed"), at a version
 * of at least minimum (bookworm's own linux-image-amd64 is 6.1, the
 * backports one 6.12)? */
static int installed(struct hwe *h, const char *minimum, bool *ret)
{
	const char *argv[] = { "dpkg-query", "-W", "-f", "${Package}\\t${Version}\\t${Status}\\n", h->package, NULL };
	char v[GB_INSTALL_VERSION];
	bool held;
	int r = gb_install_query(h->ctx, h->chroot_dir, argv, QUERY_TIMEOUT_MS, true, h->res, h->ret->error,
	                         sizeof(h->ret->error));
	if (r < 0)
		return r;
	r = gb_dpkg_query_parse(h->res->output, h->package, v, &held);
	if (r < 0) {
		snprintf(h->ret->error, sizeof(h->ret->error), "dpkg-query printed an invalid version for %s",
		         h->package);
		return r;
	}
	gb_strscpy(h->ret->installed_version, sizeof(h->ret->installed_version), v);
	*ret = v[0] != '\0';
	if (*ret && minimum) {
		char xy[16];
		/* "6.12.48-1~bpo12+1", Ubuntu's "6.8.0.49.52~22.04.1"; an epoch first is not a kernel's */
		gb_kernel_xy(v, xy, sizeof(xy));
		*ret = xy[0] && gb_version_cmp(xy, minimum) >= 0;
	}
	return 0;
}

static bool name_ok(const char *s)
{
	return !s || gb_deb_name_valid(s);
}

int gb_prepare_hwe(struct gb_ctx *ctx, struct gb_journal *j, const struct gb_prepare_kernel_request *req,
                   struct gb_prepare_kernel_result *ret)
{
	_cleanup_free_ struct gb_cmd_result *res = calloc(1, sizeof(*res));
	char dir[4096], xy[16];
	struct hwe h = { .ctx = ctx,
		         .j = j,
		         .package = req->package,
		         .headers = req->headers && req->headers[0] ? req->headers : NULL,
		         .suite = req->suite && req->suite[0] ? req->suite : NULL,
		         .res = res,
		         .ret = ret };
	const char *minimum = req->minimum && req->minimum[0] ? req->minimum : NULL;
	bool have = false;
	int r;

	memset(ret, 0, sizeof(*ret));
	if (!res)
		return -ENOMEM;
	gb_strscpy(ret->package, sizeof(ret->package), req->package ? req->package : "");
	if (!req->package || !gb_deb_name_valid(req->package) || !name_ok(h.headers) || !name_ok(h.suite)) {
		snprintf(ret->error, sizeof(ret->error),
		         "'%s' (headers '%s', suite '%s') is not a kernel package to install", ret->package,
		         h.headers ? h.headers : "", h.suite ? h.suite : "");
		return -EINVAL;
	}
	if (req->image) {
		if (!realpath(ctx->opt.root, dir)) {
			r = negative_errno();
			snprintf(ret->error, sizeof(ret->error), "Failed to resolve the root '%s': %s", ctx->opt.root,
			         strerror(-r));
			return r;
		}
		h.chroot_dir = dir;
	}
	r = installed(&h, minimum, &have);
	if (r >= 0 && !have)
		r = gb_install_in_root(ctx, j, h.chroot_dir, apt_steps, &h, ret->error, sizeof(ret->error));
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
