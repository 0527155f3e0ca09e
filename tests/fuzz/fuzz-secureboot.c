/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the Secure Boot facts read as text: the kernel's
 * lockdown mode (sys/kernel/security/lockdown, through the sysfs-attribute
 * reader as detect reads it). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "detect/detect.h"
#include "shared/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *attr = NULL, *mode = NULL;

	if (gb_sysfs_attr_parse((const char *)data, size, &attr) < 0)
		return 0;
	if (gb_lockdown_parse(attr, &mode) == 0)
		free(mode);
	free(attr);
	return 0;
}
