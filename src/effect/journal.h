/* SPDX-License-Identifier: MIT */
/* The write-ahead journal, <state-dir>/journal.json: the plan (and its
 * hash), the boot id, and for every effect a record written and fsynced
 * before the effect and again after it. A run that finds an unfinished
 * journal of the same plan resumes it: done steps are skipped, a started
 * one is redone (every effect is idempotent). An unfinished journal of a
 * different plan that has changed something is refused until --repair or
 * --force. The document is rewritten whole and atomically on every record,
 * so a kill at any point leaves the journal before or after that record,
 * never a torn one. */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct gb_ctx;
struct gb_cmd_spec;
struct gb_cmd_result;

#define GB_JOURNAL_SCHEMA 1

struct gb_journal {
	struct gb_ctx *ctx;
	char path[4200];
	json_object *doc; /* the whole document */
	json_object *steps; /* borrowed from doc */
	char plan_hash[65];
	bool resumed; /* an unfinished journal of this plan was found and continues */
	unsigned n_effects; /* effects done in this run (0 on a rerun that had nothing to do) */
	unsigned n_writes;
	/* While set, every step id is "<scope>/<id>": a part that repeats the
	 * steps of another (the Container Toolkit's apt install after the
	 * driver's) keeps its own records, so a resumed run skips only what
	 * that part did. "" = none. */
	char scope[48];
};

/* The plan's hash: sha256 over its decisions (dates and reasons left out,
 * so the same decisions on another day are the same plan). */
int gb_plan_hash(json_object *plan, char ret_hex[65]);

/* Open the journal for a run of plan. Returns 0 (new or resumed), -EBUSY
 * (err says why and what to do) when an unfinished journal of another plan
 * changed something and neither --force nor --repair was given, or another
 * negative errno. */
int gb_journal_open(struct gb_ctx *ctx, json_object *plan, const char *command, struct gb_journal **ret, char *err,
                    size_t errsz);
struct gb_journal *gb_journal_free(struct gb_journal *j);

/* Record that step id (of stage, of kind "stage", "file", "command",
 * "package", "module", ...) starts, with detail (owned, may be NULL).
 * Returns 1 when a resumed journal has the step done (skip it), 0 when it
 * was recorded, or a negative errno (the effect must not run). */
int gb_journal_begin(struct gb_journal *j, const char *stage, const char *id, const char *kind, json_object *detail);
/* Record the step's end: err 0 for done, else failed with the errno;
 * detail (owned, may be NULL) is merged into the record. */
int gb_journal_end(struct gb_journal *j, const char *id, int err, json_object *detail);
/* An effect done by the caller's own means (a mknod, a unit enabled):
 * counted in effects_this_run. */
void gb_journal_count_effect(struct gb_journal *j);
/* Effects done in this run so far (0 on a rerun that had nothing to do). */
unsigned gb_journal_effects(const struct gb_journal *j);
/* Prefix every step id with "<scope>/" until set again (NULL or "": none):
 * a part that repeats another's steps keeps its own records. */
void gb_journal_set_scope(struct gb_journal *j, const char *scope);
/* Whether step id changed the machine: recorded done (in this run or a
 * killed run this one resumes), not as unchanged. */
bool gb_journal_step_changed(struct gb_journal *j, const char *id);
/* The run's end: state is "done", "failed" or "reboot-pending". */
int gb_journal_finish(struct gb_journal *j, const char *state, int exit_code);

/* Effects, journaled: replace a file under the root (path, mode, sha256
 * before and after; no write, and no effect counted, when the content is
 * already there), and run a command (argv, exit status, output tail).
 * Both return 0, 1 when skipped as already done, or a negative errno. */
int gb_journal_write_file(struct gb_journal *j, const char *stage, const char *path, const void *data, size_t len,
                          mode_t mode);
/* The id for a step that may be needed again after it was done (a repair
 * of the package manager, wanted whenever its state asks for it): base,
 * or base#2, #3, ...: the first that is not done in the journal, so a
 * killed attempt is redone under its own id and a done one stays history. */
void gb_journal_repeat_id(struct gb_journal *j, const char *base, char *ret, size_t n);

int gb_journal_run(struct gb_journal *j, const char *stage, const char *id, const struct gb_cmd_spec *spec,
                   struct gb_cmd_result *ret);

/* What `gpuboot status` shows of a journal document: state, plan hash,
 * steps by state, the last step. New object. */
json_object *gb_journal_summary(json_object *doc);
