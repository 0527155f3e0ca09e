/* SPDX-License-Identifier: MIT */
#include "catalog.h"

#include <stdlib.h>
#include <string.h>

#include "shared/macro.h"
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
	size_t n;
	const struct gb_branch *v = gb_catalog_branches(&n);
	for (size_t i = 0; i < n; i++)
		if (v[i].branch == branch)
			return &v[i];
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
	size_t n;
	const struct gb_runfile *v = gb_catalog_runfiles(&n);
	for (size_t i = 0; i < n; i++) {
		const struct gb_runfile *r = &v[i];
		if (branch_of(r->version) != branch || strcmp(r->arch, arch) != 0)
			continue;
		if (!best || gb_version_cmp(r->version, best->version) > 0)
			best = r;
	}
	return best;
}

const struct gb_runfile *gb_catalog_runfile(const char *version, const char *arch)
{
	size_t n;
	const struct gb_runfile *v = gb_catalog_runfiles(&n);
	for (size_t i = 0; i < n; i++)
		if (strcmp(v[i].version, version) == 0 && strcmp(v[i].arch, arch) == 0)
			return &v[i];
	return NULL;
}

enum gb_arch gb_arch_from_string(const char *s)
{
	for (int a = GB_ARCH_KEPLER; a <= GB_ARCH_BLACKWELL; a++)
		if (s && strcmp(gb_arch_to_string((enum gb_arch)a), s) == 0)
			return (enum gb_arch)a;
	return GB_ARCH_UNKNOWN;
}

/* NVIDIA's repository keys. The CUDA pins are NVIDIA's own (the dnf and gpg
 * transcripts in github.com/NVIDIA/cuda-repo-management SIGNATURES.md); the
 * toolkit's is the key its repository has served since 2017 (NVIDIA/
 * libnvidia-container issue 173). tests/unit/test-pgpkey.c proves each pin
 * against a copy of the key file where one is vendored (tests/data/
 * nvidia-keys/README.md). NVIDIA signs debian13 and fedora43 with newer
 * keys (8793F200, 1940C73E): not pinned here. */
const struct gb_repo_key gb_repo_keys[] = {
	{ "cuda-deb", "EB69 3B30 35CD 5710 E231 E123 A4B4 6996 3BF8 63CC", "3bf863cc.pub" },
	{ "cuda-rpm", "610C 7B14 E068 A878 070D A4E9 9CD0 A493 D42D 0685", "D42D0685.pub" },
	{ "container-toolkit", "C95B 321B 61E8 8C18 09C4 F759 DDCA E044 F796 ECB0", "gpgkey" },
#ifdef GB_TEST_HOOKS
	/* the tests' own key (tests/data/test-repo-key/), which signs a local apt repository */
	{ "test-repo", "BE80 C214 1607 512A E17A CDF4 0A0F 6E3F 5B9A 16D4", "public.asc" },
#endif
};
const size_t gb_repo_keys_len = ARRAY_SIZE(gb_repo_keys);

const char *const gb_ctk_packages[4] = { "nvidia-container-toolkit", "nvidia-container-toolkit-base",
	                                 "libnvidia-container-tools", "libnvidia-container1" };

const struct gb_repo_key *gb_repo_key_find(const char *name)
{
	for (size_t i = 0; name && i < gb_repo_keys_len; i++)
		if (strcmp(gb_repo_keys[i].name, name) == 0)
			return &gb_repo_keys[i];
	return NULL;
}
