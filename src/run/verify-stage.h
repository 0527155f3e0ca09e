/* SPDX-License-Identifier: MIT */
#pragma once

#include "run.h"
#include "status/status.h"
#include "verify/verify.h"

/* Run the checks of tier on the detected machine and end stage (begun by
 * the caller) with their verdict; the ready flags go into st (st->verify
 * points at res afterwards). Exit code. */
int gb_verify_stage(struct gb_ctx *ctx, const struct gb_inputs *in, const char *tier, const char *expected_cuda,
                    struct gb_stage *stage, struct gb_status *st, struct gb_verify_result *res);
