/* SPDX-License-Identifier: MIT */
#include "manifest.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "shared/digest.h"
#include "sig.h"
#include "shared/fileio.h"
#include "shared/json-util.h"
#include "shared/macro.h"
#include "shared/util.h"

#define MANIFEST_MAX_ENTRIES 10000

void gb_manifest_done(struct gb_manifest *m)
{
	free(m->v);
	free(m->mods);
	memset(m, 0, sizeof(*m));
}

const struct gb_manifest_entry *gb_manifest_find(const struct gb_manifest *m, const char *path)
{
	for (size_t i = 0; i < m->n; i++)
		if (streq(m->v[i].path, path))
			return &m->v[i];
	return NULL;
}

static bool rel_path_ok(const char *p)
{
	size_t n = strlen(p);
	if (n == 0 || n >= 512 || p[0] == '/' || strstr(p, "//"))
		return false;
	for (const char *s = p; *s; s++)
		if ((unsigned char)*s < 0x21 || *s == '\\' || (unsigned char)*s > 0x7e)
			return false;
	for (const char *s = p; *s;) {
		size_t k = strcspn(s, "/");
		if ((k == 2 && s[0] == '.' && s[1] == '.') || (k == 1 && s[0] == '.'))
			return false;
		s += k;
		if (*s == '/')
			s++;
	}
	return true;
}

static int push(struct gb_manifest *m, const struct gb_manifest_entry *e)
{
	struct gb_manifest_entry *nv;
	if (m->n >= MANIFEST_MAX_ENTRIES)
		return -E2BIG;
	nv = realloc(m->v, (m->n + 1) * sizeof(*nv));
	if (!nv)
		return -ENOMEM;
	m->v = nv;
	m->v[m->n++] = *e;
	return 0;
}

int gb_manifest_put(struct gb_manifest *m, const struct gb_manifest_entry *e)
{
	for (size_t i = 0; i < m->n; i++)
		if (streq(m->v[i].path, e->path)) {
			m->v[i] = *e;
			return 0;
		}
	return push(m, e);
}

static json_object *parse_json(const char *text, size_t len)
{
	json_object *o;
	if (len > (16u << 20) || memchr(text, '\0', len))
		return NULL;
	return gb_json_parse(text, len, 16, &o) < 0 ? NULL : o;
}

/* One {relative_path, sha256, size} entry. size is a string in NVIDIA's manifests. */
static int redist_entry(json_object *plat, const char *name, const char *version, struct gb_manifest *m, char *err,
                        size_t errsz)
{
	struct gb_manifest_entry e;
	const char *rp = gb_json_get_str(plat, "relative_path"), *sha = gb_json_get_str(plat, "sha256"),
	           *size = gb_json_get_str(plat, "size");
	json_object *sv;
	uint64_t sz = 0;

	memset(&e, 0, sizeof(e));
	if (!size && json_object_object_get_ex(plat, "size", &sv) && json_object_is_type(sv, json_type_int))
		sz = (uint64_t)json_object_get_int64(sv);
	else if (!size || gb_safe_atou64(size, 10, &sz) < 0)
		sz = 0;
	if (!rp || !rel_path_ok(rp) || !gb_sha256_valid(sha) || sz == 0) {
		snprintf(err, errsz, "redistrib manifest: component %s has a bad relative_path, sha256 or size", name);
		return -EBADMSG;
	}
	gb_strscpy(e.name, sizeof(e.name), name);
	gb_strscpy(e.version, sizeof(e.version), version ? version : "");
	gb_strscpy(e.path, sizeof(e.path), rp);
	gb_strscpy(e.sha256, sizeof(e.sha256), sha);
	e.size = sz;
	return push(m, &e);
}

int gb_redistrib_parse(const char *text, size_t len, const char *platform, const char *cuda_variant,
                       struct gb_manifest *ret, char *err, size_t errsz)
{
	struct gb_manifest m = { 0 };
	json_object *root = parse_json(text, len);
	int r = 0;

	if (!root || !json_object_is_type(root, json_type_object)) {
		json_object_put(root);
		snprintf(err, errsz, "redistrib manifest: not a JSON object");
		return -EBADMSG;
	}
	json_object_object_foreach(root, name, comp)
	{
		json_object *plat;
		if (!json_object_is_type(comp, json_type_object) || !json_object_object_get_ex(comp, platform, &plat) ||
		    !json_object_is_type(plat, json_type_object))
			continue;
		if (gb_json_get_str(plat, "relative_path")) {
			r = redist_entry(plat, name, gb_json_get_str(comp, "version"), &m, err, errsz);
		} else if (cuda_variant) {
			json_object *var;
			if (json_object_object_get_ex(plat, cuda_variant, &var) &&
			    json_object_is_type(var, json_type_object))
				r = redist_entry(var, name, gb_json_get_str(comp, "version"), &m, err, errsz);
		}
		if (r < 0)
			break;
	}
	json_object_put(root);
	if (r < 0) {
		gb_manifest_done(&m);
		return r;
	}
	*ret = m;
	return 0;
}

/* ---- signatures ---- */

int gb_iso_to_epoch(const char *s, uint64_t *ret)
{
	struct tm tm;
	char *end;
	time_t t;
	memset(&tm, 0, sizeof(tm));
	if (!s || !(end = strptime(s, "%Y-%m-%dT%H:%M:%SZ", &tm)) || *end)
		return -EINVAL;
	t = timegm(&tm);
	if (t < 0)
		return -EINVAL;
	*ret = (uint64_t)t;
	return 0;
}

/* A field of a module entry: printable, no spaces unless SPACES, bounded. */
static bool mod_field(json_object *o, const char *key, bool spaces, bool empty_ok, char *out, size_t outsz)
{
	const char *v = gb_json_get_str(o, key);

	if (!v)
		v = empty_ok ? "" : NULL;
	if (!v || (!*v && !empty_ok) || strlen(v) >= outsz)
		return false;
	for (const char *c = v; *c; c++)
		if ((unsigned char)*c < 0x20 || (unsigned char)*c > 0x7e || (!spaces && *c == ' '))
			return false;
	gb_strscpy(out, outsz, v);
	return true;
}

int gb_mirror_module_put(struct gb_manifest *m, const struct gb_mirror_module *mod)
{
	struct gb_mirror_module *nv;

	for (size_t i = 0; i < m->n_mods; i++) {
		struct gb_mirror_module *o = &m->mods[i];
		if (streq(o->distro, mod->distro) && streq(o->arch, mod->arch) && streq(o->kernel, mod->kernel) &&
		    streq(o->driver, mod->driver) && streq(o->flavor, mod->flavor)) {
			*o = *mod;
			return 0;
		}
	}
	if (m->n_mods >= MANIFEST_MAX_ENTRIES)
		return -E2BIG;
	nv = realloc(m->mods, (m->n_mods + 1) * sizeof(*nv));
	if (!nv)
		return -ENOMEM;
	m->mods = nv;
	m->mods[m->n_mods++] = *mod;
	return 0;
}

/* The optional "modules" list: each entry whole and valid, its package
 * one of the artifacts (so the signature and sha256 cover its bytes). */
static int mirror_modules(json_object *root, struct gb_manifest *m, char *err, size_t errsz)
{
	json_object *mods;

	if (!json_object_object_get_ex(root, "modules", &mods) || json_object_is_type(mods, json_type_null))
		return 0;
	if (!json_object_is_type(mods, json_type_array)) {
		snprintf(err, errsz, "mirror manifest: \"modules\" is not a list");
		return -EBADMSG;
	}
	for (size_t i = 0; i < gb_json_len(mods); i++) {
		json_object *o = gb_json_idx(mods, i);
		struct gb_mirror_module e;
		int r;

		memset(&e, 0, sizeof(e));
		if (!mod_field(o, "path", false, false, e.path, sizeof(e.path)) || !rel_path_ok(e.path) ||
		    !gb_manifest_find(m, e.path) || !mod_field(o, "distro", false, false, e.distro, sizeof(e.distro)) ||
		    !mod_field(o, "arch", false, false, e.arch, sizeof(e.arch)) ||
		    !mod_field(o, "kernel", false, false, e.kernel, sizeof(e.kernel)) ||
		    !mod_field(o, "kernel_package", false, false, e.kernel_package, sizeof(e.kernel_package)) ||
		    !mod_field(o, "kernel_package_version", false, false, e.kernel_package_version,
		               sizeof(e.kernel_package_version)) ||
		    !mod_field(o, "vermagic", true, false, e.vermagic, sizeof(e.vermagic)) ||
		    !mod_field(o, "driver", false, false, e.driver, sizeof(e.driver)) ||
		    !mod_field(o, "flavor", false, false, e.flavor, sizeof(e.flavor)) ||
		    !(streq(e.flavor, "open") || streq(e.flavor, "proprietary")) ||
		    !mod_field(o, "package", false, false, e.package, sizeof(e.package)) ||
		    !mod_field(o, "package_version", false, false, e.package_version, sizeof(e.package_version)) ||
		    !mod_field(o, "signer", true, true, e.signer, sizeof(e.signer))) {
			snprintf(err, errsz,
			         "mirror manifest: module %zu is incomplete or its package is not one of the artifacts",
			         i);
			return -EBADMSG;
		}
		if ((r = gb_mirror_module_put(m, &e)) < 0)
			return r;
	}
	return 0;
}

/* The document's fields; expiry and version checked when now_s is set. */
static int mirror_doc(const char *text, size_t len, uint64_t now_s, uint64_t min_version, struct gb_manifest *ret,
                      char *err, size_t errsz)
{
	json_object *root = NULL, *arts, *v;
	struct gb_manifest m = { 0 };
	uint64_t exp = 0;
	int r = 0;

	root = parse_json(text, len);
	if (!root || !json_object_is_type(root, json_type_object) || !gb_json_get_str(root, "format") ||
	    !streq(gb_json_get_str(root, "format"), "gpuboot-mirror")) {
		snprintf(err, errsz, "mirror manifest: not a gpuboot-mirror document");
		r = -EBADMSG;
		goto out;
	}
	if (!json_object_object_get_ex(root, "version", &v) || !json_object_is_type(v, json_type_int) ||
	    json_object_get_int64(v) < 1) {
		snprintf(err, errsz, "mirror manifest: no version number");
		r = -EBADMSG;
		goto out;
	}
	m.version = (uint64_t)json_object_get_int64(v);
	if (m.version < min_version) {
		snprintf(
		    err, errsz,
		    "mirror manifest: version %llu is older than version %llu already seen here (rollback refused)",
		    (unsigned long long)m.version, (unsigned long long)min_version);
		r = -ESTALE;
		ret->version = m.version; /* the caller names it */
		goto out;
	}
	if (gb_iso_to_epoch(gb_json_get_str(root, "expires"), &exp) < 0) {
		snprintf(err, errsz, "mirror manifest: no valid expiry time");
		r = -EBADMSG;
		goto out;
	}
	if (now_s && exp <= now_s) {
		snprintf(err, errsz, "mirror manifest: expired at %s; the mirror must be re-signed",
		         gb_json_get_str(root, "expires"));
		r = -ESTALE;
		goto out;
	}
	gb_strscpy(m.expires, sizeof(m.expires), gb_json_get_str(root, "expires"));
	gb_strscpy(m.created, sizeof(m.created),
	           gb_json_get_str(root, "created") ? gb_json_get_str(root, "created") : "");
	if (!json_object_object_get_ex(root, "artifacts", &arts) || !json_object_is_type(arts, json_type_array)) {
		snprintf(err, errsz, "mirror manifest: no artifacts list");
		r = -EBADMSG;
		goto out;
	}
	for (size_t i = 0; i < gb_json_len(arts); i++) {
		json_object *a = gb_json_idx(arts, i), *sz;
		struct gb_manifest_entry e;
		const char *p = gb_json_get_str(a, "path"), *sha = gb_json_get_str(a, "sha256");
		memset(&e, 0, sizeof(e));
		if (!p || !rel_path_ok(p) || !gb_sha256_valid(sha) || !json_object_object_get_ex(a, "size", &sz) ||
		    !json_object_is_type(sz, json_type_int) || json_object_get_int64(sz) <= 0) {
			snprintf(err, errsz, "mirror manifest: artifact %zu has a bad path, sha256 or size", i);
			r = -EBADMSG;
			goto out;
		}
		gb_strscpy(e.path, sizeof(e.path), p);
		gb_strscpy(e.sha256, sizeof(e.sha256), sha);
		e.size = (unsigned long long)json_object_get_int64(sz);
		if ((r = push(&m, &e)) < 0)
			goto out;
	}
	r = mirror_modules(root, &m, err, errsz);
out:
	json_object_put(root);
	if (r < 0) {
		gb_manifest_done(&m);
		return r;
	}
	*ret = m;
	return 0;
}

int gb_mirror_manifest_parse(const char *text, size_t len, struct gb_manifest *ret, char *err, size_t errsz)
{
	return mirror_doc(text, len, 0, 0, ret, err, errsz);
}

int gb_mirror_manifest_verify(const char *text, size_t len, const char *sig_hex, char *const *key_files, uint64_t now_s,
                              uint64_t min_version, struct gb_manifest *ret, char *err, size_t errsz)
{
	char kid[GB_KEY_ID_LEN] = "";
	int r = gb_sig_verify("mirror manifest", text, len, sig_hex, key_files, kid, err, errsz);

	if (r < 0)
		return r;
	r = mirror_doc(text, len, now_s ? now_s : 1, min_version, ret, err, errsz);
	if (r >= 0)
		gb_strscpy(ret->key_id, sizeof(ret->key_id), kid);
	return r;
}

int gb_mirror_manifest_sign(const struct gb_manifest *m, const char *key_file, char **ret_text, char **ret_sig,
                            char *err, size_t errsz)
{
	json_object *root, *arts;
	char kid[GB_KEY_ID_LEN] = "", probe[GB_SIG_HEX_LEN], *text = NULL, *hex = NULL;
	int r;

	/* the key id goes into the document that is signed: learn it first */
	r = gb_sig_sign(key_file, "", 0, probe, kid, err, errsz);
	if (r < 0)
		return r;
	root = gb_json_new_object();
	arts = gb_json_new_array();
	gb_json_add(root, "format", gb_json_new_string("gpuboot-mirror"));
	gb_json_add(root, "format_version", gb_json_new_int(1));
	gb_json_add(root, "version", gb_json_new_int64((int64_t)m->version));
	gb_json_add(root, "created", gb_json_new_string(m->created));
	gb_json_add(root, "expires", gb_json_new_string(m->expires));
	gb_json_add(root, "key_id", gb_json_new_string(kid));
	for (size_t i = 0; i < m->n; i++) {
		json_object *a = gb_json_new_object();
		gb_json_add(a, "path", gb_json_new_string(m->v[i].path));
		gb_json_add(a, "sha256", gb_json_new_string(m->v[i].sha256));
		gb_json_add(a, "size", gb_json_new_int64((int64_t)m->v[i].size));
		gb_json_append(arts, a);
	}
	gb_json_add(root, "artifacts", arts);
	if (m->n_mods) {
		json_object *mods = gb_json_new_array();
		for (size_t i = 0; i < m->n_mods; i++) {
			const struct gb_mirror_module *e = &m->mods[i];
			json_object *a = gb_json_new_object();
			gb_json_add(a, "path", gb_json_new_string(e->path));
			gb_json_add(a, "distro", gb_json_new_string(e->distro));
			gb_json_add(a, "arch", gb_json_new_string(e->arch));
			gb_json_add(a, "kernel", gb_json_new_string(e->kernel));
			gb_json_add(a, "kernel_package", gb_json_new_string(e->kernel_package));
			gb_json_add(a, "kernel_package_version", gb_json_new_string(e->kernel_package_version));
			gb_json_add(a, "vermagic", gb_json_new_string(e->vermagic));
			gb_json_add(a, "driver", gb_json_new_string(e->driver));
			gb_json_add(a, "flavor", gb_json_new_string(e->flavor));
			gb_json_add(a, "package", gb_json_new_string(e->package));
			gb_json_add(a, "package_version", gb_json_new_string(e->package_version));
			gb_json_add(a, "signer", gb_json_new_string(e->signer));
			gb_json_append(mods, a);
		}
		gb_json_add(root, "modules", mods);
	}
	if (gb_json_text(root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE,
	                 &text) < 0)
		text = NULL;
	json_object_put(root);
	hex = malloc(GB_SIG_HEX_LEN);
	if (!text || !hex) {
		snprintf(err, errsz, "signing the mirror manifest: out of memory");
		r = -ENOMEM;
		goto out;
	}
	r = gb_sig_sign(key_file, text, strlen(text), hex, kid, err, errsz);
	if (r < 0)
		goto out;
	*ret_text = TAKE_PTR(text);
	*ret_sig = TAKE_PTR(hex);
out:
	free(text);
	free(hex);
	return r;
}

int gb_mirror_version_load(const char *state_dir, uint64_t *ret, char *err, size_t errsz)
{
	_cleanup_free_ char *text = NULL;
	char path[1024];
	size_t len = 0;
	uint64_t v;
	int r;

	snprintf(path, sizeof(path), "%s/mirror-version", state_dir);
	r = gb_read_file(path, 64, &text, &len);
	if (r == -ENOENT) {
		*ret = 0;
		return 0;
	}
	if (r < 0) {
		snprintf(err, errsz,
		         "cannot read %s (%s): it guards against a mirror rolling back to an older manifest; fix its "
		         "permissions or the disk",
		         path, strerror(-r));
		return r;
	}
	/* Garbled is not "never seen a manifest": that would switch rollback protection off. */
	if (len == 0 || memchr(text, '\0', len) || gb_safe_atou64(text, 10, &v) < 0) {
		snprintf(err, errsz,
		         "%s is garbled (not a decimal version): it records the last mirror manifest version accepted "
		         "here, against rollback; write the version of the newest manifest you trust into it, or "
		         "remove it only if you trust the mirror's current manifest",
		         path);
		return -EBADMSG;
	}
	*ret = v;
	return 0;
}

int gb_mirror_version_store(const char *state_dir, uint64_t v)
{
	char path[1024], buf[32];
	snprintf(path, sizeof(path), "%s/mirror-version", state_dir);
	snprintf(buf, sizeof(buf), "%llu\n", (unsigned long long)v);
	return gb_write_file_atomic(path, buf, strlen(buf), 0644);
}
