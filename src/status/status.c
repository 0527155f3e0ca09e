/* SPDX-License-Identifier: MIT */
#include "status.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "context.h"
#include "shared/fileio.h"
#include "shared/json-util.h"
#include "shared/log.h"
#include "shared/macro.h"
#include "shared/root.h"
#include "shared/util.h"
#include "verify/verify.h"
#include "version.h"

struct gb_stage *gb_status_stage(struct gb_status *s, const char *name)
{
	struct gb_stage *st;
	if (s->n_stages >= ARRAY_SIZE(s->stages))
		return &s->stages[ARRAY_SIZE(s->stages) - 1];
	st = &s->stages[s->n_stages++];
	memset(st, 0, sizeof(*st));
	gb_strscpy(st->name, sizeof(st->name), name);
	gb_strscpy(st->result, sizeof(st->result), "ok");
	return st;
}

void gb_status_done(struct gb_status *s)
{
	json_object_put(s->facts);
	json_object_put(s->plan);
	json_object_put(s->artifacts);
	s->facts = s->plan = s->artifacts = NULL;
}

static json_object *iso8601(uint64_t ns)
{
	time_t t = (time_t)(ns / 1000000000ull);
	struct tm tm;
	char buf[32];
	if (!gmtime_r(&t, &tm) || !strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm))
		return NULL;
	return json_object_new_string(buf);
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
	default: return "EOTHER";
	}
}

static const char *result_of(int code)
{
	switch (code) {
	case 0: return "ok";
	case 3: return "reboot-needed";
	case 10: return "unsupported-platform";
	case 11: return "no-gpu";
	case 12: return "unsupported-gpu";
	case 13: return "fetch-failed";
	case 14: return "module-load-failed";
	case 15: return "verify-failed";
	case 16: return "locked";
	default: return "failed";
	}
}

json_object *gb_status_to_json(const struct gb_status *s)
{
	json_object *o = json_object_new_object(), *stages = json_object_new_array(), *flags = json_object_new_object();

	json_object_object_add(o, "schema_version", json_object_new_int(GB_STATUS_SCHEMA));
	json_object_object_add(o, "gpuboot_version", json_object_new_string(GPUBOOT_VERSION));
	json_object_object_add(o, "command", json_object_new_string(s->command));
	json_object_object_add(o, "started_at", iso8601(s->started_ns));
	json_object_object_add(o, "finished_at", iso8601(s->finished_ns));
	json_object_object_add(o, "duration_ms",
	                       json_object_new_double((double)(s->finished_ns - s->started_ns) / 1e6));
	json_object_object_add(o, "exit_code", json_object_new_int(s->exit_code));
	json_object_object_add(o, "result", json_object_new_string(result_of(s->exit_code)));
	json_object_object_add(flags, "driver_ready", json_object_new_boolean(s->driver_ready));
	json_object_object_add(flags, "cuda_ready", json_object_new_boolean(s->cuda_ready));
	json_object_object_add(flags, "toolkit_ready", json_object_new_boolean(s->toolkit_ready));
	json_object_object_add(flags, "verified", json_object_new_boolean(s->verified));
	json_object_object_add(o, "ready", flags);
	for (size_t i = 0; i < s->n_stages; i++) {
		const struct gb_stage *st = &s->stages[i];
		json_object *j = json_object_new_object();
		json_object_object_add(j, "name", json_object_new_string(st->name));
		json_object_object_add(j, "result", json_object_new_string(st->result));
		json_object_object_add(j, "duration_ms", json_object_new_double(st->duration_ms));
		json_object_object_add(j, "errno",
		                       errno_name(st->err) ? json_object_new_string(errno_name(st->err)) : NULL);
		json_object_object_add(j, "error", st->error[0] ? json_object_new_string(st->error) : NULL);
		json_object_object_add(j, "hint", st->hint[0] ? json_object_new_string(st->hint) : NULL);
		json_object_array_add(stages, j);
	}
	json_object_object_add(o, "stages", stages);
	json_object_object_add(o, "facts", s->facts ? json_object_get(s->facts) : NULL);
	json_object_object_add(o, "plan", s->plan ? json_object_get(s->plan) : NULL);
	json_object_object_add(o, "checks", s->verify ? gb_checks_to_json(s->verify) : json_object_new_array());
	json_object_object_add(o, "artifacts", s->artifacts ? json_object_get(s->artifacts) : json_object_new_array());
	return o;
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
	for (size_t i = 0; checks && i < json_object_array_length(checks); i++) {
		json_object *c = json_object_array_get_idx(checks, i), *v = gb_json_get(c, key);
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
	json_object *checks = gb_json_get(doc, "checks"), *ready = gb_json_get(doc, "ready"),
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
		json_object *g = gb_json_get(facts, "gpus");
		sb(&b, "# HELP gpuboot_gpus NVIDIA GPUs found on PCI.\n# TYPE gpuboot_gpus gauge\n");
		sb(&b, "gpuboot_gpus %zu\n", g ? json_object_array_length(g) : 0);
	}
	sb(&b, "# HELP gpuboot_check_passed 1 when a check passed, 0 when it failed (skipped and informational checks "
	       "are left out).\n# TYPE gpuboot_check_passed gauge\n");
	for (size_t i = 0; checks && i < json_object_array_length(checks); i++) {
		json_object *c = json_object_array_get_idx(checks, i);
		const char *res = gb_json_get_str(c, "result");
		if (!res || (!streq(res, "pass") && !streq(res, "fail")))
			continue;
		sb(&b, "gpuboot_check_passed{check=");
		label(&b, gb_json_get_str(c, "name"));
		sb(&b, ",subject=");
		label(&b, gb_json_get_str(c, "subject"));
		sb(&b, "} %d\n", streq(res, "pass"));
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

static char *nfd_features(const struct gb_status *s)
{
	struct sbuf b = { 0 };
	json_object *nv = gb_json_get(s->facts, "nvidia"), *gpus = gb_json_get(s->facts, "gpus");
	const char *drv = gb_json_get_str(nv, "loaded_version");
	sb(&b, "gpuboot.dev/verified=%s\n", s->verified ? "true" : "false");
	sb(&b, "gpuboot.dev/driver-ready=%s\n", s->driver_ready ? "true" : "false");
	if (drv)
		sb(&b, "gpuboot.dev/driver-version=%s\n", drv);
	sb(&b, "gpuboot.dev/gpu-count=%zu\n", gpus ? json_object_array_length(gpus) : 0);
	if (gpus && json_object_array_length(gpus) > 0) {
		const char *arch = gb_json_get_str(json_object_array_get_idx(gpus, 0), "architecture");
		if (arch)
			sb(&b, "gpuboot.dev/gpu-architecture=%s\n", arch);
	}
	if (b.oom) {
		free(b.p);
		return NULL;
	}
	return b.p;
}

int gb_status_write(struct gb_ctx *ctx, struct gb_status *s)
{
	json_object *doc;
	const char *text;
	char path[4200];
	char *prom = NULL, *nfd = NULL;
	int r, first = 0;

	s->finished_ns = ctx->ops->now_realtime_ns(ctx->ops);
	doc = gb_status_to_json(s);
	text = json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
	                                               JSON_C_TO_STRING_NOSLASHESCAPE);
	snprintf(path, sizeof(path), "%s/status.json", ctx->opt.state_dir);
	{
		size_t n = strlen(text);
		char *withnl = malloc(n + 2);
		if (withnl) {
			memcpy(withnl, text, n);
			withnl[n] = '\n';
			withnl[n + 1] = '\0';
			r = gb_write_file_atomic(path, withnl, n + 1, 0644);
			free(withnl);
		} else {
			r = -ENOMEM;
		}
	}
	if (r < 0) {
		gb_log_error_errno(r, "Failed to write the status document '%s': %m", path);
		first = r;
	}
	prom = gb_status_prometheus(doc);
	if (prom) {
		snprintf(path, sizeof(path), "%s/gpuboot.prom", ctx->opt.state_dir);
		r = gb_write_file_atomic(path, prom, strlen(prom), 0644);
		if (r < 0 && !first)
			first = gb_log_error_errno(r, "Failed to write '%s': %m", path);
	}
	nfd = nfd_features(s);
	if (nfd) {
		snprintf(path, sizeof(path), "%s/nfd-features", ctx->opt.state_dir);
		r = gb_write_file_atomic(path, nfd, strlen(nfd), 0644);
		if (r < 0 && !first)
			first = gb_log_error_errno(r, "Failed to write '%s': %m", path);
		/* Node Feature Discovery reads its features.d where it is installed. */
		if (ctx->root->is_host && access("/etc/kubernetes/node-feature-discovery/features.d", W_OK) == 0) {
			r = gb_write_file_atomic("/etc/kubernetes/node-feature-discovery/features.d/gpuboot", nfd,
			                         strlen(nfd), 0644);
			if (r < 0)
				gb_log_warning_errno(r, "Failed to write the NFD feature file: %m, ignoring");
		}
	}
	r = s->write_flags ? write_flags(ctx, s) : 0;
	if (r < 0 && !first)
		first = gb_log_error_errno(r, "Failed to write the ready flags in '%s': %m", ctx->opt.run_dir);
	free(prom);
	free(nfd);
	json_object_put(doc);
	return first;
}

int gb_status_show(struct gb_ctx *ctx)
{
	_cleanup_free_ char *text = NULL;
	char path[4200];
	json_object *doc, *checks;
	size_t len;
	int r;

	snprintf(path, sizeof(path), "%s/status.json", ctx->opt.state_dir);
	r = gb_read_file(path, 64u << 20, &text, &len);
	if (r < 0) {
		gb_log_error_errno(r, "No status at '%s': %m; gpuboot has not run here yet (or use --state-dir)", path);
		return 1;
	}
	doc = json_tokener_parse(text);
	if (!doc || !json_object_is_type(doc, json_type_object)) {
		json_object_put(doc);
		gb_log_error("'%s' is not a status document (not JSON); the next run rewrites it", path);
		return 1;
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
		unsigned failed = 0, total = 0;
		checks = gb_json_get(doc, "checks");
		printf("%-12s %s (exit %d) at %s by 'gpuboot %s'\n",
		       "last run:", gb_json_get_str(doc, "result") ? gb_json_get_str(doc, "result") : "?",
		       json_object_get_int(gb_json_get(doc, "exit_code")),
		       gb_json_get_str(doc, "finished_at") ? gb_json_get_str(doc, "finished_at") : "?",
		       gb_json_get_str(doc, "command") ? gb_json_get_str(doc, "command") : "?");
		for (size_t i = 0; checks && i < json_object_array_length(checks); i++) {
			json_object *c = json_object_array_get_idx(checks, i);
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
	json_object_put(doc);
	return fflush(stdout) == 0 ? 0 : 1;
}
