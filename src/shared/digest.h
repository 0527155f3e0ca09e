/* SPDX-License-Identifier: MIT */
/* SHA-256 through OpenSSL EVP, streaming. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

struct gb_sha256 {
	void *md; /* EVP_MD_CTX */
};

/* 0, or -ENOMEM / -EIO; gb_sha256_done is safe after either (h->md NULL). */
int gb_sha256_init(struct gb_sha256 *h);
int gb_sha256_update(struct gb_sha256 *h, const void *data, size_t len);
/* Finish into 65 bytes of lowercase hex. */
int gb_sha256_final(struct gb_sha256 *h, char hex[65]);
void gb_sha256_done(struct gb_sha256 *h);

/* Hash a whole file; *ret_size is its size. */
int gb_sha256_file(int fd, char hex[65], unsigned long long *ret_size);

bool gb_sha256_valid(const char *hex);
