/* SPDX-License-Identifier: MIT */
/* The repair module's parts, shared by its files and its unit tests. */
#pragma once

#include <stdbool.h>

#include "repair.h"

struct gb_ctx;

enum gb_repair_family {
	GB_REPAIR_FAMILY_UNKNOWN = 0,
	GB_REPAIR_FAMILY_DEB, /* Debian, Ubuntu: run-parts hooks, linux-headers-KVER */
	GB_REPAIR_FAMILY_RPM, /* RHEL family, Fedora, Amazon Linux 2023: kernel-install, kernel-devel-KVER */
};

/* The family of an os-release ID ("debian", "rhel", "amzn", ...: the
 * catalog's row, gb_os_find); NULL: of the root's etc/os-release (ID,
 * then ID_LIKE). */
enum gb_repair_family gb_repair_family(struct gb_ctx *ctx, const char *family);

/* The rest of the decision once the module file was looked for: DKMS's
 * source, the headers, the verdict, reason and hint. 0 or -ENOMEM. */
int gb_repair_decide(struct gb_ctx *ctx, struct gb_repair_state *s);
/* The newest kernel under the root's boot/ (strverscmp): the one an image
 * root, or a root without a boot loader configuration, boots. -ENOENT. */
int gb_repair_newest_kernel(struct gb_ctx *ctx, char *ret, size_t n);

/* The kernel update gate after the repair of kver (not running):
 * repaired, lift a hold kept for it; not, hold GRUB's default on the
 * running kernel. Fills res->hold; a negative errno when a step failed. */
int gb_repair_boot_hold(struct gb_ctx *ctx, struct gb_journal *j, bool repaired, struct gb_repair_result *res);
