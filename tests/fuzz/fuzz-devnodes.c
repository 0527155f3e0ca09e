/* SPDX-License-Identifier: MIT */
/* libFuzzer target: proc/devices (the majors) and
 * proc/driver/nvidia/gpus/ * /information (the device minor). */
#include <stddef.h>
#include <stdint.h>

#include "load/devnodes.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint32_t v;

	(void)gb_proc_devices_major((const char *)data, size, "nvidia-frontend", &v);
	(void)gb_proc_devices_major((const char *)data, size, "nvidia-uvm", &v);
	(void)gb_nvidia_gpu_minor((const char *)data, size, &v);
	return 0;
}
