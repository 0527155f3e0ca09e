/* SPDX-License-Identifier: MIT */
/* libFuzzer target: OpenPGP public keys, armored or binary
 * (gb_pgp_key_read), and fingerprint comparison. A key that reads must
 * read the same again from its own binary form. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fetch/pgpkey.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gb_pgp_key k, again;
	char err[256], *s;

	if (gb_pgp_key_read(data, size, &k, err, sizeof(err)) == 0) {
		if (strlen(k.fpr) != 40 || !gb_pgp_fpr_equal(k.fpr, k.fpr) || strcmp(k.key_id, k.fpr + 24) != 0 ||
		    strlen(k.uid) >= GB_PGP_UID_MAX || k.bin_len == 0)
			abort();
		if (gb_pgp_key_read(k.bin, k.bin_len, &again, err, sizeof(err)) != 0 || strcmp(again.fpr, k.fpr) != 0 ||
		    again.bin_len != k.bin_len)
			abort();
		gb_pgp_key_free(&again);
		gb_pgp_key_free(&k);
	}
	s = malloc(size + 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	(void)gb_pgp_fpr_equal(s, "EB69 3B30 35CD 5710 E231 E123 A4B4 6996 3BF8 63CC");
	free(s);
	return 0;
}
