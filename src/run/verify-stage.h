/* SPDX-License-Identifier: MIT */
#pragma once

#include "run.h"
#include "status/status.h"
#include "verify/verify.h"

/* What a run expects verify to find: the plan's versions (NULL: any). */
struct gb_verify_expect {
	const char *cuda; /* "13.0.0" */
	const char *driver; /* "580.159.04" */
};

/* Run the checks of tier on the detected machine (in->facts: read after the
 * load, never the facts the plan was made on) and end stage (begun by the
 * caller) with their verdict; the ready flags go into st (st->verify points
 * at res afterwards). Exit code. */
int gb_verify_stage(struct gb_ctx *ctx, const struct gb_inputs *in, const char *tier,
                    const struct gb_verify_expect *expect, struct gb_stage *stage, struct gb_status *st,
                    struct gb_verify_result *res);
