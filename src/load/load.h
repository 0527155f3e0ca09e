/* SPDX-License-Identifier: MIT */
/* The load stage: insert the NVIDIA modules in order through the
 * operations table (libkmod: dependencies, modprobe.d options and install
 * rules apply), each insert journaled before and after, stopping at the
 * first failure (the later modules need nvidia), which is classified from
 * its errno and the kernel lines it produced. The plan's module
 * parameters are also written to etc/modprobe.d/gpuboot-nvidia.conf, so
 * later boots load the same way. A module already live is no effect. */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include "load/classify.h"
#include "load/kmsg.h"

struct gb_ctx;
struct gb_journal;

#define GB_LOAD_MAX_MODULES 8
#define GB_LOAD_PARAMS_MAX 256
#define GB_LOAD_CONF_PATH "etc/modprobe.d/gpuboot-nvidia.conf"
/* The modules no device binds at boot that the plan still needs there
 * (ib_umad for NVLSM): systemd-modules-load reads it. */
#define GB_LOAD_AT_BOOT_PATH "etc/modules-load.d/gpuboot.conf"

struct gb_load_module {
	const char *name; /* "nvidia", "nvidia_uvm", ... */
	const char *params; /* "NVreg_EnableGpuFirmware=0 NVreg_...=1", or NULL */
	bool at_boot; /* listed in GB_LOAD_AT_BOOT_PATH */
};

struct gb_load_input {
	struct gb_load_module modules[GB_LOAD_MAX_MODULES]; /* in load order */
	size_t n_modules;
};

/* The plan's order: nvidia, nvidia_uvm, nvidia_modeset, then nvidia_drm
 * when wanted and nvidia_peermem only with Mellanox/InfiniBand. No
 * parameters; set them with gb_load_input_set_params. */
void gb_load_input_init(struct gb_load_input *in, bool want_drm, bool want_peermem);
/* A module of the kernel's own after the NVIDIA ones, loaded now and at
 * every boot (GB_LOAD_AT_BOOT_PATH): ib_umad for NVLSM. -E2BIG when full,
 * -EINVAL for a name that is not a module's. */
int gb_load_input_add_at_boot(struct gb_load_input *in, const char *name);
/* Set a module's parameters (borrowed). -ENOENT when it is not in the input. */
int gb_load_input_set_params(struct gb_load_input *in, const char *module, const char *params);

enum gb_load_state {
	GB_LOAD_NOT_TRIED = 0, /* after a failure: not attempted */
	GB_LOAD_ALREADY, /* live before we came: nothing done */
	GB_LOAD_LOADED, /* inserted by this run */
	GB_LOAD_FAILED,
};

struct gb_load_module_result {
	char name[64];
	enum gb_load_state state;
	int err; /* what the insert returned (negative errno), 0 otherwise */
};

struct gb_load_result {
	struct gb_load_module_result modules[GB_LOAD_MAX_MODULES];
	size_t n_modules;
	unsigned n_loaded; /* inserts this run made */
	bool conf_changed; /* the modprobe.d file was written (not merely unchanged) */
	/* the failure, when there was one */
	const char *failed_module; /* points into modules[]; NULL when all loaded */
	int err; /* the insert's errno (an install rule's outer EINVAL included) */
	struct gb_load_class cause; /* cause.err: what the kernel's lines say the inner insert got */
	char hint[320]; /* cause.info->hint, with what more we know (the loaded version) */
	struct gb_kmsg_lines kernel; /* the kernel's lines from the failed insert */
	int kmsg_err; /* why no kernel line could be read, or 0 */
	int exit_code; /* the suggestion: 0, 11 no GPU, 12 unsupported GPU, 14 */
};

const char *gb_load_state_name(enum gb_load_state s);

/* Load in->modules in order. Returns 0 when every module is live, the
 * insert's negative errno when one failed (ret says which, why, and the
 * exit code to use), or another negative errno when the journal or the
 * modprobe.d file could not be written (nothing was inserted after it).
 * ret is always filled. */
int gb_load(struct gb_ctx *ctx, const struct gb_load_input *in, struct gb_journal *j, struct gb_load_result *ret);

/* The modprobe.d text for in ("options nvidia NVreg_...": modules with
 * parameters only). -EINVAL for a module name or parameter that could
 * break the file (a newline, a comment character, a control byte). */
int gb_load_conf_text(const struct gb_load_input *in, char *buf, size_t bufsz, size_t *ret_len);

/* The result for the status document: modules and states, cause id,
 * summary, hint, errno names, kernel lines, exit code. New object. */
json_object *gb_load_result_to_json(const struct gb_load_result *r);
