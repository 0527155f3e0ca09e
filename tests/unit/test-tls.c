/* SPDX-License-Identifier: MIT */
/* gb_tls_init: OpenSSL's allocations go through the counting allocator
 * (what lets main see the allocation failures OpenSSL ignores itself), a
 * use of OpenSSL after a base-only initialisation is seen (the test build's
 * guard against lazy initialisation), and the full initialisation passes
 * its self-test. */
#include <openssl/evp.h>

#include "shared/tls.h"
#include "unit.h"

static void digest_once(void)
{
	EVP_MD_CTX *c = EVP_MD_CTX_new();
	CHECK(c != NULL);
	CHECK(EVP_DigestInit_ex(c, EVP_sha256(), NULL) == 1);
	EVP_MD_CTX_free(c);
}

int main(void)
{
	const char *missing = NULL;

	/* first: nothing in this process has used OpenSSL yet */
	CHECK_INT(gb_tls_init(false, &missing), 0);
	CHECK(!gb_tls_used_uninitialised());
	digest_once();
	/* counted: the allocator was installed before OpenSSL's first allocation */
	CHECK(gb_tls_used_uninitialised());

	CHECK_INT(gb_tls_init(true, &missing), 0);
	CHECK(missing == NULL);
	CHECK_INT(gb_tls_alloc_failures(), 0);
	CHECK(!gb_tls_used_uninitialised());
	digest_once();
	CHECK(!gb_tls_used_uninitialised());
	CHECK_INT(gb_tls_alloc_failures(), 0);
	UNIT_DONE();
}
