/* SPDX-License-Identifier: MIT */
/* gpuboot plan [--json]: every decision and its reason; changes nothing. */
#include <stdio.h>

#include "cmd.h"
#include "context.h"
#include "exit-codes.h"
#include "run/run.h"
#include "shared/log.h"

static int cmd_plan(struct gb_ctx *ctx, int argc, char **argv)
{
	struct gb_inputs in = { 0 };
	struct gb_plan plan;
	int code;

	if ((code = gb_cmd_no_args("plan", argc, argv)))
		return code;
	code = gb_inputs_plan(ctx, &in, &plan);
	if (code) {
		gb_inputs_done(&in);
		return code;
	}
	if (ctx->opt.json) {
		json_object *o = gb_plan_to_json(&plan);
		code = gb_cmd_print_json(o) < 0 ? GB_EXIT_FAILED : 0;
		json_object_put(o);
	} else {
		gb_plan_print(&plan, stdout);
	}
	if (!code)
		code = plan.refusal_code ? plan.refusal_code : GB_EXIT_OK;
	if (plan.refusal_code)
		gb_log_error("%s", plan.refusal);
	gb_plan_done(&plan);
	gb_inputs_done(&in);
	if (fflush(stdout) != 0)
		return GB_EXIT_FAILED;
	return code;
}

const struct gb_cmd gb_cmd_plan = {
	.name = "plan",
	.id = GB_CMD_PLAN,
	.fn = cmd_plan,
	.help = "print the decisions and their reasons; changes nothing",
	.reads_root = 1,
};
