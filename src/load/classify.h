/* SPDX-License-Identifier: MIT */
/* Why a module insert failed: from the errno and the kernel log lines the
 * insert produced, a named cause (a stable id for the status document), a
 * one-line summary, a one-line hint and the exit code it suggests. The
 * kernel's lines win over the errno: behind an install rule (Debian's
 * `install nvidia modprobe -i nvidia-current-open`) libkmod reports EINVAL
 * for the outer module while the inner insert got EKEYREJECTED, and only
 * the kernel's line says which. A failure no rule knows is "unknown" with
 * the errno's name and the kernel's first line, never a bare "modprobe
 * failed". The lines and the kernel source each rule comes from are in
 * docs/load.md. */
#pragma once

#include <stddef.h>

enum gb_load_cause {
	GB_CAUSE_NONE = 0,
	GB_CAUSE_SECURE_BOOT_UNSIGNED,
	GB_CAUSE_SECURE_BOOT_UNTRUSTED_KEY,
	GB_CAUSE_SECURE_BOOT_REJECTED, /* EKEYREJECTED and no line that says more */
	GB_CAUSE_SECURE_BOOT_LOCKDOWN,
	GB_CAUSE_GPU_NEEDS_PROPRIETARY,
	GB_CAUSE_GPU_UNSUPPORTED,
	GB_CAUSE_NO_GPU,
	GB_CAUSE_FIRMWARE,
	GB_CAUSE_KERNEL_TOO_NEW,
	GB_CAUSE_KERNEL_MISMATCH,
	GB_CAUSE_MODULE_MISSING,
	GB_CAUSE_OTHER_VERSION_LOADED,
	GB_CAUSE_UNKNOWN,
	_GB_CAUSE_MAX,
};

/* One row of the cause table: what the status document shows. */
struct gb_load_cause_info {
	enum gb_load_cause cause;
	const char *id; /* stable: "secure-boot-unsigned" */
	const char *summary; /* the status's cause: "no NVIDIA GPU the driver can drive" */
	const char *hint; /* the fix, one line */
	int exit_code; /* 11 no GPU, 12 GPU unsupported by this branch or flavour, else 14 */
};

#define GB_LOAD_DETAIL_MAX 320

struct gb_load_class {
	const struct gb_load_cause_info *info; /* never NULL after gb_load_classify */
	/* The negative errno the cause stands for: the inner insert's where a
	 * kernel line says what it was (EKEYREJECTED behind an outer EINVAL),
	 * else the errno the insert returned. */
	int err;
	/* The kernel line that decided; for "unknown", the errno's name and
	 * the kernel's first line. */
	char detail[GB_LOAD_DETAIL_MAX];
};

/* The table row of a cause (the UNKNOWN row for anything out of range). */
const struct gb_load_cause_info *gb_load_cause_info(enum gb_load_cause cause);
/* Look a cause up by its id; NULL when there is none. */
const struct gb_load_cause_info *gb_load_cause_by_id(const char *id);

/* Classify a failed insert: err is the negative errno the insert returned,
 * lines the kernel lines it produced (in order; may be 0). Pure. */
void gb_load_classify(int err, const char *const *lines, size_t n_lines, struct gb_load_class *ret);

/* "EKEYREJECTED" for -EKEYREJECTED (or EKEYREJECTED); "E<number>" text in
 * buf for an errno the table does not name. */
const char *gb_load_errno_name(int err, char *buf, size_t bufsz);
