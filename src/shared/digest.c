/* SPDX-License-Identifier: MIT */
#include "digest.h"

#include <ctype.h>
#include <errno.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shared/macro.h"

int gb_sha256_init(struct gb_sha256 *h)
{
	EVP_MD_CTX *c = EVP_MD_CTX_new();

	h->md = NULL; /* gb_sha256_done is safe after a failed init */
	if (!c)
		return -ENOMEM;
	if (EVP_DigestInit_ex(c, EVP_sha256(), NULL) != 1) {
		EVP_MD_CTX_free(c);
		return -EIO;
	}
	h->md = c;
	return 0;
}

int gb_sha256_update(struct gb_sha256 *h, const void *data, size_t len)
{
	return EVP_DigestUpdate(h->md, data, len) == 1 ? 0 : -EIO;
}

int gb_sha256_final(struct gb_sha256 *h, char hex[65])
{
	unsigned char d[32];
	unsigned n = 0;
	static const char x[] = "0123456789abcdef";
	if (EVP_DigestFinal_ex(h->md, d, &n) != 1 || n != 32)
		return -EIO;
	for (unsigned i = 0; i < 32; i++) {
		hex[2 * i] = x[d[i] >> 4];
		hex[2 * i + 1] = x[d[i] & 15];
	}
	hex[64] = '\0';
	return 0;
}

void gb_sha256_done(struct gb_sha256 *h)
{
	EVP_MD_CTX_free(h->md);
	h->md = NULL;
}

int gb_sha256_file(int fd, char hex[65], unsigned long long *ret_size)
{
	struct gb_sha256 h;
	/* the caller's own buffer, not a static one: the background fetch
	 * thread and the install's journaled writes hash at the same time */
	const size_t bufsz = 1u << 20;
	unsigned char *buf = malloc(bufsz);
	unsigned long long total = 0;
	int r;

	if (!buf)
		return -ENOMEM;
	r = gb_sha256_init(&h);
	if (r < 0) {
		free(buf);
		return r;
	}
	for (;;) {
		ssize_t n = read(fd, buf, bufsz);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			r = negative_errno();
			break;
		}
		if (n == 0) {
			r = gb_sha256_final(&h, hex);
			break;
		}
		total += (unsigned long long)n;
		r = gb_sha256_update(&h, buf, (size_t)n);
		if (r < 0)
			break;
	}
	gb_sha256_done(&h);
	free(buf);
	if (r >= 0 && ret_size)
		*ret_size = total;
	return r;
}

bool gb_sha256_valid(const char *hex)
{
	if (!hex || strlen(hex) != 64)
		return false;
	for (const char *p = hex; *p; p++)
		if (!isdigit((unsigned char)*p) && !(*p >= 'a' && *p <= 'f'))
			return false;
	return true;
}
