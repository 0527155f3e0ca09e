/* SPDX-License-Identifier: MIT */
/* Peaks derived from what the device says about itself: memory clock and
 * bus width, SM count, clock and the FP units per SM of its compute
 * capability (NVIDIA's CUDA C Programming Guide, "Arithmetic Instructions"),
 * PCIe generation and width. No per-model tables. */
#include "verify.h"

unsigned gb_fp32_lanes_per_sm(int major, int minor)
{
	switch (major) {
	case 3: return 192;
	case 5: return 128;
	case 6: return minor == 0 ? 64 : 128;
	case 7: return 64;
	case 8: return minor == 0 ? 64 : 128;
	default: return major >= 9 ? 128 : 0;
	}
}

unsigned gb_fp64_lanes_per_sm(int major, int minor)
{
	switch (major) {
	case 3: return minor >= 5 ? 64 : 8;
	case 5: return 4;
	case 6: return minor == 0 ? 32 : 4;
	case 7: return minor == 0 ? 32 : 2;
	case 8: return minor == 0 ? 32 : 2;
	case 9: return 64;
	case 10: return 64;
	default: return major > 10 ? 2 : 0;
	}
}

double gb_peak_memory_gbps(unsigned mem_max_mhz, unsigned bus_width_bits)
{
	/* Double data rate: two transfers per memory clock, bus width in bits. */
	return (double)mem_max_mhz * 1e6 * 2.0 * (double)bus_width_bits / 8.0 / 1e9;
}

double gb_peak_flops_tflops(unsigned sms, unsigned lanes, unsigned sm_max_mhz)
{
	/* One FMA (2 FLOP) per lane per clock. */
	return (double)sms * lanes * 2.0 * (double)sm_max_mhz * 1e6 / 1e12;
}

double gb_peak_pcie_gbps(int gen, int width)
{
	static const double gt[] = { 0, 2.5, 5.0, 8.0, 16.0, 32.0, 64.0 };
	double enc;
	if (gen < 1 || gen > 6 || width < 1)
		return 0;
	/* 8b/10b up to Gen2, 128b/130b from Gen3 (Gen6's FLIT mode is close to 1). */
	enc = gen <= 2 ? 0.8 : gen == 6 ? 242.0 / 256.0 : 128.0 / 130.0;
	return gt[gen] * width * enc / 8.0;
}
