/* SPDX-License-Identifier: MIT */
/* A signed catalog update (docs/catalog.md): catalog.json and
 * catalog.json.sig, under the same Ed25519, expiry and rollback rules as
 * the mirror manifest. Verified and read here; put in force by the catalog
 * (gb_catalog_apply_update). */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "catalog/catalog.h"

#define GB_CATALOG_FILE_MAX (4u << 20)

struct gb_catalog_file {
	struct gb_catalog_update u; /* its strings point into root */
	json_object *root;
	struct gb_branch *branches;
	struct gb_runfile *runfiles;
	const char **sources;
	char expires[32], key_id[40];
	char *text, *sig; /* the exact bytes and signature, kept to store them */
	size_t len;
};
void gb_catalog_file_done(struct gb_catalog_file *f);

/* Verify sig_hex over text with one of keys, then parse: the format,
 * version (at least min_version: rollback), expiry (now_s) and rows read
 * (the rows are checked against the built-in by gb_catalog_apply_update).
 * origin names it in messages and in the plan. 0, or a negative errno with
 * err (what is wrong) and fix (what to do) filled. Takes copies of text
 * and sig_hex. */
int gb_catalog_file_verify(const char *origin, const char *text, size_t len, const char *sig_hex, char *const *keys,
                           uint64_t now_s, uint64_t min_version, struct gb_catalog_file *ret, char *err, size_t errsz,
                           char *fix, size_t fixsz);

/* Where catalog updates come from, for gb_catalog_load. */
struct gb_catalog_sources {
	const char *file; /* --catalog FILE (FILE.sig beside it), or NULL */
	const char *mirror; /* a mirror whose catalog.json(.sig) to read, or NULL */
	const char *ca_file;
	bool allow_http, offline;
	const char *state_dir; /* the accepted one and its version (the rollback floor); NULL: none */
	uint64_t site_floor; /* [trust] min_catalog_version: older updates are refused, on a first boot too; 0: none */
	bool store; /* keep a newly accepted one in state_dir (run, repair; never a dry run) */
	char *const *keys; /* the trusted keys, NULL-terminated */
	uint64_t now_s;
};

/* Read every candidate (the stored one, FILE, the mirror's), put the newest
 * valid one in force, and note each refused one (gb_catalog_note_refusal,
 * a warning logged): a refusal never stops the caller, the catalog in
 * force (the built-in, or the stored one) stays. Returns 0, or -ENOMEM. */
int gb_catalog_load(const struct gb_catalog_sources *s);

/* <state>/catalog-version: the version of the last update accepted here. */
int gb_catalog_version_load(const char *state_dir, uint64_t *ret, char *err, size_t errsz);
