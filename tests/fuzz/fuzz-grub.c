/* SPDX-License-Identifier: MIT */
/* libFuzzer target: grub.cfg and the GRUB environment block (grubenv), as
 * the prepare stage reads them to find the kernel that boots next. */
#include <stddef.h>
#include <stdint.h>

#include "prepare/bootloader.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *t = (const char *)data;
	char next[GB_KVER_MAX] = "", saved[GB_KVER_MAX] = "", def[GB_KVER_MAX], kver[GB_KVER_MAX];

	/* the same bytes as an environment block ... */
	if (gb_grubenv_get(t, size, "next_entry", next, sizeof(next)) < 0)
		next[0] = '\0';
	if (gb_grubenv_get(t, size, "saved_entry", saved, sizeof(saved)) < 0)
		saved[0] = '\0';
	/* ... and as grub.cfg, with and without the environment's entries */
	(void)gb_grubcfg_uses_bls(t, size);
	if (gb_grubcfg_default(t, size, next[0] ? next : NULL, saved[0] ? saved : NULL, def, sizeof(def)) == 0)
		(void)gb_grubcfg_kernel(t, size, def, kver, sizeof(kver));
	if (gb_grubcfg_default(t, size, NULL, "1>2", def, sizeof(def)) == 0)
		(void)gb_grubcfg_kernel(t, size, def, kver, sizeof(kver));
	(void)gb_grubcfg_kernel(t, size, "Advanced options for Ubuntu>Ubuntu, with Linux 6.8.0-1015-aws", kver,
	                        sizeof(kver));
	(void)gb_grubcfg_kernel(t, size, "", kver, sizeof(kver));
	return 0;
}
