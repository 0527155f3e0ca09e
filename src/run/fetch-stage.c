/* SPDX-License-Identifier: MIT */
/* The fetch stage, shared by `gpuboot fetch`/`mirror` and `gpuboot run`:
 * the sources and options from the command line and the site, then the
 * plan's artifacts resolved, downloaded and verified into the cache. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "context.h"
#include "exit-codes.h"
#include "fetch-stage.h"
#include "run/stage.h"
#include "shared/log.h"
#include "shared/test-knob.h"
#include "shared/util.h"

bool gb_artifact_ok(const struct gb_artifact *a)
{
	return a->result == 0 && a->verified;
}

/* Options and sources from the command line and the site; an exit code. */
int gb_fetch_job_setup(struct gb_ctx *ctx, const struct gb_site_config *site, bool mirror_mode, struct gb_fetch_job *j)
{
	size_t nk = 0;

	gb_fetch_opts_default(&j->fo, ctx->opt.state_dir);
	j->fo.ca_file = ctx->opt.ca_file ? ctx->opt.ca_file : site->ca_file;
	j->fo.proxy = site->proxy;
	j->fo.offline = ctx->opt.offline;
	j->fo.dry_run = ctx->opt.dry_run;
	if (ctx->opt.parallel)
		j->fo.parallel = ctx->opt.parallel;
	{
		uint32_t v;
		if (gb_test_knob_u32("GPUBOOT_FETCH_BACKOFF_MS", &v) == 0)
			j->fo.backoff_ms = v;
		if (gb_test_knob_u32("GPUBOOT_FETCH_LOW_SPEED_S", &v) == 0)
			j->fo.low_speed_s = v;
	}
	/* mirror reads from --mirror where given (re-signing a mirror for a fleet), else upstream. */
	j->src.mirror = ctx->opt.mirror ? ctx->opt.mirror : mirror_mode ? NULL : site->mirror;
	j->src.upstream = ctx->opt.upstream;
	j->src.ca_file = j->fo.ca_file;
	for (size_t i = 0; i < ctx->opt.n_trust_keys; i++)
		j->keys[nk++] = (char *)ctx->opt.trust_keys[i];
	for (char **k = site->trusted_keys; k && *k && nk < ARRAY_SIZE(j->keys) - 1; k++)
		j->keys[nk++] = *k;
	j->keys[nk] = NULL;
	j->src.trust_keys = j->keys;
	j->src.min_mirror_version = site->min_mirror_version;
	if (j->src.mirror && gb_startswith(j->src.mirror, "http://") && site->allow_http_mirror)
		j->fo.allow_http = true; /* the manifest's signature and every artifact's hash still decide */
	else if (j->src.mirror && !gb_startswith(j->src.mirror, "https://") &&
	         !gb_startswith(j->src.mirror, "file://")) {
		gb_log_error("--mirror '%s': only https:// and file:// mirrors; a plain http:// mirror needs [site] "
		             "allow_http_mirror = yes",
		             j->src.mirror);
		return GB_EXIT_USAGE;
	}
	return 0;
}

/* Resolve and fetch; the fetch stage's record. An exit code. */
int gb_fetch_run(struct gb_ctx *ctx, struct gb_plan *plan, struct gb_fetch_job *j, struct gb_stage *stage,
                 struct gb_artifact **arts, size_t *n)
{
	char err[1024] = "";
	int r;

	r = gb_fetch_for_plan(ctx, plan, &j->src, &j->fo, arts, n, err, sizeof(err));
	if (r >= 0)
		r = gb_fetch_all(ctx, *arts, *n, &j->fo);
	for (size_t i = 0; r >= 0 && i < *n; i++)
		if (!gb_artifact_ok(&(*arts)[i]))
			r = -EIO; /* never "ok" with an artifact that is not in the cache */
	if (r >= 0) {
		gb_stage_end(ctx, stage, "ok", 0, NULL);
		return GB_EXIT_OK;
	}
	for (size_t i = 0; !err[0] && i < *n; i++)
		if (!gb_artifact_ok(&(*arts)[i]))
			snprintf(err, sizeof(err), "%s: %s", (*arts)[i].name,
			         (*arts)[i].error[0] ? (*arts)[i].error : "not fetched");
	gb_stage_end(ctx, stage, "failed", r, "%s", err[0] ? err : strerror(-r));
	gb_stage_hint(stage,
	              "nothing was installed from it; check the mirror or network, then run gpuboot fetch again");
	gb_log_error("%s", stage->error);
	return GB_EXIT_FETCH;
}
