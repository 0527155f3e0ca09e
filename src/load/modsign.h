/* SPDX-License-Identifier: MIT */
/* Module signing with a site key, for Secure Boot ([secure_boot]
 * signing_key, signing_cert): the kernel's appended-signature format
 * (a detached CMS SignedData over the module's bytes, sha256, the signer
 * named by issuer and serial, no certificates, no attributes; then the
 * 12-byte module_signature trailer and "~Module signature appended~\n"),
 * made with OpenSSL in-process, so it works in an image root and with no
 * kernel headers. */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

struct gb_ctx;
struct gb_journal;

#define GB_MODSIGN_MAX_FILES 16

/* The certificate as the kernel names it in /proc/keys: subject (CN, else
 * O) and key id (hex of subjectKeyIdentifier, else of the serial). PEM or
 * DER. -EINVAL with a message when it is not a readable X.509 certificate. */
int gb_modsign_cert_id(const char *cert_file, char *subject, size_t subjsz, char *key_id, size_t kidsz, char *err,
                       size_t errsz);

/* KEY_FILE is the private key of CERT_FILE: 0, or -EINVAL with a message. */
int gb_modsign_pair_check(const char *key_file, const char *cert_file, char *err, size_t errsz);

/* Is MOD (a whole .ko) signed by CERT's key, verifying? 1 yes, 0 no (no
 * signature, another signer, or a signature that does not verify), or a
 * negative errno for a malformed trailer. */
int gb_modsign_check(const unsigned char *mod, size_t len, const char *cert_file);

/* MOD with any old signature removed and a new one by KEY/CERT appended:
 * *ret malloc'd. -EINVAL (bad key/cert, with err), -EBADMSG (malformed
 * trailer), -ENOMEM, -EIO. */
int gb_modsign_sign(const unsigned char *mod, size_t len, const char *key_file, const char *cert_file,
                    unsigned char **ret, size_t *ret_len, char *err, size_t errsz);

struct gb_modsign_result {
	char dir[256];
	struct {
		char name[96];
		bool signed_now; /* false: already signed by the site key */
	} files[GB_MODSIGN_MAX_FILES];
	size_t n_files, n_signed;
	char error[320];
};

/* Every nvidia*.ko in DIR (under the root) signed by the site key: the
 * ones not already signed by it are rewritten through the journal (sha256
 * before and after). Compressed modules are refused (-EOPNOTSUPP). */
int gb_modsign_dir(struct gb_ctx *ctx, struct gb_journal *j, const char *dir, const char *key_file,
                   const char *cert_file, struct gb_modsign_result *ret);
json_object *gb_modsign_result_to_json(const struct gb_modsign_result *r);
