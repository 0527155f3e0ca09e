/* SPDX-License-Identifier: MIT */
/* Shared by the fake libnvidia-ml.so.1 and libcuda.so.1 that the tests point
 * gpuboot-probe at (LD_LIBRARY_PATH): a scripted machine of H100 SXM GPUs.
 *
 * FAKE_NV_SCENARIO: healthy | slow-gpu | ecc | remap-pending | gen3x8 |
 *   mismatch | hang | crash | bad-memory | busy | fabric | no-jit
 * FAKE_NV_GPUS: how many GPUs (default 8)
 * FAKE_NV_DRIVER: the userspace version NVML reports (default 535.183.01) */
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
