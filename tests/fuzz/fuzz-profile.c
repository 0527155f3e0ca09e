/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the profile parser (and the shared syntax under it). */
#include <stddef.h>
#include <stdint.h>

#include "plan/profile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gb_profile p;
	char err[512];

	if (gb_profile_parse("fuzz", "fuzz.profile", (const char *)data, size, &p, err, sizeof(err)) == 0)
		gb_profile_done(&p);
	return 0;
}
