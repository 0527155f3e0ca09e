/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the journal reader. The input is what a run finds in
 * <state>/journal.json: it is opened (trusted, resumed, refused or kept
 * aside as not a journal), one step is recorded and the run finished, and
 * the document is summarised as `gpuboot status` does. An input whose
 * plan_hash is "fuzz" is also tried with the plan's real hash, so the
 * resume path is reached. */
#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "context.h"
#include "effect/journal.h"
#include "shared/json-util.h"
#include "shared/log.h"
#include "shared/macro.h"
#include "fuzz-tmp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static json_object *plan;
static char hash[65];

static void one_run(struct gb_ctx *ctx)
{
	struct gb_journal *j = NULL;
	char err[512];

	if (gb_journal_open(ctx, plan, "run", &j, err, sizeof(err)) < 0)
		return;
	if (gb_journal_begin(j, "install", "package:nvidia-driver", "package", NULL) == 0)
		(void)gb_journal_end(j, "package:nvidia-driver", 0, NULL);
	(void)gb_journal_finish(j, "done", 0);
	gb_journal_free(j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct gb_root *root;
	struct gb_ctx ctx = { .ops = &gb_ops_real };
	json_object *doc, *sum;
	const char *dir = fuzz_scratch(), *h;
	char *text;

	if (!plan) {
		gb_log_set_level(GB_LOG_ERR);
		plan = json_tokener_parse("{\"driver\": {\"version\": \"535.261.03\"}, \"cuda\": null}");
		if (!plan || gb_plan_hash(plan, hash) < 0 || gb_root_open(dir, &root) < 0)
			abort();
	}
	ctx.root = root;
	ctx.opt.state_dir = dir;
	ctx.opt.force = size && (data[0] & 1);
	fuzz_put(dir, "journal.json", data, size);
	one_run(&ctx);

	/* the reader's view of the same bytes, as `gpuboot status` shows them */
	text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	doc = json_tokener_parse(text);
	free(text);
	sum = gb_journal_summary(doc);
	json_object_put(sum);
	h = gb_json_get_str(doc, "plan_hash");
	if (h && streq(h, "fuzz")) {
		const char *t;
		json_object_object_add(doc, "plan_hash", json_object_new_string(hash));
		t = json_object_to_json_string(doc);
		fuzz_put(dir, "journal.json", t, strlen(t));
		one_run(&ctx);
	}
	json_object_put(doc);
	return 0;
}
