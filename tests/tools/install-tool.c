/* SPDX-License-Identifier: MIT */
/* Test driver for the install stage, before `gpuboot run` calls it.
 *
 *   install-tool --root DIR --state DIR [--flavor open|proprietary]
 *                [--version 535.261.03] [--kernel KVER]...
 *                [--package NAME[=VERSION][:hold]]... [--lock-timeout-ms N]
 *   install-tool --method runfile --root DIR --state DIR --runfile FILE
 *                --version V [--flavor F] [--kernel KVER]... [--dkms yes|no]
 *   install-tool --method cuda --root DIR --state DIR --cuda-version 13.0.0
 *                --component NAME:VERSION:ARCHIVE... [--threads N]
 *   install-tool --method kernel --root DIR --state DIR --package NAME...
 *                [--suite SUITE] [--minimum X.Y]
 *
 * Builds a context for DIR (the real operations, or the fake ones of
 * GPUBOOT_FAKE_OPS), opens the journal in the state directory, runs
 * gb_install with the distro method (or the kernel method, prepare's
 * newer kernel; or gb_install_runfile, gb_install_cuda) and prints the result as JSON on
 * stdout; on stderr "install-tool: effects=N" (what this run changed) and
 * the error. Exit 0, or 1 on a failure. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "context.h"
#include "install/install.h"
#include "effect/journal.h"
#include "shared/log.h"
#include "shared/util.h"

#define MAX_ARGS 16

struct tool {
	const char *method;
	struct gb_runfile_input rf;
	struct gb_cuda_input cuda;
	struct gb_cuda_component_in comps[GB_CUDA_MAX_COMPONENTS];
	char comp_buf[GB_CUDA_MAX_COMPONENTS][1200];
	struct gb_install_input in;
	const char *kernels[MAX_ARGS];
	struct gb_pkg_spec pkgs[MAX_ARGS];
	size_t n_pkgs;
};

static int parse_package(struct tool *t, const char *arg)
{
	char buf[256], *eq, *colon;
	struct gb_pkg_spec *p;
	if (t->n_pkgs >= MAX_ARGS || gb_strscpy(buf, sizeof(buf), arg) < 0)
		return -EINVAL;
	p = &t->pkgs[t->n_pkgs++];
	colon = strstr(buf, ":hold");
	if (colon && !colon[5]) {
		p->hold = true;
		*colon = '\0';
	}
	eq = strchr(buf, '=');
	if (eq) {
		*eq = '\0';
		if (gb_strscpy(p->version, sizeof(p->version), eq + 1) < 0)
			return -EINVAL;
	}
	return gb_pkg_spec_parse(buf, p) < 0 ? -EINVAL : 0;
}

/* NAME:VERSION:ARCHIVE */
static int parse_component(struct tool *t, const char *arg)
{
	size_t i = t->cuda.n_components;
	char *a, *b;
	if (i >= GB_CUDA_MAX_COMPONENTS || gb_strscpy(t->comp_buf[i], sizeof(t->comp_buf[i]), arg) < 0)
		return -EINVAL;
	a = strchr(t->comp_buf[i], ':');
	b = a ? strchr(a + 1, ':') : NULL;
	if (!b)
		return -EINVAL;
	*a = *b = '\0';
	t->comps[i] = (struct gb_cuda_component_in){ t->comp_buf[i], a + 1, b + 1, NULL };
	t->cuda.components = t->comps;
	t->cuda.n_components = i + 1;
	return 0;
}

static int parse_more(struct tool *t, const char *a, const char *v)
{
	uint32_t n;
	if (!strcmp(a, "--method"))
		t->method = v;
	else if (!strcmp(a, "--suite"))
		t->in.suite = v;
	else if (!strcmp(a, "--minimum"))
		t->in.kernel_minimum = v;
	else if (!strcmp(a, "--runfile"))
		t->rf.runfile = v;
	else if (!strcmp(a, "--dkms") && (!strcmp(v, "yes") || !strcmp(v, "no")))
		t->rf.dkms = !strcmp(v, "yes") ? GB_RUNFILE_DKMS_YES : GB_RUNFILE_DKMS_NO;
	else if (!strcmp(a, "--cuda-version"))
		t->cuda.version = v;
	else if (!strcmp(a, "--component"))
		return parse_component(t, v);
	else if (!strcmp(a, "--threads") && gb_safe_atou32(v, 10, &n) == 0)
		t->cuda.threads = n;
	else
		return -EINVAL;
	return 0;
}

static int parse(int argc, char **argv, struct gb_ctx *ctx, struct tool *t)
{
	uint32_t ms;
	t->in.method = GB_INSTALL_DISTRO;
	t->in.flavor = "open";
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!v)
			return -EINVAL;
		i++;
		if (!strcmp(a, "--root"))
			ctx->opt.root = v;
		else if (!strcmp(a, "--state"))
			ctx->opt.state_dir = v;
		else if (!strcmp(a, "--flavor"))
			t->in.flavor = v;
		else if (!strcmp(a, "--version"))
			t->in.driver_version = v;
		else if (!strcmp(a, "--kernel") && t->in.n_kernels < MAX_ARGS)
			t->kernels[t->in.n_kernels++] = v;
		else if (!strcmp(a, "--package")) {
			if (parse_package(t, v) < 0)
				return -EINVAL;
		} else if (!strcmp(a, "--lock-timeout-ms") && gb_safe_atou32(v, 10, &ms) == 0)
			t->in.lock_timeout_ms = ms;
		else if (parse_more(t, a, v) < 0)
			return -EINVAL;
	}
	if (t->method && !strcmp(t->method, "kernel"))
		t->in.method = GB_INSTALL_KERNEL;
	t->rf.flavor = t->in.flavor;
	t->rf.version = t->in.driver_version;
	if (t->in.n_kernels) {
		t->rf.kernels = t->kernels;
		t->rf.n_kernels = t->in.n_kernels;
	}
	if (t->in.n_kernels)
		t->in.kernels = t->kernels;
	if (t->n_pkgs) {
		t->in.packages = t->pkgs;
		t->in.n_packages = t->n_pkgs;
	}
	return ctx->opt.root && ctx->opt.state_dir ? 0 : -EINVAL;
}

static json_object *tool_plan(const struct tool *t)
{
	json_object *p = json_object_new_object();
	json_object_object_add(p, "tool", json_object_new_string("install-tool"));
	json_object_object_add(p, "method", json_object_new_string(t->method ? t->method : "distro"));
	json_object_object_add(p, "flavor", json_object_new_string(t->in.flavor));
	json_object_object_add(p, "version",
	                       t->in.driver_version ? json_object_new_string(t->in.driver_version) : NULL);
	return p;
}

static int run_method(struct gb_ctx *ctx, struct tool *t, struct gb_journal *j, json_object **out, char *err,
                      size_t errsz)
{
	static struct gb_install_result res;
	static struct gb_runfile_result rres;
	static struct gb_cuda_result cres;
	int r;
	if (t->method && !strcmp(t->method, "runfile")) {
		r = gb_install_runfile(ctx, &t->rf, j, &rres);
		*out = gb_runfile_result_to_json(&rres);
		snprintf(err, errsz, "%s", rres.error);
	} else if (t->method && !strcmp(t->method, "cuda")) {
		r = gb_install_cuda(ctx, &t->cuda, j, &cres);
		*out = gb_cuda_result_to_json(&cres);
		snprintf(err, errsz, "%s", cres.error);
	} else {
		r = gb_install(ctx, &t->in, j, &res);
		*out = gb_install_result_to_json(&res);
		snprintf(err, errsz, "%s", res.error);
	}
	return r;
}

int main(int argc, char **argv)
{
	struct gb_ctx ctx = { .ops = &gb_ops_real };
	struct gb_journal *j = NULL;
	struct tool t = { 0 };
	const char *fake = getenv("GPUBOOT_FAKE_OPS");
	json_object *plan, *out;
	char err[1024] = "";
	int r;

	gb_log_set_level(getenv("V") ? GB_LOG_DEBUG : GB_LOG_WARNING);
	if (parse(argc, argv, &ctx, &t) < 0) {
		fprintf(stderr,
		        "usage: install-tool --root DIR --state DIR [--flavor F] [--version V] [--kernel K]... "
		        "[--package NAME[=VERSION][:hold]]... [--lock-timeout-ms N] | --method runfile --runfile F "
		        "--version V "
		        "[--dkms yes|no] | --method cuda --cuda-version V --component NAME:VER:FILE... [--threads N] | "
		        "--method kernel --package NAME... [--suite S] [--minimum X.Y]\n");
		return 2;
	}
	if (fake && gb_ops_fake_new(fake, &ctx.ops) < 0) {
		fprintf(stderr, "install-tool: bad GPUBOOT_FAKE_OPS '%s'\n", fake);
		return 2;
	}
	r = gb_root_open(ctx.opt.root, &ctx.root);
	if (r < 0) {
		fprintf(stderr, "install-tool: cannot open the root '%s': %s\n", ctx.opt.root, strerror(-r));
		return 1;
	}
	plan = tool_plan(&t);
	r = gb_journal_open(&ctx, plan, "run", &j, err, sizeof(err));
	json_object_put(plan);
	if (r < 0) {
		fprintf(stderr, "install-tool: journal: %s (%s)\n", err, strerror(-r));
		gb_root_free(ctx.root);
		return 1;
	}
	r = run_method(&ctx, &t, j, &out, err, sizeof(err));
	(void)gb_journal_finish(j, r < 0 ? "failed" : "done", r < 0 ? 1 : 0);
	printf("%s\n", json_object_to_json_string_ext(out, JSON_C_TO_STRING_PRETTY));
	json_object_put(out);
	fprintf(stderr, "install-tool: effects=%u\n", j->n_effects);
	if (r < 0)
		fprintf(stderr, "install-tool: failed (%s): %s\n", strerror(-r), err);
	gb_journal_free(j);
	gb_root_free(ctx.root);
	if (fake)
		gb_ops_fake_free(ctx.ops);
	return r < 0 ? 1 : 0;
}
