/* SPDX-License-Identifier: MIT */
/* libFuzzer target: modprobe.d text (does it stop nouveau or nvidia from
 * loading?), as read from the root and from inside an initramfs. */
#include <stddef.h>
#include <stdint.h>

#include "prepare/initramfs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	(void)gb_modprobe_blacklists((const char *)data, size, "nouveau");
	(void)gb_modprobe_blacklists((const char *)data, size, "nvidia_drm");
	(void)gb_modprobe_blacklists((const char *)data, size, "nvidia-uvm");
	return 0;
}
