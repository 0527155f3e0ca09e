/* SPDX-License-Identifier: MIT */
#include "journal.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "context.h"
#include "shared/ops.h"
#include "shared/digest.h"
#include "shared/fileio.h"
#include "shared/json-util.h"
#include "shared/killpoint.h"
#include "shared/log.h"
#include "shared/macro.h"
#include "shared/test-knob.h"
#include "effect/root-write.h"
#include "shared/util.h"
#include "version.h"

static json_object *iso_now(struct gb_ctx *ctx)
{
	time_t t = (time_t)(ctx->ops->now_realtime_ns(ctx->ops) / 1000000000ull);
	struct tm tm;
	char buf[32];
	if (!gmtime_r(&t, &tm) || !strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm))
		return NULL;
	return gb_json_new_string(buf);
}

/* What a plan says about the machine as it is now, not about where it is
 * going: the actions (install becomes keep once installed), what is
 * installed, the method of an install (none once kept), the kernel (another
 * after a reboot) and nouveau (gone once prepare ran). A rerun after part of
 * the work was done must find the same plan. */
static bool state_key(const char *k)
{
	static const char *const keys[] = { "action",     "installed",       "method",
		                            "repository", "repository_arch", "packages",
		                            "kernel",     "nouveau",         "fabricmanager_redist" };
	for (size_t i = 0; i < ARRAY_SIZE(keys); i++)
		if (streq(k, keys[i]))
			return true;
	return false;
}

/* A copy without dates, reasons, warnings (they age by the day: a rerun
 * tomorrow is the same plan), the catalog's header (a newer catalog that
 * decides the same is the same plan; one that decides otherwise shows in
 * the decisions) and the machine's current state: the target alone. */
static json_object *decisions(json_object *o)
{
	json_object *c;
	if (json_object_is_type(o, json_type_array)) {
		c = gb_json_new_array();
		for (size_t i = 0; i < gb_json_len(o); i++)
			gb_json_append(c, decisions(gb_json_idx(o, i)));
		return c;
	}
	if (!json_object_is_type(o, json_type_object))
		return json_object_get(o);
	c = gb_json_new_object();
	for (struct json_object_iterator it = json_object_iter_begin(o), end = json_object_iter_end(o);
	     !json_object_iter_equal(&it, &end); json_object_iter_next(&it)) {
		const char *k = json_object_iter_peek_name(&it);
		size_t n = strlen(k);
		if (streq(k, "date") || streq(k, "warnings") || streq(k, "catalog") ||
		    (n >= 6 && streq(k + n - 6, "reason")) || state_key(k))
			continue;
		gb_json_add(c, k, decisions(json_object_iter_peek_value(&it)));
	}
	return c;
}

int gb_plan_hash(json_object *plan, char ret_hex[65])
{
	json_object *d = decisions(plan);
	_cleanup_free_ char *s = NULL;
	struct gb_sha256 h;
	int r = gb_json_text(d, JSON_C_TO_STRING_PLAIN, &s);
	if (r < 0) {
		json_object_put(d);
		return r;
	}
	r = gb_sha256_init(&h);
	if (r >= 0)
		r = gb_sha256_update(&h, s, strlen(s));
	if (r >= 0)
		r = gb_sha256_final(&h, ret_hex);
	gb_sha256_done(&h);
	json_object_put(d);
	return r;
}

static int journal_save(struct gb_journal *j)
{
	_cleanup_free_ char *text = NULL;
	int r = gb_json_text(j->doc, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE,
	                     &text);
	if (r < 0)
		return gb_log_error_errno(r, "Failed to make the journal '%s': %m", j->path);
	r = gb_write_file_atomic(j->path, text, strlen(text), 0600);
	if (r == -ENOSPC)
		return gb_log_error_errno(r, "Failed to write the journal '%s': %m (need %zu bytes, %llu available)",
		                          j->path, strlen(text), gb_fs_available(j->path));
	if (r < 0)
		return gb_log_error_errno(r, "Failed to write the journal '%s': %m", j->path);
	j->n_writes++;
	gb_kill_point("journal");
#ifdef GB_TEST_HOOKS
	{
		/* The kill tests: die right after the Nth record is durable. */
		uint32_t n;
		if (gb_test_knob_u32("GPUBOOT_KILL_AFTER_JOURNAL_WRITE", &n) == 0 && n == j->n_writes)
			raise(SIGKILL);
	}
#endif
	return 0;
}

static json_object *find_step(struct gb_journal *j, const char *id)
{
	for (size_t i = 0; i < gb_json_len(j->steps); i++) {
		json_object *s = gb_json_idx(j->steps, i);
		const char *sid = gb_json_get_str(s, "id");
		if (sid && streq(sid, id))
			return s;
	}
	return NULL;
}

/* Did this journal change anything (an effect started or done)? */
static bool changed_something(json_object *doc)
{
	json_object *steps = gb_json_get(doc, "steps");
	for (size_t i = 0; steps && i < gb_json_len(steps); i++) {
		json_object *s = gb_json_idx(steps, i);
		const char *kind = gb_json_get_str(s, "kind"), *state = gb_json_get_str(s, "state");
		if (kind && !streq(kind, "stage") && state && !streq(state, "failed") &&
		    !gb_json_get_bool(s, "unchanged", false))
			return true;
	}
	return false;
}

static void new_doc(struct gb_journal *j, json_object *plan, const char *command)
{
	_cleanup_free_ char *boot = NULL;
	j->doc = gb_json_new_object();
	gb_json_add(j->doc, "schema_version", gb_json_new_int(GB_JOURNAL_SCHEMA));
	gb_json_add(j->doc, "gpuboot_version", gb_json_new_string(GPUBOOT_VERSION));
	gb_json_add(j->doc, "command", gb_json_new_string(command));
	gb_json_add(j->doc, "state", gb_json_new_string("running"));
	gb_json_add(j->doc, "started_at", iso_now(j->ctx));
	if (gb_root_read_attr(j->ctx->root, "proc/sys/kernel/random/boot_id", &boot) < 0)
		boot = NULL;
	gb_json_add(j->doc, "boot_id", boot ? gb_json_new_string(boot) : NULL);
	gb_json_add(j->doc, "boots", gb_json_new_int(1));
	gb_json_add(j->doc, "plan_hash", gb_json_new_string(j->plan_hash));
	gb_json_add(j->doc, "plan", json_object_get(plan));
	j->steps = gb_json_new_array();
	gb_json_add(j->doc, "steps", j->steps);
}

/* An unfinished journal of the same plan continues; count a new boot. */
static void resume_doc(struct gb_journal *j, json_object *old)
{
	_cleanup_free_ char *boot = NULL;
	const char *was = gb_json_get_str(old, "boot_id");
	j->doc = old;
	j->steps = gb_json_get(old, "steps");
	j->resumed = true;
	if (gb_root_read_attr(j->ctx->root, "proc/sys/kernel/random/boot_id", &boot) == 0 && was && !streq(was, boot)) {
		gb_json_add(old, "boot_id", gb_json_new_string(boot));
		gb_json_add(old, "boots", gb_json_new_int(json_object_get_int(gb_json_get(old, "boots")) + 1));
	}
	gb_json_add(old, "state", gb_json_new_string("running"));
	gb_json_add(old, "resumed_at", iso_now(j->ctx));
}

/* Keep the previous journal beside the new one, for the record. */
static void archive(struct gb_journal *j, const char *text, size_t len)
{
	char prev[4300];
	snprintf(prev, sizeof(prev), "%s.prev", j->path);
	if (gb_write_file_atomic(prev, text, len, 0600) < 0)
		gb_log_warning("Failed to keep the previous journal as '%s', ignoring", prev);
}

/* A repair, and a modules build (which repairs an image's kernels), is
 * whole in itself: it decides from what is on disk each time, keeps its
 * own journal, and never stands in the way of a run. */
static bool whole(const char *command)
{
	return command && (streq(command, "repair") || streq(command, "modules"));
}

static int decide(struct gb_journal *j, json_object *plan, const char *command, char *err, size_t errsz)
{
	_cleanup_free_ char *text = NULL;
	json_object *old;
	const char *state, *hash, *cmd;
	size_t len;
	int r;

	r = gb_read_file(j->path, 64u << 20, &text, &len);
	if (r == -ENOENT) {
		new_doc(j, plan, command);
		return 0;
	}
	if (r < 0) {
		snprintf(err, errsz, "cannot read the journal '%s': %s", j->path, strerror(-r));
		return r;
	}
	r = gb_json_parse(text, len, JSON_TOKENER_DEFAULT_DEPTH, &old);
	if (r == -ENOMEM) {
		snprintf(err, errsz, "cannot read the journal '%s': %s", j->path, strerror(-r));
		return r;
	}
	state = gb_json_get_str(old, "state");
	hash = gb_json_get_str(old, "plan_hash");
	if (!old || !json_object_is_type(old, json_type_object) || !state || !hash || !gb_json_get(old, "steps") ||
	    !json_object_is_type(gb_json_get(old, "steps"), json_type_array)) {
		json_object_put(old);
		gb_log_warning("'%s' is not a gpuboot journal; keeping it as '%s.prev' and starting a new one", j->path,
		               j->path);
		archive(j, text, len);
		new_doc(j, plan, command);
		return 0;
	}
	/* A repair never resumes one: it decides from what is on disk each
	 * time, and a step done by an earlier repair (dkms install for a
	 * kernel) must run again when its module has gone since (the bookworm
	 * guest's boot-time repair resumed the failed one of the boot before). */
	if (!streq(state, "done") && streq(hash, j->plan_hash) && !whole(command)) {
		resume_doc(j, old);
		return 0;
	}
	/* A repair is whole in itself (it rebuilds and loads what is installed;
	 * a failure leaves its marker and the next boot's repair retries): its
	 * journal is kept aside, never in the way of a run. */
	cmd = gb_json_get_str(old, "command");
	if (!streq(state, "done") && changed_something(old) && !j->ctx->opt.force && !j->ctx->opt.repair &&
	    !whole(cmd)) {
		snprintf(
		    err, errsz,
		    "an unfinished run of another plan (started %s, %s) changed this machine; rerun it with the same "
		    "options to finish it, or pass --force to abandon it (--repair after a kernel change)",
		    gb_json_get_str(old, "started_at") ? gb_json_get_str(old, "started_at") : "?",
		    gb_json_get_str(old, "command") ? gb_json_get_str(old, "command") : "?");
		json_object_put(old);
		return -EBUSY;
	}
	json_object_put(old);
	archive(j, text, len);
	new_doc(j, plan, command);
	return 0;
}

int gb_journal_open(struct gb_ctx *ctx, json_object *plan, const char *command, struct gb_journal **ret, char *err,
                    size_t errsz)
{
	struct gb_journal *j = calloc(1, sizeof(*j));
	int r;

	if (!j)
		return -ENOMEM;
	j->ctx = ctx;
	/* A repair keeps its own journal: gpuboot-repair.service runs at every
	 * boot, and must never set aside the journal of a run the resume unit
	 * is about to finish (its boots and reboots are the loop guard). */
	snprintf(j->path, sizeof(j->path), "%s/%s", ctx->opt.state_dir,
	         !whole(command)            ? "journal.json"
	         : streq(command, "repair") ? "repair-journal.json"
	                                    : "modules-journal.json");
	r = gb_plan_hash(plan, j->plan_hash);
	if (r >= 0)
		r = decide(j, plan, command, err, errsz);
	if (r >= 0)
		r = journal_save(j);
	if (r < 0) {
		gb_journal_free(j);
		return r;
	}
	*ret = j;
	return 0;
}

struct gb_journal *gb_journal_free(struct gb_journal *j)
{
	if (!j)
		return NULL;
	json_object_put(j->doc);
	free(j);
	return NULL;
}

static void merge(json_object *into, json_object *detail)
{
	if (!detail)
		return;
	struct json_object_iterator it = json_object_iter_begin(detail), end = json_object_iter_end(detail);
	for (; !json_object_iter_equal(&it, &end); json_object_iter_next(&it))
		gb_json_add(into, json_object_iter_peek_name(&it), json_object_get(json_object_iter_peek_value(&it)));
	json_object_put(detail);
}

/* The step's id in the document: the scope's prefix, then id. */
static const char *scoped(const struct gb_journal *j, const char *id, char *buf, size_t bufsz)
{
	if (!j->scope[0])
		return id;
	snprintf(buf, bufsz, "%s/%s", j->scope, id);
	return buf;
}

int gb_journal_begin(struct gb_journal *j, const char *stage, const char *id, const char *kind, json_object *detail)
{
	char buf[4400];
	json_object *s = find_step(j, (id = scoped(j, id, buf, sizeof(buf))));
	if (s) {
		const char *state = gb_json_get_str(s, "state");
		if (state && streq(state, "done") && j->resumed) {
			json_object_put(detail);
			return 1;
		}
		/* Started and not finished (killed), or failed: redo it. */
		gb_json_add(s, "attempts", gb_json_new_int(json_object_get_int(gb_json_get(s, "attempts")) + 1));
	} else {
		s = gb_json_new_object();
		if (!s) {
			/* the flag is set: the record cannot be made, so the effect must not run */
			json_object_put(detail);
			return -ENOMEM;
		}
		gb_json_add(s, "id", gb_json_new_string(id));
		gb_json_add(s, "stage", gb_json_new_string(stage));
		gb_json_add(s, "kind", gb_json_new_string(kind));
		gb_json_add(s, "attempts", gb_json_new_int(1));
		if (gb_json_append(j->steps, s) < 0) {
			/* s is released: no record, so the effect must not run either */
			json_object_put(detail);
			return -ENOMEM;
		}
	}
	gb_json_add(s, "state", gb_json_new_string("started"));
	gb_json_add(s, "started_at", iso_now(j->ctx));
	json_object_object_del(s, "finished_at");
	json_object_object_del(s, "errno");
	merge(s, detail);
	return journal_save(j);
}

void gb_journal_repeat_id(struct gb_journal *j, const char *base, char *ret, size_t n)
{
	char buf[4400], id[512];
	for (unsigned k = 1;; k++) {
		json_object *s;
		const char *state;
		if (k == 1)
			snprintf(id, sizeof(id), "%s", base);
		else
			snprintf(id, sizeof(id), "%s#%u", base, k);
		s = find_step(j, scoped(j, id, buf, sizeof(buf)));
		state = s ? gb_json_get_str(s, "state") : NULL;
		if (!s || !state || !streq(state, "done") || k >= 1000) {
			snprintf(ret, n, "%s", id);
			return;
		}
	}
}

bool gb_journal_step_changed(struct gb_journal *j, const char *id)
{
	char buf[4400];
	json_object *s = find_step(j, scoped(j, id, buf, sizeof(buf)));
	const char *state = s ? gb_json_get_str(s, "state") : NULL;
	return state && streq(state, "done") && !gb_json_get_bool(s, "unchanged", false);
}

int gb_journal_end(struct gb_journal *j, const char *id, int err, json_object *detail)
{
	char buf[4400];
	json_object *s = find_step(j, scoped(j, id, buf, sizeof(buf)));
	if (!s) {
		json_object_put(detail);
		return -ENOENT;
	}
	gb_json_add(s, "state", gb_json_new_string(err ? "failed" : "done"));
	gb_json_add(s, "finished_at", iso_now(j->ctx));
	if (err)
		gb_json_add(s, "errno", gb_json_new_int(err < 0 ? -err : err));
	merge(s, detail);
	/* The end of a stage that succeeded: the next record (the next stage's
	 * begin, the run's finish) writes it, right after; it describes no
	 * effect, so a power cut between the two loses nothing to redo. */
	if (!err && streq(gb_json_get_str(s, "kind") ? gb_json_get_str(s, "kind") : "", "stage"))
		return 0;
	return journal_save(j);
}

/* A resumed run that ends done reached every stage's end state: a step the
 * killed run began and this run found in effect (a module already loaded,
 * nothing left for ldconfig) is done, not started forever. */
static void settle_started(struct gb_journal *j)
{
	for (size_t i = 0; i < gb_json_len(j->steps); i++) {
		json_object *s = gb_json_idx(j->steps, i);
		const char *st = gb_json_get_str(s, "state");
		if (!st || !streq(st, "started"))
			continue;
		gb_json_add(s, "state", gb_json_new_string("done"));
		gb_json_add(s, "finished_at", iso_now(j->ctx));
		gb_json_add(s, "found_in_effect", gb_json_new_boolean(true));
	}
}

int gb_journal_finish(struct gb_journal *j, const char *state, int exit_code)
{
	if (j->resumed && streq(state, "done"))
		settle_started(j);
	gb_json_add(j->doc, "state", gb_json_new_string(state));
	gb_json_add(j->doc, "finished_at", iso_now(j->ctx));
	gb_json_add(j->doc, "exit_code", gb_json_new_int(exit_code));
	gb_json_add(j->doc, "effects_this_run", gb_json_new_int((int)j->n_effects));
	return journal_save(j);
}

int gb_journal_write_file(struct gb_journal *j, const char *stage, const char *path, const void *data, size_t len,
                          mode_t mode)
{
	char before[65] = "", after[65] = "", id[4200];
	mode_t old_mode = 0;
	json_object *d = gb_json_new_object();
	struct gb_sha256 h;
	int r;

	snprintf(id, sizeof(id), "file:%s", path);
	r = gb_sha256_init(&h);
	if (r >= 0 && (r = gb_sha256_update(&h, data, len)) >= 0)
		r = gb_sha256_final(&h, after);
	gb_sha256_done(&h);
	if (r < 0) {
		json_object_put(d);
		return r;
	}
	r = gb_root_sha256(j->ctx->root, path, before, &old_mode);
	if (r < 0 && r != -ENOENT) {
		json_object_put(d);
		return r;
	}
	gb_json_add(d, "path", gb_json_new_string(path));
	gb_json_add(d, "mode", gb_json_new_int((int)mode));
	gb_json_add(d, "sha256_before", before[0] ? gb_json_new_string(before) : NULL);
	gb_json_add(d, "mode_before", before[0] ? gb_json_new_int((int)old_mode) : NULL);
	gb_json_add(d, "sha256_after", gb_json_new_string(after));
	r = gb_journal_begin(j, stage, id, "file", d);
	if (r != 0)
		return r;
	if (streq(before, after) && old_mode == (mode & 07777)) {
		json_object *u = gb_json_new_object();
		gb_json_add(u, "unchanged", gb_json_new_boolean(true));
		return gb_journal_end(j, id, 0, u);
	}
	r = gb_root_write_file(j->ctx->root, path, data, len, mode);
	if (r == 0)
		j->n_effects++;
	return gb_journal_end(j, id, r, NULL) < 0 ? -EIO : r;
}

int gb_journal_run(struct gb_journal *j, const char *stage, const char *id, const struct gb_cmd_spec *spec,
                   struct gb_cmd_result *ret)
{
	json_object *d = gb_json_new_object(), *argv = gb_json_new_array(), *after;
	int r;

	for (size_t i = 0; spec->argv[i]; i++)
		gb_json_append(argv, gb_json_new_string(spec->argv[i]));
	gb_json_add(d, "argv", argv);
	gb_json_add(d, "chroot", spec->chroot_dir ? gb_json_new_string(spec->chroot_dir) : NULL);
	r = gb_journal_begin(j, stage, id, "command", d);
	if (r != 0)
		return r;
	r = j->ctx->ops->run_command(j->ctx->ops, spec, ret);
	gb_kill_point("command");
	after = gb_json_new_object();
	if (r == 0) {
		j->n_effects++;
		if (WIFEXITED(ret->status))
			gb_json_add(after, "exit_status", gb_json_new_int(WEXITSTATUS(ret->status)));
		else
			gb_json_add(after, "signal", gb_json_new_int(WTERMSIG(ret->status)));
		if (!WIFEXITED(ret->status) || WEXITSTATUS(ret->status) != 0)
			r = -EIO;
	}
	/* a bounded tail: the last 1 KiB says why a package manager failed */
	gb_json_add(after, "output_tail",
	            gb_json_new_string(ret->output_len > 1024 ? ret->output + ret->output_len - 1024 : ret->output));
	return gb_journal_end(j, id, r, after) < 0 ? -EIO : r;
}

json_object *gb_journal_summary(json_object *doc)
{
	json_object *o = gb_json_new_object(), *steps = gb_json_get(doc, "steps"), *last = NULL;
	unsigned done = 0, started = 0, failed = 0;

	for (size_t i = 0; steps && json_object_is_type(steps, json_type_array) && i < gb_json_len(steps); i++) {
		json_object *s = gb_json_idx(steps, i);
		const char *st = gb_json_get_str(s, "state");
		if (!st)
			continue;
		done += streq(st, "done");
		started += streq(st, "started");
		failed += streq(st, "failed");
		last = s;
	}
	gb_json_add(o, "state",
	            gb_json_get_str(doc, "state") ? gb_json_new_string(gb_json_get_str(doc, "state")) : NULL);
	gb_json_add(o, "plan_hash",
	            gb_json_get_str(doc, "plan_hash") ? gb_json_new_string(gb_json_get_str(doc, "plan_hash")) : NULL);
	gb_json_add(o, "boots", gb_json_new_int(json_object_get_int(gb_json_get(doc, "boots"))));
	gb_json_add(o, "steps_done", gb_json_new_int((int)done));
	gb_json_add(o, "steps_started", gb_json_new_int((int)started));
	gb_json_add(o, "steps_failed", gb_json_new_int((int)failed));
	gb_json_add(o, "last_step",
	            last ? gb_json_new_string(gb_json_get_str(last, "id") ? gb_json_get_str(last, "id") : "?") : NULL);
	gb_json_add(o, "last_step_state", last ? gb_json_new_string(gb_json_get_str(last, "state")) : NULL);
	return o;
}

void gb_journal_count_effect(struct gb_journal *j)
{
	j->n_effects++;
}

unsigned gb_journal_effects(const struct gb_journal *j)
{
	return j->n_effects;
}

void gb_journal_set_scope(struct gb_journal *j, const char *scope)
{
	gb_strscpy(j->scope, sizeof(j->scope), scope ? scope : "");
}
