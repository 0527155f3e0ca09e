/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the status document reader. The input is what a
 * command finds in <state>/status.json: `gpuboot status` shows it (text,
 * JSON, Prometheus), and the next command merges its own part into it. */
#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "context.h"
#include "shared/log.h"
#include "status/status.h"
#include "fuzz-tmp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct gb_root *root;
	struct gb_ctx ctx = { .ops = &gb_ops_real };
	struct gb_status st = { .command = "fetch", .exit_code = 0 };
	const char *dir = fuzz_scratch();
	json_object *doc;
	char *text;

	if (!root) {
		/* what `status` prints is not under test: only that it reads safely */
		if (!freopen("/dev/null", "w", stdout) || gb_root_open(dir, &root) < 0)
			abort();
		gb_log_set_level(GB_LOG_ERR);
	}
	ctx.root = root;
	ctx.opt.state_dir = dir;
	ctx.opt.run_dir = dir;
	fuzz_put(dir, "status.json", data, size);
	for (int how = 0; how < 3; how++) {
		ctx.opt.json = how == 1;
		ctx.opt.prometheus = how == 2;
		(void)gb_status_show(&ctx);
	}
	(void)gb_status_write_progress(&ctx, &st);
	gb_status_done(&st);

	text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	doc = json_tokener_parse(text);
	free(gb_status_prometheus(doc));
	json_object_put(doc);
	free(text);
	return 0;
}
