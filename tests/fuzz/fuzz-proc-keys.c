/* SPDX-License-Identifier: MIT */
/* libFuzzer target: /proc/keys as detect reads it (gb_proc_keys_parse):
 * the kernel's asymmetric keys, which the plan matches a site signing
 * certificate against. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "detect/detect.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gb_kernel_key *k = NULL;
	size_t n = 0;

	if (gb_proc_keys_parse((const char *)data, size, &k, &n) == 0) {
		/* every key has a name and an even, lowercase hex id */
		for (size_t i = 0; i < n; i++)
			if (!k[i].name || !k[i].key_id || strlen(k[i].key_id) % 2)
				__builtin_trap();
		gb_kernel_keys_free(k, n);
	}
	return 0;
}
