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
#include "effect/journal.h"
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
	if (in->userspace_only || in->method == GB_INSTALL_KERNEL)
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

int gb_install_write_blacklist(struct gb_journal *j, char *err, size_t errsz)
{
	int r = gb_journal_write_file(j, STAGE, BLACKLIST_PATH, BLACKLIST_TEXT, strlen(BLACKLIST_TEXT), 0644);
	if (r < 0)
		snprintf(err, errsz, "Failed to write '%s': %s", BLACKLIST_PATH, strerror(-r));
	return r < 0 ? r : 0;
}
