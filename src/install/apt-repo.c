/* SPDX-License-Identifier: MIT */
/* An NVIDIA apt repository for the packages method: its signing key
 * downloaded and checked against the fingerprint pinned in the catalog
 * before anything trusts it, written as a keyring of its own, and one
 * deb822 sources file whose Signed-By names that keyring (never a global
 * trust). docs/install.md says what it writes and how to undo it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog/catalog.h"
#include "context.h"
#include "fetch/fetch.h"
#include "fetch/pgpkey.h"
#include "install-internal.h"
#include "effect/journal.h"
#include "shared/macro.h"
#include "shared/root.h"
#include "shared/util.h"

#define STAGE "install"
#define KEY_MAX (64u * 1024u)
#define SOURCES_DIR "etc/apt/sources.list.d"

bool gb_apt_repo_id_valid(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	if (n == 0 || n > 64)
		return false;
	for (const char *p = s; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-' || *p == '_' || *p == '.'))
			return false;
	return s[0] != '.' && s[0] != '-';
}

/* An https:// (or, for tests of a mirror, http://) URI ending in '/', with
 * no byte a sources file or a shell would read differently. */
bool gb_repo_uri_valid(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	if (n < 10 || n > 512 || s[n - 1] != '/' || !(gb_startswith(s, "https://") || gb_startswith(s, "http://")))
		return false;
	for (const char *p = s; *p; p++)
		if ((unsigned char)*p <= ' ' || (unsigned char)*p >= 0x7f || strchr("\"'\\`$;#[]", *p))
			return false;
	return true;
}

static bool endswith(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);
	return a >= b && streq(s + a - b, suffix);
}

void gb_apt_repo_paths(const char *id, char *keyring, size_t ksz, char *sources, size_t ssz)
{
	snprintf(keyring, ksz, "usr/share/keyrings/gpuboot-%s.gpg", id);
	snprintf(sources, ssz, SOURCES_DIR "/gpuboot-%s.sources", id);
}

/* The key's fingerprint is the one pinned for this repository (or, in the
 * test build only, the tests' own repository key). */
bool gb_repo_key_pinned(const char *pin_name, const char *fpr)
{
	const struct gb_repo_key *k = gb_repo_key_find(pin_name);
	if (k && gb_pgp_fpr_equal(k->fpr, fpr))
		return true;
#ifdef GB_TEST_HOOKS
	k = gb_repo_key_find("test-repo");
	if (k && gb_pgp_fpr_equal(k->fpr, fpr))
		return true;
#endif
	return false;
}

/* Another sources entry for the same URI (cuda-keyring's cuda-*.list, a
 * hand-written one) would give apt two Signed-By values for one
 * repository: refused, naming it, rather than silently doubled. */
static int conflicting_source(struct gb_ctx *ctx, const struct gb_apt_repo *r, const char *ours, char *err,
                              size_t errsz)
{
	char **names = NULL, path[512];
	size_t n = 0;
	int res = 0;
	/* The URI without its trailing '/', so "…/x86_64" and "…/x86_64/" both match. */
	char uri[520];
	gb_strscpy(uri, sizeof(uri), r->uri);
	uri[strlen(uri) - 1] = '\0';

	if (gb_root_list_dir(ctx->root, SOURCES_DIR, &names, &n) < 0)
		n = 0;
	for (size_t i = 0; i <= n && !res; i++) {
		_cleanup_free_ char *text = NULL;
		size_t len;
		if (i == n)
			snprintf(path, sizeof(path), "etc/apt/sources.list");
		else if (endswith(names[i], ".list") || endswith(names[i], ".sources"))
			snprintf(path, sizeof(path), SOURCES_DIR "/%s", names[i]);
		else
			continue;
		if (streq(path, ours) || gb_root_read_file(ctx->root, path, GB_APT_SOURCES_MAX, &text, &len) < 0)
			continue;
		for (char *save = NULL, *l = strtok_r(text, "\n", &save); l && !res; l = strtok_r(NULL, "\n", &save)) {
			l += strspn(l, " \t");
			if (l[0] != '#' && strstr(l, uri)) {
				snprintf(err, errsz,
				         "The repository %s is already configured in /%s (cuda-keyring or by hand); "
				         "remove that entry so gpuboot's, signed by the pinned key, is the only one",
				         r->uri, path);
				res = -EEXIST;
			}
		}
	}
	gb_strv_free(names);
	return res;
}

/* The keyring already in the root, when it holds the pinned key: no
 * download on a rerun. */
bool gb_repo_key_file_ok(struct gb_ctx *ctx, const char *path, const char *pin)
{
	_cleanup_free_ char *data = NULL;
	struct gb_pgp_key k;
	size_t len;
	char err[256];
	bool ok;
	if (gb_root_read_file(ctx->root, path, KEY_MAX, &data, &len) < 0 ||
	    gb_pgp_key_read(data, len, &k, err, sizeof(err)) < 0)
		return false;
	ok = gb_repo_key_pinned(pin, k.fpr);
	gb_pgp_key_free(&k);
	return ok;
}

int gb_repo_key_fetch(const struct gb_apt_repo *r, struct gb_pgp_key *k, char **ret_raw, size_t *ret_raw_len, char *err,
                      size_t errsz)
{
	_cleanup_free_ char *data = NULL;
	char e[320] = "";
	size_t len = 0;
	long http = 0;
	int res = gb_fetch_small(r->key_url, r->ca_file, gb_startswith(r->key_url, "http://") != NULL, KEY_MAX, &data,
	                         &len, &http, e, sizeof(e));
	if (res < 0) {
		snprintf(err, errsz, "Failed to download the signing key of %s from %s: %s; nothing was changed", r->id,
		         r->key_url, e[0] ? e : strerror(-res));
		return -EREMOTEIO;
	}
	res = gb_pgp_key_read(data, len, k, e, sizeof(e));
	if (res < 0) {
		snprintf(err, errsz, "The signing key at %s is not one OpenPGP public key: %s; nothing was trusted",
		         r->key_url, e);
		return res;
	}
	if (!gb_repo_key_pinned(r->key_pin, k->fpr)) {
		const struct gb_repo_key *p = gb_repo_key_find(r->key_pin);
		snprintf(err, errsz,
		         "The signing key at %s has the fingerprint %s, not the pinned %s (%s); refused before "
		         "anything was trusted (a wrong mirror, or an attack)",
		         r->key_url, k->fpr, p ? p->fpr : "(none)", r->key_pin);
		gb_pgp_key_free(k);
		return -EKEYREJECTED;
	}
	if (ret_raw) {
		*ret_raw = TAKE_PTR(data);
		*ret_raw_len = len;
	}
	return 0;
}

int gb_apt_repo_setup(struct gb_ctx *ctx, struct gb_journal *j, const struct gb_apt_repo *r, bool *changed, char *err,
                      size_t errsz)
{
	char keyring[256], sources[256], text[1200];
	struct gb_pgp_key k;
	int res;

	*changed = false;
	if (!gb_apt_repo_id_valid(r->id) || !gb_repo_uri_valid(r->uri) || !r->key_url || !r->key_pin) {
		snprintf(err, errsz, "The repository '%s' at '%s' is not usable (an https:// URI ending in '/')",
		         r->id ? r->id : "", r->uri ? r->uri : "");
		return -EINVAL;
	}
	if (!gb_repo_key_find(r->key_pin)) {
		snprintf(err, errsz,
		         "No signing key is pinned for %s (%s): gpuboot trusts no repository key it has not pinned; "
		         "use --method distro or runfile there",
		         r->id, r->key_pin);
		return -ENOKEY;
	}
	gb_apt_repo_paths(r->id, keyring, sizeof(keyring), sources, sizeof(sources));
	res = conflicting_source(ctx, r, sources, err, errsz);
	if (res < 0)
		return res;
	if (!gb_repo_key_file_ok(ctx, keyring, r->key_pin)) {
		res = gb_repo_key_fetch(r, &k, NULL, NULL, err, errsz);
		if (res < 0)
			return res;
		res = gb_journal_write_file(j, STAGE, keyring, k.bin, k.bin_len, 0644);
		gb_pgp_key_free(&k);
		if (res < 0) {
			snprintf(err, errsz, "Failed to write the keyring /%s: %s", keyring, strerror(-res));
			return res;
		}
		*changed = true;
	}
	snprintf(text, sizeof(text),
	         "# Written by gpuboot: %s, signed by the key pinned in gpuboot's catalog (%s).\n"
	         "Types: deb\nURIs: %s\nSuites: /\nSigned-By: /%s\n",
	         r->id, r->key_pin, r->uri, keyring);
	res = gb_journal_write_file(j, STAGE, sources, text, strlen(text), 0644);
	if (res < 0) {
		snprintf(err, errsz, "Failed to write /%s: %s", sources, strerror(-res));
		return res;
	}
	snprintf(text, sizeof(text), "file:%s", sources);
	if (gb_journal_step_changed(j, text))
		*changed = true;
	return 0;
}
