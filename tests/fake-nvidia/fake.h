/* SPDX-License-Identifier: MIT */
/* Shared by the fake libnvidia-ml.so.1 and libcuda.so.1 that the tests point
 * gpuboot-probe at (LD_LIBRARY_PATH): a scripted machine of H100 SXM GPUs.
 *
 * FAKE_NV_SCENARIO: healthy | slow-gpu | ecc | remap-pending | gen3x8 |
 *   mismatch | hang | crash | bad-memory | busy | fabric | no-jit |
 *   busy-late (another process starts on GPU 0 during the measurements) |
 *   memory-held (a process holds 10 GiB of GPU 0 and computes nothing) |
 *   memory-full (one holds all but 128 MiB of GPU 0: the pattern test covers 32 MiB) |
 *   gsp-fail (the GPU's firmware does not boot when NVML opens it: NVRM's
 *   lines appended to FAKE_NV_KMSG, no GPU counted) | xid79 (the GPU falls off
 *   the bus while the probe runs: XID 79 appended to FAKE_NV_KMSG) |
 *   bridged (GPUs joined in pairs 0-1, 2-3, 4-5, 6-7 by 18 NVLink4 links each,
 *   PCIe between the pairs) | bridged-degraded (links 12-17 of the 2-3 pair down)
 * By default the GPUs have 18 NVLink4 links each to NVSwitches.
 * CUDA_VISIBLE_DEVICES: honoured by the fake libcuda, as by the real one.
 * FAKE_NV_LAUNCH_MS, FAKE_NV_TRACE: every kernel launch sleeps that long in
 *   real time and appends "gpu start_ms end_ms" to the trace file, so a test
 *   can see which GPUs ran at once.
 * FAKE_NV_GPUS: how many GPUs (default 8)
 * FAKE_NV_DRIVER: the userspace version NVML reports (default: the version in
 *   the name of the file the library was loaded from, libnvidia-ml.so.<version>,
 *   as installed; else 535.183.01) */
#pragma once

#include <stdlib.h>
#include <string.h>

static inline const char *fake_scenario(void)
{
	const char *s = getenv("FAKE_NV_SCENARIO");
	return s ? s : "healthy";
}

static inline int fake_is(const char *s)
{
	return strcmp(fake_scenario(), s) == 0;
}

static inline unsigned fake_gpus(void)
{
	const char *s = getenv("FAKE_NV_GPUS");
	unsigned n = s ? (unsigned)strtoul(s, NULL, 10) : 8;
	return n > 8 ? 8 : n;
}

/* The bytes another process holds on GPU 0 without computing, 0: none. */
static inline unsigned long long fake_memory_held(void)
{
	return fake_is("memory-held") ? 10ull << 30 : fake_is("memory-full") ? 85520809984ull - (128ull << 20) : 0;
}

/* The PCI buses of the 8-GPU fixture (tests/fixtures/h100x8-ubuntu2204). */
static const unsigned fake_bus[8] = { 0x1b, 0x43, 0x52, 0x61, 0x9d, 0xc3, 0xd1, 0xdf };

/* H100 SXM5: what the device says about itself. */
#define FAKE_SMS 132
#define FAKE_SM_MHZ 1980
#define FAKE_MEM_MHZ 2619
#define FAKE_BUS_WIDTH 5120

/* The share of the derived peak GPU i reaches in this scenario. */
static inline double fake_speed(unsigned i)
{
	if (fake_is("slow-gpu") && i == 3)
		return 0.40;
	if (fake_is("busy") && i == 0)
		return 0.45;
	return 1.0;
}

static inline int fake_link_gen(unsigned i)
{
	return fake_is("gen3x8") && i == 0 ? 3 : 5;
}

static inline int fake_link_width(unsigned i)
{
	return fake_is("gen3x8") && i == 0 ? 8 : 16;
}

/* NVLink: how many links GPU i has to its partner that are up (bridged
 * scenarios), or to the NVSwitches (the default). */
static inline int fake_bridged(void)
{
	return fake_is("bridged") || fake_is("bridged-degraded");
}

static inline int fake_link_up(unsigned i, unsigned link)
{
	return !(fake_is("bridged-degraded") && (i == 2 || i == 3) && link >= 12);
}

/* Links up between GPUs a and b: 0 where only PCIe joins them. */
static inline unsigned fake_nvlinks_between(unsigned a, unsigned b)
{
	unsigned n = 0;
	if (fake_bridged() && (a ^ 1u) != b)
		return 0;
	for (unsigned l = 0; l < 18; l++)
		n += fake_link_up(a, l) && fake_link_up(b, l);
	return n;
}
