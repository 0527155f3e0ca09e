/* SPDX-License-Identifier: MIT */
#include "status.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "context.h"
#include "exit-codes.h"
#include "shared/fileio.h"
#include "shared/killpoint.h"
#include "shared/json-util.h"
#include "shared/log.h"
#include "shared/macro.h"
#include "shared/root.h"
#include "shared/util.h"
#include "verify/verify.h"
#include "version.h"

void gb_status_done(struct gb_status *s)
{
	json_object_put(s->facts);
	json_object_put(s->facts_after);
	json_object_put(s->plan);
	json_object_put(s->artifacts);
	json_object_put(s->journal);
	json_object_put(s->load);
	json_object_put(s->prepare);
	json_object_put(s->install);
	json_object_put(s->interrupted);
	s->interrupted = NULL;
	s->facts = s->facts_after = s->plan = s->artifacts = s->journal = s->load = s->prepare = s->install = NULL;
	for (size_t i = 0; i < s->n_stages; i++)
		if (s->stages[i] != &s->lost)
			free(s->stages[i]);
	free(s->stages);
	s->stages = NULL;
	s->n_stages = 0;
}

static json_object *iso8601(uint64_t ns)
{
	time_t t = (time_t)(ns / 1000000000ull);
	struct tm tm;
	char buf[32];
	if (!gmtime_r(&t, &tm) || !strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm))
		return NULL;
	return gb_json_new_string(buf);
}

static const char *errno_name(int e)
{
	switch (e < 0 ? -e : e) {
	case 0: return NULL;
	case ENOENT: return "ENOENT";
	case EACCES: return "EACCES";
	case EPERM: return "EPERM";
	case EIO: return "EIO";
	case ENOMEM: return "ENOMEM";
	case ETIMEDOUT: return "ETIMEDOUT";
	case ECHILD: return "ECHILD";
	case EBADMSG: return "EBADMSG";
	case EINVAL: return "EINVAL";
	case ENODEV: return "ENODEV";
	case EEXIST: return "EEXIST";
	case ENOSPC: return "ENOSPC";
	case ENOTDIR: return "ENOTDIR";
	case EBUSY: return "EBUSY";
	case EKEYREJECTED: return "EKEYREJECTED";
	case ENOEXEC: return "ENOEXEC";
	case EOPNOTSUPP: return "EOPNOTSUPP";
	case ENOSYS: return "ENOSYS";
	case EROFS: return "EROFS";
	case EFBIG: return "EFBIG";
	case ENAMETOOLONG: return "ENAMETOOLONG";
	case ECONNREFUSED: return "ECONNREFUSED";
	case EPROTO: return "EPROTO";
	case EAGAIN: return "EAGAIN";
	case ENOPKG: return "ENOPKG";
	case ERANGE: return "ERANGE";
	case ESTALE: return "ESTALE";
	case ENOKEY: return "ENOKEY";
	case EKEYEXPIRED: return "EKEYEXPIRED";
	case EKEYREVOKED: return "EKEYREVOKED";
	case E2BIG: return "E2BIG";
	case EISDIR: return "EISDIR";
	case ENXIO: return "ENXIO";
	case ENODATA: return "ENODATA";
	case ECANCELED: return "ECANCELED";
	case EDQUOT: return "EDQUOT";
	case EMFILE: return "EMFILE";
	case ELOOP: return "ELOOP";
	case EXDEV: return "EXDEV";
	case ENOTEMPTY: return "ENOTEMPTY";
	case ECONNRESET: return "ECONNRESET";
	case EHOSTUNREACH: return "EHOSTUNREACH";
	case ENETUNREACH: return "ENETUNREACH";
	case EPIPE: return "EPIPE";
	case EOVERFLOW: return "EOVERFLOW";
	case EILSEQ: return "EILSEQ";
	case ENOBUFS: return "ENOBUFS";
	default: return "EOTHER";
	}
}

static json_object *stage_json(const struct gb_stage *st)
{
	json_object *j = gb_json_new_object();
	gb_json_add(j, "name", gb_json_new_string(st->name));
	gb_json_add(j, "result", gb_json_new_string(st->result));
	gb_json_add(j, "duration_ms", gb_json_new_double(st->duration_ms));
	gb_json_add(j, "errno", errno_name(st->err) ? gb_json_new_string(errno_name(st->err)) : NULL);
	gb_json_add(j, "error", st->error[0] ? gb_json_new_string(st->error) : NULL);
	gb_json_add(j, "hint", st->hint[0] ? gb_json_new_string(st->hint) : NULL);
	return j;
}

/* The last verification: what verify (or run) found, and when. */
static json_object *verification_json(const struct gb_status *s)
{
	json_object *v = gb_json_new_object(), *flags = gb_json_new_object();
	gb_json_add(v, "at", iso8601(s->finished_ns));
	gb_json_add(v, "command", gb_json_new_string(s->command));
	gb_json_add(v, "tier", s->tier ? gb_json_new_string(s->tier) : NULL);
	gb_json_add(v, "exit_code", gb_json_new_int(s->exit_code));
	gb_json_add(flags, "driver_ready", gb_json_new_boolean(s->driver_ready));
	gb_json_add(flags, "cuda_ready", gb_json_new_boolean(s->cuda_ready));
	gb_json_add(flags, "toolkit_ready", gb_json_new_boolean(s->toolkit_ready));
	gb_json_add(flags, "verified", gb_json_new_boolean(s->verified));
	gb_json_add(v, "ready", flags);
	gb_json_add(v, "checks", s->verify ? gb_checks_to_json(s->verify) : gb_json_new_array());
	return v;
}

static json_object *never_verified(void)
{
	json_object *v = gb_json_new_object(), *flags = gb_json_new_object();
	gb_json_add(v, "at", NULL);
	gb_json_add(v, "command", NULL);
	gb_json_add(v, "tier", NULL);
	gb_json_add(v, "exit_code", NULL);
	gb_json_add(flags, "driver_ready", gb_json_new_boolean(false));
	gb_json_add(flags, "cuda_ready", gb_json_new_boolean(false));
	gb_json_add(flags, "toolkit_ready", gb_json_new_boolean(false));
	gb_json_add(flags, "verified", gb_json_new_boolean(false));
	gb_json_add(v, "ready", flags);
	gb_json_add(v, "checks", gb_json_new_array());
	return v;
}

/* A part this command produced, or the previous document's, or empty. */
static json_object *part(json_object *mine, json_object *prev, const char *key, json_object *empty)
{
	json_object *p = gb_json_get(prev, key);
	if (mine) {
		json_object_put(empty);
		return json_object_get(mine);
	}
	if (p && !json_object_is_type(p, json_type_null)) {
		json_object_put(empty);
		return json_object_get(p);
	}
	return empty;
}

static bool str_is(const char *a, const char *b)
{
	return a && streq(a, b);
}

/* The plan's warnings, where a fleet alerts on them: the document's plan
 * (this command's or carried over) decides; none is an empty array. */
static json_object *plan_warnings(json_object *plan)
{
	json_object *w = gb_json_get_array(plan, "warnings");
	return w ? json_object_get(w) : gb_json_new_array();
}

static json_object *status_doc(const struct gb_status *s, json_object *prev)
{
	json_object *o = gb_json_new_object(), *stages = gb_json_new_array(), *ver;
	const struct gb_exit_info *e = gb_exit_info(s->exit_code);

	gb_json_add(o, "schema_version", gb_json_new_int(GB_STATUS_SCHEMA));
	gb_json_add(o, "gpuboot_version", gb_json_new_string(GPUBOOT_VERSION));
	gb_json_add(o, "command", gb_json_new_string(s->command));
	gb_json_add(o, "started_at", iso8601(s->started_ns));
	gb_json_add(o, "finished_at", s->finished_ns ? iso8601(s->finished_ns) : NULL);
	gb_json_add(o, "duration_ms",
	            gb_json_new_double(s->finished_ns ? (double)(s->finished_ns - s->started_ns) / 1e6 : 0));
	gb_json_add(o, "exit_code", s->finished_ns ? gb_json_new_int(s->exit_code) : NULL);
	gb_json_add(o, "result",
	            gb_json_new_string(!s->finished_ns                       ? "running"
	                               : s->result_override && !s->exit_code ? s->result_override
	                                                                     : e->result));
	for (size_t i = 0; i < s->n_stages; i++)
		gb_json_append(stages, stage_json(s->stages[i]));
	if (s->stages_lost)
		gb_json_append(stages, stage_json(&s->lost));
	gb_json_add(o, "stages", stages);
	/* The run a kill stopped before this one, as the next run found it. */
	gb_json_add(o, "interrupted", s->interrupted ? json_object_get(s->interrupted) : NULL);
	gb_json_add(o, "facts", part(s->facts, prev, "facts", NULL));
	/* A run's second reading, after install and load: what verify judged.
	 * Only this command's: an older one describes a machine since changed. */
	gb_json_add(o, "facts_after_load", s->facts_after ? json_object_get(s->facts_after) : NULL);
	gb_json_add(o, "plan", part(s->plan, prev, "plan", NULL));
	gb_json_add(o, "warnings", plan_warnings(gb_json_get(o, "plan")));
	gb_json_add(o, "artifacts", part(s->artifacts, prev, "artifacts", gb_json_new_array()));
	gb_json_add(o, "journal", s->journal ? json_object_get(s->journal) : NULL);
	gb_json_add(o, "prepare", s->prepare ? json_object_get(s->prepare) : NULL);
	gb_json_add(o, "install", s->install ? json_object_get(s->install) : NULL);
	gb_json_add(o, "load", s->load ? json_object_get(s->load) : NULL);
	/* The last verification is this command's, or carried over unchanged. */
	ver = s->verify && s->finished_ns ? verification_json(s) : NULL;
	if (!ver) {
		json_object *p = gb_json_get(prev, "verification");
		ver = p && json_object_is_type(p, json_type_object) ? json_object_get(p) : never_verified();
	}
	/* a reference of our own: a failed add releases the one it was given */
	gb_json_add(o, "verification", json_object_get(ver));
	/* Shortcuts kept from schema 1: the last verification's flags and checks. */
	gb_json_add(o, "ready", json_object_get(gb_json_get(ver, "ready")));
	gb_json_add(o, "checks", json_object_get(gb_json_get(ver, "checks")));
	json_object_put(ver);
	return o;
}

json_object *gb_status_to_json(const struct gb_status *s)
{
	return status_doc(s, NULL);
}

/* ---- Prometheus ---- */

struct sbuf {
	char *p;
	size_t n, cap;
	bool oom;
};

_printf_(2, 3) static void sb(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;
	if (b->oom)
		return;
	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(b->p ? b->p + b->n : NULL, b->p ? b->cap - b->n : 0, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->oom = true;
			return;
		}
		if (b->p && b->n + (size_t)n < b->cap) {
			b->n += (size_t)n;
			return;
		}
		{
			size_t nc = (b->cap + (size_t)n + 1) * 2;
			char *np = realloc(b->p, nc);
			if (!np) {
				b->oom = true;
				return;
			}
			b->p = np;
			b->cap = nc;
		}
	}
}

/* Label values: backslash, double quote and newline escaped. */
static void label(struct sbuf *b, const char *v)
{
	sb(b, "\"");
	for (const char *p = v ? v : ""; *p; p++) {
		if (*p == '\\' || *p == '"')
			sb(b, "\\%c", *p);
		else if (*p == '\n')
			sb(b, "\\n");
		else
			sb(b, "%c", *p);
	}
	sb(b, "\"");
}

/* gpuboot_check_<key>{check,subject,unit} for every check with a number there. */
static void numeric_metric(struct sbuf *b, json_object *checks, const char *key, const char *help)
{
	sb(b, "# HELP gpuboot_check_%s %s\n# TYPE gpuboot_check_%s gauge\n", key, help, key);
	for (size_t i = 0; checks && i < gb_json_len(checks); i++) {
		json_object *c = gb_json_idx(checks, i), *v = gb_json_get(c, key);
		if (!v || json_object_is_type(v, json_type_null))
			continue;
		sb(b, "gpuboot_check_%s{check=", key);
		label(b, gb_json_get_str(c, "name"));
		sb(b, ",subject=");
		label(b, gb_json_get_str(c, "subject"));
		sb(b, ",unit=");
		label(b, gb_json_get_str(c, "unit"));
		sb(b, "} %.6g\n", json_object_get_double(v));
	}
}

char *gb_status_prometheus(json_object *doc)
{
	struct sbuf b = { 0 };
	/* the document was read from disk: a "checks" or "gpus" that is not an
	 * array reads as none (json-c would abort on it) */
	json_object *checks = gb_json_get_array(doc, "checks"), *ready = gb_json_get(doc, "ready"),
	            *facts = gb_json_get(doc, "facts");
	const char *flags[] = { "driver_ready", "cuda_ready", "toolkit_ready", "verified" };

	sb(&b, "# HELP gpuboot_info gpuboot version and the command of the last run.\n# TYPE gpuboot_info gauge\n");
	sb(&b, "gpuboot_info{version=");
	label(&b, gb_json_get_str(doc, "gpuboot_version"));
	sb(&b, ",command=");
	label(&b, gb_json_get_str(doc, "command"));
	sb(&b, ",result=");
	label(&b, gb_json_get_str(doc, "result"));
	sb(&b, "} 1\n");
	sb(&b, "# HELP gpuboot_last_exit_code Exit code of the last run.\n# TYPE gpuboot_last_exit_code gauge\n");
	sb(&b, "gpuboot_last_exit_code %d\n", json_object_get_int(gb_json_get(doc, "exit_code")));
	{
		const char *fin = gb_json_get_str(doc, "finished_at");
		struct tm tm;
		memset(&tm, 0, sizeof(tm));
		if (fin && strptime(fin, "%Y-%m-%dT%H:%M:%SZ", &tm)) {
			sb(&b, "# HELP gpuboot_last_run_timestamp_seconds When the last run finished.\n# TYPE "
			       "gpuboot_last_run_timestamp_seconds gauge\n");
			sb(&b, "gpuboot_last_run_timestamp_seconds %lld\n", (long long)timegm(&tm));
		}
	}
	for (size_t i = 0; i < ARRAY_SIZE(flags); i++) {
		json_object *v = gb_json_get(ready, flags[i]);
		sb(&b, "# HELP gpuboot_%s 1 when the %s flag is set.\n# TYPE gpuboot_%s gauge\n", flags[i], flags[i],
		   flags[i]);
		sb(&b, "gpuboot_%s %d\n", flags[i], v && json_object_get_boolean(v) ? 1 : 0);
	}
	if (facts) {
		json_object *g = gb_json_get_array(facts, "gpus");
		sb(&b, "# HELP gpuboot_gpus NVIDIA GPUs found on PCI.\n# TYPE gpuboot_gpus gauge\n");
		sb(&b, "gpuboot_gpus %zu\n", g ? gb_json_len(g) : 0);
	}
	sb(&b, "# HELP gpuboot_check_passed 1 when a check passed, 0 when it failed (skipped and informational checks "
	       "are left out).\n# TYPE gpuboot_check_passed gauge\n");
	for (size_t i = 0; checks && i < gb_json_len(checks); i++) {
		json_object *c = gb_json_idx(checks, i);
		const char *res = gb_json_get_str(c, "result");
		if (!res || (!streq(res, "pass") && !streq(res, "fail")))
			continue;
		sb(&b, "gpuboot_check_passed{check=");
		label(&b, gb_json_get_str(c, "name"));
		sb(&b, ",subject=");
		label(&b, gb_json_get_str(c, "subject"));
		sb(&b, "} %d\n", streq(res, "pass"));
	}
	{
		json_object *w = gb_json_get_array(doc, "warnings");
		size_t n = w ? gb_json_len(w) : 0;
		sb(&b,
		   "# HELP gpuboot_warnings Warnings of the plan (an ended or ending driver branch, a stale catalog, "
		   "a Container Toolkit below the floor).\n# TYPE gpuboot_warnings gauge\n");
		sb(&b, "gpuboot_warnings %zu\n", n);
		sb(&b, "# HELP gpuboot_warning 1 for each warning of the plan, by its code.\n# TYPE gpuboot_warning "
		       "gauge\n");
		for (size_t i = 0; i < n; i++) {
			sb(&b, "gpuboot_warning{code=");
			label(&b, gb_json_get_str(gb_json_idx(w, i), "code"));
			sb(&b, "} 1\n");
		}
	}
	numeric_metric(&b, checks, "value", "Measured value of a numeric check, in the unit label.");
	numeric_metric(&b, checks, "threshold", "Threshold of a numeric check, in the unit label.");
	if (b.oom) {
		free(b.p);
		return NULL;
	}
	return b.p;
}

static int write_flags(struct gb_ctx *ctx, const struct gb_status *s)
{
	const char *names[] = { "driver-ready", "cuda-ready", "toolkit-ready", "verified-ready" };
	bool set[] = { s->driver_ready, s->cuda_ready, s->toolkit_ready, s->verified };
	char path[4200];
	int r = gb_mkdir_p(ctx->opt.run_dir, 0755), first = 0;

	if (r < 0)
		return r;
	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		snprintf(path, sizeof(path), "%s/%s", ctx->opt.run_dir, names[i]);
		if (set[i])
			r = gb_write_file_atomic(path, "", 0, 0644);
		else
			r = unlink(path) < 0 && errno != ENOENT ? negative_errno() : 0;
		if (r < 0 && !first)
			first = r;
	}
	return first;
}

int gb_status_withdraw_flags(struct gb_ctx *ctx)
{
	const struct gb_status none = { 0 };
	struct stat st;
	int r;
	if (stat(ctx->opt.run_dir, &st) < 0)
		return errno == ENOENT ? 0 : negative_errno();
	r = write_flags(ctx, &none);
	if (r >= 0)
		r = gb_fsync_dir(ctx->opt.run_dir);
	return r;
}

/* Node Feature Discovery labels, from the document: the last verification's
 * verdict and the facts it was made on. */
static char *nfd_features(json_object *doc)
{
	struct sbuf b = { 0 };
	json_object *after = gb_json_get(doc, "facts_after_load"),
	            *facts = after && json_object_is_type(after, json_type_object) ? after : gb_json_get(doc, "facts"),
	            *nv = gb_json_get(facts, "nvidia"), *gpus = gb_json_get(facts, "gpus"),
	            *ready = gb_json_get(doc, "ready");
	const char *drv = gb_json_get_str(nv, "loaded_version");
	sb(&b, "gpuboot.dev/verified=%s\n", gb_json_get_bool(ready, "verified", false) ? "true" : "false");
	sb(&b, "gpuboot.dev/driver-ready=%s\n", gb_json_get_bool(ready, "driver_ready", false) ? "true" : "false");
	if (drv)
		sb(&b, "gpuboot.dev/driver-version=%s\n", drv);
	if (gpus && json_object_is_type(gpus, json_type_array)) {
		sb(&b, "gpuboot.dev/gpu-count=%zu\n", gb_json_len(gpus));
		if (gb_json_len(gpus) > 0) {
			const char *arch = gb_json_get_str(gb_json_idx(gpus, 0), "architecture");
			if (arch)
				sb(&b, "gpuboot.dev/gpu-architecture=%s\n", arch);
		}
	}
	if (b.oom) {
		free(b.p);
		return NULL;
	}
	return b.p;
}

/* The previous document, when there is a valid one of this schema. */
static json_object *previous_doc(struct gb_ctx *ctx)
{
	_cleanup_free_ char *text = NULL;
	char path[4200];
	json_object *doc;
	size_t len;
	int r;

	snprintf(path, sizeof(path), "%s/status.json", ctx->opt.state_dir);
	r = gb_read_file(path, 64u << 20, &text, &len);
	if (r == -ENOMEM)
		gb_json_set_oom(); /* the previous document is not lost quietly: nothing is written */
	if (r < 0)
		return NULL;
	if (gb_json_parse(text, len, JSON_TOKENER_DEFAULT_DEPTH, &doc) < 0)
		return NULL; /* out of memory: the flag keeps the new document from being written */
	if (!doc || !json_object_is_type(doc, json_type_object) ||
	    json_object_get_int(gb_json_get(doc, "schema_version")) < 1 ||
	    json_object_get_int(gb_json_get(doc, "schema_version")) > GB_STATUS_SCHEMA) {
		json_object_put(doc);
		return NULL;
	}
	return doc;
}

static int write_text(const char *path, const char *text, bool newline)
{
	size_t n = strlen(text);
	_cleanup_free_ char *buf = malloc(n + 2);
	if (!buf)
		return -ENOMEM;
	memcpy(buf, text, n);
	if (newline)
		buf[n++] = '\n';
	return gb_write_file_atomic(path, buf, n, 0644);
}

static int write_doc(struct gb_ctx *ctx, json_object *doc)
{
	char path[4200];
	int r;
	_cleanup_free_ char *text = NULL;
	snprintf(path, sizeof(path), "%s/status.json", ctx->opt.state_dir);
	r = gb_json_text(doc, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE,
	                 &text);
	if (r < 0)
		return gb_log_error_errno(r, "Failed to make the status document '%s': %m", path);
	r = write_text(path, text, true);
	if (r == -ENOSPC)
		return gb_log_error_errno(
		    r, "Failed to write the status document '%s': %m (need about %zu bytes, %llu available)", path,
		    strlen(text), gb_fs_available(path));
	if (r < 0)
		return gb_log_error_errno(r, "Failed to write the status document '%s': %m", path);
	gb_kill_point("status");
	return 0;
}

/* A status that says "running" where no gpuboot runs: its run was killed
 * (power, OOM, a Packer timeout). Returns the document marked interrupted
 * (the stage it was in, when it was found so), or NULL when it is not. */
static json_object *mark_interrupted(struct gb_ctx *ctx, json_object *doc)
{
	json_object *stages = gb_json_get(doc, "stages"), *info;
	const char *stage = NULL;
	size_t n;

	if (!str_is(gb_json_get_str(doc, "result"), "running"))
		return NULL;
	n = stages && json_object_is_type(stages, json_type_array) ? json_object_array_length(stages) : 0;
	for (size_t i = n; i-- > 0 && !stage;) {
		json_object *st = json_object_array_get_idx(stages, i);
		if (str_is(gb_json_get_str(st, "result"), "running"))
			stage = gb_json_get_str(st, "name");
	}
	if (!stage && n) /* between stages: the last one it finished */
		stage = gb_json_get_str(json_object_array_get_idx(stages, n - 1), "name");
	info = gb_json_new_object();
	gb_json_add(info, "stage", stage ? gb_json_new_string(stage) : NULL);
	gb_json_add(info, "started_at", json_object_get(gb_json_get(doc, "started_at")));
	gb_json_add(info, "found_at", iso8601(ctx->ops->now_realtime_ns(ctx->ops)));
	gb_json_add(info, "command", json_object_get(gb_json_get(doc, "command")));
	json_object_object_del(doc, "interrupted");
	gb_json_add(doc, "interrupted", info);
	gb_json_add(doc, "result", gb_json_new_string("interrupted"));
	return doc;
}

int gb_status_mark_interrupted(struct gb_ctx *ctx, struct gb_status *s)
{
	json_object *doc = previous_doc(ctx), *info;
	bool marked = doc && mark_interrupted(ctx, doc);
	int r = 0;

	/* marked now, or already by `gpuboot status` */
	if (!marked && !str_is(gb_json_get_str(doc, "result"), "interrupted"))
		goto out;
	info = gb_json_get(doc, "interrupted");
	if (!info || !json_object_is_type(info, json_type_object))
		goto out;
	gb_log_warning("The last %s (started %s) was interrupted in its %s stage; this run continues from its journal",
	               gb_json_get_str(info, "command") ? gb_json_get_str(info, "command") : "run",
	               gb_json_get_str(info, "started_at") ? gb_json_get_str(info, "started_at") : "?",
	               gb_json_get_str(info, "stage") ? gb_json_get_str(info, "stage") : "first");
	r = marked ? write_doc(ctx, doc) : 0;
	if (r == 0)
		r = 1;
	json_object_put(s->interrupted);
	s->interrupted = json_object_get(info);
out:
	json_object_put(doc);
	return r;
}

int gb_status_write_progress(struct gb_ctx *ctx, struct gb_status *s)
{
	json_object *prev = previous_doc(ctx), *doc;
	int r;
	s->finished_ns = 0;
	doc = status_doc(s, prev);
	r = write_doc(ctx, doc);
	json_object_put(doc);
	json_object_put(prev);
	return r;
}

/* The Prometheus textfile and the NFD features, from the merged document. */
static int write_exports(struct gb_ctx *ctx, json_object *doc)
{
	_cleanup_free_ char *prom = gb_status_prometheus(doc), *nfd = nfd_features(doc);
	char path[4200];
	int r, first = 0;

	/* a document with a part lost to memory renders incomplete metrics */
	if (!prom || !nfd || gb_json_oom())
		return gb_log_error_errno(-ENOMEM, "Failed to render the metrics: %m");
	snprintf(path, sizeof(path), "%s/gpuboot.prom", ctx->opt.state_dir);
	r = write_text(path, prom, false);
	if (r < 0)
		first = gb_log_error_errno(r, "Failed to write '%s': %m", path);
	snprintf(path, sizeof(path), "%s/nfd-features", ctx->opt.state_dir);
	r = write_text(path, nfd, false);
	if (r < 0 && !first)
		first = gb_log_error_errno(r, "Failed to write '%s': %m", path);
	/* Node Feature Discovery reads its features.d where it is installed. */
	if (ctx->root->is_host && access("/etc/kubernetes/node-feature-discovery/features.d", W_OK) == 0) {
		r = write_text("/etc/kubernetes/node-feature-discovery/features.d/gpuboot", nfd, false);
		if (r < 0)
			gb_log_warning_errno(r, "Failed to write the NFD feature file: %m, ignoring");
	}
	return first;
}

int gb_status_write(struct gb_ctx *ctx, struct gb_status *s)
{
	json_object *prev = previous_doc(ctx), *doc;
	int r, first;

	s->finished_ns = ctx->ops->now_realtime_ns(ctx->ops);
	if (s->stages_lost && s->exit_code == 0)
		s->exit_code = 1; /* a stage record lost to memory is not a success */
	doc = status_doc(s, prev);
	first = write_doc(ctx, doc);
	r = write_exports(ctx, doc);
	if (r < 0 && !first)
		first = r;
	r = s->write_flags && s->verify ? write_flags(ctx, s) : 0;
	if (r < 0 && !first)
		first = gb_log_error_errno(r, "Failed to write the ready flags in '%s': %m", ctx->opt.run_dir);
	json_object_put(doc);
	json_object_put(prev);
	return first;
}

static const char *str_or(json_object *o, const char *k, const char *def)
{
	const char *v = gb_json_get_str(o, k);
	return v ? v : def;
}

static void show_cause(json_object *doc)
{
	json_object *stages = gb_json_get(doc, "stages");
	for (size_t i = 0; stages && json_object_is_type(stages, json_type_array) && i < gb_json_len(stages); i++) {
		json_object *st = gb_json_idx(stages, i);
		const char *res = gb_json_get_str(st, "result"), *err = gb_json_get_str(st, "error");
		if (!res || streq(res, "ok") || streq(res, "skipped") || streq(res, "running"))
			continue;
		printf("%-12s %s %s%s%s\n", "cause:", str_or(st, "name", "?"), res, err ? ": " : "", err ? err : "");
		if (gb_json_get_str(st, "errno"))
			printf("%-12s %s\n", "errno:", gb_json_get_str(st, "errno"));
		if (gb_json_get_str(st, "hint"))
			printf("%-12s %s\n", "hint:", gb_json_get_str(st, "hint"));
		return;
	}
}

static void show_text(json_object *doc)
{
	json_object *ver = gb_json_get(doc, "verification"), *checks = gb_json_get(ver, "checks"),
	            *journal = gb_json_get(doc, "journal");
	unsigned failed = 0, total = 0;

	printf("%-12s %s (exit %d) at %s by 'gpuboot %s'\n", "last run:", str_or(doc, "result", "?"),
	       json_object_get_int(gb_json_get(doc, "exit_code")), str_or(doc, "finished_at", "(unfinished)"),
	       str_or(doc, "command", "?"));
	show_cause(doc);
	{
		json_object *in = gb_json_get(doc, "interrupted");
		if (in && json_object_is_type(in, json_type_object))
			printf("%-12s the '%s' started %s stopped in its %s stage (found so at %s); %s\n",
			       "interrupted:", str_or(in, "command", "run"), str_or(in, "started_at", "?"),
			       str_or(in, "stage", "first"), str_or(in, "found_at", "?"),
			       str_is(gb_json_get_str(doc, "result"), "interrupted")
			           ? "the next run continues from the journal"
			           : "this run continued from its journal");
	}
	if (journal && json_object_is_type(journal, json_type_object))
		printf("%-12s %s, %d step(s) done, %d started, %d failed; last %s (%s)\n",
		       "journal:", str_or(journal, "state", "?"),
		       json_object_get_int(gb_json_get(journal, "steps_done")),
		       json_object_get_int(gb_json_get(journal, "steps_started")),
		       json_object_get_int(gb_json_get(journal, "steps_failed")), str_or(journal, "last_step", "-"),
		       str_or(journal, "last_step_state", "-"));
	{
		json_object *w = gb_json_get_array(doc, "warnings");
		for (size_t i = 0; w && i < gb_json_len(w); i++) {
			json_object *x = gb_json_idx(w, i);
			printf("%-12s %s: %s; fix: %s\n", i ? "" : "warnings:", str_or(x, "code", "?"),
			       str_or(x, "text", ""), str_or(x, "fix", ""));
		}
	}
	if (!gb_json_get_str(ver, "at")) {
		printf("%-12s never\n", "verified:");
		return;
	}
	printf("%-12s %s at %s (tier %s, by '%s')\n",
	       "verified:", gb_json_get_bool(gb_json_get(ver, "ready"), "verified", false) ? "yes" : "no",
	       gb_json_get_str(ver, "at"), str_or(ver, "tier", "?"), str_or(ver, "command", "?"));
	for (size_t i = 0; checks && json_object_is_type(checks, json_type_array) && i < gb_json_len(checks); i++) {
		json_object *c = gb_json_idx(checks, i);
		const char *res = gb_json_get_str(c, "result");
		total++;
		if (res && streq(res, "fail")) {
			failed++;
			printf("%-12s %s %s: %s\n", failed == 1 ? "failed:" : "", gb_json_get_str(c, "name"),
			       gb_json_get_str(c, "subject"),
			       gb_json_get_str(c, "hint") ? gb_json_get_str(c, "hint") : "");
		}
	}
	printf("%-12s %u of %u failed\n", "checks:", failed, total);
}

/* Whether a gpuboot holds the state directory's lock now. */
static bool lock_held(struct gb_ctx *ctx)
{
	char path[4200];
	int fd;
	bool held;

	snprintf(path, sizeof(path), "%s/lock", ctx->opt.state_dir);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return false; /* no lock file: no run took it */
	held = flock(fd, LOCK_SH | LOCK_NB) < 0 && errno == EWOULDBLOCK;
	close(fd);
	return held;
}

int gb_status_show(struct gb_ctx *ctx)
{
	_cleanup_free_ char *text = NULL;
	char path[4200];
	json_object *doc;
	size_t len;
	int r, schema;

	snprintf(path, sizeof(path), "%s/status.json", ctx->opt.state_dir);
	r = gb_read_file(path, 64u << 20, &text, &len);
	if (r < 0) {
		gb_log_error_errno(r, "No status at '%s': %m; gpuboot has not run here yet (or use --state-dir)", path);
		return 1;
	}
	r = gb_json_parse(text, len, JSON_TOKENER_DEFAULT_DEPTH, &doc);
	if (r == -ENOMEM) {
		gb_log_error_errno(r, "Failed to read the status at '%s': %m", path);
		return 1;
	}
	schema = json_object_get_int(gb_json_get(doc, "schema_version"));
	if (!doc || !json_object_is_type(doc, json_type_object) || schema < 1 || schema > GB_STATUS_SCHEMA ||
	    !gb_json_get_str(doc, "result") || !gb_json_get_str(doc, "command")) {
		json_object_put(doc);
		gb_log_error(
		    "'%s' is not a gpuboot status document (schema 1..%d with a result); the next run rewrites it",
		    path, GB_STATUS_SCHEMA);
		return 1;
	}
	if (str_is(gb_json_get_str(doc, "result"), "running") && !lock_held(ctx) && mark_interrupted(ctx, doc)) {
		/* no gpuboot holds the lock: the run it names was killed */
		free(text);
		text = NULL;
		if (gb_json_text(doc,
		                 JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE,
		                 &text) < 0) {
			json_object_put(doc);
			gb_log_error("Failed to read the status at '%s': out of memory", path);
			return 1;
		}
		len = strlen(text);
		if (geteuid() == 0 && write_doc(ctx, doc) < 0)
			gb_log_warning("Failed to record the interrupted run in '%s', ignoring", path);
	}
	if (ctx->opt.json) {
		fputs(text, stdout);
		if (len && text[len - 1] != '\n')
			fputc('\n', stdout);
	} else if (ctx->opt.prometheus) {
		char *p = gb_status_prometheus(doc);
		if (p)
			fputs(p, stdout);
		free(p);
	} else {
		show_text(doc);
	}
	json_object_put(doc);
	return fflush(stdout) == 0 ? 0 : 1;
}
