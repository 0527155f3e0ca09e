/* SPDX-License-Identifier: MIT */
/* verify: is the GPU alive, healthy and as fast as it should be? Passive
 * checks (NVML state), active checks (CUDA kernels, bandwidth, FLOPS)
 * through gpuboot-probe, integration checks (containers, disk, network).
 * Thresholds are derived at run time from the device itself. */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include "detect/detect.h"

struct gb_ctx;
struct gb_plan;

enum gb_check_state {
	GB_CHECK_PASS,
	GB_CHECK_FAIL,
	GB_CHECK_SKIP,
	GB_CHECK_INFO,
};

struct gb_check {
	char name[48]; /* "memory.read_bandwidth" */
	char subject[48]; /* "gpu0 00000000:1b:00.0", or "system" */
	bool has_value, has_threshold;
	double value, threshold;
	char text[160]; /* the value as text, where it is not a number */
	char op[4]; /* ">=", "==", "<=" */
	char unit[16]; /* "GB/s" */
	char source[200]; /* where the threshold came from */
	enum gb_check_state state;
	char hint[320]; /* one line: what is wrong and the fix */
};

struct gb_verify_opts {
	const char *tier; /* "passive" | "active" | "full" */
	double min_gpu_memory_gib, min_network_gbps, min_disk_write_mbps;
	double min_pattern_gib; /* the memory pattern test must cover at least this much of each GPU; 0: no floor */
	bool fp64_gate, ecc_required;
	char *const *skip; /* check names (or prefixes) to skip, NULL-terminated */
	int probe_timeout_ms;
	const char *disk_path; /* where to measure write bandwidth; NULL: the largest local filesystem */
	const char *expected_cuda; /* the plan's CUDA release ("13.0.0"), NULL when it installs none */
	const char *expected_driver; /* the plan's driver version ("580.159.04"), NULL: any (gpuboot verify) */
	const char *gpus; /* --gpus "0,2": the active tier on those NVML indices only; NULL: GPUBOOT_GPUS, else all */
};

struct gb_verify_result {
	struct gb_check *checks;
	size_t n, cap;
	double wall_ms, probe_ms;
	unsigned failed; /* failed checks, dropped ones included */
	unsigned dropped; /* checks lost to an allocation failure: each counts as failed, and
	                   * gb_verify returns -ENOMEM (a lost check may have been a failure) */
	json_object *probe; /* the probe's document, owned */
};

/* Run the checks of o->tier. 0 with ret filled (ret->failed says whether the
 * machine passed), or -ENOMEM when a check was lost (ret->dropped). */
int gb_verify(struct gb_ctx *ctx, const struct gb_facts *f, const struct gb_verify_opts *o,
              struct gb_verify_result *ret);
void gb_verify_result_done(struct gb_verify_result *r);
/* Append a check (state info, no value) and return it. NULL when it cannot
 * be stored: then it is counted in r->dropped and r->failed, so a lost
 * check can never read as a pass. */
struct gb_check *gb_verify_add(struct gb_verify_result *r, const char *name, const char *subject);
json_object *gb_checks_to_json(const struct gb_verify_result *r);
void gb_verify_print(const struct gb_verify_result *r, FILE *out);
const char *gb_check_state_to_string(enum gb_check_state s);

/* Thresholds derived from the device (thresholds.c). */
unsigned gb_fp32_lanes_per_sm(int cc_major, int cc_minor);
unsigned gb_fp64_lanes_per_sm(int cc_major, int cc_minor);
double gb_peak_memory_gbps(unsigned mem_max_mhz, unsigned bus_width_bits);
double gb_peak_flops_tflops(unsigned sms, unsigned lanes, unsigned sm_max_mhz);
double gb_peak_pcie_gbps(int gen, int width);
double gb_nvlink_link_gbps(int cc_major, int cc_minor, unsigned nvml_version, const char **ret_gen);

/* Efficiency factors: the share of the derived peak a healthy GPU reaches,
 * with margin (docs/verification.md gives the measurements behind them). */
#define GB_EFF_READ 0.80
#define GB_EFF_COPY 0.70
#define GB_EFF_FP32 0.80
#define GB_EFF_FP64 0.80
#define GB_EFF_PCIE 0.70
#define GB_MIN_UTILIZATION 70.0
#define GB_FP64_GATE_RATIO 0.25
/* Peer copies: the share of the NVLink bandwidth to a peer (active links x
 * per-link rate of the generation, one direction) a healthy pair reaches,
 * and the floor for a PCIe path (a share of the narrower link's peak). */
#define GB_EFF_NVLINK 0.70
#define GB_EFF_PEER_PCIE 0.25

/* Run the embedded probe (probe-run.c): from a memfd (or a 0700 temporary
 * directory where memfd is missing or noexec), in a child, under a timeout.
 * On success *ret is the parsed JSON. On failure a negative errno and a
 * one-line reason in err: hung (-ETIMEDOUT), crashed (-ECHILD, with the
 * signal), no glibc loader (-ENOENT), unparsable output (-EBADMSG). */
int gb_probe_run(struct gb_ctx *ctx, char *const args[], int timeout_ms, json_object **ret, int *ret_exit, char *err,
                 size_t errsz);
/* The probe runs with a cleaned environment: every CUDA_* variable
 * (CUDA_VISIBLE_DEVICES, CUDA_DEVICE_ORDER, CUDA_MPS_*, ...) and LD_PRELOAD
 * are removed, so the verdict is the machine's and not the caller's. This
 * lists those set here ("NAME=value, ...", each cut at 60 bytes) into buf
 * and returns how many there are. */
size_t gb_probe_env_cleaned(char *buf, size_t n);
