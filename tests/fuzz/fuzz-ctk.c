/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the container engines' configurations gpuboot reads
 * and rewrites: containerd's config.toml (the drop-in and the imports
 * entry built from it) and docker's daemon.json (merged). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "toolkit/ctk.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gb_ctk_containerd c;
	char err[600], *out = NULL, *text;
	size_t len;

	if (size > GB_CTK_CONFIG_MAX)
		return 0;
	for (int set_default = 0; set_default < 2; set_default++) {
		if (gb_ctk_containerd_build((const char *)data, size, set_default, GB_CTK_RUNTIME_PATH, set_default, &c,
		                            err, sizeof(err)) == 0)
			gb_ctk_containerd_done(&c);
		if (gb_ctk_docker_merge((const char *)data, size, GB_CTK_RUNTIME_PATH, set_default, &out, &len, err,
		                        sizeof(err)) == 0)
			free(out);
		out = NULL;
	}
	text = malloc(size + 1);
	if (text) {
		memcpy(text, data, size);
		text[size] = '\0';
		(void)gb_ctk_containerd_major(text);
		free(text);
	}
	return 0;
}
