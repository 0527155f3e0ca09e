/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "context.h"
#include "fetch/fetch-plan.h"
#include "plan/plan.h"
#include "plan/profile.h"
#include "status/status.h"

struct gb_fetch_job {
	struct gb_fetch_opts fo;
	struct gb_fetch_source src;
	char *keys[GB_MAX_TRUST_KEYS + 16];
};

/* Verified and in the cache (the one test of it). */
bool gb_artifact_ok(const struct gb_artifact *a);

/* Options and sources from the command line and the site. An exit code. */
int gb_fetch_job_setup(struct gb_ctx *ctx, const struct gb_site_config *site, bool mirror_mode, struct gb_fetch_job *j);

/* Resolve the plan's artifacts and fetch them, ending stage (begun by the
 * caller) with the verdict: never "ok" with an artifact not in the cache.
 * *arts (malloc'd) and *n are set either way. An exit code. */
int gb_fetch_run(struct gb_ctx *ctx, struct gb_plan *plan, struct gb_fetch_job *j, struct gb_stage *stage,
                 struct gb_artifact **arts, size_t *n);
