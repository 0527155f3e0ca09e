/* SPDX-License-Identifier: MIT */
/* OpenPGP public keys as repositories publish them (NVIDIA's 3bf863cc.pub,
 * D42D0685.pub, the Container Toolkit's gpgkey): read one transferable
 * public key, ASCII-armored or binary, and compute its v4 fingerprint so
 * the key can be checked against a pin before anything trusts it.
 *
 * This reads structure, not signatures: the self-signatures are verified
 * by apt or rpm when they use the key. The fingerprint is the trust. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GB_PGP_MAX_INPUT (64 * 1024) /* a key file larger than this is refused */
#define GB_PGP_FPR_LEN 41 /* 40 hex digits and NUL */
#define GB_PGP_KEYID_LEN 17 /* 16 hex digits and NUL */
#define GB_PGP_UID_MAX 256 /* the first user ID, cut to fit (NUL included) */

struct gb_pgp_key {
	char fpr[GB_PGP_FPR_LEN]; /* "EB693B3035CD5710E231E123A4B469963BF863CC", upper case */
	char key_id[GB_PGP_KEYID_LEN]; /* the fingerprint's last 16 digits */
	char uid[GB_PGP_UID_MAX]; /* first user ID: control bytes and bad UTF-8 as '?'; "" when none */
	uint32_t created; /* the primary key's creation time, seconds since the epoch */
	unsigned algo; /* public-key algorithm (RFC 9580 9.1): 1 RSA, 17 DSA, 22 EdDSA(legacy) ... */
	unsigned n_uids, n_subkeys;
	bool armored; /* the input was ASCII armor (an rpm key file may stay so) */
	unsigned char *bin; /* the binary key, every packet of it (an apt keyring for signed-by) */
	size_t bin_len;
};

/* Read one transferable public key from DATA (at most GB_PGP_MAX_INPUT
 * bytes): ASCII armor ("-----BEGIN PGP PUBLIC KEY BLOCK-----", its CRC24
 * line checked when present) or binary packets (old and new headers, every
 * length form; partial lengths refused in key packets). Exactly one primary
 * key, version 4; then user IDs, user attributes, subkeys, signatures and
 * trust packets; each user ID and subkey followed by a signature.
 * Returns 0 with *ret filled (release with gb_pgp_key_free); -EFBIG (too
 * large), -EBADMSG (anything malformed, truncated, trailing, refused: a
 * secret key, a second primary key, another key version), -ENOMEM, or
 * -EIO (OpenSSL offers no SHA-1), with one line in err saying what is
 * wrong. *ret is untouched on failure. */
int gb_pgp_key_read(const void *data, size_t len, struct gb_pgp_key *ret, char *err, size_t errsz);

/* BIN (a binary transferable key, as gb_pgp_key_read leaves in k->bin) as
 * ASCII armor: the BEGIN line, an empty line, base64 in 64 columns, the
 * CRC24 line, the END line. rpm --import reads only armor. *ret is
 * malloc'd and NUL-terminated; -EINVAL for nothing or too much. */
int gb_pgp_armor(const unsigned char *bin, size_t len, char **ret, size_t *ret_len);

/* Free k->bin (k may be NULL; safe to call twice). */
void gb_pgp_key_free(struct gb_pgp_key *k);

/* Do two fingerprints name the same key? Spaces and case are ignored
 * ("EB69 3B30 ..." as documentation writes pins); each must hold exactly
 * 40 hex digits, so a malformed or empty pin matches nothing. */
bool gb_pgp_fpr_equal(const char *a, const char *b);
