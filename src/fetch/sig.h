/* SPDX-License-Identifier: MIT */
#pragma once
#include <stddef.h>

/* Ed25519 detached signatures in gpuboot's one format: 128 lowercase hex
 * digits and a newline, over the exact bytes of a file. Used by the mirror
 * manifest (manifest.json.sig) and the release files (SHA256SUMS.sig). Keys
 * are PEM (openssl genpkey -algorithm ed25519). A key id is "ed25519:" and
 * the first 16 hex digits of the sha256 of the raw public key. */

#define GB_SIG_HEX_LEN 130 /* 128 digits, newline, NUL */
#define GB_KEY_ID_LEN 40

/* Sign DATA with the private key in KEY_FILE: out gets the hex line, kid
 * the key id. -EINVAL (not an Ed25519 private key), -EIO (signing failed),
 * each with a message in err. */
int gb_sig_sign(const char *key_file, const void *data, size_t len, char out[GB_SIG_HEX_LEN], char kid[GB_KEY_ID_LEN],
                char *err, size_t errsz);

/* Verify SIG_HEX over DATA against each public key in KEY_FILES (NULL
 * terminated) until one verifies: 0 and kid set. -EPERM (no key given, or
 * none verifies), -EBADMSG (not a hex signature), -EINVAL (a key file that
 * is not an Ed25519 public key), each with a message in err naming WHAT. */
int gb_sig_verify(const char *what, const void *data, size_t len, const char *sig_hex, char *const *key_files,
                  char kid[GB_KEY_ID_LEN], char *err, size_t errsz);
