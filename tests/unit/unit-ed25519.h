/* SPDX-License-Identifier: MIT */
/* An Ed25519 key pair for the tests of signed documents (the mirror
 * manifest, the catalog update): PEM files as `openssl genpkey -algorithm
 * ed25519` and `openssl pkey -pubout` write them. */
#pragma once

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <stdio.h>

static inline void unit_ed25519_key(const char *priv, const char *pub)
{
	EVP_PKEY *k = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
	FILE *f = fopen(priv, "w");
	PEM_write_PrivateKey(f, k, NULL, NULL, 0, NULL, NULL);
	fclose(f);
	f = fopen(pub, "w");
	PEM_write_PUBKEY(f, k);
	fclose(f);
	EVP_PKEY_free(k);
}
