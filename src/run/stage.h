/* SPDX-License-Identifier: MIT */
/* Stage records: one begin/end API for every command. A record is appended
 * to the status (no fixed number of slots), timed with the operations
 * table's clock, and carries the result, the errno and a one-line hint. */
#pragma once

#include "shared/macro.h"
#include "status/status.h"

struct gb_ctx;

/* Start a stage; never NULL (a record that cannot be allocated goes to the
 * status's "lost" slot, and the status then cannot say ok). */
struct gb_stage *gb_stage_begin(struct gb_ctx *ctx, struct gb_status *s, const char *name);

/* End a stage with result ("ok", "failed", "refused", "skipped",
 * "not-implemented"), err (negative errno or 0), and an error message
 * (printf-style, may be NULL). The hint is set with gb_stage_hint. */
_printf_(5, 6) void gb_stage_end(struct gb_ctx *ctx, struct gb_stage *st, const char *result, int err, const char *fmt,
                                 ...);
_printf_(2, 3) void gb_stage_hint(struct gb_stage *st, const char *fmt, ...);
