/* SPDX-License-Identifier: MIT */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "fetch.h"

struct gb_ctx;
struct gb_plan;
struct gb_manifest;

struct gb_fetch_source {
	const char *mirror; /* a mirror URL (https:// or file://), or NULL */
	const char *upstream; /* a base replacing NVIDIA's hosts, or NULL */
	char *const *trust_keys;
	const char *ca_file;
	/* the site's rollback floor ([trust] min_mirror_version): a manifest
	 * older than it is refused even by a state directory that has seen
	 * none (a first boot); 0 = none */
	uint64_t min_mirror_version;
};

/* The artifacts the plan needs, resolved and fetched (CUDA's manifest is
 * fetched and verified here, the rest is listed for gb_fetch_all). 0, or a
 * negative errno with err; with o->dry_run, 1 when CUDA's manifest could
 * not be read (no network): the list holds what is known without it (the
 * runfile, the manifest by its pinned sha256) and err says what is not. */
int gb_fetch_for_plan(struct gb_ctx *ctx, const struct gb_plan *p, const struct gb_fetch_source *src,
                      const struct gb_fetch_opts *o, struct gb_artifact **ret, size_t *ret_n, char *err, size_t errsz);

/* The mirror's signed manifest: from the mirror, or (--offline, a remote
 * mirror) the verified copy kept from an online run; checked either way
 * (signature, expiry, rollback), its version recorded (not in a dry run).
 * A negative errno with err. */
int gb_fetch_mirror_manifest(struct gb_ctx *ctx, const struct gb_fetch_source *src, const struct gb_fetch_opts *o,
                             struct gb_manifest *ret, char *err, size_t errsz);

/* DIR's manifest as its publisher reads it before adding to it: none (an
 * empty manifest, 0), or one signed by SIGN_KEY itself and unaltered
 * (Ed25519 signatures are deterministic: signing its text again gives the
 * same signature), parsed. -EPERM when it is another key's or altered,
 * -EBADMSG when unreadable, with err. */
int gb_mirror_load_own(const char *dir, const char *sign_key, struct gb_manifest *ret, char *err, size_t errsz);

/* Sign M (version: VERSION, else the time; never below M's own version
 * + 1; expires in 90 days) and write DIR/manifest.json and .sig. */
int gb_mirror_publish(struct gb_ctx *ctx, const char *dir, struct gb_manifest *m, const char *sign_key,
                      uint64_t version, char *err, size_t errsz);

/* Copy verified artifacts into DIR in the upstream layout and write the
 * signed manifest (manifest.json, manifest.json.sig). */
/* The prebuilt modules of DIR's own manifest (gb_mirror_load_own) are
 * carried over, with their artifacts, where their files are still there. */
int gb_mirror_write(struct gb_ctx *ctx, const char *dir, const struct gb_artifact *a, size_t n, const char *sign_key,
                    uint64_t version, char *err, size_t errsz);
