/* SPDX-License-Identifier: MIT */
/* The signed catalog update (docs/catalog.md): verified with the mirror's
 * keys (sig.c), read into rows, and the newest valid one of the stored
 * copy, --catalog FILE and the mirror's put in force. */
#include "catalog-file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fetch.h"
#include "manifest.h"
#include "shared/fileio.h"
#include "shared/json-util.h"
#include "shared/log.h"
#include "shared/macro.h"
#include "shared/tls.h"
#include "shared/util.h"
#include "shared/redact.h"
#include "sig.h"

#define SIG_MAX 1024

void gb_catalog_file_done(struct gb_catalog_file *f)
{
	json_object_put(f->root);
	free(f->branches);
	free(f->runfiles);
	free(f->sources);
	free(f->text);
	free(f->sig);
	memset(f, 0, sizeof(*f));
}

/* An integer member, 0 when absent or not one. */
static int64_t get_int(json_object *o, const char *k)
{
	json_object *v = gb_json_get(o, k);
	return v && json_object_is_type(v, json_type_int) ? json_object_get_int64(v) : 0;
}

/* An array member of at most max items; NULL (and *n 0) when absent. */
static json_object *get_array(json_object *o, const char *k, size_t max, size_t *n, bool *bad)
{
	json_object *a = gb_json_get(o, k);
	*n = 0;
	if (!a)
		return NULL;
	if (!json_object_is_type(a, json_type_array) || gb_json_len(a) > max) {
		*bad = true;
		return NULL;
	}
	*n = gb_json_len(a);
	return a;
}

static int branch_type(const char *s, enum gb_branch_type *ret)
{
	static const char *const names[] = { [GB_BRANCH_LTSB] = "ltsb",
		                             [GB_BRANCH_PRODUCTION] = "production",
		                             [GB_BRANCH_NEW_FEATURE] = "new-feature",
		                             [GB_BRANCH_LEGACY] = "legacy" };
	for (size_t i = 0; s && i < ARRAY_SIZE(names); i++)
		if (streq(s, names[i])) {
			*ret = (enum gb_branch_type)i;
			return 0;
		}
	return -EINVAL;
}

/* The rows, their strings borrowed from the JSON; the catalog checks them. */
static int read_rows(struct gb_catalog_file *f, char *err, size_t errsz)
{
	bool bad = false;
	size_t ns, nb, nr;
	json_object *s = get_array(f->root, "sources", GB_CATALOG_MAX_SOURCES, &ns, &bad),
	            *b = get_array(f->root, "branches", GB_CATALOG_MAX_BRANCHES, &nb, &bad),
	            *r = get_array(f->root, "runfiles", GB_CATALOG_MAX_RUNFILES, &nr, &bad);

	if (bad) {
		snprintf(err, errsz, "sources, branches or runfiles is not a list, or longer than %d, %d, %d",
		         GB_CATALOG_MAX_SOURCES, GB_CATALOG_MAX_BRANCHES, GB_CATALOG_MAX_RUNFILES);
		return -EBADMSG;
	}
	f->sources = calloc(ns + 1, sizeof(*f->sources));
	f->branches = calloc(nb + 1, sizeof(*f->branches));
	f->runfiles = calloc(nr + 1, sizeof(*f->runfiles));
	if (!f->sources || !f->branches || !f->runfiles)
		return -ENOMEM;
	for (size_t i = 0; i < ns; i++)
		f->sources[i] = json_object_is_type(gb_json_idx(s, i), json_type_string)
		                    ? json_object_get_string(gb_json_idx(s, i))
		                    : NULL;
	for (size_t i = 0; i < nb; i++) {
		json_object *o = gb_json_idx(b, i);
		int64_t n = get_int(o, "branch");
		if (n < 1 || n > 99999 || branch_type(gb_json_get_str(o, "type"), &f->branches[i].type) < 0) {
			snprintf(err, errsz,
			         "branch %zu: needs a branch number and a type (ltsb, production, "
			         "new-feature, legacy)",
			         i);
			return -EBADMSG;
		}
		f->branches[i].branch = (unsigned)n;
		f->branches[i].eol = gb_json_get_str(o, "end_of_life");
		f->branches[i].min_kernel = gb_json_get_str(o, "min_kernel");
	}
	for (size_t i = 0; i < nr; i++) {
		json_object *o = gb_json_idx(r, i);
		int64_t size = get_int(o, "size");
		f->runfiles[i] =
		    (struct gb_runfile){ gb_json_get_str(o, "version"),           gb_json_get_str(o, "arch"),
			                 gb_json_get_str(o, "category"),          gb_json_get_str(o, "sha256"),
			                 size > 0 ? (unsigned long long)size : 0, gb_json_get_str(o, "url") };
	}
	f->u.sources = f->sources;
	f->u.n_sources = ns;
	f->u.branches = f->branches;
	f->u.n_branches = nb;
	f->u.runfiles = f->runfiles;
	f->u.n_runfiles = nr;
	f->u.ctk_min = gb_json_get_str(f->root, "container_toolkit_min");
	f->u.ctk_min_cve = gb_json_get_str(f->root, "container_toolkit_min_cve");
	f->u.ctk_min_why = gb_json_get_str(f->root, "container_toolkit_min_why");
	return 0;
}

/* The document's head: format, version, date, expiry. */
static int read_head(struct gb_catalog_file *f, uint64_t now_s, uint64_t min_version, char *err, size_t errsz,
                     char *fix, size_t fixsz)
{
	const char *fmt = gb_json_get_str(f->root, "format"), *exp = gb_json_get_str(f->root, "expires");
	int64_t v = get_int(f->root, "version");
	uint64_t e = 0;

	snprintf(fix, fixsz, "correct the file and sign it again (docs/catalog.md)");
	if (!fmt || !streq(fmt, "gpuboot-catalog") || get_int(f->root, "format_version") != 1) {
		snprintf(err, errsz, "not a gpuboot-catalog document of format_version 1");
		return -EBADMSG;
	}
	if (v < 1) {
		snprintf(err, errsz, "no version number");
		return -EBADMSG;
	}
	f->u.version = (uint64_t)v;
	f->u.date = gb_json_get_str(f->root, "date");
	if ((uint64_t)v < min_version) {
		snprintf(err, errsz, "version %lld is older than version %llu already accepted here (rollback refused)",
		         (long long)v, (unsigned long long)min_version);
		snprintf(fix, fixsz, "serve a catalog of version %llu or newer", (unsigned long long)min_version);
		return -ESTALE;
	}
	if (gb_iso_to_epoch(exp, &e) < 0) {
		snprintf(err, errsz, "no valid expiry time (expires: YYYY-MM-DDTHH:MM:SSZ)");
		return -EBADMSG;
	}
	if (e <= now_s) {
		snprintf(err, errsz, "expired at %s", exp);
		snprintf(fix, fixsz, "sign it again with a later expires (docs/catalog.md)");
		return -ETIME;
	}
	gb_strscpy(f->expires, sizeof(f->expires), exp);
	return 0;
}

int gb_catalog_file_verify(const char *origin, const char *text, size_t len, const char *sig_hex, char *const *keys,
                           uint64_t now_s, uint64_t min_version, struct gb_catalog_file *ret, char *err, size_t errsz,
                           char *fix, size_t fixsz)
{
	struct gb_catalog_file f = { 0 };
	int r;

	snprintf(fix, fixsz, "sign it with a key this machine trusts: [trust] key in gpuboot.conf or --trust-key");
	if (!sig_hex) {
		snprintf(err, errsz, "it is unsigned (no %s.sig beside it)", origin);
		snprintf(fix, fixsz,
		         "sign it: %s.sig holds the hex Ed25519 signature of its exact bytes (docs/catalog.md)",
		         origin);
		return -ENOKEY;
	}
	r = gb_sig_verify("catalog", text, len, sig_hex, keys, f.key_id, err, errsz);
	if (r < 0)
		return r;
	if (len > GB_CATALOG_FILE_MAX || memchr(text, '\0', len) || gb_json_parse(text, len, 8, &f.root) < 0 ||
	    !json_object_is_type(f.root, json_type_object)) {
		snprintf(err, errsz, "not a JSON object");
		snprintf(fix, fixsz, "correct the file and sign it again (docs/catalog.md)");
		gb_catalog_file_done(&f);
		return -EBADMSG;
	}
	r = read_head(&f, now_s, min_version, err, errsz, fix, fixsz);
	if (r >= 0)
		r = read_rows(&f, err, errsz);
	f.u.origin = origin;
	f.text = r >= 0 ? malloc(len + 1) : NULL;
	f.sig = r >= 0 ? strdup(sig_hex) : NULL;
	if (r >= 0 && (!f.text || !f.sig))
		r = -ENOMEM;
	if (r < 0) {
		ret->u.version = f.u.version;
		gb_catalog_file_done(&f);
		return r;
	}
	memcpy(f.text, text, len);
	f.text[len] = '\0';
	f.len = len;
	*ret = f;
	return 0;
}

int gb_catalog_version_load(const char *state_dir, uint64_t *ret, char *err, size_t errsz)
{
	_cleanup_free_ char *text = NULL;
	char path[1024];
	size_t len = 0;
	int r;

	*ret = 0;
	snprintf(path, sizeof(path), "%s/catalog-version", state_dir);
	r = gb_read_file(path, 64, &text, &len);
	if (r == -ENOENT)
		return 0;
	if (r < 0 || len == 0 || memchr(text, '\0', len) || gb_safe_atou64(text, 10, ret) < 0) {
		snprintf(err, errsz,
		         "%s cannot be read or is garbled (not a decimal version): it records the last catalog update "
		         "accepted here, against rollback; write the version of the newest one you trust into it",
		         path);
		return r < 0 ? r : -EBADMSG;
	}
	return 0;
}

/* ---- the candidates, and the newest valid one in force ---- */

#define MAX_CANDIDATES 3

/* A refusal, logged and in the plan's warnings: a mirror URL's credentials
 * (and those in an error that quotes it) never reach the plan's text, which
 * is not one of the redacting sinks. */
static void refused(const char *origin, const char *why, const char *fix)
{
	char raw[600], text[600];
	snprintf(raw, sizeof(raw), "catalog update %s refused: %s", origin, why);
	gb_redact_urls(raw, text, sizeof(text));
	gb_log_warning("%s; the catalog in force stays; fix: %s", text, fix);
	gb_catalog_note_refusal(text, fix);
}

/* Read one candidate's bytes and signature: a file, or a mirror's URL.
 * -ENOENT when there is no catalog there (a mirror or state without one);
 * sig NULL when the document has none. */
static int read_candidate(const struct gb_catalog_sources *s, const char *where, bool url, char **text, size_t *len,
                          char **sig, char *err, size_t errsz)
{
	char sig_where[1100];
	size_t slen = 0;
	int r;

	snprintf(sig_where, sizeof(sig_where), "%s.sig", where);
	if (url) {
		r = gb_fetch_small(where, s->ca_file, s->allow_http, GB_CATALOG_FILE_MAX, text, len, NULL, err, errsz);
		if (r >= 0 &&
		    gb_fetch_small(sig_where, s->ca_file, s->allow_http, SIG_MAX, sig, &slen, NULL, err, errsz) < 0)
			*sig = NULL;
		return r;
	}
	r = gb_read_file(where, GB_CATALOG_FILE_MAX, text, len);
	if (r < 0 && r != -ENOENT)
		snprintf(err, errsz, "cannot be read (%s)", strerror(-r));
	if (r >= 0 && gb_read_file(sig_where, SIG_MAX, sig, &slen) < 0)
		*sig = NULL;
	return r;
}

/* One candidate verified into f: 1 when valid, 0 when there is none there
 * or it was refused (noted). */
static int candidate(const struct gb_catalog_sources *s, const char *where, const char *shown, bool url,
                     bool must_exist, uint64_t floor, struct gb_catalog_file *f)
{
	_cleanup_free_ char *text = NULL, *sig = NULL;
	char err[512] = "", fix[256] = "";
	const char *missing = "?";
	size_t len = 0;
	int r;

	r = read_candidate(s, where, url, &text, &len, &sig, err, sizeof(err));
	if (r == -ENOENT && !must_exist) {
		gb_log_debug("No catalog update at %s", shown);
		return 0;
	}
	if (r < 0) {
		refused(shown, err[0] ? err : "it cannot be read", "check the path or the mirror");
		return r == -ENOMEM ? r : 0;
	}
	if (gb_tls_init(true, &missing) < 0) { /* OpenSSL checked before its first use (main.c) */
		refused(shown, "OpenSSL failed to initialise", "see the error above");
		return 0;
	}
	r = gb_catalog_file_verify(shown, text, len, sig, s->keys, s->now_s, floor, f, err, sizeof(err), fix,
	                           sizeof(fix));
	if (r == -ENOMEM)
		return r;
	if (r >= 0 && f->u.version < s->site_floor) {
		snprintf(err, sizeof(err),
		         "version %llu is older than the site's floor, [trust] min_catalog_version = %llu (rollback "
		         "refused)",
		         (unsigned long long)f->u.version, (unsigned long long)s->site_floor);
		snprintf(fix, sizeof(fix), "serve a catalog of version %llu or newer",
		         (unsigned long long)s->site_floor);
		gb_catalog_file_done(f);
		r = -ESTALE;
	}
	if (r < 0) {
		refused(shown, err, fix);
		return 0;
	}
	return 1;
}

static int store(const struct gb_catalog_sources *s, const struct gb_catalog_file *f)
{
	char path[1024], buf[32];
	int r;

	snprintf(path, sizeof(path), "%s/catalog.json.sig", s->state_dir);
	r = gb_mkdir_p(s->state_dir, 0755);
	if (r >= 0)
		r = gb_write_file_atomic(path, f->sig, strlen(f->sig), 0644);
	snprintf(path, sizeof(path), "%s/catalog.json", s->state_dir);
	if (r >= 0)
		r = gb_write_file_atomic(path, f->text, f->len, 0644);
	snprintf(path, sizeof(path), "%s/catalog-version", s->state_dir);
	snprintf(buf, sizeof(buf), "%llu\n", (unsigned long long)f->u.version);
	if (r >= 0)
		r = gb_write_file_atomic(path, buf, strlen(buf), 0644);
	if (r < 0)
		gb_log_warning_errno(r, "Failed to keep the catalog update in %s: %m; it is in force for this run only",
		                     s->state_dir);
	return 0;
}

/* Put the newest of the valid candidates in force (a refused row moves on
 * to the next newest); the index put in force, or -1. */
static int apply_newest(struct gb_catalog_file *c, size_t n)
{
	bool tried[MAX_CANDIDATES] = { false };
	for (size_t k = 0; k < n; k++) {
		char err[512] = "";
		int best = -1;
		for (size_t i = 0; i < n; i++)
			if (!tried[i] && c[i].root && (best < 0 || c[i].u.version > c[best].u.version))
				best = (int)i;
		if (best < 0)
			break;
		tried[best] = true;
		if (gb_catalog_apply_update(&c[best].u, err, sizeof(err)) == 0)
			return best;
		if (best == 0 && strstr(err, "not newer")) { /* the kept one, after an upgrade of gpuboot: no fault */
			gb_log_info("The catalog update kept in the state is superseded by the built-in one: %s", err);
			continue;
		}
		refused(c[best].u.origin, err,
		        strstr(err, "not newer") ? "remove it: this gpuboot's built-in catalog is newer"
		                                 : "correct the file and sign it again (docs/catalog.md)");
	}
	return -1;
}

int gb_catalog_load(const struct gb_catalog_sources *s)
{
	struct gb_catalog_file c[MAX_CANDIDATES];
	char stored[1024] = "", url[1100] = "", shown[1100] = "", err[512] = "";
	uint64_t floor = 0;
	int r = 0, in_force;

	memset(c, 0, sizeof(c));
	if (s->state_dir && gb_catalog_version_load(s->state_dir, &floor, err, sizeof(err)) < 0) {
		refused(s->state_dir, err, "repair catalog-version in the state directory");
		return 0;
	}
	if (s->state_dir) {
		snprintf(stored, sizeof(stored), "%s/catalog.json", s->state_dir);
		r = candidate(s, stored, stored, false, false, floor, &c[0]);
	}
	if (r >= 0 && s->file)
		r = candidate(s, s->file, s->file, false, true, floor, &c[1]);
	if (r >= 0 && s->mirror && !(s->offline && !gb_startswith(s->mirror, "file://"))) {
		size_t l = strlen(s->mirror);
		snprintf(url, sizeof(url), "%s%scatalog.json", s->mirror, l && s->mirror[l - 1] == '/' ? "" : "/");
		gb_redact_urls(url, shown, sizeof(shown));
		r = candidate(s, url, shown, true, false, floor, &c[2]);
	}
	in_force = r < 0 ? -1 : apply_newest(c, MAX_CANDIDATES);
	if (in_force >= 0) {
		const struct gb_catalog_file *f = &c[in_force];
		gb_log_info("Catalog update %llu of %s in force, from %s, signed by %s, expires %s",
		            (unsigned long long)f->u.version, f->u.date, f->u.origin, f->key_id, f->expires);
		if (s->store && s->state_dir && in_force != 0)
			store(s, f);
	}
	for (size_t i = 0; i < MAX_CANDIDATES; i++)
		gb_catalog_file_done(&c[i]);
	return r < 0 ? r : 0;
}
