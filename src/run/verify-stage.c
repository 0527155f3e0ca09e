/* SPDX-License-Identifier: MIT */
/* The verify stage, shared by `gpuboot verify` and `gpuboot run`: the
 * options from the profile and the site, the checks, and what they mean for
 * the ready flags. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "context.h"
#include "exit-codes.h"
#include "run.h"
#include "run/stage.h"
#include "shared/log.h"
#include "shared/test-knob.h"
#include "shared/util.h"
#include "verify-stage.h"

static bool check_passed(const struct gb_verify_result *r, const char *name)
{
	bool seen = false;
	for (size_t i = 0; i < r->n; i++)
		if (streq(r->checks[i].name, name)) {
			if (r->checks[i].state == GB_CHECK_FAIL)
				return false;
			seen = true;
		}
	return seen;
}

static bool check_failed(const struct gb_verify_result *r, const char *name)
{
	for (size_t i = 0; i < r->n; i++)
		if (streq(r->checks[i].name, name) && r->checks[i].state == GB_CHECK_FAIL)
			return true;
	return false;
}

static void verify_opts(struct gb_ctx *ctx, const struct gb_inputs *in, const char *tier, struct gb_verify_opts *o)
{
	(void)ctx;
	memset(o, 0, sizeof(*o));
	o->tier = tier;
	o->min_gpu_memory_gib = in->profile.min_gpu_memory_gib;
	/* The network gate is for nodes built for multi-node work (docs/plan.md):
	 * a single node without high-speed NICs reports its links, ungated. */
	o->min_network_gbps = in->facts.network.mellanox > 0 || in->facts.network.n_ib > 0 || in->facts.network.efa > 0
	                          ? in->profile.min_network_gbps
	                          : 0;
	o->min_disk_write_mbps = in->profile.min_disk_write_mbps;
	o->min_pattern_gib = in->profile.min_pattern_set ? in->profile.min_pattern_gib : 1.0;
	o->fp64_gate = in->profile.fp64_gate;
	o->ecc_required = in->profile.ecc_required;
	o->skip = in->site.skip_checks;
	o->gpus = ctx->opt.gpus;
	o->probe_timeout_ms = streq(tier, "passive") ? 20000 : 120000;
	{
		uint32_t ms;
		if (gb_test_knob_u32("GPUBOOT_PROBE_TIMEOUT_MS", &ms) == 0)
			o->probe_timeout_ms = (int)ms;
		o->disk_path = gb_test_knob("GPUBOOT_DISK_PATH");
	}
}

int gb_verify_stage(struct gb_ctx *ctx, const struct gb_inputs *in, const char *tier,
                    const struct gb_verify_expect *expect, struct gb_stage *stage, struct gb_status *st,
                    struct gb_verify_result *res)
{
	struct gb_verify_opts o;
	int r;

	st->tier = tier;
	if (in->facts.n_gpus == 0) {
		gb_stage_end(ctx, stage, "refused", -ENODEV,
		             "no NVIDIA GPU found (no PCI function of vendor 10de with a display or 3D class)");
		gb_stage_hint(stage, "check the instance type has a GPU attached (lspci -d 10de:)");
		gb_log_error("%s", stage->error);
		return GB_EXIT_NO_GPU;
	}
	verify_opts(ctx, in, tier, &o);
	o.expected_cuda = expect ? expect->cuda : NULL;
	o.expected_driver = expect ? expect->driver : NULL;
	r = gb_verify(ctx, &in->facts, &o, res);
	if (r < 0) {
		gb_stage_end(ctx, stage, "failed", r, "verification could not run: %s", strerror(-r));
		gb_log_error("%s", stage->error);
		return GB_EXIT_FAILED;
	}
	st->verify = res;
	st->driver_ready = check_passed(res, "driver.loaded") && check_passed(res, "driver.userspace") &&
	                   check_passed(res, "driver.version_match") &&
	                   (!o.expected_driver || check_passed(res, "driver.planned_version")) &&
	                   /* a GPU the driver could not bring up, or that fell off the bus */
	                   !check_failed(res, "gpu.count") && !check_failed(res, "driver.xid_critical") &&
	                   /* behind NVSwitches, no CUDA until the fabric is up (error 802) */
	                   !check_failed(res, "fabric.state");
	st->cuda_ready = !streq(tier, "passive") && check_passed(res, "cuda.context");
	st->toolkit_ready =
	    in->facts.nvidia.container_toolkit && (!streq(tier, "full") || check_passed(res, "container.gpu_visible"));
	st->verified = res->failed == 0;
	if (!res->failed) {
		gb_stage_end(ctx, stage, "ok", 0, NULL);
		return GB_EXIT_OK;
	}
	gb_stage_end(ctx, stage, "failed", 0, "%u check(s) failed", res->failed);
	for (size_t i = 0; i < res->n; i++)
		if (res->checks[i].state == GB_CHECK_FAIL) {
			gb_stage_hint(stage, "%.47s (%.47s): %.200s", res->checks[i].name, res->checks[i].subject,
			              res->checks[i].hint);
			break;
		}
	return GB_EXIT_VERIFY;
}
