/* SPDX-License-Identifier: MIT */
/* fetch: download artifacts (libcurl multi, several at once), hash them as
 * the bytes arrive (OpenSSL), check size and sha256, and only then move them
 * under their final name in the content-addressed cache. Nothing unverified
 * ever reaches the cache. */
#pragma once

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct gb_ctx;

struct gb_artifact {
	char name[128]; /* for messages: "driver runfile 580.173.02" */
	char url[1024]; /* https://... or file:///... */
	char path[512]; /* path in the upstream layout ("XFree86/Linux-x86_64/...") */
	char sha256[65];
	unsigned long long size;
	/* results */
	char cache_path[1024]; /* <state>/cache/sha256/<hex> once verified */
	/* True only once gb_fetch_all has checked size and sha256 and the file
	 * is in the cache under cache_path. The one field that says "verified":
	 * an artifact never attempted has it false, whatever else it holds. */
	bool verified;
	int result; /* GB_ARTIFACT_PENDING until decided, 0 when verified, else a negative errno */
	char error[320];
	unsigned attempts;
	bool from_cache; /* verified from an entry already in the cache */
	bool in_cache; /* an entry exists under its sha256 (not checked: for listings) */
	double seconds;
};

/* result of an artifact nothing has decided yet (never attempted). */
#define GB_ARTIFACT_PENDING (-EINPROGRESS)

struct gb_fetch_opts {
	const char *state_dir;
	const char *ca_file;
	const char *proxy;
	unsigned parallel; /* transfers at once (default 4) */
	unsigned max_attempts; /* per artifact (default 6) */
	unsigned deadline_s; /* for everything (default 3600) */
	unsigned low_speed_s; /* abort a transfer slower than 1 KiB/s for this long (default 30) */
	unsigned backoff_ms; /* first retry delay (default 1000) */
	bool offline; /* only the cache and file:// */
	bool allow_http; /* plain http for a signed mirror (its manifest is verified, every artifact hashed) */
	bool dry_run; /* resolve and list only: write nothing anywhere (gb_fetch_all refuses it) */
	bool background; /* beside other work: progress as log lines, never redrawn on a terminal */
	const atomic_bool *cancel; /* set by another thread: every undecided artifact fails (-ECANCELED) */
};

/* curl_global_init, once per process and thread-safe; 0 or -EIO. */
int gb_fetch_global_init(void);

void gb_fetch_opts_default(struct gb_fetch_opts *o, const char *state_dir);

/* Fetch every artifact. Returns 0 when all are verified in the cache, else
 * a negative errno; each artifact's verified, result and error say what
 * happened (an artifact it never reached is marked failed with the reason).
 * -EINVAL with o->dry_run: a dry run fetches nothing. */
int gb_fetch_all(struct gb_ctx *ctx, struct gb_artifact *a, size_t n, const struct gb_fetch_opts *o);

/* A dry run's listing: one line per artifact with its name, size, sha256,
 * URL, and "cached" when an entry for its sha256 is already in the cache
 * (in_cache: present, to be hashed again when fetched) or "to-fetch". */
void gb_fetch_print_list(const struct gb_artifact *a, size_t n, FILE *out);

/* The cache: <state>/cache/sha256/<hex>. An entry is used only after it is
 * hashed again in full and matches; an altered or truncated one is removed. */
int gb_cache_lookup(const char *state_dir, const char *sha256, unsigned long long size, char *ret_path, size_t n);
/* Is there an entry under that name at all (not verified: a cheap check)? */
bool gb_cache_has(const char *state_dir, const char *sha256);

/* A small document (a manifest, a signature, a .sha256sum) into memory,
 * with the same protocol rules, at most max bytes. */
int gb_fetch_small(const char *url, const char *ca_file, bool allow_http, size_t max, char **ret, size_t *ret_len,
                   long *ret_http, char *err, size_t errsz);
