/* SPDX-License-Identifier: MIT */
/* Commands for the stages that change a machine: a read-only query, a
 * journaled command after its package manager's lock, and a function run
 * on the live machine or inside an image's chroot (effect.h). */
#include "effect.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "context.h"
#include "effect/journal.h"
#include "shared/log.h"
#include "shared/ops.h"

#define STAGE "install"

int gb_install_query(struct gb_ctx *ctx, const char *chroot_dir, const char *const *argv, unsigned timeout_ms,
                     bool whole, struct gb_cmd_result *res, char *err, size_t errsz)
{
	struct gb_cmd_spec spec = { .argv = argv, .chroot_dir = chroot_dir, .timeout_ms = (int)timeout_ms };
	int r = ctx->ops->run_command(ctx->ops, &spec, res);
	if (r < 0) {
		snprintf(err, errsz, "Failed to run %s %s: %s", argv[0], argv[1] ? argv[1] : "", strerror(-r));
		return r;
	}
	if (whole && res->output_len >= GB_CMD_CAPTURE_MAX - 1) {
		snprintf(err, errsz, "The output of %s %s is longer than gpuboot reads", argv[0],
		         argv[1] ? argv[1] : "");
		return -E2BIG;
	}
	return 0;
}

int gb_install_effect(const struct gb_install_effect *e, const char *id, const char *const *argv, unsigned timeout_ms,
                      char *err, size_t errsz)
{
	struct gb_cmd_spec spec = { .argv = argv, .chroot_dir = e->chroot_dir, .timeout_ms = (int)timeout_ms };
	int r = e->lock_wait(e->ctx, e->lock_ms, err, errsz);
	if (r < 0)
		return r;
	r = gb_journal_run(e->j, STAGE, id, &spec, e->res);
	if (r == 1) /* done in the run this one resumes */
		return 0;
	if (r < 0) {
		const char *tail =
		    e->res->output_len > 300 ? e->res->output + e->res->output_len - 300 : e->res->output;
		char esc[700];
		gb_log_escape(esc, sizeof(esc), tail);
		snprintf(err, errsz, "%s %s failed%s: %s", argv[0], argv[1] ? argv[1] : "",
		         e->res->timed_out ? " (timed out)" : "", esc);
		return r;
	}
	return 0;
}

int gb_install_in_root(struct gb_ctx *ctx, struct gb_journal *j, const char *chroot_dir, int (*fn)(void *), void *arg,
                       char *err, size_t errsz)
{
	struct gb_chroot c;
	int r, k;

	if (!chroot_dir)
		return fn(arg);
	r = gb_chroot_enter(ctx, j, &c, err, errsz);
	if (r < 0)
		return r;
	r = fn(arg);
	/* On every path: unmounted, policy-rc.d gone. A failure of fn is the
	 * one reported; one of the cleanup only if it alone failed. */
	k = gb_chroot_leave(ctx, j, &c, err, errsz);
	return r < 0 ? r : k;
}
