/* SPDX-License-Identifier: MIT */
/* gpuboot fetch: the plan's artifacts downloaded and verified into the
 * cache only. gpuboot mirror DIR: the same, then copied into DIR in the
 * upstream layout with a signed manifest. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "context.h"
#include "exit-codes.h"
#include "fetch/fetch-plan.h"
#include "run/fetch-stage.h"
#include "run/run.h"
#include "run/stage.h"
#include "shared/log.h"
#include "shared/util.h"
#include "shared/json-util.h"

static json_object *artifacts_json(const struct gb_artifact *a, size_t n)
{
	json_object *arr = gb_json_new_array();
	for (size_t i = 0; i < n; i++) {
		json_object *o = gb_json_new_object();
		bool ok = gb_artifact_ok(&a[i]);
		gb_json_add(o, "name", gb_json_new_string(a[i].name));
		gb_json_add(o, "path", gb_json_new_string(a[i].path));
		gb_json_add(o, "url", gb_json_new_string(a[i].url));
		gb_json_add(o, "sha256", gb_json_new_string(a[i].sha256));
		gb_json_add(o, "size", gb_json_new_int64((int64_t)a[i].size));
		gb_json_add(o, "result", gb_json_new_string(ok ? "verified" : "failed"));
		gb_json_add(o, "from_cache", gb_json_new_boolean(a[i].from_cache));
		gb_json_add(o, "cache_path", ok ? gb_json_new_string(a[i].cache_path) : NULL);
		gb_json_add(o, "error",
		            a[i].error[0] ? gb_json_new_string(a[i].error)
		            : ok          ? NULL
		                          : gb_json_new_string("not fetched"));
		gb_json_append(arr, o);
	}
	return arr;
}

static void print_results(const struct gb_artifact *a, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		bool ok = gb_artifact_ok(&a[i]);
		printf("%-8s %-44.44s %12llu  %s\n",
		       !ok               ? "FAILED"
		       : a[i].from_cache ? "cached"
		                         : "fetched",
		       a[i].name, a[i].size, !ok ? (a[i].error[0] ? a[i].error : "not fetched") : a[i].cache_path);
	}
}

static int mirror_stage(struct gb_ctx *ctx, const char *dir, const struct gb_artifact *a, size_t n,
                        struct gb_status *st)
{
	struct gb_stage *stage = gb_stage_begin(ctx, st, "mirror");
	char err[1024] = "";
	int r = gb_mirror_write(ctx, dir, a, n, ctx->opt.sign_key, ctx->opt.mirror_version, err, sizeof(err));
	if (r < 0) {
		gb_stage_end(ctx, stage, "failed", r, "%s", err);
		gb_log_error("%s", err);
		return r == -EINVAL ? GB_EXIT_USAGE : GB_EXIT_FAILED;
	}
	gb_stage_end(ctx, stage, "ok", 0, NULL);
	printf("mirror written to %s (%zu artifacts, signed manifest.json)\n", dir, n);
	return GB_EXIT_OK;
}

/* --dry-run: what would be fetched, and nothing written anywhere. */
static int fetch_dry_run(struct gb_ctx *ctx, struct gb_plan *plan, struct gb_fetch_job *j)
{
	struct gb_artifact *arts = NULL;
	char err[1024] = "";
	size_t n = 0;
	int r = gb_fetch_for_plan(ctx, plan, &j->src, &j->fo, &arts, &n, err, sizeof(err));
	if (r < 0) {
		gb_log_error("%s", err[0] ? err : strerror(-r));
		free(arts);
		return GB_EXIT_FETCH;
	}
	gb_fetch_print_list(arts, n, stdout);
	if (r == 1) {
		/* what is known offline is listed; what needs the network is named */
		printf("dry run: %zu artifact(s) listed, nothing fetched or written; not listed: CUDA %s's "
		       "components, which its redistrib manifest (above) names and which needs the network: %s\n",
		       n, plan->cuda.version, err);
		gb_log_error("CUDA %s's manifest could not be read: %s", plan->cuda.version, err);
		free(arts);
		return GB_EXIT_FETCH;
	}
	printf("dry run: %zu artifact(s) listed, nothing fetched or written\n", n);
	free(arts);
	return GB_EXIT_OK;
}

static int fetch_common(struct gb_ctx *ctx, bool mirror_mode, const char *mirror_dir)
{
	struct gb_inputs in = { 0 };
	struct gb_status st = { .command = mirror_mode ? "mirror" : "fetch" };
	struct gb_artifact *arts = NULL;
	struct gb_fetch_job j;
	struct gb_plan plan;
	bool have_plan = false;
	size_t n = 0;
	int code;

	memset(&j, 0, sizeof(j));
	/* fetch prepares this state for later runs, offline too: an accepted catalog update is kept there */
	ctx->opt.catalog_keep = !mirror_mode;
	in.want_offers = !mirror_mode; /* this machine's prebuilt module, with the rest */
	code = gb_inputs_plan(ctx, &in, &plan);
	if (code)
		goto done; /* nothing decided, nothing to record */
	have_plan = true;
	if (plan.refusal_code) {
		gb_log_error("%s", plan.refusal);
		code = plan.refusal_code;
		goto done;
	}
	code = gb_fetch_job_setup(ctx, &in.site, mirror_mode, &j);
	if (code)
		goto done;
	if (!mirror_mode) {
		/* What this machine keeps needs no download (a mirror serves a
		 * fleet: all of it), nor does the distribution's own driver: the
		 * distro method installs from its archive, and from the mirror only
		 * its prebuilt module packages. */
		if (plan.driver.action == GB_ACTION_KEEP || plan.driver.method == GB_METHOD_DISTRO)
			plan.driver.runfile = NULL;
		if (plan.driver.action == GB_ACTION_KEEP)
			plan.driver.n_prebuilt = 0;
		if (plan.cuda.action == GB_ACTION_KEEP)
			plan.cuda.release = NULL;
	}
	if (ctx->opt.dry_run) {
		code = fetch_dry_run(ctx, &plan, &j);
		goto done;
	}
	st.started_ns = ctx->ops->now_realtime_ns(ctx->ops);
	st.plan = gb_plan_to_json(&plan);
	code = gb_fetch_run(ctx, &plan, &j, gb_stage_begin(ctx, &st, "fetch"), &arts, &n);
	print_results(arts, n);
	if (code == GB_EXIT_OK && mirror_mode)
		code = mirror_stage(ctx, mirror_dir, arts, n, &st);
	st.artifacts = artifacts_json(arts, n);
	st.exit_code = code;
	if (gb_status_write(ctx, &st) < 0 && code == GB_EXIT_OK)
		code = GB_EXIT_FAILED;
done:
	gb_status_done(&st);
	free(arts);
	if (have_plan)
		gb_plan_done(&plan);
	gb_inputs_done(&in);
	if (fflush(stdout) != 0 && code == GB_EXIT_OK)
		code = GB_EXIT_FAILED;
	return code;
}

static int cmd_fetch(struct gb_ctx *ctx, int argc, char **argv)
{
	int r = gb_cmd_no_args("fetch", argc, argv);
	return r ? r : fetch_common(ctx, false, NULL);
}

static int cmd_mirror(struct gb_ctx *ctx, int argc, char **argv)
{
	if (argc != 1) {
		gb_log_error(
		    "usage: gpuboot mirror DIR --sign-key KEY [--profile P] [--target-os ...] [--target-gpu ...]");
		return GB_EXIT_USAGE;
	}
	if (!ctx->opt.sign_key) {
		gb_log_error(
		    "mirror needs --sign-key KEY (an Ed25519 private key in PEM: openssl genpkey -algorithm ed25519)");
		return GB_EXIT_USAGE;
	}
	return fetch_common(ctx, true, argv[0]);
}

const struct gb_cmd gb_cmd_fetch = {
	.name = "fetch",
	.id = GB_CMD_FETCH,
	.fn = cmd_fetch,
	.help = "download and verify into the cache only (--dry-run lists what it would fetch)",
	.writes_state = 1,
	.reads_root = 1,
	.uses_tls = 1,
};

const struct gb_cmd gb_cmd_mirror = {
	.name = "mirror",
	.id = GB_CMD_MIRROR,
	.fn = cmd_mirror,
	.help = "build an offline mirror for a profile (mirror DIR --sign-key KEY)",
	.writes_state = 1,
	.reads_root = 1,
	.uses_tls = 1,
};
