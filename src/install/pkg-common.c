/* SPDX-License-Identifier: MIT */
/* What the apt engine (install-distro.c) and the rpm engine
 * (install-rpm.c) share: the kernels to build for, a read-only query, a
 * journaled package-manager command after the locks, and the nouveau
 * blacklist the driver's packages are installed with. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "context.h"
#include "install-internal.h"
#include "run/journal.h"
#include "shared/log.h"
#include "shared/macro.h"
#include "catalog/catalog.h"
#include "shared/ops.h"
#include "shared/root.h"
#include "shared/util.h"

#define STAGE "install"
#define BLACKLIST_PATH GB_NOUVEAU_BLACKLIST_PATH
#define BLACKLIST_TEXT GB_NOUVEAU_BLACKLIST_TEXT

int gb_install_kernels(struct gb_ctx *ctx, const struct gb_install_input *in, char (*out)[GB_INSTALL_KVER],
                       size_t *n_out, char *err, size_t errsz)
{
	char **names = NULL, path[GB_INSTALL_KVER + 32];
	size_t n = 0;
	int r;

	*n_out = 0;
	if (in->userspace_only)
		return 0;
	for (size_t i = 0; in->kernels && i < in->n_kernels && *n_out < GB_INSTALL_MAX_KERNELS; i++)
		if (gb_strscpy(out[(*n_out)++], GB_INSTALL_KVER, in->kernels[i]) < 0 ||
		    strpbrk(in->kernels[i], "/ \n") || in->kernels[i][0] == '.') {
			snprintf(err, errsz, "'%s' is not a kernel release", in->kernels[i]);
			return -EINVAL;
		}
	if (!in->kernels) {
		r = gb_root_list_dir(ctx->root, "lib/modules", &names, &n);
		if (r < 0) {
			snprintf(err, errsz, "Failed to list lib/modules in %s: %s", ctx->root->path, strerror(-r));
			return r;
		}
		for (size_t i = 0; i < n && *n_out < GB_INSTALL_MAX_KERNELS; i++) {
			snprintf(path, sizeof(path), "boot/vmlinuz-%s", names[i]);
			if (strlen(names[i]) < GB_INSTALL_KVER && gb_root_exists(ctx->root, path))
				gb_strscpy(out[(*n_out)++], GB_INSTALL_KVER, names[i]);
		}
		gb_strv_free(names);
	}
	if (*n_out == 0) {
		snprintf(err, errsz, "No kernel in %s (lib/modules/<release> with boot/vmlinuz-<release>)",
		         ctx->root->path);
		return -ENOENT;
	}
	return 0;
}

int gb_install_query(struct gb_ctx *ctx, const char *chroot_dir, const char *const *argv, unsigned timeout_ms,
                     bool whole, struct gb_cmd_result *res, char *err, size_t errsz)
{
	struct gb_cmd_spec spec = { .argv = argv, .chroot_dir = chroot_dir, .timeout_ms = (int)timeout_ms };
	int r = ctx->ops->run_command(ctx->ops, &spec, res);
	if (r < 0) {
		snprintf(err, errsz, "Failed to run %s %s: %s", argv[0], argv[1] ? argv[1] : "", strerror(-r));
		return r;
	}
	if (whole && res->output_len >= GB_CMD_CAPTURE_MAX - 1) {
		snprintf(err, errsz, "The output of %s %s is longer than gpuboot reads", argv[0],
		         argv[1] ? argv[1] : "");
		return -E2BIG;
	}
	return 0;
}

int gb_install_effect(const struct gb_install_effect *e, const char *id, const char *const *argv, unsigned timeout_ms,
                      char *err, size_t errsz)
{
	struct gb_cmd_spec spec = { .argv = argv, .chroot_dir = e->chroot_dir, .timeout_ms = (int)timeout_ms };
	int r = e->lock_wait(e->ctx, e->lock_ms, err, errsz);
	if (r < 0)
		return r;
	r = gb_journal_run(e->j, STAGE, id, &spec, e->res);
	if (r == 1) /* done in the run this one resumes */
		return 0;
	if (r < 0) {
		const char *tail =
		    e->res->output_len > 300 ? e->res->output + e->res->output_len - 300 : e->res->output;
		char esc[700];
		gb_log_escape(esc, sizeof(esc), tail);
		snprintf(err, errsz, "%s %s failed%s: %s", argv[0], argv[1] ? argv[1] : "",
		         e->res->timed_out ? " (timed out)" : "", esc);
		return r;
	}
	return 0;
}

int gb_install_write_blacklist(struct gb_journal *j, char *err, size_t errsz)
{
	int r = gb_journal_write_file(j, STAGE, BLACKLIST_PATH, BLACKLIST_TEXT, strlen(BLACKLIST_TEXT), 0644);
	if (r < 0)
		snprintf(err, errsz, "Failed to write '%s': %s", BLACKLIST_PATH, strerror(-r));
	return r < 0 ? r : 0;
}

int gb_install_in_root(struct gb_ctx *ctx, struct gb_journal *j, const char *chroot_dir, int (*fn)(void *), void *arg,
                       char *err, size_t errsz)
{
	struct gb_chroot c;
	int r, k;

	if (!chroot_dir)
		return fn(arg);
	r = gb_chroot_enter(ctx, j, &c, err, errsz);
	if (r < 0)
		return r;
	r = fn(arg);
	/* On every path: unmounted, policy-rc.d gone. A failure of fn is the
	 * one reported; one of the cleanup only if it alone failed. */
	k = gb_chroot_leave(ctx, j, &c, err, errsz);
	return r < 0 ? r : k;
}
