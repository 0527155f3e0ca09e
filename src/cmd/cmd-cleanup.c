/* SPDX-License-Identifier: MIT */
/* gpuboot --root IMG cleanup: what a killed image build left, undone, for
 * a Packer pipeline that must capture or delete the image root after a
 * build timed out: the bind mounts gpuboot made (named in the image's
 * var/lib/gpuboot/chroot-mounts, and only those), policy-rc.d where it is
 * gpuboot's, and a status still "running" marked interrupted. The install
 * itself is left for the next run, which continues it from the journal. */
#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include "cmd.h"
#include "context.h"
#include "exit-codes.h"
#include "run/run.h"
#include "shared/log.h"
#include "shared/root.h"
#include "status/status.h"

static int cmd_cleanup(struct gb_ctx *ctx, int argc, char **argv)
{
	struct gb_status st = { .command = "cleanup" };
	int code, lock = -1, r, marked;

	if ((code = gb_cmd_no_args("cleanup", argc, argv)))
		return code;
	if (ctx->root->is_host) {
		gb_log_error("'cleanup' undoes what an image build left under --root IMG; the live machine's root has "
		             "no chroot to clean (a killed run there continues at the next 'gpuboot run')");
		return GB_EXIT_USAGE;
	}
	/* A build still running holds the lock: its mounts are in use. */
	code = gb_lock_take(ctx, &lock);
	if (code)
		return code;
	marked = gb_status_mark_interrupted(ctx, &st);
	r = gb_run_cleanup_image(ctx);
	if (r >= 0)
		printf("cleanup: %s: %s%s\n", ctx->opt.root, r ? "undid what a killed run left" : "nothing left behind",
		       marked > 0 ? "; its status now says interrupted" : "");
	gb_status_done(&st);
	close(lock);
	return r < 0 || marked < 0 ? GB_EXIT_FAILED : GB_EXIT_OK;
}

const struct gb_cmd gb_cmd_cleanup = {
	.name = "cleanup",
	.id = GB_CMD_CLEANUP,
	.fn = cmd_cleanup,
	.help = "image root: undo what a killed build left (gpuboot's mounts, policy-rc.d), mark its status",
	.writes_state = 1,
	.reads_root = 1,
};
