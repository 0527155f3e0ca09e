/* SPDX-License-Identifier: MIT */
/* The status document, the ready flags, the Prometheus textfile and the
 * NFD feature file: what a run leaves behind, failed runs too.
 *
 * Each command updates only its own part of the document: the facts, the
 * plan, the artifacts and the last verification are carried over from the
 * previous document when this command did not produce them, so a `fetch`
 * never overwrites what the last `verify` found (docs/status.md). */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

struct gb_ctx;
struct gb_verify_result;

#define GB_STATUS_SCHEMA 2

struct gb_stage {
	char name[16];
	char result[16]; /* "running" | "ok" | "failed" | "skipped" | "refused" | "not-implemented" */
	uint64_t started_mono_ns;
	double duration_ms;
	int err; /* negative errno, 0 = none */
	char error[320];
	char hint[320];
};

struct gb_status {
	const char *command;
	uint64_t started_ns, finished_ns;
	int exit_code;
	json_object *facts; /* owned, or NULL (kept from the last document) */
	json_object *facts_after; /* owned: the facts read again after the load (run), or NULL */
	json_object *plan; /* owned, or NULL (kept) */
	json_object *artifacts; /* owned, or NULL (kept) */
	json_object *journal; /* owned summary, or NULL */
	json_object *load; /* owned: the load stage's result, or NULL */
	json_object *prepare; /* owned: the prepare stage's result, or NULL */
	json_object *install; /* owned: the install stage's result, or NULL */
	json_object *interrupted; /* owned: the killed run this one found (gb_status_mark_interrupted), or NULL */
	struct gb_stage **stages; /* gb_stage_begin appends; never a fixed number */
	size_t n_stages;
	struct gb_stage lost; /* where a stage goes when memory ran out: never dropped silently */
	bool stages_lost;
	/* the verification, when this command ran one */
	const struct gb_verify_result *verify; /* borrowed, or NULL */
	const char *tier;
	bool driver_ready, cuda_ready, toolkit_ready, verified;
	bool write_flags; /* only commands that judge readiness (verify, run) touch the flags */
	/* the result when the exit code alone would mislead (an image build:
	 * exit 0, "installed-pending-first-boot", never "ok"), or NULL */
	const char *result_override;
};

json_object *gb_status_to_json(const struct gb_status *s);
/* Write status.json (atomically, merged with the previous document), and
 * unless progress is set the flags, the Prometheus textfile and the NFD
 * features. Returns 0 or the first negative errno (logged). */
int gb_status_write(struct gb_ctx *ctx, struct gb_status *s);

/* Remove the ready flags of the run dir (and sync it) before a run changes
 * the machine: what an earlier verification found no longer holds, and a
 * run killed or failed from here must not leave them claiming it. */
int gb_status_withdraw_flags(struct gb_ctx *ctx);
/* The document alone, with result "running": a run writes it after each
 * stage so a killed run leaves a status naming its last completed stage. */
int gb_status_write_progress(struct gb_ctx *ctx, struct gb_status *s);
void gb_status_done(struct gb_status *s);
/* Under the lock, before a run's first write: a status still "running" is
 * a killed run's; it becomes "interrupted" with its stage and when it was
 * found so; s keeps that, and the run's own document carries it.
 * 1 marked, 0 nothing to mark, or a negative errno. */
int gb_status_mark_interrupted(struct gb_ctx *ctx, struct gb_status *s);
/* Prometheus text from a status document. */
char *gb_status_prometheus(json_object *doc);
/* `gpuboot status`: print the last status. Returns an exit code. */
int gb_status_show(struct gb_ctx *ctx);
