/* SPDX-License-Identifier: MIT */
#include "modsign.h"

#include <errno.h>
#include <openssl/bio.h>
#include <openssl/cms.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "effect/journal.h"
#include "context.h"
#include "shared/log.h"
#include "shared/macro.h"
#include "shared/root.h"
#include "shared/util.h"
#include "shared/json-util.h"

#define MAGIC "~Module signature appended~\n"
#define MAGIC_LEN (sizeof(MAGIC) - 1)
#define TRAILER_LEN 12 /* struct module_signature */
#define PKEY_ID_PKCS7 2
#define MODULE_MAX (512u << 20)

static X509 *load_cert(const char *file)
{
	BIO *b = BIO_new_file(file, "rb");
	X509 *x;
	if (!b)
		return NULL;
	x = PEM_read_bio_X509(b, NULL, NULL, NULL);
	if (!x) {
		(void)BIO_reset(b);
		x = d2i_X509_bio(b, NULL);
	}
	BIO_free(b);
	ERR_clear_error();
	return x;
}

static EVP_PKEY *load_key(const char *file)
{
	BIO *b = BIO_new_file(file, "rb");
	EVP_PKEY *k;
	if (!b)
		return NULL;
	k = PEM_read_bio_PrivateKey(b, NULL, NULL, NULL);
	if (!k) {
		(void)BIO_reset(b);
		k = d2i_PrivateKey_bio(b, NULL);
	}
	BIO_free(b);
	ERR_clear_error();
	return k;
}

int gb_modsign_cert_id(const char *cert_file, char *subject, size_t subjsz, char *key_id, size_t kidsz, char *err,
                       size_t errsz)
{
	X509 *x = load_cert(cert_file);
	const ASN1_OCTET_STRING *skid;
	X509_NAME *nm;
	int idx;

	if (!x) {
		snprintf(err, errsz, "%s is not an X.509 certificate (PEM or DER)", cert_file);
		return -EINVAL;
	}
	skid = X509_get0_subject_key_id(x);
	if (skid) {
		gb_hex_encode(ASN1_STRING_get0_data(skid), (size_t)ASN1_STRING_length(skid), key_id, kidsz);
	} else {
		const ASN1_INTEGER *sn = X509_get0_serialNumber(x);
		gb_hex_encode(ASN1_STRING_get0_data(sn), (size_t)ASN1_STRING_length(sn), key_id, kidsz);
	}
	subject[0] = '\0';
	nm = X509_get_subject_name(x);
	idx = X509_NAME_get_index_by_NID(nm, NID_commonName, -1);
	if (idx < 0)
		idx = X509_NAME_get_index_by_NID(nm, NID_organizationName, -1);
	if (idx >= 0) {
		const ASN1_STRING *d = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(nm, idx));
		snprintf(subject, subjsz, "%.*s", ASN1_STRING_length(d), (const char *)ASN1_STRING_get0_data(d));
	}
	X509_free(x);
	return 0;
}

/* The site key and its certificate, loaded once for every module. */
struct signer {
	EVP_PKEY *key;
	X509 *cert;
};

static void signer_done(struct signer *sg)
{
	EVP_PKEY_free(sg->key);
	X509_free(sg->cert);
	ERR_clear_error();
}

static int signer_load(struct signer *sg, const char *key_file, const char *cert_file, char *err, size_t errsz)
{
	sg->key = load_key(key_file);
	sg->cert = load_cert(cert_file);
	if (!sg->cert)
		snprintf(err, errsz, "%s is not an X.509 certificate (PEM or DER)", cert_file);
	else if (!sg->key)
		snprintf(err, errsz, "%s is not a private key (PEM or DER) readable here", key_file);
	else if (X509_check_private_key(sg->cert, sg->key) != 1)
		snprintf(err, errsz, "%s is not the private key of %s", key_file, cert_file);
	else
		return 0;
	signer_done(sg);
	return -EINVAL;
}

int gb_modsign_pair_check(const char *key_file, const char *cert_file, char *err, size_t errsz)
{
	struct signer sg;
	int r = signer_load(&sg, key_file, cert_file, err, errsz);
	if (r == 0)
		signer_done(&sg);
	return r;
}

/* Where the module's own bytes end: len when unsigned, before the
 * signature when signed (*sig, *siglen set), -EBADMSG when the trailer
 * lies. */
static int64_t module_end(const unsigned char *mod, size_t len, const unsigned char **sig, size_t *siglen)
{
	uint32_t n;
	*sig = NULL;
	*siglen = 0;
	if (len < MAGIC_LEN || memcmp(mod + len - MAGIC_LEN, MAGIC, MAGIC_LEN) != 0)
		return (int64_t)len;
	if (len < MAGIC_LEN + TRAILER_LEN)
		return -EBADMSG;
	const unsigned char *t = mod + len - MAGIC_LEN - TRAILER_LEN;
	n = (uint32_t)t[8] << 24 | (uint32_t)t[9] << 16 | (uint32_t)t[10] << 8 | t[11];
	if (t[2] != PKEY_ID_PKCS7 || n == 0 || n > len - MAGIC_LEN - TRAILER_LEN)
		return -EBADMSG;
	*sig = t - n;
	*siglen = n;
	return (int64_t)(len - MAGIC_LEN - TRAILER_LEN - n);
}

static int check_with(const unsigned char *mod, size_t len, X509 *cert)
{
	const unsigned char *sig;
	size_t siglen;
	int64_t end = module_end(mod, len, &sig, &siglen);
	CMS_ContentInfo *cms;
	BIO *content;
	STACK_OF(X509) * certs;
	int ok = 0;

	if (end < 0)
		return (int)end;
	if (!sig)
		return 0;
	cms = d2i_CMS_ContentInfo(NULL, &sig, (long)siglen);
	content = BIO_new_mem_buf(mod, (int)end);
	certs = sk_X509_new_null();
	if (cert && cms && content && certs && X509_up_ref(cert) == 1) {
		if (sk_X509_push(certs, cert) == 1)
			ok = CMS_verify(cms, certs, NULL, content, NULL,
			                CMS_BINARY | CMS_NO_SIGNER_CERT_VERIFY | CMS_NOINTERN | CMS_DETACHED) == 1;
		else
			X509_free(cert);
	}
	sk_X509_pop_free(certs, X509_free);
	BIO_free(content);
	CMS_ContentInfo_free(cms);
	ERR_clear_error();
	return ok;
}

int gb_modsign_check(const unsigned char *mod, size_t len, const char *cert_file)
{
	X509 *x = load_cert(cert_file);
	int r = check_with(mod, len, x);
	X509_free(x);
	return r;
}

static int cms_sign(const unsigned char *data, size_t len, EVP_PKEY *k, X509 *x, unsigned char **der, int *derlen)
{
	BIO *in = BIO_new_mem_buf(data, (int)len);
	CMS_ContentInfo *cms = NULL;
	int r = -EIO;
	unsigned int fl = CMS_NOCERTS | CMS_BINARY | CMS_NOSMIMECAP | CMS_DETACHED | CMS_PARTIAL;

	*der = NULL;
	if (!in || len > INT32_MAX)
		goto out;
	cms = CMS_sign(NULL, NULL, NULL, NULL, fl);
	if (!cms || !CMS_add1_signer(cms, x, k, EVP_sha256(), fl | CMS_NOATTR) || CMS_final(cms, in, NULL, fl) != 1)
		goto out;
	*derlen = i2d_CMS_ContentInfo(cms, der);
	r = *derlen > 0 ? 0 : -EIO;
out:
	CMS_ContentInfo_free(cms);
	BIO_free(in);
	ERR_clear_error();
	return r;
}

static int sign_with(const unsigned char *mod, size_t len, const struct signer *sg, unsigned char **ret,
                     size_t *ret_len, char *err, size_t errsz)
{
	const unsigned char *sig;
	size_t siglen;
	int64_t end = module_end(mod, len, &sig, &siglen);
	unsigned char *der = NULL, *out = NULL, *t;
	int derlen = 0, r;

	if (end < 0) {
		snprintf(err, errsz, "the module's signature trailer is malformed");
		return (int)end;
	}
	r = cms_sign(mod, (size_t)end, sg->key, sg->cert, &der, &derlen);
	if (r < 0) {
		snprintf(err, errsz, "signing with the site key failed");
		goto out;
	}
	out = malloc((size_t)end + (size_t)derlen + TRAILER_LEN + MAGIC_LEN);
	if (!out) {
		r = -ENOMEM;
		goto out;
	}
	memcpy(out, mod, (size_t)end);
	memcpy(out + end, der, (size_t)derlen);
	t = out + end + derlen;
	memset(t, 0, TRAILER_LEN);
	t[2] = PKEY_ID_PKCS7;
	t[8] = (unsigned char)((unsigned)derlen >> 24);
	t[9] = (unsigned char)((unsigned)derlen >> 16);
	t[10] = (unsigned char)((unsigned)derlen >> 8);
	t[11] = (unsigned char)derlen;
	memcpy(t + TRAILER_LEN, MAGIC, MAGIC_LEN);
	*ret_len = (size_t)end + (size_t)derlen + TRAILER_LEN + MAGIC_LEN;
	*ret = TAKE_PTR(out);
	r = 0;
out:
	OPENSSL_free(der);
	return r;
}

int gb_modsign_sign(const unsigned char *mod, size_t len, const char *key_file, const char *cert_file,
                    unsigned char **ret, size_t *ret_len, char *err, size_t errsz)
{
	struct signer sg;
	int r = signer_load(&sg, key_file, cert_file, err, errsz);
	if (r < 0) {
		snprintf(err, errsz, "%s and %s are not a private key and its certificate (PEM or DER)", key_file,
		         cert_file);
		return r;
	}
	r = sign_with(mod, len, &sg, ret, ret_len, err, errsz);
	signer_done(&sg);
	return r;
}

static bool is_nvidia_module(const char *name)
{
	size_t n = strlen(name);
	return strncmp(name, "nvidia", 6) == 0 && n > 3 && streq(name + n - 3, ".ko");
}

static bool is_compressed_nvidia_module(const char *name)
{
	const char *dot = strstr(name, ".ko.");
	return strncmp(name, "nvidia", 6) == 0 && dot && dot[4];
}

static int sign_one(struct gb_ctx *ctx, struct gb_journal *j, const char *path, const struct signer *sg,
                    bool *signed_now, char *err, size_t errsz)
{
	_cleanup_free_ char *mod = NULL;
	_cleanup_free_ unsigned char *out = NULL;
	size_t len = 0, olen = 0;
	int r = gb_root_read_file(ctx->root, path, MODULE_MAX, &mod, &len);

	*signed_now = false;
	if (r < 0) {
		snprintf(err, errsz, "reading %s: %s", path, strerror(-r));
		return r;
	}
	r = check_with((const unsigned char *)mod, len, sg->cert);
	if (r == 1)
		return 0;
	if (r < 0) {
		snprintf(err, errsz, "%s: the signature trailer is malformed", path);
		return r;
	}
	r = sign_with((const unsigned char *)mod, len, sg, &out, &olen, err, errsz);
	if (r < 0)
		return r;
	r = gb_journal_write_file(j, "load", path, out, olen, 0644);
	if (r < 0) {
		snprintf(err, errsz, "writing the signed %s: %s", path, strerror(-r));
		return r;
	}
	*signed_now = true;
	return 0;
}

static int sign_all(struct gb_ctx *ctx, struct gb_journal *j, const char *dir, char **names, size_t n,
                    const struct signer *sg, struct gb_modsign_result *ret)
{
	int r;
	for (size_t i = 0; i < n; i++) {
		char path[512];
		bool now;
		if (is_compressed_nvidia_module(names[i])) {
			snprintf(ret->error, sizeof(ret->error),
			         "%s/%s is compressed: gpuboot signs uncompressed modules only (set the DKMS "
			         "compression off, or sign with DKMS's mok_signing_key)",
			         dir, names[i]);
			return -EOPNOTSUPP;
		}
		if (!is_nvidia_module(names[i]))
			continue;
		if (ret->n_files == GB_MODSIGN_MAX_FILES) {
			snprintf(ret->error, sizeof(ret->error), "more than %d NVIDIA modules in %s",
			         GB_MODSIGN_MAX_FILES, dir);
			return -E2BIG;
		}
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		r = sign_one(ctx, j, path, sg, &now, ret->error, sizeof(ret->error));
		if (r < 0)
			return r;
		gb_strscpy(ret->files[ret->n_files].name, sizeof(ret->files[0].name), names[i]);
		ret->files[ret->n_files++].signed_now = now;
		ret->n_signed += now;
	}
	if (ret->n_files == 0) {
		snprintf(ret->error, sizeof(ret->error), "no NVIDIA module (nvidia*.ko) in %s", dir);
		return -ENOENT;
	}
	return 0;
}

int gb_modsign_dir(struct gb_ctx *ctx, struct gb_journal *j, const char *dir, const char *key_file,
                   const char *cert_file, struct gb_modsign_result *ret)
{
	struct signer sg;
	char **names = NULL;
	size_t n = 0;
	int r;

	memset(ret, 0, sizeof(*ret));
	gb_strscpy(ret->dir, sizeof(ret->dir), dir);
	r = gb_root_list_dir(ctx->root, dir, &names, &n);
	if (r < 0) {
		snprintf(ret->error, sizeof(ret->error), "listing %s: %s", dir, strerror(-r));
		return r;
	}
	r = signer_load(&sg, key_file, cert_file, ret->error, sizeof(ret->error));
	if (r == 0) {
		r = sign_all(ctx, j, dir, names, n, &sg, ret);
		signer_done(&sg);
	}
	gb_strv_free(names);
	return r;
}

json_object *gb_modsign_result_to_json(const struct gb_modsign_result *r)
{
	json_object *o = gb_json_new_object(), *a = gb_json_new_array();
	gb_json_add(o, "dir", gb_json_new_string(r->dir));
	for (size_t i = 0; i < r->n_files; i++) {
		json_object *f = gb_json_new_object();
		gb_json_add(f, "module", gb_json_new_string(r->files[i].name));
		gb_json_add(f, "signed_now", gb_json_new_boolean(r->files[i].signed_now));
		gb_json_append(a, f);
	}
	gb_json_add(o, "modules", a);
	gb_json_add(o, "signed", gb_json_new_int((int)r->n_signed));
	if (r->error[0])
		gb_json_add(o, "error", gb_json_new_string(r->error));
	return o;
}
