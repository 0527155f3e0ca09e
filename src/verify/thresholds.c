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

/* One NVLink link's bandwidth, one direction, GB/s, by the GPU's NVLink
 * generation: NVLink1 (Pascal, cc 6.0) 20 GB/s; NVLink2 (Volta), NVLink3
 * (A100) and NVLink4 (Hopper) 25 GB/s (H100/H200: 18 links, 900 GB/s both
 * directions together); NVLink5 (Blackwell) 50 GB/s. The compute capability
 * decides, as NVML's version is not reliable on Hopper (some drivers report
 * NVLink 5.0 there); NVML's nvmlNvlinkVersion_t value (6 = 4.0, 7 = 5.0)
 * only where the architecture is unknown. 0 when neither says. */
double gb_nvlink_link_gbps(int cc_major, int cc_minor, unsigned nvml_version, const char **ret_gen)
{
	static const char *const gen[] = { "NVLink1", "NVLink2", "NVLink3", "NVLink4", "NVLink5" };
	int g = -1;

	if (cc_major == 6 && cc_minor == 0)
		g = 0;
	else if (cc_major == 7)
		g = 1;
	else if (cc_major == 8 && cc_minor == 0)
		g = 2;
	else if (cc_major == 9)
		g = 3;
	else if (cc_major >= 10)
		g = 4;
	else if (nvml_version >= 1 && nvml_version <= 7)
		g = nvml_version == 1 ? 0 : nvml_version <= 3 ? 1 : nvml_version <= 5 ? 2 : nvml_version == 6 ? 3 : 4;
	if (g < 0)
		return 0;
	if (ret_gen)
		*ret_gen = gen[g];
	return g == 0 ? 20.0 : g == 4 ? 50.0 : 25.0;
}
