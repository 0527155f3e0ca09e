/* SPDX-License-Identifier: MIT */
#include "sig.h"

#include <errno.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "shared/digest.h"
#include "shared/util.h"

static int hex_decode(const char *hex, unsigned char *out, size_t n)
{
	size_t len = strcspn(hex, "\r\n");
	if (len != 2 * n)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		int v = 0;
		for (int k = 0; k < 2; k++) {
			char c = hex[2 * i + k];
			v <<= 4;
			if (c >= '0' && c <= '9')
				v |= c - '0';
			else if (c >= 'a' && c <= 'f')
				v |= c - 'a' + 10;
			else
				return -EINVAL;
		}
		out[i] = (unsigned char)v;
	}
	/* one signature: at most a newline after it */
	if (hex[len] == '\r')
		len++;
	if (hex[len] == '\n')
		len++;
	return hex[len] ? -EINVAL : 0;
}

static EVP_PKEY *load_key(const char *file, bool private_key)
{
	FILE *f = fopen(file, "re");
	EVP_PKEY *k;
	if (!f)
		return NULL;
	k = private_key ? PEM_read_PrivateKey(f, NULL, NULL, NULL) : PEM_read_PUBKEY(f, NULL, NULL, NULL);
	fclose(f);
	if (k && EVP_PKEY_id(k) != EVP_PKEY_ED25519) {
		EVP_PKEY_free(k);
		return NULL;
	}
	return k;
}

static void key_id(EVP_PKEY *k, char out[GB_KEY_ID_LEN])
{
	unsigned char raw[32];
	size_t n = sizeof(raw);
	struct gb_sha256 h;
	char hex[65] = "";
	out[0] = '\0';
	if (EVP_PKEY_get_raw_public_key(k, raw, &n) != 1 || gb_sha256_init(&h) < 0)
		return;
	gb_sha256_update(&h, raw, n);
	gb_sha256_final(&h, hex);
	gb_sha256_done(&h);
	snprintf(out, GB_KEY_ID_LEN, "ed25519:%.16s", hex);
}

int gb_sig_sign(const char *key_file, const void *data, size_t len, char out[GB_SIG_HEX_LEN], char kid[GB_KEY_ID_LEN],
                char *err, size_t errsz)
{
	EVP_PKEY *k = load_key(key_file, true);
	EVP_MD_CTX *c;
	unsigned char sig[64];
	size_t siglen = sizeof(sig);
	int r = -EIO;

	if (!k) {
		snprintf(err, errsz, "%s is not an Ed25519 private key in PEM (openssl genpkey -algorithm ed25519)",
		         key_file);
		return -EINVAL;
	}
	key_id(k, kid);
	c = EVP_MD_CTX_new();
	if (!c || EVP_DigestSignInit(c, NULL, NULL, NULL, k) != 1 || EVP_DigestSign(c, sig, &siglen, data, len) != 1 ||
	    siglen != 64) {
		snprintf(err, errsz, "signing with %s failed", key_file);
		goto out;
	}
	gb_hex_encode(sig, sizeof(sig), out, GB_SIG_HEX_LEN);
	out[128] = '\n';
	out[129] = '\0';
	r = 0;
out:
	EVP_MD_CTX_free(c);
	EVP_PKEY_free(k);
	return r;
}

int gb_sig_verify(const char *what, const void *data, size_t len, const char *sig_hex, char *const *key_files,
                  char kid[GB_KEY_ID_LEN], char *err, size_t errsz)
{
	unsigned char sig[64];

	kid[0] = '\0';
	if (!key_files || !key_files[0]) {
		snprintf(err, errsz,
		         "%s: no trusted key; add [trust] key = /path/key.pub to gpuboot.conf or pass "
		         "--trust-key",
		         what);
		return -EPERM;
	}
	if (!sig_hex || hex_decode(sig_hex, sig, sizeof(sig)) < 0) {
		snprintf(err, errsz, "%s: the signature file is not a hex Ed25519 signature", what);
		return -EBADMSG;
	}
	for (char *const *k = key_files; *k; k++) {
		EVP_PKEY *pk = load_key(*k, false);
		EVP_MD_CTX *c;
		bool good;
		if (!pk) {
			snprintf(err, errsz, "trusted key %s is not an Ed25519 public key in PEM", *k);
			return -EINVAL;
		}
		c = EVP_MD_CTX_new();
		good = c && EVP_DigestVerifyInit(c, NULL, NULL, NULL, pk) == 1 &&
		       EVP_DigestVerify(c, sig, sizeof(sig), data, len) == 1;
		if (good)
			key_id(pk, kid);
		EVP_MD_CTX_free(c);
		EVP_PKEY_free(pk);
		if (good)
			return 0;
	}
	snprintf(err, errsz,
	         "%s: the signature does not verify with any trusted key (altered, or signed by an "
	         "unknown key)",
	         what);
	return -EPERM;
}
