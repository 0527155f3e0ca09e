/* SPDX-License-Identifier: MIT */
/* gpuboot --repair --check-next-boot: before a reboot, does the kernel the
 * machine boots next have its NVIDIA module? Reads only (docs/repair.md,
 * "Before a reboot"). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "context.h"
#include "prepare/bootloader.h"
#include "prepare/prepare.h"
#include "repair-internal.h"
#include "repair.h"
#include "shared/macro.h"
#include "shared/root.h"
#include "shared/util.h"

/* The kernel booted next: the boot loader's (GRUB's default or saved
 * entry, BLS), else the newest under boot/ where the root has no boot
 * loader configuration gpuboot reads (an image, systemd-boot alone). */
static int next_kernel(struct gb_ctx *ctx, struct gb_repair_next *ret)
{
	int r = gb_prepare_next_kernel(ctx->root, ret->kver, sizeof(ret->kver));

	if (r >= 0) {
		gb_strscpy(ret->source, sizeof(ret->source), "the boot loader's default entry");
		return 0;
	}
	if (r != -ENOENT) {
		snprintf(ret->error, sizeof(ret->error),
		         "the boot loader's configuration under %s cannot be read (%s): the kernel booted next is "
		         "not known",
		         ctx->root->path, strerror(-r));
		return r;
	}
	if (gb_repair_newest_kernel(ctx, ret->kver, sizeof(ret->kver)) < 0) {
		snprintf(ret->error, sizeof(ret->error), "no kernel under %s/boot", ctx->root->path);
		return -ENOENT;
	}
	gb_strscpy(ret->source, sizeof(ret->source),
	           "the newest kernel under boot/ (no GRUB or BLS configuration to read)");
	return 0;
}

int gb_repair_next_boot(struct gb_ctx *ctx, struct gb_repair_next *ret)
{
	int r;

	memset(ret, 0, sizeof(*ret));
	r = next_kernel(ctx, ret);
	if (r < 0)
		return r;
	if (!gb_repair_kver_valid(ret->kver)) {
		snprintf(ret->error, sizeof(ret->error), "the boot loader names '%s', which is no kernel release",
		         ret->kver);
		return -EINVAL;
	}
	r = gb_repair_check(ctx, ret->kver, &ret->state);
	if (r < 0) {
		snprintf(ret->error, sizeof(ret->error), "the check of %s failed: %s", ret->kver, strerror(-r));
		return r;
	}
	/* the module file there (loaded or not) is what the next boot needs */
	ret->ready = ret->state.verdict == GB_REPAIR_OK || ret->state.verdict == GB_REPAIR_LOAD;
	return 0;
}
