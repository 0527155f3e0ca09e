/* SPDX-License-Identifier: MIT */
/* Test driver for the install stage, before `gpuboot run` calls it.
 *
 *   install-tool --root DIR --state DIR [--flavor open|proprietary]
 *                [--version 535.261.03] [--kernel KVER]...
 *                [--package NAME[=VERSION][:hold]]... [--lock-timeout-ms N]
 *
 * Builds a context for DIR (the real operations, or the fake ones of
 * GPUBOOT_FAKE_OPS), opens the journal in the state directory, runs
 * gb_install with the distro method and prints the result as JSON on
 * stdout; on stderr "install-tool: effects=N" (what this run changed) and
 * the error. Exit 0, or 1 on a failure. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "context.h"
#include "install/install.h"
#include "run/journal.h"
#include "shared/log.h"
#include "shared/util.h"

#define MAX_ARGS 16

struct tool {
	struct gb_install_input in;
	const char *kernels[MAX_ARGS];
	struct gb_install_pkg pkgs[MAX_ARGS];
	size_t n_pkgs;
};

static int parse_package(struct tool *t, const char *arg)
{
	char buf[256], *eq, *colon;
	struct gb_install_pkg *p;
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
	return gb_strscpy(p->name, sizeof(p->name), buf) < 0 ? -EINVAL : 0;
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
		else
			return -EINVAL;
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
	json_object_object_add(p, "method", json_object_new_string("distro"));
	json_object_object_add(p, "flavor", json_object_new_string(t->in.flavor));
	json_object_object_add(p, "version",
	                       t->in.driver_version ? json_object_new_string(t->in.driver_version) : NULL);
	return p;
}

int main(int argc, char **argv)
{
	static struct gb_install_result res;
	struct gb_ctx ctx = { .ops = &gb_ops_real };
	struct gb_journal *j = NULL;
	struct tool t = { 0 };
	const char *fake = getenv("GPUBOOT_FAKE_OPS");
	json_object *plan, *out;
	char err[1024] = "";
	int r;

	gb_log_set_level(getenv("V") ? GB_LOG_DEBUG : GB_LOG_WARNING);
	if (parse(argc, argv, &ctx, &t) < 0) {
		fprintf(stderr, "usage: install-tool --root DIR --state DIR [--flavor F] [--version V] [--kernel K]... "
		                "[--package NAME[=VERSION][:hold]]... [--lock-timeout-ms N]\n");
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
	r = gb_install(&ctx, &t.in, j, &res);
	(void)gb_journal_finish(j, r < 0 ? "failed" : "done", r < 0 ? 1 : 0);
	out = gb_install_result_to_json(&res);
	printf("%s\n", json_object_to_json_string_ext(out, JSON_C_TO_STRING_PRETTY));
	json_object_put(out);
	fprintf(stderr, "install-tool: effects=%u\n", j->n_effects);
	if (r < 0)
		fprintf(stderr, "install-tool: failed (%s): %s\n", strerror(-r), res.error);
	gb_journal_free(j);
	gb_root_free(ctx.root);
	if (fake)
		gb_ops_fake_free(ctx.ops);
	return r < 0 ? 1 : 0;
}
