/* SPDX-License-Identifier: MIT */
/* gpuboot verify [--tier passive|active|full] [--json]: the verification
 * stage alone, on the live machine. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "context.h"
#include "exit-codes.h"
#include "run/run.h"
#include "run/stage.h"
#include "run/verify-stage.h"
#include "shared/log.h"
#include "shared/util.h"
#include "shared/json-util.h"

static int print_json(const char *tier, const struct gb_verify_result *res)
{
	json_object *j = gb_json_new_object();
	gb_json_add(j, "tier", gb_json_new_string(tier));
	gb_json_add(j, "failed", gb_json_new_int((int)res->failed));
	gb_json_add(j, "wall_ms", gb_json_new_double(res->wall_ms));
	gb_json_add(j, "probe_ms", gb_json_new_double(res->probe_ms));
	gb_json_add(j, "checks", gb_checks_to_json(res));
	gb_json_add(j, "probe", res->probe ? json_object_get(res->probe) : NULL);
	int r = gb_cmd_print_json(j);
	json_object_put(j);
	return r;
}

/* The full tier checks the CUDA the plan installs (cuda.installed). */
static void expected_cuda(struct gb_ctx *ctx, const struct gb_inputs *in, char *buf, size_t n)
{
	struct gb_plan plan;
	buf[0] = '\0';
	if (gb_plan_from_inputs(ctx, in, &plan) != 0)
		return;
	/* a plan refused after CUDA was decided (no fabric manager yet) still
	 * names the CUDA the machine should have */
	if (plan.cuda.version[0])
		gb_strscpy(buf, n, plan.cuda.version);
	gb_plan_done(&plan);
}

static int cmd_verify(struct gb_ctx *ctx, int argc, char **argv)
{
	struct gb_inputs in = { 0 };
	struct gb_verify_result res = { 0 };
	struct gb_status st = { .command = "verify", .write_flags = true };
	struct gb_stage *stage;
	char cuda[16] = "";
	const char *tier;
	int code;

	if ((code = gb_cmd_no_args("verify", argc, argv)))
		return code;
	if (ctx->opt.tier && !streq(ctx->opt.tier, "passive") && !streq(ctx->opt.tier, "active") &&
	    !streq(ctx->opt.tier, "full")) {
		gb_log_error("--tier must be passive, active or full, not '%s'", ctx->opt.tier);
		return GB_EXIT_USAGE;
	}
	code = gb_inputs_load(ctx, &in);
	if (code) {
		gb_inputs_done(&in);
		return code;
	}
	st.started_ns = ctx->ops->now_realtime_ns(ctx->ops);
	stage = gb_stage_begin(ctx, &st, "detect");
	code = gb_inputs_detect(ctx, &in);
	if (code) {
		gb_stage_end(ctx, stage, "failed", -EIO, "the machine could not be read");
		goto out;
	}
	gb_stage_end(ctx, stage, "ok", 0, NULL);
	st.facts = gb_facts_to_json(&in.facts);
	tier = ctx->opt.tier ? ctx->opt.tier : in.profile.tier;
	if (streq(tier, "full"))
		expected_cuda(ctx, &in, cuda, sizeof(cuda));
	stage = gb_stage_begin(ctx, &st, "verify");
	code = gb_verify_stage(ctx, &in, tier, &(struct gb_verify_expect){ .cuda = cuda[0] ? cuda : NULL }, stage, &st,
	                       &res);
	if (st.verify && ctx->opt.json) {
		if (print_json(tier, &res) < 0 && code == GB_EXIT_OK)
			code = GB_EXIT_FAILED;
	} else if (st.verify)
		gb_verify_print(&res, stdout);
out:
	st.exit_code = code;
	if (gb_status_write(ctx, &st) < 0 && code == GB_EXIT_OK)
		code = GB_EXIT_FAILED;
	gb_status_done(&st);
	gb_verify_result_done(&res);
	gb_inputs_done(&in);
	if (fflush(stdout) != 0 && code == GB_EXIT_OK)
		code = GB_EXIT_FAILED;
	return code;
}

const struct gb_cmd gb_cmd_verify = {
	.name = "verify",
	.id = GB_CMD_VERIFY,
	.fn = cmd_verify,
	.help = "run the verification stage on the live machine",
	.writes_state = 1,
	.reads_root = 1,
};
