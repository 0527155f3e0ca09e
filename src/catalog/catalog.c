/* SPDX-License-Identifier: MIT */
#include "catalog.h"

#include <stdlib.h>

static int cmp_dev(const void *key, const void *elem)
{
	uint16_t k = *(const uint16_t *)key;
	const struct gb_pci_name *e = elem;
	return k < e->device ? -1 : k > e->device ? 1 : 0;
}

const struct gb_pci_name *gb_catalog_pci_lookup(uint16_t device)
{
	return bsearch(&device, gb_pci_names, gb_pci_names_len, sizeof(gb_pci_names[0]), cmp_dev);
}

const char *gb_arch_to_string(enum gb_arch arch)
{
	static const char *const names[] = {
		[GB_ARCH_UNKNOWN] = NULL,          [GB_ARCH_KEPLER] = "kepler", [GB_ARCH_MAXWELL] = "maxwell",
		[GB_ARCH_PASCAL] = "pascal",       [GB_ARCH_VOLTA] = "volta",   [GB_ARCH_TURING] = "turing",
		[GB_ARCH_AMPERE] = "ampere",       [GB_ARCH_ADA] = "ada",       [GB_ARCH_HOPPER] = "hopper",
		[GB_ARCH_BLACKWELL] = "blackwell",
	};
	if ((size_t)arch >= sizeof(names) / sizeof(names[0]))
		return NULL;
	return names[arch];
}
