/* SPDX-License-Identifier: MIT */
/* gpuboot: the thin front. Parses options, opens the root, runs the
 * command, maps the result to an exit code. Only this file exits. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "context.h"
#include "detect/capture.h"
#include "detect/detect.h"
#include "fetch/fetch-plan.h"
#include "plan/plan.h"
#include "plan/profile.h"
#include "status/status.h"
#include "verify/verify.h"
#include "exit-codes.h"
#include "shared/fileio.h"
#include "shared/log.h"
#include "shared/tls.h"
#include "shared/util.h"
#include "version.h"

struct command {
	const char *name;
	int (*fn)(struct gb_ctx *ctx, int argc, char **argv);
	const char *help;
};

/* Each option written down once: getopt's table and --help come from here. */
struct option_doc {
	const char *name;
	int has_arg;
	int val;
	const char *arg;
	const char *help;
};

enum {
	OPT_ROOT = 0x100,
	OPT_PROFILE,
	OPT_MIRROR,
	OPT_CONFIG,
	OPT_STATE_DIR,
	OPT_DRY_RUN,
	OPT_JSON,
	OPT_OFFLINE,
	OPT_NO_VERIFY,
	OPT_TARGET_GPU,
	OPT_TARGET_OS,
	OPT_CA_FILE,
	OPT_REPAIR,
	OPT_CAPTURE,
	OPT_TIER,
	OPT_PROMETHEUS,
	OPT_VERSION,
	OPT_RUN_DIR,
	OPT_UPSTREAM,
	OPT_TRUST_KEY,
	OPT_SIGN_KEY,
	OPT_MIRROR_VERSION,
	OPT_PARALLEL,
};

static const struct option_doc options[] = {
	{ "root", required_argument, OPT_ROOT, "DIR", "read the machine under DIR instead of / (fixtures, chroots)" },
	{ "profile", required_argument, OPT_PROFILE, "NAME|FILE",
	  "workload profile (training, inference, hpc, render, minimal)" },
	{ "mirror", required_argument, OPT_MIRROR, "URL", "download from this mirror (https:// or file://)" },
	{ "config", required_argument, OPT_CONFIG, "FILE", "site configuration (default /etc/gpuboot/gpuboot.conf)" },
	{ "state-dir", required_argument, OPT_STATE_DIR, "DIR", "state, cache and status (default /var/lib/gpuboot)" },
	{ "ca-file", required_argument, OPT_CA_FILE, "FILE", "CA bundle for HTTPS (default: the distro's bundle)" },
	{ "target-gpu", required_argument, OPT_TARGET_GPU, "MODEL",
	  "plan for a GPU that is not present (image builds)" },
	{ "target-os", required_argument, OPT_TARGET_OS, "ID:VERSION[:ARCH]", "plan for another OS than this one" },
	{ "capture", required_argument, OPT_CAPTURE, "DIR",
	  "detect: copy every path read into DIR, as a fixture tree" },
	{ "tier", required_argument, OPT_TIER, "TIER", "verify: passive, active or full (default: the profile's)" },
	{ "run-dir", required_argument, OPT_RUN_DIR, "DIR", "where the ready flags go (default /run/gpuboot)" },
	{ "upstream", required_argument, OPT_UPSTREAM, "URL",
	  "fetch: a base URL standing in for NVIDIA's hosts (same layout)" },
	{ "trust-key", required_argument, OPT_TRUST_KEY, "FILE",
	  "fetch: trust mirror manifests signed by this Ed25519 key (repeatable)" },
	{ "sign-key", required_argument, OPT_SIGN_KEY, "FILE",
	  "mirror: sign the manifest with this Ed25519 private key" },
	{ "mirror-version", required_argument, OPT_MIRROR_VERSION, "N",
	  "mirror: the manifest's version (default: the time)" },
	{ "parallel", required_argument, OPT_PARALLEL, "N", "fetch: transfers at once (default 4)" },
	{ "repair", no_argument, OPT_REPAIR, NULL, "after a kernel upgrade: rebuild, reload and verify the modules" },
	{ "dry-run", no_argument, OPT_DRY_RUN, NULL, "decide and print, change nothing" },
	{ "json", no_argument, OPT_JSON, NULL, "print JSON instead of text" },
	{ "prometheus", no_argument, OPT_PROMETHEUS, NULL, "status: print Prometheus text" },
	{ "offline", no_argument, OPT_OFFLINE, NULL, "never use the network (cache and file:// mirrors only)" },
	{ "no-verify", no_argument, OPT_NO_VERIFY, NULL, "skip the verification stage" },
	{ "verbose", no_argument, 'v', NULL, "more log output (repeat for debug)" },
	{ "version", no_argument, OPT_VERSION, NULL, "print the version and exit" },
	{ "help", no_argument, 'h', NULL, "print this help and exit" },
};

static int cmd_run(struct gb_ctx *ctx, int argc, char **argv);
static int cmd_detect(struct gb_ctx *ctx, int argc, char **argv);
static int cmd_plan(struct gb_ctx *ctx, int argc, char **argv);
static int cmd_verify(struct gb_ctx *ctx, int argc, char **argv);
static int cmd_status(struct gb_ctx *ctx, int argc, char **argv);
static int cmd_fetch(struct gb_ctx *ctx, int argc, char **argv);
static int cmd_mirror(struct gb_ctx *ctx, int argc, char **argv);

static const struct command commands[] = {
	{ "run", cmd_run, "the whole pipeline (what cloud-init runs); the default" },
	{ "detect", cmd_detect, "print the facts about this machine (--json, --capture DIR)" },
	{ "plan", cmd_plan, "print the decisions and their reasons; changes nothing" },
	{ "fetch", cmd_fetch, "download and verify into the cache only" },
	{ "verify", cmd_verify, "run the verification stage on the live machine" },
	{ "status", cmd_status, "print the last status (--json, --prometheus)" },
	{ "mirror", cmd_mirror, "build an offline mirror for a profile (mirror DIR)" },
	{ "repair", cmd_run, "the same as --repair" },
};

static void help(FILE *out)
{
	fprintf(out, "Usage: gpuboot [OPTIONS] [COMMAND]\n\n"
	             "Turn a fresh Linux machine with NVIDIA GPUs into a verified GPU host.\n\nCommands:\n");
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
		fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].help);
	fprintf(out, "\nOptions:\n");
	for (size_t i = 0; i < ARRAY_SIZE(options); i++) {
		char left[64];
		if (options[i].val == 'v' || options[i].val == 'h')
			snprintf(left, sizeof(left), "-%c, --%s", options[i].val, options[i].name);
		else if (options[i].arg)
			snprintf(left, sizeof(left), "    --%s %s", options[i].name, options[i].arg);
		else
			snprintf(left, sizeof(left), "    --%s", options[i].name);
		fprintf(out, "  %-32s %s\n", left, options[i].help);
	}
	fprintf(out, "\nExit codes:\n"
	             "  0 done and verified (or the answer was printed)   1 failed (see the status)\n"
	             "  2 usage or configuration error                    3 reboot needed\n"
	             " 10 unsupported platform                           11 no NVIDIA GPU found\n"
	             " 12 unsupported GPU or GPU mix                     13 download or verification failed\n"
	             " 14 kernel module could not be loaded              15 verification failed\n"
	             " 16 another gpuboot holds the lock\n");
}

static int cmd_detect(struct gb_ctx *ctx, int argc, char **argv)
{
	struct gb_facts f;
	int r;

	if (argc > 0) {
		gb_log_error("detect takes no arguments (got '%s'); see gpuboot --help", argv[0]);
		return GB_EXIT_USAGE;
	}
	if (ctx->opt.capture)
		gb_root_record_start(ctx->root);
	r = gb_detect(ctx, &f);
	if (r < 0) {
		gb_log_error_errno(r, "Failed to detect the machine under '%s': %m", ctx->root->path);
		return GB_EXIT_FAILED;
	}
	if (ctx->opt.json) {
		json_object *o = gb_facts_to_json(&f);
		puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
		                                           JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(o);
	} else {
		gb_facts_print(&f, stdout);
	}
	gb_facts_done(&f);
	if (ctx->opt.capture) {
		r = gb_capture_write(ctx->root, ctx->opt.capture);
		if (r < 0)
			return GB_EXIT_FAILED;
		gb_log_info("Captured %zu paths into '%s'", ctx->root->n_records, ctx->opt.capture);
	}
	return fflush(stdout) == 0 ? GB_EXIT_OK : GB_EXIT_FAILED;
}

/* GNU getopt permutes: options may come before or after the command. */
/* Today's date (UTC) from the operations table's clock: EOL dates are compared with it. */
static void today(struct gb_ctx *ctx, char *buf, size_t n)
{
	time_t t = (time_t)(ctx->ops->now_realtime_ns(ctx->ops) / 1000000000ull);
	struct tm tm;
	if (!gmtime_r(&t, &tm) || strftime(buf, n, "%Y-%m-%d", &tm) == 0)
		gb_strscpy(buf, n, "1970-01-01");
}

/* Detect (or take the targets), load profile, site configuration and GPU
 * overrides, and decide. Returns 0 with *plan made (which may be a refusal),
 * or an exit code (2 for configuration errors) with the error logged. */
/* Decide from facts already read and a profile and site already loaded (the
 * targets, when given, stand in for the machine). Returns 0 with *plan made
 * (a refusal is a plan too), or an exit code with the error logged. */
static int plan_from(struct gb_ctx *ctx, const struct gb_facts *f, const struct gb_profile *prof,
                     const struct gb_site_config *site, struct gb_plan *plan)
{
	struct gb_plan_input in;
	struct gb_gpu_overrides ov = { 0 };
	char err[1024] = "", date[16];
	int r;

	gb_plan_input_from_facts(f, &in);
	if ((ctx->opt.target_os && gb_plan_input_target_os(ctx->opt.target_os, &in, err, sizeof(err)) < 0) ||
	    (ctx->opt.target_gpu && gb_plan_input_target_gpu(ctx->opt.target_gpu, &in, err, sizeof(err)) < 0)) {
		gb_log_error("%s", err);
		return GB_EXIT_USAGE;
	}
	r = gb_gpu_overrides_load(ctx, &ov, err, sizeof(err));
	if (r >= 0) {
		today(ctx, date, sizeof(date));
		r = gb_plan_make(&in, prof, site, &ov, date, plan, err, sizeof(err));
	}
	gb_gpu_overrides_done(&ov);
	if (r == -ENOMEM) {
		gb_log_error("out of memory while planning");
		return GB_EXIT_FAILED;
	}
	if (r < 0) {
		gb_log_error("%s", err);
		return GB_EXIT_USAGE;
	}
	return 0;
}

/* Detect (or take the targets), load profile and site configuration, and
 * decide; *ret_facts (when asked) gets the facts as JSON. */
static int build_plan_facts(struct gb_ctx *ctx, struct gb_plan *plan, struct gb_site_config *site,
                            json_object **ret_facts)
{
	struct gb_facts f = { .secure_boot = -1 };
	struct gb_profile prof = { 0 };
	char err[1024] = "";
	int r, code;

	r = gb_detect(ctx, &f);
	if (r < 0) {
		gb_log_error_errno(r, "Failed to detect the machine under '%s': %m", ctx->root->path);
		return GB_EXIT_FAILED;
	}
	if (ret_facts)
		*ret_facts = gb_facts_to_json(&f);
	r = gb_profile_load(ctx, ctx->opt.profile ? ctx->opt.profile : "training", &prof, err, sizeof(err));
	if (r >= 0)
		r = gb_site_config_load(ctx, ctx->opt.config_given ? ctx->opt.config : NULL, site, err, sizeof(err));
	if (r < 0) {
		gb_log_error("%s", r == -ENOMEM ? "out of memory" : err);
		code = r == -ENOMEM ? GB_EXIT_FAILED : GB_EXIT_USAGE;
	} else {
		code = plan_from(ctx, &f, &prof, site, plan);
	}
	gb_profile_done(&prof);
	gb_facts_done(&f);
	return code;
}

static int build_plan(struct gb_ctx *ctx, struct gb_plan *plan, struct gb_site_config *site)
{
	return build_plan_facts(ctx, plan, site, NULL);
}

/* One gpuboot at a time per state directory: <state-dir>/lock, flock'd. */
static int take_lock(struct gb_ctx *ctx, int *ret_fd)
{
	char path[4200];
	int fd, r;

	r = gb_mkdir_p(ctx->opt.state_dir, 0755);
	if (r < 0) {
		gb_log_error_errno(r, "Failed to create the state directory '%s': %m", ctx->opt.state_dir);
		return GB_EXIT_FAILED;
	}
	snprintf(path, sizeof(path), "%s/lock", ctx->opt.state_dir);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0) {
		gb_log_error_errno(negative_errno(), "Failed to open '%s': %m", path);
		return GB_EXIT_FAILED;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		r = errno;
		close(fd);
		if (r == EWOULDBLOCK) {
			gb_log_error("Another gpuboot holds '%s' (cloud-init and a manual run at once?); wait for it",
			             path);
			return GB_EXIT_LOCKED;
		}
		gb_log_error_errno(-r, "Failed to lock '%s': %m", path);
		return GB_EXIT_FAILED;
	}
	*ret_fd = fd;
	return 0;
}

/* The whole pipeline. This version runs detect and plan; the stages that
 * change the machine (prepare, fetch into place, install, load) come next,
 * and until then run says so instead of pretending (exit 2). */
static int cmd_run(struct gb_ctx *ctx, int argc, char **argv)
{
	struct gb_site_config site = { 0 };
	struct gb_status st = { .command = ctx->opt.repair ? "repair" : "run", .write_flags = true };
	struct gb_stage *stage;
	struct gb_plan plan;
	uint64_t t0;
	int code, lock = -1;

	if (argc > 0) {
		gb_log_error("%s takes no arguments (got '%s'); see gpuboot --help", st.command, argv[0]);
		return GB_EXIT_USAGE;
	}
	code = take_lock(ctx, &lock);
	if (code)
		return code;
	st.started_ns = ctx->ops->now_realtime_ns(ctx->ops);
	t0 = ctx->ops->now_monotonic_ns(ctx->ops);
	stage = gb_status_stage(&st, "detect");
	code = build_plan_facts(ctx, &plan, &site, &st.facts);
	stage->duration_ms = (double)(ctx->ops->now_monotonic_ns(ctx->ops) - t0) / 1e6;
	if (code) {
		/* Detection failed, or the configuration is bad: nothing changed. */
		gb_strscpy(stage->result, sizeof(stage->result), "failed");
		snprintf(stage->error, sizeof(stage->error), "detect or plan could not run (exit %d)", code);
		goto out;
	}
	st.plan = gb_plan_to_json(&plan);
	stage = gb_status_stage(&st, "plan");
	if (plan.refusal_code) {
		gb_strscpy(stage->result, sizeof(stage->result), "refused");
		stage->err = plan.refusal_code == GB_EXIT_NO_GPU ? -ENODEV : -EOPNOTSUPP;
		gb_strscpy(stage->error, sizeof(stage->error), plan.refusal);
		gb_log_error("%s", plan.refusal);
		code = plan.refusal_code;
		goto done;
	}
	gb_plan_print(&plan, stdout);
	stage = gb_status_stage(&st, "prepare");
	gb_strscpy(stage->result, sizeof(stage->result), "skipped");
	snprintf(stage->error, sizeof(stage->error), "prepare, install and load are not implemented yet in gpuboot %s",
	         GPUBOOT_VERSION);
	snprintf(
	    stage->hint, sizeof(stage->hint),
	    "this version detects, plans, fetches (gpuboot fetch) and verifies (gpuboot verify); nothing was changed");
	gb_log_error("'%s': %s; the plan above is what it will do", st.command, stage->error);
	code = GB_EXIT_USAGE;
done:
	gb_plan_done(&plan);
out:
	st.exit_code = code;
	if (gb_status_write(ctx, &st) < 0 && code == GB_EXIT_OK)
		code = GB_EXIT_FAILED;
	gb_status_done(&st);
	gb_site_config_done(&site);
	close(lock);
	fflush(stdout);
	return code;
}

static int cmd_plan(struct gb_ctx *ctx, int argc, char **argv)
{
	struct gb_site_config site = { 0 };
	struct gb_plan plan;
	int code;

	if (argc > 0) {
		gb_log_error("plan takes no arguments (got '%s'); see gpuboot --help", argv[0]);
		return GB_EXIT_USAGE;
	}
	code = build_plan(ctx, &plan, &site);
	if (code) {
		gb_site_config_done(&site);
		return code;
	}
	if (ctx->opt.json) {
		json_object *o = gb_plan_to_json(&plan);
		puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
		                                           JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(o);
	} else {
		gb_plan_print(&plan, stdout);
	}
	code = plan.refusal_code ? plan.refusal_code : GB_EXIT_OK;
	if (plan.refusal_code)
		gb_log_error("%s", plan.refusal);
	gb_plan_done(&plan);
	gb_site_config_done(&site);
	if (fflush(stdout) != 0)
		return GB_EXIT_FAILED;
	return code;
}

static json_object *artifacts_json(const struct gb_artifact *a, size_t n)
{
	json_object *arr = json_object_new_array();
	for (size_t i = 0; i < n; i++) {
		json_object *o = json_object_new_object();
		json_object_object_add(o, "name", json_object_new_string(a[i].name));
		json_object_object_add(o, "path", json_object_new_string(a[i].path));
		json_object_object_add(o, "url", json_object_new_string(a[i].url));
		json_object_object_add(o, "sha256", json_object_new_string(a[i].sha256));
		json_object_object_add(o, "size", json_object_new_int64((int64_t)a[i].size));
		json_object_object_add(o, "result", json_object_new_string(a[i].result == 0 ? "verified" : "failed"));
		json_object_object_add(o, "from_cache", json_object_new_boolean(a[i].from_cache));
		json_object_object_add(o, "cache_path",
		                       a[i].result == 0 ? json_object_new_string(a[i].cache_path) : NULL);
		json_object_object_add(o, "error", a[i].error[0] ? json_object_new_string(a[i].error) : NULL);
		json_object_array_add(arr, o);
	}
	return arr;
}

/* fetch and mirror: plan, resolve the artifacts, fetch and verify them. */
static int fetch_common(struct gb_ctx *ctx, bool mirror_mode, const char *mirror_dir)
{
	struct gb_site_config site = { 0 };
	struct gb_status st = { .command = mirror_mode ? "mirror" : "fetch" };
	struct gb_fetch_opts fo;
	struct gb_fetch_source src = { 0 };
	struct gb_artifact *arts = NULL;
	struct gb_stage *stage;
	struct gb_plan plan;
	size_t n = 0;
	char err[1024] = "";
	char *keys[GB_MAX_TRUST_KEYS + 16];
	size_t nk = 0;
	uint64_t t0;
	int code, r;

	code = build_plan(ctx, &plan, &site);
	if (code) {
		gb_site_config_done(&site);
		return code;
	}
	st.started_ns = ctx->ops->now_realtime_ns(ctx->ops);
	st.plan = gb_plan_to_json(&plan);
	stage = gb_status_stage(&st, "plan");
	if (plan.refusal_code) {
		gb_strscpy(stage->result, sizeof(stage->result), "refused");
		gb_strscpy(stage->error, sizeof(stage->error), plan.refusal);
		gb_log_error("%s", plan.refusal);
		code = plan.refusal_code;
		goto out;
	}
	gb_fetch_opts_default(&fo, ctx->opt.state_dir);
	fo.ca_file = ctx->opt.ca_file ? ctx->opt.ca_file : site.ca_file;
	fo.proxy = site.proxy;
	fo.offline = ctx->opt.offline;
	if (ctx->opt.parallel)
		fo.parallel = ctx->opt.parallel;
#ifdef GB_TEST_HOOKS
	{
		const char *e = getenv("GPUBOOT_FETCH_BACKOFF_MS");
		uint32_t v;
		if (e && gb_safe_atou32(e, 10, &v) == 0)
			fo.backoff_ms = v;
		e = getenv("GPUBOOT_FETCH_LOW_SPEED_S");
		if (e && gb_safe_atou32(e, 10, &v) == 0)
			fo.low_speed_s = v;
	}
#endif
	/* mirror reads from --mirror where given (re-signing a mirror for a fleet), else upstream. */
	src.mirror = ctx->opt.mirror ? ctx->opt.mirror : mirror_mode ? NULL : site.mirror;
	src.upstream = ctx->opt.upstream;
	src.ca_file = fo.ca_file;
	for (size_t i = 0; i < ctx->opt.n_trust_keys; i++)
		keys[nk++] = (char *)ctx->opt.trust_keys[i];
	for (char **k = site.trusted_keys; k && *k && nk < ARRAY_SIZE(keys) - 1; k++)
		keys[nk++] = *k;
	keys[nk] = NULL;
	src.trust_keys = keys;
	if (src.mirror && gb_startswith(src.mirror, "http://") && site.allow_http_mirror)
		fo.allow_http = true; /* the manifest's signature and every artifact's hash still decide */
	else if (src.mirror && !gb_startswith(src.mirror, "https://") && !gb_startswith(src.mirror, "file://")) {
		gb_log_error("--mirror '%s': only https:// and file:// mirrors; a plain http:// mirror needs [site] "
		             "allow_http_mirror = yes",
		             src.mirror);
		code = GB_EXIT_USAGE;
		goto out;
	}
	t0 = ctx->ops->now_monotonic_ns(ctx->ops);
	stage = gb_status_stage(&st, "fetch");
	r = gb_fetch_for_plan(ctx, &plan, &src, &fo, &arts, &n, err, sizeof(err));
	if (r >= 0)
		r = gb_fetch_all(ctx, arts, n, &fo);
	stage->duration_ms = (double)(ctx->ops->now_monotonic_ns(ctx->ops) - t0) / 1e6;
	if (r < 0) {
		stage->err = r;
		gb_strscpy(stage->result, sizeof(stage->result), "failed");
		if (!err[0])
			for (size_t i = 0; i < n; i++)
				if (arts[i].result < 0) {
					snprintf(err, sizeof(err), "%s: %s", arts[i].name, arts[i].error);
					break;
				}
		gb_strscpy(stage->error, sizeof(stage->error), err);
		snprintf(stage->hint, sizeof(stage->hint),
		         "nothing was installed from it; check the mirror or network, then run gpuboot fetch again");
		gb_log_error("%s", err);
		code = GB_EXIT_FETCH;
	} else {
		code = GB_EXIT_OK;
	}
	for (size_t i = 0; i < n; i++)
		printf("%-8s %-44.44s %12llu  %s\n",
		       arts[i].result       ? "FAILED"
		       : arts[i].from_cache ? "cached"
		                            : "fetched",
		       arts[i].name, arts[i].size, arts[i].result ? arts[i].error : arts[i].cache_path);
	if (code == GB_EXIT_OK && mirror_mode) {
		t0 = ctx->ops->now_monotonic_ns(ctx->ops);
		stage = gb_status_stage(&st, "mirror");
		r = gb_mirror_write(ctx, mirror_dir, arts, n, ctx->opt.sign_key, ctx->opt.mirror_version, err,
		                    sizeof(err));
		stage->duration_ms = (double)(ctx->ops->now_monotonic_ns(ctx->ops) - t0) / 1e6;
		if (r < 0) {
			gb_strscpy(stage->result, sizeof(stage->result), "failed");
			gb_strscpy(stage->error, sizeof(stage->error), err);
			gb_log_error("%s", err);
			code = r == -EINVAL ? GB_EXIT_USAGE : GB_EXIT_FAILED;
		} else {
			printf("mirror written to %s (%zu artifacts, signed manifest.json)\n", mirror_dir, n);
		}
	}
	st.artifacts = artifacts_json(arts, n);
out:
	st.exit_code = code;
	if (gb_status_write(ctx, &st) < 0 && code == GB_EXIT_OK)
		code = GB_EXIT_FAILED;
	gb_status_done(&st);
	free(arts);
	gb_plan_done(&plan);
	gb_site_config_done(&site);
	fflush(stdout);
	return code;
}

static int cmd_fetch(struct gb_ctx *ctx, int argc, char **argv)
{
	if (argc > 0) {
		gb_log_error("fetch takes no arguments (got '%s'); see gpuboot --help", argv[0]);
		return GB_EXIT_USAGE;
	}
	return fetch_common(ctx, false, NULL);
}

static int cmd_mirror(struct gb_ctx *ctx, int argc, char **argv)
{
	if (argc != 1) {
		gb_log_error(
		    "usage: gpuboot mirror DIR --sign-key KEY [--profile P] [--target-os ...] [--target-gpu ...]");
		return GB_EXIT_USAGE;
	}
	if (!ctx->opt.sign_key) {
		gb_log_error(
		    "mirror needs --sign-key KEY (an Ed25519 private key in PEM: openssl genpkey -algorithm ed25519)");
		return GB_EXIT_USAGE;
	}
	return fetch_common(ctx, true, argv[0]);
}

static int cmd_status(struct gb_ctx *ctx, int argc, char **argv)
{
	if (argc > 0) {
		gb_log_error("status takes no arguments (got '%s'); see gpuboot --help", argv[0]);
		return GB_EXIT_USAGE;
	}
	return gb_status_show(ctx);
}

static void stage_time(struct gb_ctx *ctx, struct gb_stage *st, uint64_t t0)
{
	st->duration_ms = (double)(ctx->ops->now_monotonic_ns(ctx->ops) - t0) / 1e6;
}

static bool check_passed(const struct gb_verify_result *r, const char *name, bool all)
{
	bool seen = false;
	for (size_t i = 0; i < r->n; i++)
		if (streq(r->checks[i].name, name)) {
			if (r->checks[i].state == GB_CHECK_FAIL)
				return false;
			seen = true;
			if (!all)
				return true;
		}
	return seen;
}

static int cmd_verify(struct gb_ctx *ctx, int argc, char **argv)
{
	struct gb_facts f = { .secure_boot = -1 };
	struct gb_profile prof = { 0 };
	struct gb_site_config site = { 0 };
	struct gb_verify_result res = { 0 };
	struct gb_status st = { .command = "verify", .write_flags = true };
	struct gb_verify_opts o = { 0 };
	struct gb_plan plan;
	char expected_cuda[16] = "";
	struct gb_stage *stage;
	char err[1024];
	uint64_t t0;
	int r, code;

	if (argc > 0) {
		gb_log_error("verify takes no arguments (got '%s'); see gpuboot --help", argv[0]);
		return GB_EXIT_USAGE;
	}
	if (ctx->opt.tier && !streq(ctx->opt.tier, "passive") && !streq(ctx->opt.tier, "active") &&
	    !streq(ctx->opt.tier, "full")) {
		gb_log_error("--tier must be passive, active or full, not '%s'", ctx->opt.tier);
		return GB_EXIT_USAGE;
	}
	r = gb_profile_load(ctx, ctx->opt.profile ? ctx->opt.profile : "training", &prof, err, sizeof(err));
	if (r >= 0)
		r = gb_site_config_load(ctx, ctx->opt.config_given ? ctx->opt.config : NULL, &site, err, sizeof(err));
	if (r < 0) {
		gb_log_error("%s", r == -ENOMEM ? "out of memory" : err);
		gb_profile_done(&prof);
		return GB_EXIT_USAGE;
	}
	st.started_ns = ctx->ops->now_realtime_ns(ctx->ops);
	t0 = ctx->ops->now_monotonic_ns(ctx->ops);
	stage = gb_status_stage(&st, "detect");
	r = gb_detect(ctx, &f);
	stage_time(ctx, stage, t0);
	if (r < 0) {
		stage->err = r;
		gb_strscpy(stage->result, sizeof(stage->result), "failed");
		snprintf(stage->error, sizeof(stage->error), "detect failed: %s", strerror(-r));
		code = GB_EXIT_FAILED;
		goto out;
	}
	st.facts = gb_facts_to_json(&f);
	t0 = ctx->ops->now_monotonic_ns(ctx->ops);
	stage = gb_status_stage(&st, "verify");
	if (f.n_gpus == 0) {
		gb_strscpy(stage->result, sizeof(stage->result), "refused");
		stage->err = -ENODEV;
		snprintf(stage->error, sizeof(stage->error),
		         "no NVIDIA GPU found (no PCI function of vendor 10de with a display or 3D class)");
		snprintf(stage->hint, sizeof(stage->hint),
		         "check the instance type has a GPU attached (lspci -d 10de:)");
		gb_log_error("%s", stage->error);
		code = GB_EXIT_NO_GPU;
		goto out;
	}
	o.tier = ctx->opt.tier ? ctx->opt.tier : prof.tier;
	o.min_gpu_memory_gib = prof.min_gpu_memory_gib;
	o.min_network_gbps = prof.min_network_gbps;
	o.min_disk_write_mbps = prof.min_disk_write_mbps;
	o.fp64_gate = prof.fp64_gate;
	o.ecc_required = prof.ecc_required;
	o.skip = site.skip_checks;
	o.probe_timeout_ms = streq(o.tier, "passive") ? 20000 : 120000;
#ifdef GB_TEST_HOOKS
	{
		const char *e = getenv("GPUBOOT_PROBE_TIMEOUT_MS");
		uint32_t ms;
		if (e && gb_safe_atou32(e, 10, &ms) == 0)
			o.probe_timeout_ms = (int)ms;
		o.disk_path = getenv("GPUBOOT_DISK_PATH");
	}
#endif
	if (streq(o.tier, "full") && plan_from(ctx, &f, &prof, &site, &plan) == 0) {
		/* What CUDA the plan installs, for the cuda.installed check. */
		if (!plan.refusal_code && plan.cuda.version[0])
			gb_strscpy(expected_cuda, sizeof(expected_cuda), plan.cuda.version);
		gb_plan_done(&plan);
		o.expected_cuda = expected_cuda[0] ? expected_cuda : NULL;
	}
	r = gb_verify(ctx, &f, &o, &res);
	stage_time(ctx, stage, t0);
	if (r < 0) {
		stage->err = r;
		gb_strscpy(stage->result, sizeof(stage->result), "failed");
		snprintf(stage->error, sizeof(stage->error), "verification could not run: %s", strerror(-r));
		code = GB_EXIT_FAILED;
		goto out;
	}
	st.verify = &res;
	st.driver_ready = check_passed(&res, "driver.loaded", true) && check_passed(&res, "driver.userspace", true) &&
	                  check_passed(&res, "driver.version_match", true);
	st.cuda_ready = !streq(o.tier, "passive") && check_passed(&res, "cuda.context", true);
	st.toolkit_ready =
	    f.nvidia.container_toolkit && (!streq(o.tier, "full") || check_passed(&res, "container.gpu_visible", true));
	st.verified = res.failed == 0;
	if (res.failed) {
		gb_strscpy(stage->result, sizeof(stage->result), "failed");
		snprintf(stage->error, sizeof(stage->error), "%u check(s) failed", res.failed);
		for (size_t i = 0; i < res.n; i++)
			if (res.checks[i].state == GB_CHECK_FAIL) {
				snprintf(stage->hint, sizeof(stage->hint), "%.47s (%.47s): %.200s", res.checks[i].name,
				         res.checks[i].subject, res.checks[i].hint);
				break;
			}
	}
	code = res.failed ? GB_EXIT_VERIFY : GB_EXIT_OK;
	if (ctx->opt.json) {
		json_object *j = json_object_new_object();
		json_object_object_add(j, "tier", json_object_new_string(o.tier));
		json_object_object_add(j, "failed", json_object_new_int((int)res.failed));
		json_object_object_add(j, "wall_ms", json_object_new_double(res.wall_ms));
		json_object_object_add(j, "probe_ms", json_object_new_double(res.probe_ms));
		json_object_object_add(j, "checks", gb_checks_to_json(&res));
		json_object_object_add(j, "probe", res.probe ? json_object_get(res.probe) : NULL);
		puts(json_object_to_json_string_ext(j, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
		                                           JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(j);
	} else {
		gb_verify_print(&res, stdout);
	}
out:
	st.exit_code = code;
	if (gb_status_write(ctx, &st) < 0 && code == GB_EXIT_OK)
		code = GB_EXIT_FAILED;
	gb_status_done(&st);
	gb_verify_result_done(&res);
	gb_facts_done(&f);
	gb_profile_done(&prof);
	gb_site_config_done(&site);
	fflush(stdout);
	return code;
}

static int parse_options(int argc, char **argv, struct gb_options *o)
{
	struct option longopts[ARRAY_SIZE(options) + 1];
	int c;

	memset(longopts, 0, sizeof(longopts));
	for (size_t i = 0; i < ARRAY_SIZE(options); i++) {
		longopts[i].name = options[i].name;
		longopts[i].has_arg = options[i].has_arg;
		longopts[i].val = options[i].val;
	}
	opterr = 0;
	while ((c = getopt_long(argc, argv, "vh", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_ROOT: o->root = optarg; break;
		case OPT_PROFILE: o->profile = optarg; break;
		case OPT_MIRROR: o->mirror = optarg; break;
		case OPT_CONFIG:
			o->config = optarg;
			o->config_given = true;
			break;
		case OPT_STATE_DIR: o->state_dir = optarg; break;
		case OPT_CA_FILE: o->ca_file = optarg; break;
		case OPT_TARGET_GPU: o->target_gpu = optarg; break;
		case OPT_TARGET_OS: o->target_os = optarg; break;
		case OPT_CAPTURE: o->capture = optarg; break;
		case OPT_TIER: o->tier = optarg; break;
		case OPT_RUN_DIR: o->run_dir = optarg; break;
		case OPT_UPSTREAM: o->upstream = optarg; break;
		case OPT_SIGN_KEY: o->sign_key = optarg; break;
		case OPT_TRUST_KEY:
			if (o->n_trust_keys == GB_MAX_TRUST_KEYS) {
				gb_log_error("at most %d --trust-key options", GB_MAX_TRUST_KEYS);
				return -EINVAL;
			}
			o->trust_keys[o->n_trust_keys++] = optarg;
			break;
		case OPT_MIRROR_VERSION: {
			uint64_t v;
			if (gb_safe_atou64(optarg, 10, &v) < 0 || v == 0) {
				gb_log_error("--mirror-version needs a positive integer, not '%s'", optarg);
				return -EINVAL;
			}
			o->mirror_version = v;
			break;
		}
		case OPT_PARALLEL: {
			uint32_t v;
			if (gb_safe_atou32(optarg, 10, &v) < 0 || v == 0 || v > 64) {
				gb_log_error("--parallel needs 1..64, not '%s'", optarg);
				return -EINVAL;
			}
			o->parallel = v;
			break;
		}
		case OPT_REPAIR: o->repair = true; break;
		case OPT_DRY_RUN: o->dry_run = true; break;
		case OPT_JSON: o->json = true; break;
		case OPT_PROMETHEUS: o->prometheus = true; break;
		case OPT_OFFLINE: o->offline = true; break;
		case OPT_NO_VERIFY: o->no_verify = true; break;
		case 'v': o->verbose++; break;
		case 'h': help(stdout); return 1;
		case OPT_VERSION: o->show_version = true; break;
		case ':':
			gb_log_error("option '%s' needs a value; see gpuboot --help", argv[optind - 1]);
			return -EINVAL;
		default: gb_log_error("unknown option '%s'; see gpuboot --help", argv[optind - 1]); return -EINVAL;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct gb_ctx ctx = { .ops = &gb_ops_real };
	const char *cmd = NULL;
	const struct command *command = NULL;
	int r, rest_argc;
	char **rest;

	ctx.opt.root = "/";
	ctx.opt.config = "/etc/gpuboot/gpuboot.conf";
	ctx.opt.state_dir = "/var/lib/gpuboot";
	ctx.opt.run_dir = "/run/gpuboot";

	r = parse_options(argc, argv, &ctx.opt);
	if (r > 0)
		return GB_EXIT_OK;
	if (ctx.opt.show_version) {
		printf("gpuboot %s\n", GPUBOOT_VERSION);
		if (ctx.opt.verbose)
			gb_print_library_versions(stdout);
		return GB_EXIT_OK;
	}
	if (gb_tls_init() < 0) {
		gb_log_error("Failed to initialise OpenSSL");
		return GB_EXIT_FAILED;
	}
	if (r < 0)
		return GB_EXIT_USAGE;
	rest = argv + optind;
	rest_argc = argc - optind;
	if (!cmd && rest_argc > 0) {
		cmd = rest[0];
		rest++;
		rest_argc--;
	}
	if (ctx.opt.repair) {
		if (cmd && !streq(cmd, "repair") && !streq(cmd, "run")) {
			gb_log_error("--repair cannot be combined with '%s'; see gpuboot --help", cmd);
			return GB_EXIT_USAGE;
		}
		cmd = "repair";
	}
	if (!cmd)
		cmd = "run";
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
		if (streq(commands[i].name, cmd))
			command = &commands[i];
	if (!command) {
		gb_log_error("unknown command '%s'; see gpuboot --help", cmd);
		return GB_EXIT_USAGE;
	}
	if (streq(command->name, "repair"))
		ctx.opt.repair = true;

	gb_log_set_level(ctx.opt.verbose >= 2 ? GB_LOG_DEBUG : ctx.opt.verbose == 1 ? GB_LOG_INFO : GB_LOG_WARNING);

#ifdef GB_TEST_HOOKS
	/* Test builds only: the fake operations table, from the environment. */
	{
		const char *spec = getenv("GPUBOOT_FAKE_OPS");
		if (spec && gb_ops_fake_new(spec, &ctx.ops) < 0) {
			gb_log_error("GPUBOOT_FAKE_OPS='%s' is not a valid fake specification", spec);
			return GB_EXIT_USAGE;
		}
	}
#endif

	r = gb_root_open(ctx.opt.root, &ctx.root);
	if (r < 0) {
		gb_log_error_errno(r, "Failed to open root '%s': %m; --root needs a directory", ctx.opt.root);
		return GB_EXIT_USAGE;
	}
	r = command->fn(&ctx, rest_argc, rest);
	gb_root_free(ctx.root);
	gb_ops_fake_free(ctx.ops);
	return r;
}
