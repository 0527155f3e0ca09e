/* SPDX-License-Identifier: MIT */
/* OpenPGP public keys: NVIDIA's real repository keys (tests/data/nvidia-keys)
 * give the fingerprints the catalog pins, the tests' own key gives its own,
 * armor and binary agree, every length form reads the same, and hostile
 * input (two keys, other versions, truncation at every byte, damaged armor,
 * trailing data, oversize) is refused with a message. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog/catalog.h"
#include "fetch/pgpkey.h"
#include "unit.h"

#define NV "tests/data/nvidia-keys/"
#define TK "tests/data/test-repo-key/"

struct buf {
	unsigned char *p;
	size_t n;
};

static struct buf slurp(const char *path)
{
	struct buf b = { NULL, 0 };
	FILE *f = fopen(path, "rb");
	long n;
	if (!f) {
		fprintf(stderr, "cannot open %s (run from the repository root)\n", path);
		return b;
	}
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	b.p = malloc((size_t)n + 1);
	if (b.p && fread(b.p, 1, (size_t)n, f) == (size_t)n) {
		b.n = (size_t)n;
		b.p[n] = '\0';
	}
	fclose(f);
	return b;
}

/* A + B (+ C), malloc'd. */
static struct buf cat3(const void *a, size_t an, const void *b, size_t bn, const void *c, size_t cn)
{
	struct buf r = { malloc(an + bn + cn + 1), an + bn + cn };
	if (!r.p)
		abort();
	memcpy(r.p, a, an);
	memcpy(r.p + an, b, bn);
	if (cn)
		memcpy(r.p + an + bn, c, cn);
	return r;
}

/* Read DATA expecting failure R with NEEDLE in the message, and *ret
 * untouched. */
static void refused(const void *data, size_t n, int r, const char *needle)
{
	struct gb_pgp_key k, before;
	char err[256];
	memset(&k, 0x5a, sizeof(k));
	before = k;
	CHECK_INT(gb_pgp_key_read(data, n, &k, err, sizeof(err)), r);
	CHECK(memcmp(&k, &before, sizeof(k)) == 0);
	if (!strstr(err, needle)) {
		fprintf(stderr, "expected '%s' in: %s\n", needle, err);
		CHECK(strstr(err, needle) != NULL);
	}
}

static void refused_str(const char *s, const char *needle)
{
	refused(s, strlen(s), -EBADMSG, needle);
}

static int read_buf(struct buf b, struct gb_pgp_key *k)
{
	char err[256];
	int r = gb_pgp_key_read(b.p, b.n, k, err, sizeof(err));
	if (r < 0)
		fprintf(stderr, "read: %s\n", err);
	return r;
}

/* The pins are proven against NVIDIA's own files. */
TEST(nvidia_keys)
{
	static const struct {
		const char *file, *pin, *fpr, *uid;
		unsigned created, subkeys;
	} cases[] = {
		{ NV "3bf863cc.pub", "cuda-deb", "EB693B3035CD5710E231E123A4B469963BF863CC",
		  "cudatools <cudatools@nvidia.com>", 1649973841, 0 },
		{ NV "gpgkey", "container-toolkit", "C95B321B61E88C1809C4F759DDCAE044F796ECB0",
		  "NVIDIA CORPORATION (Open Source Projects) <cudatools@nvidia.com>", 1506629681, 1 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct buf b = slurp(cases[i].file);
		const struct gb_repo_key *pin = gb_repo_key_find(cases[i].pin);
		struct gb_pgp_key k;
		CHECK(pin != NULL);
		CHECK_INT(read_buf(b, &k), 0);
		CHECK_STREQ(k.fpr, cases[i].fpr);
		CHECK(pin && gb_pgp_fpr_equal(k.fpr, pin->fpr));
		CHECK(pin && strcmp(strrchr(cases[i].file, '/') + 1, pin->file) == 0);
		CHECK_STREQ(k.key_id, cases[i].fpr + 24);
		CHECK_STREQ(k.uid, cases[i].uid);
		CHECK_INT(k.created, cases[i].created);
		CHECK_INT(k.algo, 1);
		CHECK_INT(k.n_uids, 1);
		CHECK_INT(k.n_subkeys, cases[i].subkeys);
		CHECK(k.armored);
		CHECK(k.bin && k.bin_len > 1000 && k.bin_len < b.n);
		gb_pgp_key_free(&k);
		CHECK(k.bin == NULL);
		gb_pgp_key_free(&k);
		free(b.p);
	}
}

/* NVIDIA names its CUDA key files after the short key ID: each pin's last
 * eight digits must be that name (cuda-rpm's key file is not vendored, so
 * this is what the tests can hold its pin to). */
TEST(pins)
{
	CHECK(gb_repo_keys_len >= 3);
	for (size_t i = 0; i < gb_repo_keys_len; i++) {
		const struct gb_repo_key *r = &gb_repo_keys[i];
		char digits[41] = "";
		size_t n = 0;
		CHECK(gb_repo_key_find(r->name) == r);
		CHECK(gb_pgp_fpr_equal(r->fpr, r->fpr));
		for (const char *s = r->fpr; *s && n < 40; s++)
			if (*s != ' ')
				digits[n++] = *s;
		if (strstr(r->file, ".pub"))
			CHECK(strncasecmp(digits + 32, r->file, 8) == 0);
	}
	CHECK_STREQ(gb_repo_key_find("cuda-rpm")->file, "D42D0685.pub");
	CHECK(gb_pgp_fpr_equal(gb_repo_key_find("cuda-rpm")->fpr, "610C7B14E068A878070DA4E99CD0A493D42D0685"));
	CHECK(gb_repo_key_find("nope") == NULL);
	CHECK(gb_repo_key_find(NULL) == NULL);
}

/* The armored 3bf863cc.pub and the binary keyring NVIDIA's cuda-keyring
 * package installs are the same bytes. */
TEST(armor_binary_agree)
{
	struct buf a = slurp(NV "3bf863cc.pub"), b = slurp(NV "cuda-archive-keyring.gpg");
	struct gb_pgp_key ka, kb, kc;
	CHECK_INT(read_buf(a, &ka), 0);
	CHECK_INT(read_buf(b, &kb), 0);
	CHECK(!kb.armored);
	CHECK_STREQ(ka.fpr, kb.fpr);
	CHECK_INT(ka.bin_len, b.n);
	CHECK(ka.bin_len == kb.bin_len && memcmp(ka.bin, kb.bin, kb.bin_len) == 0);
	/* and the binary out of the armor reads back to itself */
	CHECK_INT(gb_pgp_key_read(ka.bin, ka.bin_len, &kc, NULL, 0), 0);
	CHECK_STREQ(kc.fpr, ka.fpr);
	CHECK(kc.bin_len == ka.bin_len && memcmp(kc.bin, ka.bin, ka.bin_len) == 0);
	gb_pgp_key_free(&ka);
	gb_pgp_key_free(&kb);
	gb_pgp_key_free(&kc);
	free(a.p);
	free(b.p);
}

TEST(test_key)
{
	struct buf pub = slurp(TK "public.asc"), sec = slurp(TK "secret.asc"), fpr = slurp(TK "fingerprint");
	const struct gb_repo_key *pin = gb_repo_key_find("test-repo");
	struct gb_pgp_key k, kb;
	CHECK(pin != NULL);
	CHECK(fpr.n == 41 && fpr.p[40] == '\n');
	if (fpr.p)
		fpr.p[40] = '\0';
	CHECK_INT(read_buf(pub, &k), 0);
	CHECK_STREQ(k.fpr, (char *)fpr.p);
	CHECK(pin && gb_pgp_fpr_equal(k.fpr, pin->fpr));
	CHECK_INT(k.algo, 22);
	CHECK_STREQ(k.uid, "gpuboot test repository (tests only) <test-repo@gpuboot.invalid>");
	CHECK_INT(k.bin_len, 265);
	CHECK_INT(gb_pgp_key_read(k.bin, k.bin_len, &kb, NULL, 0), 0);
	CHECK_STREQ(kb.fpr, k.fpr);
	CHECK(!kb.armored);
	refused(sec.p, sec.n, -EBADMSG, "PRIVATE key block");
	gb_pgp_key_free(&k);
	gb_pgp_key_free(&kb);
	free(pub.p);
	free(sec.p);
	free(fpr.p);
}

/* NVIDIA's key is primary (3 + 525), user ID (2 + 32), signature (3 + 569). */
#define CUDA_PRIMARY 528
#define CUDA_UID 562

/* Every packet-header form reads the same key. */
TEST(length_forms)
{
	struct buf b = slurp(NV "cuda-archive-keyring.gpg");
	const unsigned char *body = b.p + 3, *rest = b.p + CUDA_PRIMARY, *sig = b.p + CUDA_UID + 3;
	size_t nrest = b.n - CUDA_PRIMARY;
	static const unsigned char old4[] = { 0x9a, 0, 0, 0x02, 0x0d }, new2[] = { 0xc6, 193, 77 },
	                           new5[] = { 0xc6, 0xff, 0, 0, 0x02, 0x0d }, indet[] = { 0x8b };
	const unsigned char *hdrs[] = { old4, new2, new5 };
	const size_t hlens[] = { sizeof(old4), sizeof(new2), sizeof(new5) };
	struct gb_pgp_key k;

	CHECK(b.n == 1134 && b.p[0] == 0x99 && b.p[CUDA_PRIMARY] == 0xb4 && b.p[CUDA_UID] == 0x89);
	for (size_t i = 0; i < 3; i++) {
		struct buf h = cat3(hdrs[i], hlens[i], body, 525, rest, nrest);
		CHECK_INT(read_buf(h, &k), 0);
		CHECK_STREQ(k.fpr, "EB693B3035CD5710E231E123A4B469963BF863CC");
		gb_pgp_key_free(&k);
		free(h.p);
	}
	/* the last packet with the old format's indeterminate length */
	{
		struct buf h = cat3(b.p, CUDA_UID, indet, 1, sig, 569);
		CHECK_INT(read_buf(h, &k), 0);
		CHECK_STREQ(k.fpr, "EB693B3035CD5710E231E123A4B469963BF863CC");
		gb_pgp_key_free(&k);
		free(h.p);
	}
	free(b.p);
}

/* Every strict prefix of a real key is refused: a truncated download never
 * reads as a key. (The armored text may lose its final newline.) */
TEST(truncation)
{
	const char *files[] = { NV "cuda-archive-keyring.gpg", NV "3bf863cc.pub", TK "public.asc" };
	for (size_t f = 0; f < 3; f++) {
		struct buf b = slurp(files[f]);
		size_t wrong = 0, first = 0;
		struct gb_pgp_key k;
		char err[256];
		for (size_t n = 0; n < b.n; n++) {
			int r = gb_pgp_key_read(b.p, n, &k, err, sizeof(err));
			bool ok = (b.p[0] & 0x80) || n + 1 < b.n ? r == -EBADMSG && err[0] : r == 0;
			if (r == 0)
				gb_pgp_key_free(&k);
			if (!ok && wrong++ == 0)
				first = n;
		}
		if (wrong)
			fprintf(stderr, "%s: %zu truncations misread, the first at %zu\n", files[f], wrong, first);
		CHECK_INT(wrong, 0);
		free(b.p);
	}
}

/* Two keys in one file, in binary and in armor. */
TEST(two_keys)
{
	struct buf a = slurp(NV "3bf863cc.pub"), b = slurp(NV "gpgkey");
	struct gb_pgp_key ka, kb;
	struct buf both;
	CHECK_INT(read_buf(a, &ka), 0);
	CHECK_INT(read_buf(b, &kb), 0);
	both = cat3(ka.bin, ka.bin_len, kb.bin, kb.bin_len, NULL, 0);
	refused(both.p, both.n, -EBADMSG, "more than one primary key");
	free(both.p);
	both = cat3(a.p, a.n, b.p, b.n, NULL, 0);
	refused(both.p, both.n, -EBADMSG, "trailing data after the END line");
	free(both.p);
	gb_pgp_key_free(&ka);
	gb_pgp_key_free(&kb);
	free(a.p);
	free(b.p);
}

/* Key packets of other versions, made here, are refused by name. */
TEST(versions)
{
	struct buf b = slurp(NV "cuda-archive-keyring.gpg");
	/* v3: version, created, validity days, RSA, n = 0xff, e = 3 */
	static const unsigned char v3[] = { 0x99, 0, 14, 3, 0x40, 0, 0, 0, 0, 0, 1, 0, 8, 0xff, 0, 2, 3 };
	/* v5 and v6: version, created, algorithm (EdDSA), key material length */
	static const unsigned char v5[] = { 0xc6, 10, 5, 0x60, 0, 0, 0, 27, 0, 0, 0, 0 },
	                           v6[] = { 0xc6, 10, 6, 0x60, 0, 0, 0, 27, 0, 0, 0, 0 };
	/* a v3 subkey after a good key */
	unsigned char sub3[sizeof(v3)];
	struct buf s;

	refused(v3, sizeof(v3), -EBADMSG, "version 3 key");
	refused(v5, sizeof(v5), -EBADMSG, "version 5 key");
	refused(v6, sizeof(v6), -EBADMSG, "version 6 key");
	memcpy(sub3, v3, sizeof(v3));
	sub3[0] = 0xb9; /* old format, tag 14, two-octet length */
	s = cat3(b.p, b.n, sub3, sizeof(sub3), b.p + CUDA_UID, 3 + 569);
	refused(s.p, s.n, -EBADMSG, "subkey at offset 1134 is a version 3 key");
	free(s.p);
	free(b.p);
}

/* Damaged armor: CRC, base64, trailing data; and armor variations that are
 * fine: CRLF, no CRC line, no blank line after the headers. */
TEST(armor)
{
	struct buf a = slurp(NV "3bf863cc.pub");
	char *t = calloc(1, 2 * a.n + 64), *p;
	struct gb_pgp_key k;
	size_t n;

	memcpy(t, a.p, a.n);
	p = strstr(t, "\n=");
	CHECK(p != NULL);
	if (!p)
		return;
	p[2] = p[2] == 'A' ? 'B' : 'A';
	refused(t, a.n, -EBADMSG, "CRC24 does not match");
	memcpy(t, a.p, a.n);
	t[100] = '*';
	refused(t, a.n, -EBADMSG, "is not base64");
	memcpy(t, a.p, a.n);
	memmove(t + 100, t + 101, a.n - 101); /* one character short */
	refused(t, a.n - 1, -EBADMSG, "base64 is malformed");
	memcpy(t, a.p, a.n);
	t[100] = '=';
	refused(t, a.n, -EBADMSG, "base64 is malformed");
	memcpy(t, a.p, a.n);
	memcpy(t + a.n, "junk\n", 5);
	refused(t, a.n + 5, -EBADMSG, "trailing data after the END line");
	memcpy(t, a.p, a.n);
	memcpy(t + a.n, "\n \t\r\n", 5); /* trailing whitespace is fine */
	CHECK_INT(gb_pgp_key_read(t, a.n + 5, &k, NULL, 0), 0);
	gb_pgp_key_free(&k);

	/* CRLF */
	n = 0;
	for (size_t i = 0; i < a.n; i++) {
		if (a.p[i] == '\n')
			t[n++] = '\r';
		t[n++] = (char)a.p[i];
	}
	CHECK_INT(gb_pgp_key_read(t, n, &k, NULL, 0), 0);
	CHECK_STREQ(k.fpr, "EB693B3035CD5710E231E123A4B469963BF863CC");
	gb_pgp_key_free(&k);
	/* no CRC line */
	memcpy(t, a.p, a.n);
	p = strstr(t, "\n=");
	n = (size_t)(p - t) + 1;
	memcpy(t + n, "-----END PGP PUBLIC KEY BLOCK-----\n", 36);
	CHECK_INT(gb_pgp_key_read(t, n + 35, &k, NULL, 0), 0);
	gb_pgp_key_free(&k);
	/* no headers and no blank line */
	p = strstr((char *)a.p, "\n\n");
	n = (size_t)snprintf(t, 2 * a.n + 64, "-----BEGIN PGP PUBLIC KEY BLOCK-----\n%.*s", (int)(a.n - 2),
	                     p ? p + 2 : "");
	CHECK_INT(gb_pgp_key_read(t, n, &k, NULL, 0), 0);
	gb_pgp_key_free(&k);

	refused_str("-----BEGIN PGP SIGNATURE-----\n\n=AAAA\n", "not a PUBLIC KEY BLOCK");
	refused_str("-----BEGIN PGP PUBLIC KEY BLOCK-----\n\n-----END PGP PUBLIC KEY BLOCK-----\n", "holds no data");
	refused_str("-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nmQ==\n=AAA\n", "a CRC line is");
	refused_str("-----BEGIN PGP PUBLIC KEY BLOCK-----\nVersion: x\n\nmQ==\n", "no '-----END");
	refused_str("-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nmQ==\n=AAAA\n\n", "must be followed by");
	refused_str("\n\n  \n", "only blank lines");
	refused_str("hello world\n", "not an OpenPGP key");
	free(t);
	free(a.p);
}

/* Hand-made packet sequences. */
TEST(packets)
{
	struct buf b = slurp(NV "cuda-archive-keyring.gpg");
	static const unsigned char short_key[] = { 0xc6, 5, 4, 0, 0, 0, 0 },
	                           past_end[] = { 0xc6, 0xff, 0, 1, 0, 0, 4, 0, 0, 0, 0, 1 },
	                           secret[] = { 0xc5, 6, 4, 0, 0, 0, 0, 1 }, uid_first[] = { 0xcd, 1, 'x' },
	                           reserved[] = { 0xc0, 0 }, literal[] = { 0xcb, 0 }, zero[] = { 0 },
	                           cut_header[] = { 0xc6, 0xff, 0 }, old_cut[] = { 0x9a, 0, 0 };
	unsigned char partial[2 + 512] = { 0xc6, 0xe9, 4 };
	unsigned char big[GB_PGP_MAX_INPUT + 1];
	struct buf s;

	refused(NULL, 0, -EBADMSG, "empty");
	refused(short_key, sizeof(short_key), -EBADMSG, "body of 5 bytes, too short for a key");
	refused(past_end, sizeof(past_end), -EBADMSG, "runs past the end");
	refused(partial, sizeof(partial), -EBADMSG, "partial body length");
	refused(secret, sizeof(secret), -EBADMSG, "secret key material");
	refused(uid_first, sizeof(uid_first), -EBADMSG, "first packet has tag 13");
	refused(reserved, sizeof(reserved), -EBADMSG, "reserved tag 0");
	refused(cut_header, sizeof(cut_header), -EBADMSG, "truncated header");
	refused(old_cut, sizeof(old_cut), -EBADMSG, "truncated header");
	s = cat3(b.p, b.n, literal, sizeof(literal), NULL, 0);
	refused(s.p, s.n, -EBADMSG, "tag 11, which has no place in a public key");
	free(s.p);
	s = cat3(b.p, b.n, zero, 1, NULL, 0);
	refused(s.p, s.n, -EBADMSG, "is not an OpenPGP packet header");
	free(s.p);
	s = cat3(b.p, CUDA_PRIMARY, b.p + CUDA_UID, b.n - CUDA_UID, NULL, 0);
	refused(s.p, s.n, -EBADMSG, "no user ID");
	free(s.p);
	s = cat3(b.p, CUDA_UID, b.p + CUDA_PRIMARY, CUDA_UID - CUDA_PRIMARY, b.p + CUDA_UID, b.n - CUDA_UID);
	refused(s.p, s.n, -EBADMSG, "user ID at offset 528 is not followed by a signature");
	free(s.p);

	memset(big, 0xff, sizeof(big));
	refused(big, sizeof(big), -EFBIG, "more than a key file may hold");
	refused(big, sizeof(big) - 1, -EBADMSG, "runs past the end"); /* 64 KiB exactly is read, and refused */
	free(b.p);
}

/* The user ID is cut to fit and cleaned of control bytes and bad UTF-8.
 * The test key is primary (2 + 51), user ID (2 + 64), signature (2 + 144). */
TEST(uid)
{
	struct buf b = slurp(TK "public.asc");
	static const unsigned char dirty[] = { 0xcd, 10, 'A', 0x01, 'B', 0xff, 0xc3, 0xa9, 0x7f, 0xc2, 0x85, 'Z' };
	unsigned char u[3 + 300] = { 0xcd, 0xc0, 108 }; /* two-octet length: 192 + 108 = 300 */
	struct gb_pgp_key t, k;
	struct buf s;

	CHECK_INT(read_buf(b, &t), 0);
	CHECK(t.bin_len == 265 && t.bin[53] == 0xb4 && t.bin[119] == 0x88);
	s = cat3(t.bin, 53, dirty, sizeof(dirty), t.bin + 119, 146);
	CHECK_INT(read_buf(s, &k), 0);
	CHECK_STREQ(k.uid, "A?B?\xc3\xa9??Z");
	gb_pgp_key_free(&k);
	free(s.p);

	memset(u + 3, 'x', 300);
	s = cat3(t.bin, 53, u, sizeof(u), t.bin + 119, 146);
	CHECK_INT(read_buf(s, &k), 0);
	CHECK_INT(strlen(k.uid), GB_PGP_UID_MAX - 1);
	gb_pgp_key_free(&k);
	free(s.p);
	memcpy(u + 3 + 254, "\xc3\xa9", 2); /* a character that does not fit whole */
	s = cat3(t.bin, 53, u, sizeof(u), t.bin + 119, 146);
	CHECK_INT(read_buf(s, &k), 0);
	CHECK_INT(strlen(k.uid), 254);
	gb_pgp_key_free(&k);
	free(s.p);
	gb_pgp_key_free(&t);
	free(b.p);
}

TEST(fpr_equal)
{
	const char *f = "EB693B3035CD5710E231E123A4B469963BF863CC";
	CHECK(gb_pgp_fpr_equal(f, "EB69 3B30 35CD 5710 E231  E123 A4B4 6996 3BF8 63CC"));
	CHECK(gb_pgp_fpr_equal(f, "eb693b3035cd5710e231e123a4b469963bf863cc"));
	CHECK(gb_pgp_fpr_equal(" eb69 3b30 35cd 5710 e231 e123 a4b4 6996 3bf8 63cc ", f));
	CHECK(!gb_pgp_fpr_equal(f, "EB693B3035CD5710E231E123A4B469963BF863CD"));
	CHECK(!gb_pgp_fpr_equal(f, "EB693B3035CD5710E231E123A4B469963BF863C"));
	CHECK(!gb_pgp_fpr_equal(f, "EB693B3035CD5710E231E123A4B469963BF863CC0"));
	CHECK(!gb_pgp_fpr_equal(f, "EB693B3035CD5710E231E123A4B469963BF863CG"));
	CHECK(!gb_pgp_fpr_equal(f, "0xEB693B3035CD5710E231E123A4B469963BF863CC"));
	CHECK(!gb_pgp_fpr_equal(f, "EB69:3B30:35CD:5710:E231:E123:A4B4:6996:3BF8:63CC"));
	CHECK(!gb_pgp_fpr_equal("", ""));
	CHECK(!gb_pgp_fpr_equal(f, NULL));
	CHECK(!gb_pgp_fpr_equal(NULL, f));
}

int main(void)
{
	unit_run_tests();
	UNIT_DONE();
}
