/* SPDX-License-Identifier: MIT */
/* The distribution (os-release), the C library and the package manager. */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "catalog/catalog.h"
#include "context.h"
#include "detect.h"
#include "shared/log.h"
#include "shared/root.h"
#include "shared/util.h"

#define OSRELEASE_MAX (64 * 1024)
#define OSRELEASE_VALUE_MAX 512

void gb_kv_free(struct gb_kv *kv, size_t n)
{
	if (!kv)
		return;
	for (size_t i = 0; i < n; i++) {
		free(kv[i].key);
		free(kv[i].value);
	}
	free(kv);
}

const char *gb_kv_get(const struct gb_kv *kv, size_t n, const char *key)
{
	/* The last assignment wins, as in a shell. */
	for (size_t i = n; i > 0; i--)
		if (streq(kv[i - 1].key, key))
			return kv[i - 1].value;
	return NULL;
}

/* Unquote one os-release value into out (capacity OSRELEASE_VALUE_MAX).
 * Returns -EINVAL for unbalanced quotes or trailing garbage. */
static int unquote(const char *v, size_t len, char *out)
{
	size_t o = 0;
	char q = 0;

	if (len > 0 && (v[0] == '"' || v[0] == '\'')) {
		q = v[0];
		v++;
		len--;
		if (len == 0 || v[len - 1] != q)
			return -EINVAL;
		len--;
	}
	for (size_t i = 0; i < len; i++) {
		char c = v[i];
		if (q != '\'' && c == '\\') {
			if (i + 1 >= len)
				return -EINVAL;
			c = v[++i];
		} else if (!q && (c == '"' || c == '\'' || c == '`' || c == '$' || isspace((unsigned char)c))) {
			return -EINVAL;
		} else if (q == '"' && (c == '"' || c == '`' || c == '$')) {
			return -EINVAL;
		} else if (q == '\'' && c == '\'') {
			return -EINVAL;
		}
		if ((unsigned char)c < 0x20 || c == 0x7f)
			return -EINVAL;
		if (o + 1 >= OSRELEASE_VALUE_MAX)
			return -EINVAL;
		out[o++] = c;
	}
	out[o] = '\0';
	return 0;
}

int gb_osrelease_parse(const char *text, size_t len, struct gb_kv **ret, size_t *ret_n, unsigned *ret_bad)
{
	struct gb_kv *kv = NULL;
	size_t n = 0, cap = 0;
	unsigned bad = 0;
	const char *p = text, *end = text + len;

	if (memchr(text, '\0', len))
		return -EINVAL;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;
		const char *eq, *k = p;
		char value[OSRELEASE_VALUE_MAX];
		size_t klen;

		p = nl ? nl + 1 : end;
		while (k < le && isspace((unsigned char)*k))
			k++;
		while (le > k && isspace((unsigned char)le[-1]))
			le--;
		if (k == le || *k == '#')
			continue;
		eq = memchr(k, '=', (size_t)(le - k));
		if (!eq || eq == k) {
			bad++;
			continue;
		}
		klen = (size_t)(eq - k);
		for (size_t i = 0; i < klen; i++)
			if (!(isupper((unsigned char)k[i]) || isdigit((unsigned char)k[i]) || k[i] == '_'))
				klen = 0;
		if (klen == 0 || klen > 64 || unquote(eq + 1, (size_t)(le - eq - 1), value) < 0) {
			bad++;
			continue;
		}
		if (n == cap) {
			size_t nc = cap ? cap * 2 : 16;
			struct gb_kv *nk;
			if (nc > 4096) {
				bad++;
				break;
			}
			nk = realloc(kv, nc * sizeof(*kv));
			if (!nk)
				goto oom;
			kv = nk;
			cap = nc;
		}
		kv[n].key = strndup(k, klen);
		kv[n].value = strdup(value);
		if (!kv[n].key || !kv[n].value) {
			free(kv[n].key);
			free(kv[n].value);
			goto oom;
		}
		n++;
	}
	*ret = kv;
	*ret_n = n;
	if (ret_bad)
		*ret_bad = bad;
	return 0;
oom:
	gb_kv_free(kv, n);
	return -ENOMEM;
}

/* Only plain identifiers (lowercase, digits, '.', '_', '-') become ids. */
static char *id_dup(struct gb_facts *f, const char *v)
{
	char *d;
	if (!v || !*v || strlen(v) > 64)
		return NULL;
	for (const char *p = v; *p; p++)
		if (!(islower((unsigned char)*p) || isdigit((unsigned char)*p) || strchr("._- ", *p)))
			return NULL;
	d = strdup(v);
	f->oom |= !d;
	return d;
}

/* Copy v into dst when it is a plain word that fits. */
static void word_cp(char *dst, size_t n, const char *v, bool spaces)
{
	dst[0] = '\0';
	if (!v || strlen(v) >= n)
		return;
	for (const char *p = v; *p; p++)
		if (!(islower((unsigned char)*p) || isdigit((unsigned char)*p) || strchr("._-", *p) ||
		      (spaces && *p == ' ')))
			return;
	memcpy(dst, v, strlen(v) + 1);
}

int gb_os_release_words(const char *text, size_t len, struct gb_os_release *ret)
{
	struct gb_kv *kv = NULL;
	size_t n = 0;
	int r;

	memset(ret, 0, sizeof(*ret));
	if (!text)
		return 0;
	r = gb_osrelease_parse(text, len, &kv, &n, NULL);
	if (r < 0)
		return r;
	word_cp(ret->id, sizeof(ret->id), gb_kv_get(kv, n, "ID"), false);
	word_cp(ret->version_id, sizeof(ret->version_id), gb_kv_get(kv, n, "VERSION_ID"), false);
	word_cp(ret->id_like, sizeof(ret->id_like), gb_kv_get(kv, n, "ID_LIKE"), true);
	word_cp(ret->version_codename, sizeof(ret->version_codename), gb_kv_get(kv, n, "VERSION_CODENAME"), false);
	gb_kv_free(kv, n);
	return 0;
}

int gb_os_release_read(struct gb_ctx *ctx, struct gb_os_release *ret)
{
	_cleanup_free_ char *text = NULL;
	size_t len;
	int r = gb_root_read_file(ctx->root, "etc/os-release", OSRELEASE_MAX, &text, &len);

	if (r == -ENOENT)
		r = gb_root_read_file(ctx->root, "usr/lib/os-release", OSRELEASE_MAX, &text, &len);
	memset(ret, 0, sizeof(*ret));
	if (r < 0)
		return r;
	return gb_os_release_words(text, len, ret);
}

/* The first of the catalog's loaders the root has (gb_loaders). */
const char *gb_detect_loader(struct gb_ctx *ctx, const char **ret_path)
{
	for (size_t i = 0; i < gb_loaders_len; i++)
		if (gb_root_lexists(ctx->root, gb_loaders[i].path)) {
			if (ret_path)
				*ret_path = gb_loaders[i].path;
			return gb_loaders[i].libc;
		}
	return NULL;
}

static const struct {
	const char *path;
	const char *name;
} package_managers[] = {
	{ "usr/bin/apt-get", "apt" },   { "usr/bin/dnf", "dnf" }, { "usr/bin/tdnf", "tdnf" }, { "usr/bin/yum", "yum" },
	{ "usr/bin/zypper", "zypper" }, { "sbin/apk", "apk" },    { "usr/bin/apk", "apk" },
};

int gb_detect_os(struct gb_ctx *ctx, struct gb_facts *f)
{
	_cleanup_free_ char *text = NULL;
	struct gb_kv *kv = NULL;
	size_t len, n = 0;
	unsigned bad = 0;
	const char *path = "etc/os-release";
	int r;

	r = gb_root_read_file(ctx->root, path, OSRELEASE_MAX, &text, &len);
	if (r == -ENOENT) {
		path = "usr/lib/os-release";
		r = gb_root_read_file(ctx->root, path, OSRELEASE_MAX, &text, &len);
	}
	if (r < 0) {
		if (r == -EINVAL)
			gb_log_warning(
			    "'%s' under the root is not a regular file (a FIFO, a device?): the distribution is "
			    "unknown; replace it with the distribution's os-release, ignoring",
			    path);
		else
			gb_log_warning_errno(r, "Failed to read '%s' under the root: %m, ignoring", path);
		f->warnings++;
	} else {
		r = gb_osrelease_parse(text, len, &kv, &n, &bad);
		if (r == -ENOMEM)
			return r;
		if (r < 0) {
			gb_log_warning("'%s' is not text, ignoring", path);
			f->warnings++;
		} else if (bad > 0) {
			gb_log_warning("'%s': %u malformed line(s), ignoring them", path, bad);
			f->warnings++;
		}
		f->os.id = id_dup(f, gb_kv_get(kv, n, "ID"));
		f->os.version_id = id_dup(f, gb_kv_get(kv, n, "VERSION_ID"));
		f->os.id_like = id_dup(f, gb_kv_get(kv, n, "ID_LIKE"));
		f->os.version_codename = id_dup(f, gb_kv_get(kv, n, "VERSION_CODENAME"));
		if (gb_kv_get(kv, n, "PRETTY_NAME")) {
			f->os.pretty_name = strdup(gb_kv_get(kv, n, "PRETTY_NAME"));
			f->oom |= !f->os.pretty_name;
		}
		gb_kv_free(kv, n);
	}

	f->os.libc = gb_detect_loader(ctx, NULL);
	for (size_t i = 0; i < ARRAY_SIZE(package_managers); i++)
		if (gb_root_lexists(ctx->root, package_managers[i].path)) {
			f->os.package_manager = package_managers[i].name;
			break;
		}
	return 0;
}
