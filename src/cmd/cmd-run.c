/* SPDX-License-Identifier: MIT */
/* gpuboot run, gpuboot --repair: the whole pipeline (src/run/). */
#include "cmd.h"
#include "context.h"
#include "run/run.h"

static int cmd_run(struct gb_ctx *ctx, int argc, char **argv)
{
	int r = gb_cmd_no_args(ctx->opt.repair ? "--repair" : "run", argc, argv);
	ctx->opt.catalog_keep = true; /* its state directory is its own: an accepted catalog update is kept there */
	return r ? r : gb_run(ctx);
}

const struct gb_cmd gb_cmd_run = {
	.name = "run",
	.id = GB_CMD_RUN,
	.fn = cmd_run,
	.help = "the whole pipeline (what cloud-init runs)",
	.writes_state = 1,
	.reads_root = 1,
	.uses_tls = 1,
};

const struct gb_cmd gb_cmd_repair = {
	.name = "repair",
	.id = GB_CMD_REPAIR,
	.fn = cmd_run,
	.help = "after a kernel upgrade: make the modules match the kernel, reload, verify (= --repair)",
	.writes_state = 1,
	.reads_root = 1,
	.uses_tls = 1,
};
