/* SPDX-License-Identifier: MIT */
/* libFuzzer target: NVIDIA's redistrib manifests (plain and variant forms). */
#include <stddef.h>
#include <stdint.h>

#include "fetch/manifest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gb_manifest m;
	char err[256];
	if (gb_redistrib_parse((const char *)data, size, "linux-x86_64", "cuda12", &m, err, sizeof(err)) == 0)
		gb_manifest_done(&m);
	return 0;
}
