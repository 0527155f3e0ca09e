/* SPDX-License-Identifier: MIT */
/* The walk every package-manager install takes, whatever the backend
 * (install-internal.h, "the package-backend interface"). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "context.h"
#include "install-internal.h"
#include "shared/macro.h"
#include "shared/root.h"
#include "shared/util.h"

#define DEFAULT_LOCK_MS (5 * 60 * 1000)

#define FAIL(e, r, ...) (snprintf((e)->ret->error, sizeof((e)->ret->error), __VA_ARGS__), (r))

int gb_pkg_effect(struct gb_pkg_engine *e, const char *id, const char *const *argv, unsigned timeout_ms)
{
	const struct gb_install_effect x = {
		.ctx = e->ctx,
		.j = e->j,
		.chroot_dir = e->chroot_dir,
		.lock_wait = e->be->lock_wait,
		.lock_ms = e->in->lock_timeout_ms ? e->in->lock_timeout_ms : DEFAULT_LOCK_MS,
		.res = e->res,
	};
	return gb_install_effect(&x, id, argv, timeout_ms, e->ret->error, sizeof(e->ret->error));
}

int gb_pkg_query(struct gb_pkg_engine *e, const char *const *argv, bool whole)
{
	return gb_install_query(e->ctx, e->chroot_dir, argv, e->be->query_timeout_ms, whole, e->res, e->ret->error,
	                        sizeof(e->ret->error));
}

int gb_pkg_write_blacklist(struct gb_pkg_engine *e)
{
	return e->in->userspace_only ? 0 : gb_install_write_blacklist(e->j, e->ret->error, sizeof(e->ret->error));
}

static int in_root_cb(void *e)
{
	struct gb_pkg_engine *x = e;
	return x->be->install(x);
}

/* A module for every kernel, each in the result. */
static int check_modules(struct gb_pkg_engine *e)
{
	for (size_t i = 0; i < e->n_kernels; i++) {
		struct gb_install_kernel_result *k = &e->ret->kernels[e->ret->n_kernels++];
		gb_strscpy(k->kver, sizeof(k->kver), e->kernels[i]);
		e->be->find_module(e, e->kernels[i], k->module, sizeof(k->module));
		if (!k->module[0])
			return e->be->no_module(e, e->kernels[i]);
	}
	return 0;
}

static int apply(struct gb_pkg_engine *e)
{
	bool done = false;
	int r = e->be->prepare(e, &done);

	if (r >= 0)
		r = done ? e->be->settle(e)
		         : gb_install_in_root(e->ctx, e->j, e->chroot_dir, in_root_cb, e, e->ret->error,
		                              sizeof(e->ret->error));
	if (r >= 0)
		r = e->be->after(e);
	return r < 0 ? r : check_modules(e);
}

int gb_pkg_engine_run(const struct gb_pkg_backend *be, struct gb_ctx *ctx, const struct gb_install_input *in,
                      struct gb_journal *j, struct gb_install_result *ret)
{
	_cleanup_free_ struct gb_cmd_result *res = calloc(1, sizeof(*res));
	_cleanup_free_ struct gb_pkg_engine *e = calloc(1, be->state_size);
	int r = 0;

	if (!res || !e)
		return -ENOMEM;
	*e = (struct gb_pkg_engine){ .be = be, .ctx = ctx, .j = j, .in = in, .ret = ret, .res = res };
	ret->method = in->method == GB_INSTALL_PACKAGES ? "packages"
	              : in->method == GB_INSTALL_KERNEL ? "kernel"
	                                                : "distro";
	ret->image = !ctx->root->is_host;
	if (ret->image) {
		if (!realpath(ctx->opt.root, e->dir))
			r = FAIL(e, negative_errno(), "Failed to resolve the root '%s'", ctx->opt.root);
		e->chroot_dir = e->dir;
	}
	if (r >= 0)
		r = be->os(e);
	if (r >= 0)
		r = gb_install_kernels(ctx, in, e->kernels, &e->n_kernels, ret->error, sizeof(ret->error));
	if (r >= 0)
		r = be->list(e);
	if (r >= 0 && be->before)
		r = be->before(e);
	if (r >= 0)
		r = apply(e);
	if (be->done)
		be->done(e);
	return r;
}
