/* SPDX-License-Identifier: MIT */
#include "tls.h"

#include <archive.h>
#include <curl/curl.h>
#include <errno.h>
#include <json-c/json.h>
#include <libkmod.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <unistd.h>

#include "macro.h"

/* Every allocation OpenSSL makes goes through these (CRYPTO_set_mem_functions),
 * so that its failures are counted: OpenSSL's initialisation ignores some of
 * its own (3.0: the names openssl_add_all_ciphers_int adds with
 * OBJ_NAME_add, the error strings), and nothing else would tell. */
static unsigned long ossl_allocs, ossl_failed, ossl_allocs_at_init;
static bool ossl_full;

static void *ossl_counted(void *p, size_t n)
{
	__atomic_add_fetch(&ossl_allocs, 1, __ATOMIC_RELAXED);
	if (!p && n > 0)
		__atomic_add_fetch(&ossl_failed, 1, __ATOMIC_RELAXED);
	return p;
}

static void *ossl_malloc(size_t n, const char *file _unused_, int line _unused_)
{
	/* as OpenSSL's own: nothing for 0 bytes */
	return ossl_counted(n ? malloc(n) : NULL, n);
}

static void *ossl_realloc(void *p, size_t n, const char *file _unused_, int line _unused_)
{
	if (n == 0) {
		free(p);
		return NULL;
	}
	return ossl_counted(realloc(p, n), n);
}

static void ossl_free(void *p, const char *file _unused_, int line _unused_)
{
	free(p);
}

/* What gpuboot asks OpenSSL for, each fetched once here so that a library
 * built without it, or an initialisation that lost it, fails before the
 * command runs: SHA-256 (artifacts, the journal, module signatures), SHA-1
 * (OpenPGP v4 fingerprints), Ed25519 (mirror manifests), the digests by
 * name too (PEM and CMS look them up in OpenSSL's legacy name table). */
static int self_test(const char **ret_missing)
{
	static const char *const mds[] = { "SHA256", "SHA1" };
	EVP_PKEY_CTX *pk;
	EVP_SIGNATURE *sg;

	for (size_t i = 0; i < ARRAY_SIZE(mds); i++) {
		EVP_MD *md = EVP_MD_fetch(NULL, mds[i], NULL);
		EVP_MD_free(md);
		if (!md || !EVP_get_digestbyname(mds[i])) {
			*ret_missing = mds[i];
			return -ENOPKG;
		}
	}
	pk = EVP_PKEY_CTX_new_from_name(NULL, "ED25519", NULL);
	sg = pk ? EVP_SIGNATURE_fetch(NULL, "ED25519", NULL) : NULL;
	EVP_PKEY_CTX_free(pk);
	EVP_SIGNATURE_free(sg);
	if (!sg) {
		*ret_missing = "ED25519";
		return -ENOPKG;
	}
	return 0;
}

int gb_tls_init(bool full, const char **ret_missing)
{
	uint64_t opts = OPENSSL_INIT_NO_LOAD_CONFIG;
	unsigned long failed = gb_tls_alloc_failures();
	int r = 0;

	/* Refused once OpenSSL has allocated anything: then nothing is counted. */
	(void)CRYPTO_set_mem_functions(ossl_malloc, ossl_realloc, ossl_free);
	if (full)
		opts |= OPENSSL_INIT_ADD_ALL_CIPHERS | OPENSSL_INIT_ADD_ALL_DIGESTS | OPENSSL_INIT_LOAD_CRYPTO_STRINGS;
	if (!OPENSSL_init_crypto(opts, NULL))
		return -ENOMEM;
	if (full) {
		/* The default library context first: OpenSSL 3.0 ignores its
		 * failure elsewhere and then locks a NULL lock. */
		if (!OSSL_LIB_CTX_get0_global_default())
			return -ENOMEM;
		r = self_test(ret_missing);
	}
	if (gb_tls_alloc_failures() > failed)
		return -ENOMEM;
	ossl_allocs_at_init = __atomic_load_n(&ossl_allocs, __ATOMIC_RELAXED);
	ossl_full |= full && r == 0;
	return r;
}

unsigned long gb_tls_alloc_failures(void)
{
	return __atomic_load_n(&ossl_failed, __ATOMIC_RELAXED);
}

bool gb_tls_used_uninitialised(void)
{
	return !ossl_full && __atomic_load_n(&ossl_allocs, __ATOMIC_RELAXED) > ossl_allocs_at_init;
}

static const char *const ca_bundles[] = {
	"/etc/ssl/certs/ca-certificates.crt", /* Debian, Ubuntu, Alpine */
	"/etc/pki/tls/certs/ca-bundle.crt", /* RHEL, Amazon Linux */
	"/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem", /* RHEL 7+ */
	"/etc/ssl/ca-bundle.pem", /* SUSE */
	"/etc/ssl/cert.pem", /* Alpine, BSD layout */
};

int gb_ca_bundle_find(const char *override, const char **ret)
{
	const char *env;

	if (override) {
		if (access(override, R_OK) < 0)
			return negative_errno();
		*ret = override;
		return 0;
	}
	env = getenv("SSL_CERT_FILE");
	if (env && *env && access(env, R_OK) == 0) {
		*ret = env;
		return 0;
	}
	for (size_t i = 0; i < ARRAY_SIZE(ca_bundles); i++)
		if (access(ca_bundles[i], R_OK) == 0) {
			*ret = ca_bundles[i];
			return 0;
		}
	return -ENOENT;
}

void gb_print_library_versions(FILE *out)
{
	const curl_version_info_data *c = curl_version_info(CURLVERSION_NOW);
	const char *ca = NULL;

	fprintf(out, "libcurl %s (%s)\n", c->version, c->ssl_version ? c->ssl_version : "no TLS");
	fprintf(out, "%s\n", OpenSSL_version(OPENSSL_VERSION));
	fprintf(out, "%s\n", archive_version_details());
	{
		/* libkmod has no version call; show that a context can be made. */
		const char *no_config[] = { NULL };
		struct kmod_ctx *k = kmod_new("/nonexistent", no_config);
		fprintf(out, "libkmod %s\n", k ? "ready" : "failed to create a context");
		kmod_unref(k);
	}
	fprintf(out, "json-c %s\n", json_c_version());
	fprintf(out, "CA bundle: %s\n", gb_ca_bundle_find(NULL, &ca) == 0 ? ca : "none found");
}
