/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the os-release parser. */
#include <stddef.h>
#include <stdint.h>

#include "detect/detect.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gb_kv *kv = NULL;
	size_t n = 0;
	unsigned bad = 0;

	if (gb_osrelease_parse((const char *)data, size, &kv, &n, &bad) == 0) {
		(void)gb_kv_get(kv, n, "ID");
		gb_kv_free(kv, n);
	}
	return 0;
}
