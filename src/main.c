/* SPDX-License-Identifier: MIT */
/* gpuboot: the thin front. Parses options, checks that each applies to the
 * command, opens the root, dispatches to the command (src/cmd/), maps the
 * result to an exit code. Only this file exits. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "context.h"
#include "exit-codes.h"
#include "fetch/fetch.h"
#include "repair/repair.h"
#include "shared/json-util.h"
#include "shared/log.h"
#include "shared/macro.h"
#include "effect/root-write.h"
#include "shared/root.h"
#include "shared/test-knob.h"
#include "shared/tls.h"
#include "shared/util.h"
#include "version.h"

static const struct gb_cmd *const commands[] = {
	&gb_cmd_run,    &gb_cmd_detect, &gb_cmd_plan,    &gb_cmd_fetch,   &gb_cmd_verify,  &gb_cmd_status,
	&gb_cmd_mirror, &gb_cmd_repair, &gb_cmd_cleanup, &gb_cmd_catalog, &gb_cmd_modules,
};

#define ALL 0xffffu
#define RUNS (GB_CMD_RUN | GB_CMD_REPAIR)
#define DECIDES (RUNS | GB_CMD_PLAN | GB_CMD_FETCH | GB_CMD_MIRROR)
#define FETCHES (RUNS | GB_CMD_FETCH | GB_CMD_MIRROR)
#define CATALOGS (DECIDES | GB_CMD_CATALOG) /* read a signed catalog update */

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
	OPT_FORCE,
	OPT_METHOD,
	OPT_REBOOT,
	OPT_RESUME,
	OPT_GPUS,
	OPT_KERNEL,
	OPT_IF_NEEDED,
	OPT_FROM_HOOK,
	OPT_NODES,
	OPT_CHECK_NEXT_BOOT,
	OPT_CATALOG,
	OPT_OUT,
	OPT_MODULE_KEY,
	OPT_MODULE_CERT,
};

/* Each option written down once: getopt's table, --help, and which
 * commands it applies to come from here. */
struct option_doc {
	const char *name;
	int has_arg;
	int val;
	unsigned applies; /* GB_CMD_* mask */
	const char *arg;
	const char *help;
};

static const struct option_doc options[] = {
	{ "root", required_argument, OPT_ROOT, ALL & ~GB_CMD_STATUS, "DIR",
	  "read the machine under DIR instead of / (fixtures, image roots)" },
	{ "profile", required_argument, OPT_PROFILE, DECIDES | GB_CMD_VERIFY, "NAME|FILE",
	  "workload profile (training, inference, hpc, render, minimal)" },
	{ "mirror", required_argument, OPT_MIRROR, FETCHES, "URL", "download from this mirror (https:// or file://)" },
	{ "config", required_argument, OPT_CONFIG, DECIDES | GB_CMD_VERIFY | GB_CMD_CATALOG, "FILE",
	  "site configuration (default /etc/gpuboot/gpuboot.conf)" },
	{ "state-dir", required_argument, OPT_STATE_DIR,
	  FETCHES | GB_CMD_VERIFY | GB_CMD_STATUS | GB_CMD_CLEANUP | GB_CMD_PLAN | GB_CMD_CATALOG | GB_CMD_MODULES,
	  "DIR", "state, cache, journal and status (default /var/lib/gpuboot)" },
	{ "catalog", required_argument, OPT_CATALOG, CATALOGS, "FILE",
	  "a signed catalog update (FILE.sig beside it); the newest valid one is in force (docs/catalog.md)" },
	{ "ca-file", required_argument, OPT_CA_FILE, FETCHES, "FILE",
	  "CA bundle for HTTPS (default: the distro's bundle)" },
	{ "target-gpu", required_argument, OPT_TARGET_GPU, DECIDES, "MODEL",
	  "plan for a GPU that is not present (image builds)" },
	{ "target-os", required_argument, OPT_TARGET_OS, GB_CMD_PLAN | GB_CMD_FETCH | GB_CMD_MIRROR,
	  "ID:VERSION[:ARCH]", "plan for another OS than this one" },
	{ "capture", required_argument, OPT_CAPTURE, GB_CMD_DETECT, "DIR",
	  "detect: copy every path read into DIR, as a fixture tree" },
	{ "tier", required_argument, OPT_TIER, RUNS | GB_CMD_VERIFY, "TIER",
	  "verify: passive, active or full (default: the profile's)" },
	{ "gpus", required_argument, OPT_GPUS, RUNS | GB_CMD_VERIFY, "LIST",
	  "verify: the active tier on these GPUs only (NVML indices, 0,2), a narrowing on purpose" },
	{ "run-dir", required_argument, OPT_RUN_DIR, RUNS | GB_CMD_VERIFY, "DIR",
	  "where the ready flags go (default /run/gpuboot)" },
	{ "upstream", required_argument, OPT_UPSTREAM, FETCHES, "URL",
	  "fetch: a base URL standing in for NVIDIA's hosts (same layout)" },
	{ "trust-key", required_argument, OPT_TRUST_KEY, CATALOGS, "FILE",
	  "trust mirror manifests and catalog updates signed by this Ed25519 key (repeatable)" },
	{ "sign-key", required_argument, OPT_SIGN_KEY, GB_CMD_MIRROR | GB_CMD_MODULES, "FILE",
	  "mirror, modules build: sign the manifest with this Ed25519 private key" },
	{ "out", required_argument, OPT_OUT, GB_CMD_MODULES, "DIR",
	  "modules build: the mirror directory the module packages are published in" },
	{ "module-key", required_argument, OPT_MODULE_KEY, GB_CMD_MODULES, "FILE",
	  "modules build: sign the modules with this key (the site's Secure Boot key; with --module-cert)" },
	{ "module-cert", required_argument, OPT_MODULE_CERT, GB_CMD_MODULES, "FILE",
	  "modules build: the certificate of --module-key (enrolled as a MOK or in db)" },
	{ "mirror-version", required_argument, OPT_MIRROR_VERSION, GB_CMD_MIRROR | GB_CMD_MODULES, "N",
	  "mirror: the manifest's version (default: the time)" },
	{ "parallel", required_argument, OPT_PARALLEL, FETCHES, "N", "fetch: transfers at once (default 4)" },
	{ "repair", no_argument, OPT_REPAIR, RUNS, NULL,
	  "after a kernel upgrade: rebuild, reload and verify the modules" },
	{ "kernel", required_argument, OPT_KERNEL, GB_CMD_REPAIR | GB_CMD_MODULES, "KVER",
	  "repair: the kernel to make ready (default the running one); answers whether KVER comes up with the GPU; "
	  "modules build: a kernel to build for (repeatable; default every kernel of the image)" },
	{ "if-needed", no_argument, OPT_IF_NEEDED, GB_CMD_REPAIR, NULL,
	  "repair: do nothing, quickly, when the modules for the kernel are there and loaded (the boot unit)" },
	{ "from-hook", no_argument, OPT_FROM_HOOK, GB_CMD_REPAIR, NULL,
	  "repair: run from a kernel-install hook: no package manager, no load, never wait for the lock" },
	{ "check-next-boot", no_argument, OPT_CHECK_NEXT_BOOT, GB_CMD_REPAIR, NULL,
	  "repair: before a reboot, does the kernel booted next have its NVIDIA module? (0 yes, 14 no; reads only)" },
	{ "nodes", no_argument, OPT_NODES, GB_CMD_REPAIR, NULL,
	  "repair: only make the NVIDIA device nodes and /dev/char links of the modules loaded now (the udev rule)" },
	{ "dry-run", no_argument, OPT_DRY_RUN, RUNS | GB_CMD_FETCH, NULL,
	  "decide and print what would happen; write nothing, anywhere" },
	{ "force", no_argument, OPT_FORCE, RUNS, NULL, "abandon an unfinished run of another plan (see the journal)" },
	{ "reboot", no_argument, OPT_REBOOT, RUNS, NULL, "when a reboot is needed, ask systemd for it (else exit 3)" },
	{ "resume", no_argument, OPT_RESUME, GB_CMD_RUN, NULL,
	  "run: started by gpuboot-resume.service after a reboot (the journal continues)" },
	{ "method", required_argument, OPT_METHOD, DECIDES, "METHOD",
	  "install method: packages (NVIDIA's repositories), distro (the distribution's), runfile" },
	{ "json", no_argument, OPT_JSON,
	  GB_CMD_DETECT | GB_CMD_PLAN | GB_CMD_VERIFY | GB_CMD_STATUS | GB_CMD_CATALOG | GB_CMD_MODULES, NULL,
	  "print JSON instead of text" },
	{ "prometheus", no_argument, OPT_PROMETHEUS, GB_CMD_STATUS, NULL, "status: print Prometheus text" },
	{ "offline", no_argument, OPT_OFFLINE, FETCHES, NULL,
	  "never use the network (cache and file:// mirrors only)" },
	{ "no-verify", no_argument, OPT_NO_VERIFY, RUNS, NULL, "skip the verification stage" },
	{ "verbose", no_argument, 'v', ALL, NULL, "more log output (repeat for debug)" },
	{ "version", no_argument, OPT_VERSION, ALL, NULL, "print the version and exit" },
	{ "help", no_argument, 'h', ALL, NULL, "print this help and exit" },
};

static void help(FILE *out)
{
	fprintf(out, "Usage: gpuboot [OPTIONS] COMMAND\n\n"
	             "Turn a fresh Linux machine with NVIDIA GPUs into a verified GPU host.\n\nCommands:\n");
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
		fprintf(out, "  %-10s %s\n", commands[i]->name, commands[i]->help);
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
	fprintf(out, "\nExit codes:\n");
	for (size_t i = 0; i < gb_exit_table_len; i++)
		fprintf(out, " %2d %-16s %s\n", gb_exit_table[i].code, gb_exit_table[i].name, gb_exit_table[i].meaning);
}

static const struct option_doc *option_by_val(int val)
{
	for (size_t i = 0; i < ARRAY_SIZE(options); i++)
		if (options[i].val == val)
			return &options[i];
	return NULL;
}

static int parse_number(const char *name, const char *arg, uint64_t min, uint64_t max, uint64_t *ret)
{
	if (gb_safe_atou64(arg, 10, ret) < 0 || *ret < min || *ret > max) {
		gb_log_error("--%s needs a number from %llu to %llu, not '%s'", name, (unsigned long long)min,
		             (unsigned long long)max, arg);
		return -EINVAL;
	}
	return 0;
}

/* One option's value into o; negative errno on a bad value (logged). */
static int set_option(int c, const char *arg, struct gb_options *o)
{
	uint64_t v;
	switch (c) {
	case OPT_ROOT: o->root = arg; break;
	case OPT_PROFILE: o->profile = arg; break;
	case OPT_MIRROR: o->mirror = arg; break;
	case OPT_CONFIG: o->config = arg, o->config_given = true; break;
	case OPT_STATE_DIR: o->state_dir = arg, o->state_dir_given = true; break;
	case OPT_CA_FILE: o->ca_file = arg; break;
	case OPT_TARGET_GPU: o->target_gpu = arg; break;
	case OPT_TARGET_OS: o->target_os = arg; break;
	case OPT_CAPTURE: o->capture = arg; break;
	case OPT_TIER: o->tier = arg; break;
	case OPT_RUN_DIR: o->run_dir = arg, o->run_dir_given = true; break;
	case OPT_UPSTREAM: o->upstream = arg; break;
	case OPT_SIGN_KEY: o->sign_key = arg; break;
	case OPT_CATALOG: o->catalog = arg; break;
	case OPT_TRUST_KEY:
		if (o->n_trust_keys == GB_MAX_TRUST_KEYS) {
			gb_log_error("at most %d --trust-key options", GB_MAX_TRUST_KEYS);
			return -EINVAL;
		}
		o->trust_keys[o->n_trust_keys++] = arg;
		break;
	case OPT_MIRROR_VERSION:
		if (parse_number("mirror-version", arg, 1, UINT64_MAX, &v) < 0)
			return -EINVAL;
		o->mirror_version = v;
		break;
	case OPT_PARALLEL:
		if (parse_number("parallel", arg, 1, 64, &v) < 0)
			return -EINVAL;
		o->parallel = (unsigned)v;
		break;
	case OPT_REPAIR: o->repair = true; break;
	case OPT_DRY_RUN: o->dry_run = true; break;
	case OPT_FORCE: o->force = true; break;
	case OPT_REBOOT: o->reboot = true; break;
	case OPT_GPUS: o->gpus = arg; break;
	case OPT_KERNEL:
		if (!gb_repair_kver_valid(arg)) {
			gb_log_error(
			    "--kernel needs a kernel release like 6.1.0-57-amd64 (as uname -r prints), not '%s'", arg);
			return -EINVAL;
		}
		o->kernel = arg;
		if (o->n_kernels == GB_MAX_KERNEL_OPTS) {
			gb_log_error("at most %d --kernel options", GB_MAX_KERNEL_OPTS);
			return -EINVAL;
		}
		o->kernels[o->n_kernels++] = arg;
		break;
	case OPT_OUT: o->out = arg; break;
	case OPT_MODULE_KEY: o->module_key = arg; break;
	case OPT_MODULE_CERT: o->module_cert = arg; break;
	case OPT_IF_NEEDED: o->if_needed = true; break;
	case OPT_FROM_HOOK: o->from_hook = true; break;
	case OPT_NODES: o->nodes = true; break;
	case OPT_CHECK_NEXT_BOOT: o->check_next_boot = true; break;
	case OPT_RESUME: o->resume = true; break;
	case OPT_METHOD:
		if (!streq(arg, "packages") && !streq(arg, "distro") && !streq(arg, "runfile")) {
			gb_log_error("--method must be packages, distro or runfile, not '%s'", arg);
			return -EINVAL;
		}
		o->method = arg;
		break;
	case OPT_JSON: o->json = true; break;
	case OPT_PROMETHEUS: o->prometheus = true; break;
	case OPT_OFFLINE: o->offline = true; break;
	case OPT_NO_VERIFY: o->no_verify = true; break;
	case 'v': o->verbose++; break;
	case OPT_VERSION: o->show_version = true; break;
	default: return -EINVAL;
	}
	return 0;
}

/* Parse argv; *given collects which options were used (for the applies
 * check). Returns 0, 1 for --help, or a negative errno (logged). */
static int parse_options(int argc, char **argv, struct gb_options *o, const struct option_doc **given, size_t *n_given)
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
	while ((c = getopt_long(argc, argv, ":vh", longopts, NULL)) != -1) {
		const struct option_doc *d = option_by_val(c == ':' ? optopt : c);
		if (c == 'h') {
			help(stdout);
			return 1;
		}
		if (c == ':' && d) {
			gb_log_error("--%s needs a value %s; see gpuboot --help", d->name, d->arg);
			return -EINVAL;
		}
		if (c == '?' || c == ':' || !d) {
			gb_log_error("unknown option '%s'; see gpuboot --help", argv[optind - 1]);
			return -EINVAL;
		}
		if (set_option(c, optarg, o) < 0)
			return -EINVAL;
		if (*n_given < ARRAY_SIZE(options) * 4)
			given[(*n_given)++] = d;
	}
	return 0;
}

static const struct gb_cmd *find_command(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
		if (streq(commands[i]->name, name))
			return commands[i];
	return NULL;
}

/* Every option given must apply to the command: exit 2 otherwise. */
static int check_applies(const struct gb_cmd *cmd, const struct option_doc *const *given, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!(given[i]->applies & cmd->id)) {
			gb_log_error("--%s does not apply to '%s'; see gpuboot --help", given[i]->name, cmd->name);
			return -EINVAL;
		}
	return 0;
}

/* The state directory must be writable: root, or an explicit --state-dir. */
static int check_state_dir(const struct gb_cmd *cmd, struct gb_options *o)
{
	static char run_dir[4200];
	if (!cmd->writes_state || o->dry_run || geteuid() == 0)
		return 0;
	if (!o->state_dir_given) {
		gb_log_error("'%s' writes its state in %s: run as root or pass --state-dir", cmd->name, o->state_dir);
		return -EPERM;
	}
	if (!o->run_dir_given) {
		/* Not root: the ready flags go beside the state, not into /run. */
		snprintf(run_dir, sizeof(run_dir), "%s/run", o->state_dir);
		o->run_dir = run_dir;
	}
	return 0;
}

/* A root must look like a root filesystem before anything is read from it. */
static int check_root(struct gb_ctx *ctx)
{
	if (gb_root_exists(ctx->root, "etc/os-release") || gb_root_exists(ctx->root, "usr/lib/os-release"))
		return 0;
	gb_log_error("no os-release under '%s': is this a root filesystem? (--root DIR names the machine's /)",
	             ctx->opt.root);
	return -ENOENT;
}

static const struct gb_cmd *select_command(struct gb_options *o, int *argc, char ***argv)
{
	const struct gb_cmd *cmd = NULL;
	const char *name = *argc > 0 ? (*argv)[0] : NULL;

	if (name) {
		(*argv)++;
		(*argc)--;
	}
	if (o->repair && name && !streq(name, "repair") && !streq(name, "run")) {
		gb_log_error("--repair cannot be combined with '%s'; see gpuboot --help", name);
		return NULL;
	}
	if (o->repair)
		name = "repair";
	if (!name) {
		help(stderr);
		gb_log_error("no command given; cloud-init runs 'gpuboot run'");
		return NULL;
	}
	cmd = find_command(name);
	if (!cmd)
		gb_log_error("unknown command '%s'; see gpuboot --help", name);
	if (cmd && cmd->id == GB_CMD_REPAIR)
		o->repair = true;
	return cmd;
}

/* Test builds only: the fake operations table, from the environment. */
static int setup_ops(struct gb_ctx *ctx)
{
#ifdef GB_TEST_HOOKS
	const char *spec = gb_test_knob("GPUBOOT_FAKE_OPS");
	if (spec && gb_ops_fake_new(spec, &ctx->ops) < 0) {
		gb_log_error("GPUBOOT_FAKE_OPS='%s' is not a valid fake specification", spec);
		return -EINVAL;
	}
#else
	(void)ctx;
#endif
	return 0;
}

/* OpenSSL, and libcurl for the commands that use them, initialised before
 * the command runs and before any thread, where a failure ends the program
 * cleanly; lazily, OpenSSL would ignore some of its allocation failures and
 * crash on others in the middle of a run. */
static int init_libraries(const struct gb_cmd *cmd)
{
	const char *missing = "?";
	int r = gb_tls_init(cmd->uses_tls, &missing);

	if (r == -ENOPKG) {
		gb_log_error("OpenSSL has no %s: gpuboot needs it (a build of OpenSSL without it?)", missing);
		return r;
	}
	if (r == 0 && cmd->uses_tls && gb_fetch_global_init() < 0) {
		gb_log_error("libcurl failed to initialise (out of memory?)");
		return -EIO;
	}
	/* again: libcurl initialises more of OpenSSL, and ignores its result */
	if (r < 0 || gb_tls_alloc_failures() > 0) {
		gb_log_error("OpenSSL failed to initialise (out of memory?)");
		return -ENOMEM;
	}
	return 0;
}

/* An image root keeps its own state, where its first boot finishes from
 * it: <root>/var/lib/gpuboot as the image sees it, resolved inside the root
 * (a link there names a directory of the image, never the host's), and
 * none of what gpuboot makes in it a link. The ready flags of an image
 * build go beside it, never into the host's /run. */
static int image_state_dir(struct gb_ctx *ctx)
{
	static const char *const own[] = {
		"lock",    "journal.json",   "status.json",  "gpuboot.prom",     "nfd-features",
		"cache",   "cache/sha256",   "cache/tmp",    "cache/mirror",     "run",
		"runfile", "mirror-version", "catalog.json", "catalog.json.sig", "catalog-version",
		NULL
	};
	static char image_state[4200], image_run[4300];
	const char *bad = NULL;
	int r;

	snprintf(image_state, sizeof(image_state), "%s/var/lib/gpuboot", ctx->opt.root);
	if (!(ctx->opt.dry_run && !gb_root_exists(ctx->root, "var/lib/gpuboot"))) {
		r = gb_root_resolve_dir(ctx->root, "var/lib/gpuboot", own, image_state, sizeof(image_state), &bad);
		if (r == -ELOOP && bad) {
			gb_log_error(
			    "'%s/var/lib/gpuboot/%s' is a symbolic link: gpuboot keeps its own state there and "
			    "follows no link out of it; remove the link and run again",
			    ctx->opt.root, bad);
			return r;
		}
		if (r == -ENOENT) {
			_cleanup_free_ char *target = NULL;
			if (gb_root_readlink(ctx->root, "var/lib/gpuboot", &target) == 0) {
				gb_log_error(
				    "'%s/var/lib/gpuboot' is a symbolic link to '%s', which the image does not "
				    "have (links resolve inside the root); make that directory in the image, "
				    "or remove the link",
				    ctx->opt.root, target);
				return r;
			}
		}
		if (r < 0) {
			gb_log_error_errno(r,
			                   "Failed to open the image's state directory '%s/var/lib/gpuboot': %m; "
			                   "it must be a directory inside the root (or pass --state-dir)",
			                   ctx->opt.root);
			return r;
		}
	}
	ctx->opt.state_dir = image_state;
	if (!ctx->opt.run_dir_given) {
		snprintf(image_run, sizeof(image_run), "%s/run", image_state);
		ctx->opt.run_dir = image_run;
	}
	return 0;
}

static int dispatch(struct gb_ctx *ctx, const struct gb_cmd *cmd, int argc, char **argv)
{
	int r;
	if (setup_ops(ctx) < 0)
		return GB_EXIT_USAGE;
	r = gb_root_open(ctx->opt.root, &ctx->root);
	if (r < 0) {
		gb_ops_fake_free(ctx->ops);
		if (r == -ENOMEM) {
			gb_log_error_errno(r, "Failed to open root '%s': %m", ctx->opt.root);
			return GB_EXIT_FAILED;
		}
		gb_log_error_errno(r, "Failed to open root '%s': %m; --root needs a directory", ctx->opt.root);
		return GB_EXIT_USAGE;
	}
	if (!ctx->root->is_host && !ctx->opt.state_dir_given && cmd->writes_state && image_state_dir(ctx) < 0) {
		gb_root_free(ctx->root);
		gb_ops_fake_free(ctx->ops);
		return GB_EXIT_USAGE;
	}
	if (cmd->reads_root && check_root(ctx) < 0)
		r = GB_EXIT_USAGE;
	else
		r = cmd->fn(ctx, argc, argv);
#ifdef GB_TEST_HOOKS
	/* A command that uses OpenSSL initialises it first (uses_tls, or
	 * gb_tls_init before the use), or OpenSSL would do it lazily, in the
	 * middle of the command, where its failures go unseen. */
	if (gb_tls_used_uninitialised()) {
		gb_log_error("internal error: '%s' used OpenSSL without gb_tls_init(full) first", cmd->name);
		r = GB_EXIT_FAILED;
	}
#endif
	/* The backstop: a command that lost a part of a JSON document to memory
	 * (and wrote none, gb_json_text) has not succeeded. */
	if (gb_json_oom()) { /* said even when the command failed otherwise: it is part of why */
		gb_log_error("Failed to build a JSON document: out of memory");
		if (r == GB_EXIT_OK)
			r = GB_EXIT_FAILED;
	}
	/* And one that decided from a read under the root lost to memory (an
	 * "absent" that may not be): gb_root_lexists and its kind answer no. */
	if (ctx->root->oom) {
		gb_log_error("Failed to read under '%s': out of memory", ctx->opt.root);
		if (r == GB_EXIT_OK)
			r = GB_EXIT_FAILED;
	}
	gb_root_free(ctx->root);
	gb_ops_fake_free(ctx->ops);
	return r;
}

int main(int argc, char **argv)
{
	struct gb_ctx ctx = { .ops = &gb_ops_real };
	const struct option_doc *given[ARRAY_SIZE(options) * 4];
	const struct gb_cmd *cmd;
	size_t n_given = 0;
	char **rest;
	int r, rest_argc;

	ctx.opt.root = "/";
	ctx.opt.config = "/etc/gpuboot/gpuboot.conf";
	ctx.opt.state_dir = "/var/lib/gpuboot";
	ctx.opt.run_dir = "/run/gpuboot";

	r = parse_options(argc, argv, &ctx.opt, given, &n_given);
	if (r > 0)
		return GB_EXIT_OK;
	if (r < 0)
		return GB_EXIT_USAGE;
	if (ctx.opt.show_version) {
		printf("gpuboot %s\n", GPUBOOT_VERSION);
		if (ctx.opt.verbose)
			gb_print_library_versions(stdout);
		return GB_EXIT_OK;
	}
	gb_log_set_level(ctx.opt.verbose >= 2 ? GB_LOG_DEBUG : ctx.opt.verbose == 1 ? GB_LOG_INFO : GB_LOG_WARNING);
	rest = argv + optind;
	rest_argc = argc - optind;
	cmd = select_command(&ctx.opt, &rest_argc, &rest);
	if (!cmd || check_applies(cmd, given, n_given) < 0 || check_state_dir(cmd, &ctx.opt) < 0)
		return GB_EXIT_USAGE;
	if (init_libraries(cmd) < 0)
		return GB_EXIT_FAILED;
	return dispatch(&ctx, cmd, rest_argc, rest);
}
