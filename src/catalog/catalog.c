/* SPDX-License-Identifier: MIT */
#include "catalog.h"

#include <stdlib.h>
#include <string.h>

#include "shared/util.h"

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

const struct gb_branch *gb_catalog_branch(unsigned branch)
{
	for (size_t i = 0; i < gb_branches_len; i++)
		if (gb_branches[i].branch == branch)
			return &gb_branches[i];
	return NULL;
}

const char *gb_branch_type_to_string(enum gb_branch_type t)
{
	switch (t) {
	case GB_BRANCH_LTSB: return "ltsb";
	case GB_BRANCH_PRODUCTION: return "production";
	case GB_BRANCH_NEW_FEATURE: return "new-feature";
	case GB_BRANCH_LEGACY: return "legacy";
	}
	return "unknown";
}

static unsigned branch_of(const char *version)
{
	uint32_t b = 0;
	char buf[16];
	size_t n = strcspn(version, ".");
	if (n == 0 || n >= sizeof(buf))
		return 0;
	memcpy(buf, version, n);
	buf[n] = '\0';
	if (gb_safe_atou32(buf, 10, &b) < 0)
		return 0;
	return b;
}

const struct gb_runfile *gb_catalog_newest_runfile(unsigned branch, const char *arch)
{
	const struct gb_runfile *best = NULL;
	for (size_t i = 0; i < gb_runfiles_len; i++) {
		const struct gb_runfile *r = &gb_runfiles[i];
		if (branch_of(r->version) != branch || strcmp(r->arch, arch) != 0)
			continue;
		if (!best || gb_version_cmp(r->version, best->version) > 0)
			best = r;
	}
	return best;
}

const struct gb_runfile *gb_catalog_runfile(const char *version, const char *arch)
{
	for (size_t i = 0; i < gb_runfiles_len; i++)
		if (strcmp(gb_runfiles[i].version, version) == 0 && strcmp(gb_runfiles[i].arch, arch) == 0)
			return &gb_runfiles[i];
	return NULL;
}

enum gb_arch gb_arch_from_string(const char *s)
{
	for (int a = GB_ARCH_KEPLER; a <= GB_ARCH_BLACKWELL; a++)
		if (s && strcmp(gb_arch_to_string((enum gb_arch)a), s) == 0)
			return (enum gb_arch)a;
	return GB_ARCH_UNKNOWN;
}
