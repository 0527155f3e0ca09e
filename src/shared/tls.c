/* SPDX-License-Identifier: MIT */
#include "tls.h"

#include <archive.h>
#include <curl/curl.h>
#include <errno.h>
#include <json-c/json.h>
#include <libkmod.h>
#include <openssl/crypto.h>
#include <stdlib.h>
#include <unistd.h>

#include "macro.h"

int gb_tls_init(void)
{
	if (!OPENSSL_init_crypto(OPENSSL_INIT_NO_LOAD_CONFIG, NULL))
		return -EIO;
	return 0;
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
