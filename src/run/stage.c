/* SPDX-License-Identifier: MIT */
#include "stage.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "context.h"
#include "shared/json-util.h"
#include "shared/util.h"

struct gb_stage *gb_stage_begin(struct gb_ctx *ctx, struct gb_status *s, const char *name)
{
	struct gb_stage *st = calloc(1, sizeof(*st)), **v = NULL;

	if (st)
		v = realloc(s->stages, (s->n_stages + 1) * sizeof(*v));
	if (!st || !v) {
		free(st);
		s->stages_lost = true;
		gb_json_set_oom(); /* the command must not end in success (main's backstop) */
		st = &s->lost;
		memset(st, 0, sizeof(*st));
	} else {
		s->stages = v;
		s->stages[s->n_stages++] = st;
	}
	gb_strscpy(st->name, sizeof(st->name), name);
	gb_strscpy(st->result, sizeof(st->result), "running");
	st->started_mono_ns = ctx->ops->now_monotonic_ns(ctx->ops);
	return st;
}

void gb_stage_end(struct gb_ctx *ctx, struct gb_stage *st, const char *result, int err, const char *fmt, ...)
{
	va_list ap;
	st->duration_ms = (double)(ctx->ops->now_monotonic_ns(ctx->ops) - st->started_mono_ns) / 1e6;
	gb_strscpy(st->result, sizeof(st->result), result);
	st->err = err;
	if (fmt) {
		va_start(ap, fmt);
		vsnprintf(st->error, sizeof(st->error), fmt, ap);
		va_end(ap);
	}
}

void gb_stage_hint(struct gb_stage *st, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(st->hint, sizeof(st->hint), fmt, ap);
	va_end(ap);
}
