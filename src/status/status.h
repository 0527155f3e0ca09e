/* SPDX-License-Identifier: MIT */
/* The status document, the ready flags, the Prometheus textfile and the
 * NFD feature file: what a run leaves behind, failed runs too. */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

struct gb_ctx;
struct gb_verify_result;

#define GB_STATUS_SCHEMA 1

struct gb_stage {
	char name[16];
	char result[16]; /* "ok" | "failed" | "skipped" | "refused" */
	double duration_ms;
	int err; /* negative errno, 0 = none */
	char error[320];
	char hint[320];
};

struct gb_status {
	const char *command;
	uint64_t started_ns, finished_ns;
	int exit_code;
	json_object *facts; /* owned */
	json_object *plan; /* owned, or NULL */
	json_object *artifacts; /* owned, or NULL */
	struct gb_stage stages[10];
	size_t n_stages;
	const struct gb_verify_result *verify; /* borrowed, or NULL */
	bool driver_ready, cuda_ready, toolkit_ready, verified;
	bool write_flags; /* only stages that judge readiness (verify, run) touch the flags */
};

struct gb_stage *gb_status_stage(struct gb_status *s, const char *name);
json_object *gb_status_to_json(const struct gb_status *s);
/* Write status.json (atomically), the flags, the Prometheus textfile and the
 * NFD features. Returns 0 or the first negative errno (logged). */
int gb_status_write(struct gb_ctx *ctx, struct gb_status *s);
void gb_status_done(struct gb_status *s);
/* Prometheus text from a status document. */
char *gb_status_prometheus(json_object *doc);
/* `gpuboot status`: print the last status. Returns an exit code. */
int gb_status_show(struct gb_ctx *ctx);
