/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the sysfs-attribute parser and what reads its result
 * (numbers, link speeds, kernel releases, the NVRM banner). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "detect/detect.h"
#include "shared/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *v = NULL, *ver = NULL, *fl;
	const char *flavor;
	uint64_t n;
	int32_t i;

	if (gb_sysfs_attr_parse((const char *)data, size, &v) < 0)
		return 0;
	(void)gb_safe_atou64(v, 16, &n);
	(void)gb_safe_atou64(v, 10, &n);
	(void)gb_safe_atoi32(v, &i);
	(void)gb_pci_speed_to_gen(v);
	(void)gb_version_valid(v);
	(void)gb_version_cmp(v, "580.65.06");
	if (gb_kernel_flavour(v, &fl) == 0)
		free(fl);
	if (gb_nvrm_version_parse(v, &ver, &flavor) == 0)
		free(ver);
	free(v);
	return 0;
}
