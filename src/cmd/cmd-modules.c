/* SPDX-License-Identifier: MIT */
/* gpuboot --root IMAGE modules build --out MIRROR_DIR --sign-key KEY
 * [--kernel KVER]... [--module-key KEY --module-cert CERT]: the NVIDIA
 * module built once per kernel of an image root and published in the
 * site's signed mirror (repair/modules-build.c, docs/mirror.md). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "context.h"
#include "effect/journal.h"
#include "exit-codes.h"
#include "repair/modules-build.h"
#include "shared/json-util.h"
#include "shared/log.h"
#include "shared/macro.h"
#include "shared/root.h"

static int usage(const char *why)
{
	gb_log_error("%s; usage: gpuboot --root IMAGE modules build --out MIRROR_DIR --sign-key KEY [--kernel KVER]... "
	             "[--module-key KEY --module-cert CERT]",
	             why);
	return GB_EXIT_USAGE;
}

/* What the journal hashes: the build asked for. */
static json_object *request_json(const struct gb_ctx *ctx)
{
	json_object *o = gb_json_new_object(), *k = gb_json_new_array();
	gb_json_add(o, "command", gb_json_new_string("modules build"));
	gb_json_add(o, "root", gb_json_new_string(ctx->root->path));
	gb_json_add(o, "out", gb_json_new_string(ctx->opt.out));
	for (size_t i = 0; i < ctx->opt.n_kernels; i++)
		gb_json_append(k, gb_json_new_string(ctx->opt.kernels[i]));
	gb_json_add(o, "kernels", k);
	gb_json_add(o, "module_cert", ctx->opt.module_cert ? gb_json_new_string(ctx->opt.module_cert) : NULL);
	return o;
}

static void print_text(json_object *doc)
{
	json_object *ks = gb_json_get(doc, "kernels");
	for (size_t i = 0; i < gb_json_len(ks); i++) {
		json_object *k = gb_json_idx(ks, i);
		printf("%s: %s %s (%s) -> %s\n", gb_json_get_str(k, "kernel"), gb_json_get_str(k, "package"),
		       gb_json_get_str(k, "version"),
		       json_object_get_boolean(gb_json_get(k, "built")) ? "built by DKMS now" : "DKMS's build, kept",
		       gb_json_get_str(k, "path"));
	}
}

static int cmd_modules(struct gb_ctx *ctx, int argc, char **argv)
{
	struct gb_modules_build_opts o = { 0 };
	struct gb_journal *j = NULL;
	json_object *req, *doc = NULL;
	char err[1024] = "";
	int code, r;

	if (argc != 1 || !streq(argv[0], "build"))
		return usage("modules takes one action, build");
	if (ctx->root->is_host)
		return usage(
		    "modules build reads an image root: give --root IMAGE (an image with gpuboot's install done)");
	if (!ctx->opt.out || !ctx->opt.sign_key)
		return usage("modules build needs --out and --sign-key");
	if (!ctx->opt.module_key != !ctx->opt.module_cert)
		return usage("--module-key and --module-cert go together");
	o = (struct gb_modules_build_opts){ .out_dir = ctx->opt.out,
		                            .sign_key = ctx->opt.sign_key,
		                            .module_key = ctx->opt.module_key,
		                            .module_cert = ctx->opt.module_cert,
		                            .kernels = ctx->opt.n_kernels ? (char *const *)ctx->opt.kernels : NULL,
		                            .n_kernels = ctx->opt.n_kernels,
		                            .version = ctx->opt.mirror_version };
	req = request_json(ctx);
	r = gb_journal_open(ctx, req, "modules", &j, err, sizeof(err));
	json_object_put(req);
	if (r < 0) {
		gb_log_error("%s", err[0] ? err : strerror(-r));
		return r == -EBUSY ? GB_EXIT_LOCKED : GB_EXIT_FAILED;
	}
	code = gb_modules_build(ctx, &o, j, &doc, err, sizeof(err));
	if (gb_journal_finish(j, code ? "failed" : "done", code) < 0 && !code)
		code = GB_EXIT_FAILED;
	gb_journal_free(j);
	gb_json_add(doc, "exit_code", gb_json_new_int(code));
	gb_json_add(doc, "error", code ? gb_json_new_string(err) : NULL);
	if (code)
		gb_log_error("%s", err);
	if (ctx->opt.json)
		(void)gb_cmd_print_json(doc);
	else
		print_text(doc);
	json_object_put(doc);
	if (fflush(stdout) != 0 && code == GB_EXIT_OK)
		code = GB_EXIT_FAILED;
	return code;
}

const struct gb_cmd gb_cmd_modules = {
	.name = "modules",
	.id = GB_CMD_MODULES,
	.fn = cmd_modules,
	.help = "modules build: the NVIDIA module built once per kernel of an image, published in the signed mirror",
	.writes_state = 1,
	.reads_root = 1,
	.uses_tls = 1,
};
