/* SPDX-License-Identifier: MIT */
/* libFuzzer target: gpuboot's signed mirror manifest (the checksum list a
 * mirror serves: path, sha256, size per artifact) and the rollback record
 * beside it (<state>/mirror-version). The input is signed here with a key
 * made at startup, so the parser behind the signature check is reached;
 * the same bytes are also tried as the signature file and as the record. */
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shared/digest.h"
#include "fetch/manifest.h"
#include "fuzz-tmp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static EVP_PKEY *key;
static char key_file[256];

static void setup(const char *dir)
{
	FILE *f;

	key = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
	snprintf(key_file, sizeof(key_file), "%s/key.pub", dir);
	f = fopen(key_file, "w");
	if (!key || !f || PEM_write_PUBKEY(f, key) != 1 || fclose(f) != 0)
		abort();
}

static void sign(const uint8_t *data, size_t size, char hex[129])
{
	unsigned char sig[64];
	size_t n = sizeof(sig);
	EVP_MD_CTX *c = EVP_MD_CTX_new();

	if (!c || EVP_DigestSignInit(c, NULL, NULL, NULL, key) != 1 || EVP_DigestSign(c, sig, &n, data, size) != 1)
		abort();
	EVP_MD_CTX_free(c);
	for (size_t i = 0; i < n; i++)
		snprintf(hex + 2 * i, 3, "%02x", sig[i]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *dir = fuzz_scratch();
	char *const keys[] = { key_file, NULL };
	struct gb_manifest m;
	char hex[129], err[512], *text;
	uint64_t v;

	if (!key)
		setup(dir);
	sign(data, size, hex);
	/* 2026-12-01: manifests that expire later are current */
	if (gb_mirror_manifest_verify((const char *)data, size, hex, keys, 1796083200ull, 3, &m, err, sizeof(err)) ==
	    0) {
		(void)gb_manifest_find(&m, "cuda_cudart/linux-x86_64/x.tar.xz");
		gb_manifest_done(&m);
	}
	text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	(void)gb_sha256_valid(text);
	/* the input as the signature file: never trusted */
	if (gb_mirror_manifest_verify("{}", 2, text, keys, 0, 0, &m, err, sizeof(err)) == 0)
		abort();
	free(text);
	fuzz_put(dir, "mirror-version", data, size);
	(void)gb_mirror_version_load(dir, &v, err, sizeof(err));
	return 0;
}
