/* SPDX-License-Identifier: MIT */
/* The context every stage works on: the root, the options, the operations
 * table. Created by main, passed down, never global. */
#pragma once

#include <stdbool.h>

#include "shared/ops.h"
#include "shared/root.h"

#include <stddef.h>
#include <stdint.h>

#define GB_MAX_TRUST_KEYS 8

#define GB_MAX_KERNEL_OPTS 16

struct gb_options {
	const char *root; /* --root, default "/" */
	const char *profile; /* --profile NAME|FILE */
	const char *mirror; /* --mirror URL */
	const char *config; /* --config FILE */
	const char *state_dir; /* --state-dir */
	const char *ca_file; /* --ca-file */
	const char *target_gpu; /* --target-gpu */
	const char *target_os; /* --target-os */
	const char *capture; /* detect --capture DIR */
	const char *tier; /* verify --tier */
	const char *run_dir; /* --run-dir: the ready flags */
	const char *upstream, *sign_key;
	const char *gpus; /* --gpus LIST: verify those NVML indices only */
	const char *kernel; /* --repair --kernel KVER */
	const char *kernels[GB_MAX_KERNEL_OPTS]; /* modules build: every --kernel */
	size_t n_kernels;
	const char *out, *module_key, *module_cert; /* modules build --out, --module-key, --module-cert */
	bool if_needed, from_hook, nodes; /* --repair --if-needed, --from-hook, --nodes */
	bool check_next_boot; /* --repair --check-next-boot */
	const char *method; /* --method packages|distro|runfile, or NULL: the plan's choice */
	const char *catalog; /* --catalog FILE: a signed catalog update (FILE.sig beside it) */
	bool catalog_keep; /* run, repair, fetch: the state directory is their own; keep an accepted catalog there */
	const char *trust_keys[GB_MAX_TRUST_KEYS];
	size_t n_trust_keys;
	uint64_t mirror_version;
	unsigned parallel;
	bool dry_run, json, offline, no_verify, repair, prometheus, show_version, config_given;
	bool force; /* --force: abandon an unfinished run of another plan */
	bool resume; /* --resume: started by the resume unit after a reboot */
	bool reboot; /* --reboot: ask systemd to reboot when one is needed */
	bool state_dir_given, run_dir_given;
	int verbose;
};

struct gb_ctx {
	struct gb_root *root;
	const struct gb_ops *ops;
	struct gb_options opt;
};

/* The libc of the root's dynamic loader ("glibc" | "musl" | NULL). */
const char *gb_detect_loader(struct gb_ctx *ctx, const char **ret_path);
