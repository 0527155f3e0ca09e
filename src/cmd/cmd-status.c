/* SPDX-License-Identifier: MIT */
/* gpuboot status [--json|--prometheus]: the last status, its cause and hint. */
#include "cmd.h"
#include "context.h"
#include "status/status.h"

static int cmd_status(struct gb_ctx *ctx, int argc, char **argv)
{
	int r = gb_cmd_no_args("status", argc, argv);
	return r ? r : gb_status_show(ctx);
}

const struct gb_cmd gb_cmd_status = {
	.name = "status",
	.id = GB_CMD_STATUS,
	.fn = cmd_status,
	.help = "print the last status, its cause and hint (--json, --prometheus)",
};
