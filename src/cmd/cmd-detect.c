/* SPDX-License-Identifier: MIT */
/* gpuboot detect [--json] [--capture DIR]: the facts. */
#include <stdio.h>

#include "cmd.h"
#include "context.h"
#include "detect/capture.h"
#include "detect/detect.h"
#include "exit-codes.h"
#include "shared/json-util.h"
#include "shared/log.h"
#include "shared/util.h"

int gb_cmd_print_json(json_object *o)
{
	_cleanup_free_ char *text = NULL;
	int r =
	    gb_json_text(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE, &text);
	if (r < 0)
		return gb_log_error_errno(r, "Failed to make the JSON document: %m");
	puts(text);
	return 0;
}

int gb_cmd_no_args(const char *name, int argc, char **argv)
{
	if (argc == 0)
		return 0;
	gb_log_error("%s takes no arguments (got '%s'); see gpuboot --help", name, argv[0]);
	return GB_EXIT_USAGE;
}

static int cmd_detect(struct gb_ctx *ctx, int argc, char **argv)
{
	struct gb_facts f = { .secure_boot = -1 };
	int r;

	if ((r = gb_cmd_no_args("detect", argc, argv)))
		return r;
	if (ctx->opt.capture)
		gb_root_record_start(ctx->root);
	r = gb_detect(ctx, &f);
	if (r < 0) {
		gb_log_error_errno(r, "Failed to detect the machine under '%s': %m", ctx->root->path);
		return GB_EXIT_FAILED;
	}
	if (ctx->opt.json) {
		json_object *o = gb_facts_to_json(&f);
		r = gb_cmd_print_json(o);
		json_object_put(o);
		if (r < 0) {
			gb_facts_done(&f);
			return GB_EXIT_FAILED;
		}
	} else {
		gb_facts_print(&f, stdout);
	}
	gb_facts_done(&f);
	if (ctx->opt.capture) {
		r = gb_capture_write(ctx->root, ctx->opt.capture);
		if (r < 0)
			return GB_EXIT_FAILED;
		gb_log_info("Captured %zu paths into '%s'", ctx->root->n_records, ctx->opt.capture);
	}
	return fflush(stdout) == 0 ? GB_EXIT_OK : GB_EXIT_FAILED;
}

const struct gb_cmd gb_cmd_detect = {
	.name = "detect",
	.id = GB_CMD_DETECT,
	.fn = cmd_detect,
	.help = "print the facts about this machine (--json, --capture DIR)",
	.reads_root = 1,
};
