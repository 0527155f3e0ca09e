/* SPDX-License-Identifier: MIT */
/* libFuzzer target: gpuboot.conf and gpus.d overrides. */
#include <stddef.h>
#include <stdint.h>

#include "plan/profile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gb_site_config s;
	struct gb_gpu_overrides o = { 0 };
	char err[512];

	if (gb_site_config_parse("fuzz.conf", (const char *)data, size, &s, err, sizeof(err)) == 0)
		gb_site_config_done(&s);
	(void)gb_gpu_overrides_parse("fuzz.conf", (const char *)data, size, &o, err, sizeof(err));
	gb_gpu_overrides_done(&o);
	return 0;
}
