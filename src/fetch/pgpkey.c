/* SPDX-License-Identifier: MIT */
/* OpenPGP transferable public keys (RFC 9580 sections 4.2, 5.5, 6, 10.1),
 * read only as far as pinning needs: the packet structure, the primary key's
 * v4 fingerprint and its first user ID. */
#include "pgpkey.h"

#include <errno.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shared/macro.h"
#include "shared/util.h"

#define ARMOR_BEGIN "-----BEGIN PGP PUBLIC KEY BLOCK-----"
#define ARMOR_END "-----END PGP PUBLIC KEY BLOCK-----"
#define ARMOR_ANY "-----BEGIN PGP "

enum {
	TAG_SIGNATURE = 2,
	TAG_SECRET_KEY = 5,
	TAG_PUBLIC_KEY = 6,
	TAG_SECRET_SUBKEY = 7,
	TAG_TRUST = 12,
	TAG_USER_ID = 13,
	TAG_PUBLIC_SUBKEY = 14,
	TAG_USER_ATTRIBUTE = 17,
};

/* Say what is wrong in err (when there is one) and return R. */
_printf_(4, 5) static int fail(int r, char *err, size_t errsz, const char *fmt, ...)
{
	va_list ap;
	if (err && errsz) {
		va_start(ap, fmt);
		vsnprintf(err, errsz, fmt, ap);
		va_end(ap);
	}
	return r;
}
#define bad(...) fail(-EBADMSG, __VA_ARGS__)

static uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* --- ASCII armor (RFC 9580 section 6) --- */

struct text {
	const char *p;
	size_t len, pos, lineno;
};

/* The next line, without its newline and trailing blanks (so CRLF files
 * read the same); false at the end of the text. */
static bool next_line(struct text *t, const char **line, size_t *n)
{
	const char *s, *nl;
	size_t left;
	if (t->pos >= t->len)
		return false;
	s = t->p + t->pos;
	left = t->len - t->pos;
	nl = memchr(s, '\n', left);
	*n = nl ? (size_t)(nl - s) : left;
	t->pos += *n + (nl ? 1 : 0);
	t->lineno++;
	while (*n > 0 && (s[*n - 1] == '\r' || s[*n - 1] == ' ' || s[*n - 1] == '\t'))
		(*n)--;
	*line = s;
	return true;
}

static bool line_is(const char *line, size_t n, const char *s)
{
	return n == strlen(s) && memcmp(line, s, n) == 0;
}

static bool is_b64(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/';
}

static uint32_t crc24(const unsigned char *d, size_t n)
{
	uint32_t crc = 0xB704CE;
	for (size_t i = 0; i < n; i++) {
		crc ^= (uint32_t)d[i] << 16;
		for (int b = 0; b < 8; b++) {
			crc <<= 1;
			if (crc & 0x1000000)
				crc ^= 0x1864CFB;
		}
	}
	return crc & 0xFFFFFF;
}

/* base64 through OpenSSL's decoder: B64 (N characters, no newlines) into
 * OUT (at least N bytes). Returns the byte count or -EBADMSG. */
static int b64_decode(const char *b64, size_t n, unsigned char *out)
{
	EVP_ENCODE_CTX *c = EVP_ENCODE_CTX_new();
	int outl = 0, fin = 0, ok;
	if (!c)
		return -ENOMEM;
	EVP_DecodeInit(c);
	ok = EVP_DecodeUpdate(c, out, &outl, (const unsigned char *)b64, (int)n) >= 0 &&
	     EVP_DecodeFinal(c, out + outl, &fin) == 1;
	EVP_ENCODE_CTX_free(c);
	return ok ? outl + fin : -EBADMSG;
}

/* The first line: the public-key BEGIN line, after blank lines only. */
static int armor_begin(struct text *t, char *err, size_t errsz)
{
	const char *line;
	size_t n;
	do {
		if (!next_line(t, &line, &n))
			return bad(err, errsz, "not an OpenPGP key: only blank lines");
	} while (n == 0);
	if (line_is(line, n, ARMOR_BEGIN))
		return 0;
	if (n > strlen(ARMOR_ANY) && memcmp(line, ARMOR_ANY, strlen(ARMOR_ANY)) == 0) {
		if (memmem(line, n, "PRIVATE KEY", 11))
			return bad(err, errsz, "line %zu begins a PRIVATE key block: give gpuboot the public key only",
			           t->lineno);
		return bad(err, errsz, "line %zu begins an armored block that is not a PUBLIC KEY BLOCK", t->lineno);
	}
	return bad(err, errsz, "not an OpenPGP key: it starts with neither '" ARMOR_BEGIN "' (line %zu) nor a packet",
	           t->lineno);
}

/* Collect the base64 body (B64, *NB characters) and the CRC line, up to
 * and including the END line. */
static int armor_body(struct text *t, char *b64, size_t *nb, char crc[5], char *err, size_t errsz)
{
	const char *line;
	size_t n;
	bool headers = true;

	crc[0] = '\0';
	while (next_line(t, &line, &n)) {
		if (crc[0]) {
			if (line_is(line, n, ARMOR_END))
				return 0;
			return bad(err, errsz, "armor line %zu: the CRC line must be followed by '" ARMOR_END "'",
			           t->lineno);
		}
		if (headers) {
			/* "Version: ...", "Comment: ..." up to a blank line; a
			 * producer that leaves out the blank line starts the
			 * body at once (base64 has no ':') */
			if (n == 0 || !memchr(line, ':', n)) {
				headers = false;
				if (n == 0)
					continue;
			} else {
				continue;
			}
		}
		if (line_is(line, n, ARMOR_END))
			return 0;
		if (n > 0 && line[0] == '=') {
			if (n != 5 || !is_b64(line[1]) || !is_b64(line[2]) || !is_b64(line[3]) || !is_b64(line[4]))
				return bad(err, errsz, "armor line %zu: a CRC line is '=' and 4 base64 characters",
				           t->lineno);
			memcpy(crc, line + 1, 4);
			crc[4] = '\0';
			continue;
		}
		for (size_t i = 0; i < n; i++) {
			if (!is_b64(line[i]) && line[i] != '=')
				return bad(err, errsz, "armor line %zu: byte %zu is not base64", t->lineno, i + 1);
			b64[(*nb)++] = line[i];
		}
	}
	return bad(err, errsz, "truncated armor: no '" ARMOR_END "' line");
}

/* ASCII armor to binary: *ret (malloc'd) holds the decoded packets. */
static int dearmor(const char *text, size_t len, unsigned char **ret, size_t *ret_len, char *err, size_t errsz)
{
	struct text t = { text, len, 0, 0 };
	_cleanup_free_ char *b64 = NULL;
	_cleanup_free_ unsigned char *bin = NULL;
	char crc[5];
	size_t nb = 0;
	int r;

	r = armor_begin(&t, err, errsz);
	if (r < 0)
		return r;
	b64 = malloc(len);
	if (!b64)
		return fail(-ENOMEM, err, errsz, "out of memory");
	r = armor_body(&t, b64, &nb, crc, err, errsz);
	if (r < 0)
		return r;
	for (size_t i = t.pos; i < len; i++)
		if (text[i] != ' ' && text[i] != '\t' && text[i] != '\r' && text[i] != '\n')
			return bad(err, errsz, "trailing data after the END line (line %zu): one key per file",
			           t.lineno + 1);
	if (nb == 0)
		return bad(err, errsz, "the armor holds no data");
	bin = malloc(nb);
	r = bin ? b64_decode(b64, nb, bin) : -ENOMEM;
	if (r == -ENOMEM)
		return fail(r, err, errsz, "out of memory");
	if (r <= 0)
		return bad(err, errsz, "the armor's base64 is malformed (bad padding, or characters missing)");
	if (crc[0]) {
		unsigned char want[4];
		if (EVP_DecodeBlock(want, (const unsigned char *)crc, 4) != 3 ||
		    ((uint32_t)want[0] << 16 | (uint32_t)want[1] << 8 | want[2]) != crc24(bin, (size_t)r))
			return bad(err, errsz, "the armor's CRC24 does not match its data: the file is damaged");
	}
	*ret_len = (size_t)r;
	*ret = TAKE_PTR(bin);
	return 0;
}

/* --- packets (RFC 9580 section 4.2) --- */

struct pkt {
	unsigned idx, tag;
	size_t off, hlen, len;
	const unsigned char *body;
};

/* The new-format length at D (LEFT bytes): octets used in *hl, length in
 * *bl; 1 for a partial length, 0, or -1 when it runs past the end. */
static int new_length(const unsigned char *d, size_t left, size_t *hl, size_t *bl)
{
	if (left < 1)
		return -1;
	if (d[0] < 192) {
		*hl = 1;
		*bl = d[0];
	} else if (d[0] < 224) {
		if (left < 2)
			return -1;
		*hl = 2;
		*bl = ((size_t)(d[0] - 192) << 8) + d[1] + 192;
	} else if (d[0] == 255) {
		if (left < 5)
			return -1;
		*hl = 5;
		*bl = be32(d + 1);
	} else {
		*hl = 1;
		*bl = (size_t)1 << (d[0] & 0x1f);
		return 1;
	}
	return 0;
}

/* The packet at d[off]: its header read and its body inside the data. */
static int packet_at(const unsigned char *d, size_t len, size_t off, struct pkt *p, char *err, size_t errsz)
{
	size_t left = len - off, hl = 0, bl = 0;
	unsigned c = d[off];
	int partial = 0;

	p->off = off;
	if (!(c & 0x80))
		return bad(err, errsz, "byte 0x%02x at offset %zu is not an OpenPGP packet header (trailing data?)", c,
		           off);
	if (c & 0x40) {
		p->tag = c & 0x3f;
		partial = new_length(d + off + 1, left - 1, &hl, &bl);
		hl++;
	} else {
		static const size_t octets[] = { 1, 2, 4 };
		p->tag = (c >> 2) & 0xf;
		if ((c & 3) == 3) { /* indeterminate: to the end of the data */
			hl = 1;
			bl = left - 1;
		} else if (left < 1 + octets[c & 3]) {
			partial = -1;
		} else {
			hl = 1 + octets[c & 3];
			for (size_t i = 1; i < hl; i++)
				bl = bl << 8 | d[off + i];
		}
	}
	if (partial < 0)
		return bad(err, errsz, "packet %u at offset %zu: truncated header", p->idx, off);
	if (p->tag == 0)
		return bad(err, errsz, "packet %u at offset %zu has the reserved tag 0", p->idx, off);
	if (partial)
		return bad(err, errsz,
		           "packet %u (tag %u) at offset %zu has a partial body length, which no key packet may use",
		           p->idx, p->tag, off);
	if (bl > left - hl)
		return bad(err, errsz,
		           "packet %u (tag %u) at offset %zu: its body of %zu bytes runs past the end (%zu left)",
		           p->idx, p->tag, off, bl, left - hl);
	p->hlen = hl;
	p->len = bl;
	p->body = d + off + hl;
	return 0;
}

/* A primary key or subkey body: version 4 and its fixed fields present. */
static int key_body(const struct pkt *p, const char *what, char *err, size_t errsz)
{
	if (p->len < 6)
		return bad(err, errsz, "the %s at offset %zu has a body of %zu bytes, too short for a key", what,
		           p->off, p->len);
	if (p->body[0] == 4)
		return 0;
	if (p->body[0] == 2 || p->body[0] == 3)
		return bad(
		    err, errsz,
		    "the %s at offset %zu is a version %u key (PGP 2, MD5 fingerprints): only version 4 is accepted",
		    what, p->off, (unsigned)p->body[0]);
	if (p->body[0] == 5 || p->body[0] == 6)
		return bad(err, errsz, "the %s at offset %zu is a version %u key: only version 4 is accepted", what,
		           p->off, (unsigned)p->body[0]);
	return bad(err, errsz, "the %s at offset %zu has the unknown key version %u", what, p->off,
	           (unsigned)p->body[0]);
}

/* The v4 fingerprint: SHA-1 over 0x99, the two-octet body length, the body. */
static int fingerprint(const struct pkt *p, struct gb_pgp_key *k, char *err, size_t errsz)
{
	unsigned char hdr[3] = { 0x99, (unsigned char)(p->len >> 8), (unsigned char)p->len };
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned mdlen = 0;
	EVP_MD_CTX *c;
	bool ok;

	if (p->len > 0xffff)
		return bad(err, errsz, "the primary key's body of %zu bytes is too long for a v4 fingerprint", p->len);
	c = EVP_MD_CTX_new();
	ok = c && EVP_DigestInit_ex(c, EVP_sha1(), NULL) == 1 && EVP_DigestUpdate(c, hdr, sizeof(hdr)) == 1 &&
	     EVP_DigestUpdate(c, p->body, p->len) == 1 && EVP_DigestFinal_ex(c, md, &mdlen) == 1 && mdlen == 20;
	EVP_MD_CTX_free(c);
	if (!ok)
		return fail(-EIO, err, errsz,
		            "SHA-1 is not available from OpenSSL: cannot compute the key's fingerprint");
	gb_hex_encode(md, 20, k->fpr, sizeof(k->fpr));
	for (char *s = k->fpr; *s; s++)
		if (*s >= 'a' && *s <= 'f')
			*s = (char)(*s - 'a' + 'A');
	memcpy(k->key_id, k->fpr + 24, 16);
	k->key_id[16] = '\0';
	k->created = be32(p->body + 1);
	k->algo = p->body[5];
	return 0;
}

/* The length of the UTF-8 character at S (N bytes left) and its code point
 * in *cp; 0 when it is malformed (overlong, surrogate, cut short). */
static size_t utf8_char(const unsigned char *s, size_t n, uint32_t *cp)
{
	size_t len;
	uint32_t min;
	if (s[0] < 0x80) {
		*cp = s[0];
		return 1;
	}
	if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		len = 2;
		min = 0x80;
		*cp = s[0] & 0x1f;
	} else if ((s[0] & 0xf0) == 0xe0) {
		len = 3;
		min = 0x800;
		*cp = s[0] & 0x0f;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		len = 4;
		min = 0x10000;
		*cp = s[0] & 0x07;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		*cp = *cp << 6 | (s[i] & 0x3f);
	}
	if (*cp < min || *cp > 0x10ffff || (*cp >= 0xd800 && *cp <= 0xdfff))
		return 0;
	return len;
}

/* The user ID as text fit to log: control characters (C0, DEL, C1) and
 * malformed UTF-8 become '?', cut at a character boundary. */
static void uid_copy(char *out, size_t outsz, const unsigned char *s, size_t n)
{
	size_t o = 0;
	for (size_t i = 0; i < n;) {
		uint32_t cp = 0;
		size_t cl = utf8_char(s + i, n - i, &cp);
		bool ctl = cl == 0 || cp < 0x20 || (cp >= 0x7f && cp < 0xa0);
		if (o + (ctl ? 1 : cl) >= outsz)
			break;
		if (ctl) {
			out[o++] = '?';
			i += cl ? cl : 1;
		} else {
			memcpy(out + o, s + i, cl);
			o += cl;
			i += cl;
		}
	}
	out[o] = '\0';
}

/* Walk the packets of one transferable public key (RFC 9580 section 10.1). */
static int parse_packets(const unsigned char *d, size_t len, struct gb_pgp_key *k, char *err, size_t errsz)
{
	const char *pending = NULL; /* a user ID or subkey still owed its signature */
	size_t pending_off = 0;
	struct pkt p = { 0 };
	int r;

	for (size_t off = 0; off < len; off += p.hlen + p.len) {
		p.idx++;
		r = packet_at(d, len, off, &p, err, errsz);
		if (r < 0)
			return r;
		if (p.tag == TAG_SECRET_KEY || p.tag == TAG_SECRET_SUBKEY)
			return bad(err, errsz,
			           "packet %u at offset %zu is secret key material: give gpuboot the public key only",
			           p.idx, off);
		if (p.idx == 1 && p.tag != TAG_PUBLIC_KEY)
			return bad(err, errsz, "not a public key: the first packet has tag %u, not 6 (public key)",
			           p.tag);
		if (pending && p.tag != TAG_SIGNATURE && p.tag != TAG_TRUST)
			return bad(err, errsz, "the %s at offset %zu is not followed by a signature", pending,
			           pending_off);
		switch (p.tag) {
		case TAG_PUBLIC_KEY:
			if (p.idx != 1)
				return bad(err, errsz,
				           "more than one primary key (a second at offset %zu): give one key per file",
				           off);
			r = key_body(&p, "primary key", err, errsz);
			if (r >= 0)
				r = fingerprint(&p, k, err, errsz);
			if (r < 0)
				return r;
			break;
		case TAG_PUBLIC_SUBKEY:
			r = key_body(&p, "subkey", err, errsz);
			if (r < 0)
				return r;
			k->n_subkeys++;
			pending = "subkey";
			pending_off = off;
			break;
		case TAG_USER_ID:
			if (k->n_uids++ == 0)
				uid_copy(k->uid, sizeof(k->uid), p.body, p.len);
			pending = "user ID";
			pending_off = off;
			break;
		case TAG_USER_ATTRIBUTE:
			pending = "user attribute";
			pending_off = off;
			break;
		case TAG_SIGNATURE: pending = NULL; break;
		case TAG_TRUST: break;
		default:
			return bad(err, errsz, "packet %u at offset %zu has tag %u, which has no place in a public key",
			           p.idx, off, p.tag);
		}
	}
	if (p.idx == 0)
		return bad(err, errsz, "no OpenPGP packets");
	if (pending)
		return bad(err, errsz, "the %s at offset %zu ends the key without its signature (truncated?)", pending,
		           pending_off);
	if (k->n_uids == 0)
		return bad(err, errsz, "the key has no user ID (truncated?)");
	return 0;
}

int gb_pgp_key_read(const void *data, size_t len, struct gb_pgp_key *ret, char *err, size_t errsz)
{
	_cleanup_free_ unsigned char *bin = NULL;
	struct gb_pgp_key k = { 0 };
	size_t bin_len = 0;
	int r;

	if (err && errsz)
		err[0] = '\0';
	if (!data || len == 0)
		return bad(err, errsz, "empty: no key");
	if (len > GB_PGP_MAX_INPUT)
		return fail(-EFBIG, err, errsz, "%zu bytes, more than a key file may hold (%d)", len, GB_PGP_MAX_INPUT);
	if (((const unsigned char *)data)[0] & 0x80) {
		bin = malloc(len);
		if (!bin)
			return fail(-ENOMEM, err, errsz, "out of memory");
		memcpy(bin, data, len);
		bin_len = len;
	} else {
		r = dearmor(data, len, &bin, &bin_len, err, errsz);
		if (r < 0)
			return r;
		k.armored = true;
	}
	r = parse_packets(bin, bin_len, &k, err, errsz);
	if (r < 0)
		return r;
	k.bin = TAKE_PTR(bin);
	k.bin_len = bin_len;
	*ret = k;
	return 0;
}

void gb_pgp_key_free(struct gb_pgp_key *k)
{
	if (!k)
		return;
	free(k->bin);
	k->bin = NULL;
	k->bin_len = 0;
}

/* The 40 hex digits of S, upper case, spaces skipped; false unless exactly 40. */
static bool fpr_digits(const char *s, char out[40])
{
	size_t n = 0;
	for (; *s; s++) {
		char c = *s;
		if (c == ' ')
			continue;
		if (c >= 'a' && c <= 'f')
			c = (char)(c - 'a' + 'A');
		if (!((c >= '0' && c <= '9') || (c >= 'A' && c <= 'F')) || n == 40)
			return false;
		out[n++] = c;
	}
	return n == 40;
}

bool gb_pgp_fpr_equal(const char *a, const char *b)
{
	char x[40], y[40];
	return a && b && fpr_digits(a, x) && fpr_digits(b, y) && memcmp(x, y, sizeof(x)) == 0;
}

int gb_pgp_armor(const unsigned char *bin, size_t len, char **ret, size_t *ret_len)
{
	static const char head[] = "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\n";
	static const char tail[] = "-----END PGP PUBLIC KEY BLOCK-----\n";
	unsigned char crc[3];
	uint32_t c;
	size_t cap, o;
	char *out;

	if (!bin || len == 0 || len > GB_PGP_MAX_INPUT)
		return -EINVAL;
	/* 48 bytes make a 64-column line of base64 (65 with its newline) */
	cap = sizeof(head) + (len / 48 + 1) * 65 + 8 + sizeof(tail);
	out = malloc(cap);
	if (!out)
		return -ENOMEM;
	o = (size_t)snprintf(out, cap, "%s", head);
	for (size_t i = 0; i < len; i += 48) {
		size_t n = len - i < 48 ? len - i : 48;
		o += (size_t)EVP_EncodeBlock((unsigned char *)out + o, bin + i, (int)n);
		out[o++] = '\n';
	}
	c = crc24(bin, len);
	crc[0] = (unsigned char)(c >> 16), crc[1] = (unsigned char)(c >> 8), crc[2] = (unsigned char)c;
	out[o++] = '=';
	o += (size_t)EVP_EncodeBlock((unsigned char *)out + o, crc, 3);
	out[o++] = '\n';
	o += (size_t)snprintf(out + o, cap - o, "%s", tail);
	*ret = out;
	*ret_len = o;
	return 0;
}
