/* SPDX-License-Identifier: MIT */
/* libFuzzer target: Boot Loader Specification entries
 * (boot/loader/entries/ *.conf), parsed, sorted and picked as blscfg does. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "effect/pkg.h"
#include "prepare/bootloader.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char fixed[] = "title Fixed\nversion 6.8.0-1\nlinux /vmlinuz-6.8.0-1\n";
	static struct gb_bls_entry e[4];
	const char *t = (const char *)data;
	const uint8_t *cut = memchr(data, '\f', size);
	size_t n = 0;

	/* One entry, or two when the input holds a form feed (the second
	 * file's content after it), beside two fixed entries to sort against. */
	if (gb_bls_parse("fuzz-a", t, cut ? (size_t)(cut - data) : size, &e[n]) == 0)
		n++;
	if (cut && gb_bls_parse("fuzz-b", (const char *)cut + 1, size - (size_t)(cut - data) - 1, &e[n]) == 0)
		n++;
	if (gb_bls_parse("fixed", fixed, sizeof(fixed) - 1, &e[n]) == 0)
		n++;
	(void)gb_kver_valid(e[0].version);
	(void)gb_rpmvercmp(e[0].version, "5.14.0-427.el9.x86_64");
	gb_bls_sort(e, n);
	(void)gb_bls_pick(e, n, "fuzz-a");
	(void)gb_bls_pick(e, n, "1");
	(void)gb_bls_pick(e, n, e[0].title);
	return 0;
}
