/* SPDX-License-Identifier: MIT */
/* gb_sha256: a context that could not be made leaves nothing to free, so
 * gb_sha256_done after a failed init is safe (the journal and the plan hash
 * call it on every path; it used to free whatever the stack held). */
#include <openssl/crypto.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "shared/digest.h"
#include "unit.h"

static bool fail_now;

static void *t_malloc(size_t n, const char *file, int line)
{
	(void)file, (void)line;
	return fail_now || !n ? NULL : malloc(n);
}

static void *t_realloc(void *p, size_t n, const char *file, int line)
{
	(void)file, (void)line;
	if (!n) {
		free(p);
		return NULL;
	}
	return fail_now ? NULL : realloc(p, n);
}

static void t_free(void *p, const char *file, int line)
{
	(void)file, (void)line;
	free(p);
}

int main(void)
{
	struct gb_sha256 h;
	char hex[65] = "";

	/* before OpenSSL's first allocation: every one of them is ours to fail */
	CHECK(CRYPTO_set_mem_functions(t_malloc, t_realloc, t_free) == 1);
	memset(&h, 0xa5, sizeof(h));
	fail_now = true;
	CHECK(gb_sha256_init(&h) < 0);
	fail_now = false;
	CHECK(h.md == NULL);
	gb_sha256_done(&h);

	CHECK_INT(gb_sha256_init(&h), 0);
	CHECK_INT(gb_sha256_update(&h, "abc", 3), 0);
	CHECK_INT(gb_sha256_final(&h, hex), 0);
	CHECK_STREQ(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	gb_sha256_done(&h);
	UNIT_DONE();
}
