/* SPDX-License-Identifier: MIT */
/* What a plan needs fetched, from where, and under which trust: NVIDIA's
 * hosts (the catalog's pins, cross-checked with NVIDIA's .sha256sum), another
 * upstream with the same layout, or a mirror whose signed manifest lists
 * every artifact. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "context.h"
#include "shared/digest.h"
#include "fetch-plan.h"
#include "fetch.h"
#include "manifest.h"
#include "sig.h"
#include "plan/plan.h"
#include "shared/fileio.h"
#include "shared/log.h"
#include "shared/macro.h"
#include "shared/test-knob.h"
#include "shared/util.h"

#define REDIST_DIR "compute/cuda/redist/"

#ifdef GB_TEST_HOOKS
/* Test builds: "SHA256:SIZE" in the environment replaces a catalog pin, so the
 * tests' loopback upstream can serve generated artifacts in NVIDIA's layout. */
static void test_pin(const char *env, char *sha, size_t shasz, unsigned long long *size)
{
	const char *v = gb_test_knob(env), *colon;
	uint64_t n;
	if (!v || !(colon = strchr(v, ':')) || colon - v != 64 || gb_safe_atou64(colon + 1, 10, &n) < 0)
		return;
	snprintf(sha, shasz, "%.64s", v);
	*size = n;
}
#endif

/* "https://us.download.nvidia.com/XFree86/..." -> "XFree86/..." */
static const char *url_path(const char *url)
{
	const char *p = strstr(url, "://");
	if (!p)
		return NULL;
	p = strchr(p + 3, '/');
	return p ? p + 1 : NULL;
}

static void base_join(char *out, size_t n, const char *base, const char *path)
{
	size_t l = strlen(base);
	snprintf(out, n, "%s%s%s", base, l && base[l - 1] == '/' ? "" : "/", path);
}

static struct gb_artifact *add(struct gb_artifact **v, size_t *n)
{
	struct gb_artifact *nv = realloc(*v, (*n + 1) * sizeof(**v));
	if (!nv)
		return NULL;
	*v = nv;
	memset(&nv[*n], 0, sizeof(nv[*n]));
	nv[*n].result = GB_ARTIFACT_PENDING; /* nothing is verified until gb_fetch_all says so */
	return &nv[(*n)++];
}

/* Fill sha256/size for path from the mirror's signed manifest (authoritative);
 * the pin, when there is one, is compared and a difference reported. */
static int from_mirror(const struct gb_manifest *mm, struct gb_artifact *a, const char *pin_sha, char *err,
                       size_t errsz)
{
	const struct gb_manifest_entry *e = gb_manifest_find(mm, a->path);
	if (!e) {
		snprintf(err, errsz, "%s (%s) is not listed in the mirror's signed manifest", a->name, a->path);
		return -ENOENT;
	}
	if (pin_sha && !streq(pin_sha, e->sha256))
		gb_log_warning("%s: the mirror's signed sha256 %.16s... differs from NVIDIA's published %.16s...: a "
		               "site-built artifact, trusted by the mirror key",
		               a->name, e->sha256, pin_sha);
	gb_strscpy(a->sha256, sizeof(a->sha256), e->sha256);
	a->size = e->size;
	return 0;
}

static int sha256_hex(const void *data, size_t len, char hex[65])
{
	struct gb_sha256 h = { 0 };
	int r = gb_sha256_init(&h);

	if (r >= 0)
		r = gb_sha256_update(&h, data, len);
	if (r >= 0)
		r = gb_sha256_final(&h, hex);
	gb_sha256_done(&h);
	return r;
}

static bool is_remote(const char *url)
{
	return !gb_startswith(url, "file://");
}

/* A small document into memory, under the fetch's rules: --offline reads
 * file:// only, never the network. */
static int get_small(const struct gb_fetch_opts *o, const struct gb_fetch_source *src, const char *url, bool allow_http,
                     size_t max, char **ret, size_t *ret_len, long *ret_http, char *err, size_t errsz)
{
	if (o->offline && is_remote(url)) {
		snprintf(err, errsz, "--offline: %s is not read from the network", url);
		return -ENETUNREACH;
	}
	return gb_fetch_small(url, src->ca_file, allow_http, max, ret, ret_len, ret_http, err, errsz);
}

/* A verified copy of a remote mirror's signed manifest, for --offline:
 * <state>/cache/mirror/<sha256 of the mirror URL> holds "<sha256 of the
 * manifest> <signature hex>", the manifest itself is in the content cache.
 * The signature, expiry and version are checked again on every use. */
static void mirror_key(const char *mirror, char path[], size_t n, const char *state_dir)
{
	char hex[65] = "";
	size_t l = strlen(mirror);

	while (l > 0 && mirror[l - 1] == '/')
		l--;
	if (sha256_hex(mirror, l, hex) < 0)
		hex[0] = '\0';
	snprintf(path, n, "%s/cache/mirror/%s", state_dir, hex[0] ? hex : "unhashable");
}

static int mirror_copy_store(const char *state_dir, const char *mirror, const char *text, size_t len, const char *sig)
{
	char hex[65], path[1200], line[300];
	int r = sha256_hex(text, len, hex);

	if (r < 0)
		return r;
	snprintf(path, sizeof(path), "%s/cache/sha256/%s", state_dir, hex);
	r = gb_write_file_atomic(path, text, len, 0644);
	if (r < 0)
		return r;
	snprintf(line, sizeof(line), "%s %.*s\n", hex, (int)strcspn(sig, "\r\n"), sig);
	mirror_key(mirror, path, sizeof(path), state_dir);
	return gb_write_file_atomic(path, line, strlen(line), 0644);
}

static int mirror_copy_load(const char *state_dir, const char *mirror, char **ret_text, size_t *ret_len, char **ret_sig,
                            char *err, size_t errsz)
{
	_cleanup_free_ char *line = NULL, *text = NULL;
	char path[1200], hex[65], got[65] = "";
	size_t len = 0;
	int r;

	mirror_key(mirror, path, sizeof(path), state_dir);
	r = gb_read_file(path, 4096, &line, &len);
	if (r < 0 || len < 66 || line[64] != ' ') {
		snprintf(err, errsz,
		         "--offline: the mirror manifest for %s is not in the cache; run gpuboot fetch online once or "
		         "use a file:// bundle",
		         mirror);
		return r < 0 && r != -ENOENT ? r : -ENETUNREACH;
	}
	memcpy(hex, line, 64);
	hex[64] = '\0';
	snprintf(path, sizeof(path), "%s/cache/sha256/%s", state_dir, hex);
	r = gb_sha256_valid(hex) ? gb_read_file(path, 8u << 20, &text, &len) : -EBADMSG;
	if (r >= 0 && (sha256_hex(text, len, got) < 0 || !streq(got, hex)))
		r = -EBADMSG;
	if (r < 0) {
		snprintf(err, errsz,
		         "--offline: the cached mirror manifest for %s is missing or damaged (%s); run gpuboot fetch "
		         "online once or use a file:// bundle",
		         mirror, strerror(-r));
		return r;
	}
	*ret_sig = strdup(line + 65);
	if (!*ret_sig)
		return -ENOMEM;
	*ret_text = TAKE_PTR(text);
	*ret_len = len;
	return 0;
}

/* The mirror's signed manifest: from the mirror, or (--offline, a remote
 * mirror) the verified copy kept from an online run. Checked either way. */
int gb_fetch_mirror_manifest(struct gb_ctx *ctx, const struct gb_fetch_source *src, const struct gb_fetch_opts *o,
                             struct gb_manifest *ret, char *err, size_t errsz)
{
	_cleanup_free_ char *text = NULL, *sig = NULL;
	char url[1100];
	size_t tlen = 0, slen = 0;
	uint64_t now = ctx->ops->now_realtime_ns(ctx->ops) / 1000000000ull, seen = 0, stored;
	bool cached = o->offline && is_remote(src->mirror);
	int r;

	r = gb_mirror_version_load(o->state_dir, &seen, err, errsz);
	if (r < 0)
		return r;
	stored = seen;
	if (src->min_mirror_version > seen) /* the site's floor, where this state has seen none as new */
		seen = src->min_mirror_version;
	if (cached) {
		r = mirror_copy_load(o->state_dir, src->mirror, &text, &tlen, &sig, err, errsz);
	} else {
		base_join(url, sizeof(url), src->mirror, "manifest.json");
		r = get_small(o, src, url, o->allow_http, 8u << 20, &text, &tlen, NULL, err, errsz);
		if (r >= 0) {
			base_join(url, sizeof(url), src->mirror, "manifest.json.sig");
			r = get_small(o, src, url, o->allow_http, 4096, &sig, &slen, NULL, err, errsz);
		}
	}
	if (r >= 0)
		r = gb_mirror_manifest_verify(text, tlen, sig, src->trust_keys, now, seen, ret, err, errsz);
	if (r == -ESTALE && seen > stored)
		snprintf(
		    err, errsz,
		    "mirror manifest: version %llu is older than the site's floor, [trust] min_mirror_version = %llu "
		    "(rollback refused): the mirror serves an old manifest",
		    (unsigned long long)ret->version, (unsigned long long)seen);
	if (r < 0)
		return r;
	gb_log_info("Mirror manifest version %llu, signed by %s, expires %s%s", (unsigned long long)ret->version,
	            ret->key_id, ret->expires, cached ? " (the verified copy in the cache: --offline)" : "");
	if (o->dry_run)
		return 0; /* a dry run writes nothing */
	if (ret->version > seen && (r = gb_mirror_version_store(o->state_dir, ret->version)) < 0) {
		snprintf(err, errsz, "cannot record the mirror manifest version: %s", strerror(-r));
		return r;
	}
	if (!cached && is_remote(src->mirror) &&
	    (r = mirror_copy_store(o->state_dir, src->mirror, text, tlen, sig)) < 0)
		gb_log_warning_errno(r, "Failed to keep a copy of the mirror manifest for --offline: %m, ignoring");
	return 0;
}

/* NVIDIA publishes <url>.sha256sum beside each runfile: it must agree with
 * the pin. Not needed for a copy already in the cache (gb_fetch_all
 * verifies it), nor possible offline. */
static int runfile_crosscheck(const struct gb_artifact *a, const struct gb_fetch_source *src,
                              const struct gb_fetch_opts *o, char *err, size_t errsz)
{
	_cleanup_free_ char *sum = NULL;
	char sumurl[1200], e2[400];
	size_t slen = 0;
	long code = 0;

	if (o->offline || gb_cache_has(o->state_dir, a->sha256))
		return 0;
	snprintf(sumurl, sizeof(sumurl), "%s.sha256sum", a->url);
	if (get_small(o, src, sumurl, false, 4096, &sum, &slen, &code, e2, sizeof(e2)) < 0) {
		gb_log_info("%s: no published checksum (%s); the catalog's pin decides", a->name, e2);
		return 0;
	}
	if (slen < 64 || strncmp(sum, a->sha256, 64) != 0) {
		snprintf(err, errsz,
		         "%s: NVIDIA's published checksum (%s) disagrees with the catalog's pin %.16s...: refusing it",
		         a->name, sumurl, a->sha256);
		return -EBADMSG;
	}
	return 0;
}

static int runfile_artifact(const struct gb_plan *p, const struct gb_fetch_source *src, const struct gb_fetch_opts *o,
                            const struct gb_manifest *mm, struct gb_artifact *a, char *err, size_t errsz)
{
	const struct gb_runfile *rf = p->driver.runfile;
	const char *path = url_path(rf->url);

	if (!path) {
		snprintf(err, errsz, "driver runfile %s: the catalog's URL %s has no path", rf->version, rf->url);
		return -EINVAL;
	}
	snprintf(a->name, sizeof(a->name), "driver runfile %s", rf->version);
	gb_strscpy(a->path, sizeof(a->path), path);
	if (src->mirror) {
		base_join(a->url, sizeof(a->url), src->mirror, path);
		return from_mirror(mm, a, rf->sha256, err, errsz);
	}
	if (src->upstream)
		base_join(a->url, sizeof(a->url), src->upstream, path);
	else
		gb_strscpy(a->url, sizeof(a->url), rf->url);
	gb_strscpy(a->sha256, sizeof(a->sha256), rf->sha256);
	a->size = rf->size;
#ifdef GB_TEST_HOOKS
	test_pin("GPUBOOT_TEST_RUNFILE_PIN", a->sha256, sizeof(a->sha256), &a->size);
#endif
	return runfile_crosscheck(a, src, o, err, errsz);
}

/* Check bytes held in memory against an artifact's size and sha256. */
static int check_in_memory(const struct gb_artifact *a, const char *text, size_t len, char *err, size_t errsz)
{
	char hex[65] = "";
	int r = sha256_hex(text, len, hex);

	if (r < 0)
		return r;
	if (len != a->size || !streq(hex, a->sha256)) {
		snprintf(err, errsz, "%s: %zu bytes with sha256 %.16s..., the pin says %llu bytes and %.16s...", a->url,
		         len, hex, a->size, a->sha256);
		return -EBADMSG;
	}
	return 0;
}

/* A dry run reads the CUDA manifest into memory only: the cached copy if
 * there is one, else the network (never with --offline), checked in memory. */
static int cuda_manifest_text_dry(const struct gb_artifact *man, const struct gb_fetch_source *src,
                                  const struct gb_fetch_opts *o, char **ret, size_t *ret_len, char *err, size_t errsz)
{
	_cleanup_free_ char *text = NULL;
	char path[1100];
	size_t len = 0;
	int r;

	snprintf(path, sizeof(path), "%s/cache/sha256/%s", o->state_dir, man->sha256);
	r = gb_sha256_valid(man->sha256) ? gb_read_file(path, 16u << 20, &text, &len) : -EINVAL;
	if (r < 0 || check_in_memory(man, text, len, err, errsz) < 0) {
		free(TAKE_PTR(text));
		if (o->offline && is_remote(man->url)) {
			snprintf(err, errsz, "--offline: %s is not in the cache (%s)", man->name, man->url);
			return -ENETUNREACH;
		}
		r = get_small(o, src, man->url, o->allow_http, 16u << 20, &text, &len, NULL, err, errsz);
		if (r >= 0)
			r = check_in_memory(man, text, len, err, errsz);
		if (r < 0)
			return r;
	}
	*ret = TAKE_PTR(text);
	*ret_len = len;
	return 0;
}

/* NVIDIA's redistrib manifest for the plan's CUDA (its sha256 pinned in the
 * catalog, or listed by the mirror), fetched and verified, then parsed. */
static int cuda_manifest(struct gb_ctx *ctx, const struct gb_plan *p, const struct gb_fetch_source *src,
                         const struct gb_fetch_opts *o, const struct gb_manifest *mm, struct gb_artifact *man,
                         struct gb_manifest *red, char *err, size_t errsz)
{
	const struct gb_cuda_release *cr = p->cuda.release;
	_cleanup_free_ char *text = NULL;
	size_t tlen = 0;
	int r;

	snprintf(man->name, sizeof(man->name), "CUDA %s redistrib manifest", cr->manifest);
	snprintf(man->path, sizeof(man->path), REDIST_DIR "redistrib_%s.json", cr->manifest);
	if (src->mirror) {
		base_join(man->url, sizeof(man->url), src->mirror, man->path);
		if ((r = from_mirror(mm, man, cr->manifest_sha256, err, errsz)) < 0)
			return r;
	} else {
		base_join(man->url, sizeof(man->url),
		          src->upstream ? src->upstream : "https://developer.download.nvidia.com", man->path);
		gb_strscpy(man->sha256, sizeof(man->sha256), cr->manifest_sha256);
		man->size = cr->manifest_size;
#ifdef GB_TEST_HOOKS
		test_pin("GPUBOOT_TEST_CUDA_MANIFEST_PIN", man->sha256, sizeof(man->sha256), &man->size);
#endif
	}
	if (o->dry_run) {
		r = cuda_manifest_text_dry(man, src, o, &text, &tlen, err, errsz);
	} else {
		r = gb_fetch_all(ctx, man, 1, o);
		if (r < 0 || !man->verified) {
			snprintf(err, errsz, "%s", man->error);
			return r < 0 ? r : -EIO;
		}
		r = gb_read_file(man->cache_path, 16u << 20, &text, &tlen);
		if (r < 0)
			snprintf(err, errsz, "cannot read the verified manifest %s: %s", man->cache_path, strerror(-r));
	}
	if (r < 0)
		return r;
	return gb_redistrib_parse(text, tlen, p->in.platform, NULL, red, err, errsz);
}

/* One artifact per CUDA component the plan names, from the parsed manifest. */
static int cuda_components(const struct gb_plan *p, const struct gb_fetch_source *src, const struct gb_manifest *mm,
                           const struct gb_manifest *red, struct gb_artifact **v, size_t *n, char *err, size_t errsz)
{
	for (char **c = p->cuda.components; c && *c; c++) {
		const struct gb_manifest_entry *e = NULL;
		struct gb_artifact *a;
		char name[64];
		int r;

		gb_strscpy(name, sizeof(name), *c);
		name[strcspn(name, " ")] = '\0';
		for (size_t i = 0; i < red->n; i++)
			if (streq(red->v[i].name, name))
				e = &red->v[i];
		if (!e) {
			snprintf(err, errsz, "CUDA %s manifest has no %s for %s", p->cuda.release->manifest, name,
			         p->in.platform);
			return -ENOENT;
		}
		if (!(a = add(v, n))) {
			snprintf(err, errsz, "out of memory");
			return -ENOMEM;
		}
		snprintf(a->name, sizeof(a->name), "%s %s", e->name, e->version);
		snprintf(a->path, sizeof(a->path), REDIST_DIR "%s", e->path);
		if (src->mirror) {
			base_join(a->url, sizeof(a->url), src->mirror, a->path);
			if ((r = from_mirror(mm, a, e->sha256, err, errsz)) < 0)
				return r;
		} else {
			base_join(a->url, sizeof(a->url),
			          src->upstream ? src->upstream : "https://developer.download.nvidia.com", a->path);
			gb_strscpy(a->sha256, sizeof(a->sha256), e->sha256);
			a->size = e->size;
		}
	}
	return 0;
}

/* The mirror's prebuilt module packages the plan chose (the distro
 * method): each listed in the manifest with the sha256 the plan read. */
static int prebuilt_artifacts(const struct gb_plan *p, const struct gb_fetch_source *src, const struct gb_manifest *mm,
                              struct gb_artifact **v, size_t *n, char *err, size_t errsz)
{
	for (size_t i = 0; i < p->driver.n_prebuilt; i++) {
		const struct gb_plan_prebuilt *b = &p->driver.prebuilt[i];
		const struct gb_manifest_entry *e = gb_manifest_find(mm, b->path);
		struct gb_artifact *a;

		if (!src->mirror || !e || !streq(e->sha256, b->sha256)) {
			snprintf(
			    err, errsz,
			    "the prebuilt module package for %s (%s) is %s the mirror's signed manifest the plan read: "
			    "the mirror changed under this run; run again",
			    b->kernel, b->path,
			    !src->mirror ? "from a mirror, and no mirror is set, not in" : "not as in");
			return -ESTALE;
		}
		if (!(a = add(v, n))) {
			snprintf(err, errsz, "out of memory");
			return -ENOMEM;
		}
		snprintf(a->name, sizeof(a->name), "prebuilt module %s", b->kernel);
		gb_strscpy(a->path, sizeof(a->path), b->path);
		base_join(a->url, sizeof(a->url), src->mirror, b->path);
		gb_strscpy(a->sha256, sizeof(a->sha256), e->sha256);
		a->size = e->size;
	}
	return 0;
}

/* The runfile method's fabric manager (the plan's fm_redist): NVIDIA's
 * redistributable manifest and its two archives at their upstream paths
 * (compute/nvidia-driver/redist/<component>/linux-<platform>/...), each
 * listed in the mirror's signed manifest with its sha256 (the install
 * checks the archives against NVIDIA's manifest too). */
static int fm_artifacts(const struct gb_plan *p, const struct gb_fetch_source *src, const struct gb_manifest *mm,
                        struct gb_artifact **v, size_t *n, char *err, size_t errsz)
{
	static const char *const comps[] = { "fabricmanager", "libnvidia_nscq" };
	const char *plat = streq(p->in.arch, "aarch64") ? "sbsa" : "x86_64";
	const struct gb_plan_redist_offer *o = &p->driver.fm_redist;
	struct gb_artifact *a;
	int r;

	if (!o->path[0])
		return 0;
	if (!src->mirror) {
		snprintf(err, errsz, "the fabric manager's manifest %s comes from a mirror, and no mirror is set",
		         o->path);
		return -ESTALE;
	}
	for (size_t i = 0; i <= ARRAY_SIZE(comps); i++) {
		if (!(a = add(v, n))) {
			snprintf(err, errsz, "out of memory");
			return -ENOMEM;
		}
		if (i == 0) {
			snprintf(a->name, sizeof(a->name), "fabric manager manifest %s", p->driver.version);
			gb_strscpy(a->path, sizeof(a->path), o->path);
		} else {
			snprintf(a->name, sizeof(a->name), "%s %s", comps[i - 1], p->driver.version);
			snprintf(a->path, sizeof(a->path),
			         "compute/nvidia-driver/redist/%s/linux-%s/%s-linux-%s-%s-archive.tar.xz", comps[i - 1],
			         plat, comps[i - 1], plat, p->driver.version);
		}
		base_join(a->url, sizeof(a->url), src->mirror, a->path);
		r = from_mirror(mm, a, NULL, err, errsz);
		if (r < 0)
			return r;
		if (i == 0 && !streq(a->sha256, o->sha256)) {
			snprintf(err, errsz,
			         "%s is not as in the mirror's signed manifest the plan read: the mirror changed "
			         "under this run; run again",
			         o->path);
			return -ESTALE;
		}
	}
	return 0;
}

int gb_fetch_for_plan(struct gb_ctx *ctx, const struct gb_plan *p, const struct gb_fetch_source *src,
                      const struct gb_fetch_opts *o, struct gb_artifact **ret, size_t *ret_n, char *err, size_t errsz)
{
	struct gb_artifact *v = NULL, *a;
	struct gb_manifest mm = { 0 };
	size_t n = 0;
	int r = 0;

	/* A mirror: its signed manifest first, or nothing. */
	if (src->mirror && (r = gb_fetch_mirror_manifest(ctx, src, o, &mm, err, errsz)) < 0)
		return r;
	if ((r = prebuilt_artifacts(p, src, &mm, &v, &n, err, errsz)) < 0)
		goto fail;
	if (p->driver.runfile) {
		if (!(a = add(&v, &n))) {
			snprintf(err, errsz, "out of memory");
			r = -ENOMEM;
		} else
			r = runfile_artifact(p, src, o, &mm, a, err, errsz);
		if (r < 0)
			goto fail;
	}
	if ((r = fm_artifacts(p, src, &mm, &v, &n, err, errsz)) < 0)
		goto fail;
	if (p->cuda.release && p->cuda.release->manifest) {
		struct gb_manifest red = { 0 };
		struct gb_artifact man;

		memset(&man, 0, sizeof(man));
		man.result = GB_ARTIFACT_PENDING;
		r = cuda_manifest(ctx, p, src, o, &mm, &man, &red, err, errsz);
		if (r < 0 && r != -ENOMEM && o->dry_run && man.sha256[0]) {
			/* A dry run without the network: the manifest is known by its
			 * pinned sha256, the components it lists are not. */
			gb_manifest_done(&red);
			if (!(a = add(&v, &n))) {
				snprintf(err, errsz, "out of memory");
				r = -ENOMEM;
				goto fail;
			}
			*a = man;
			for (size_t i = 0; i < n; i++)
				v[i].in_cache = gb_cache_has(o->state_dir, v[i].sha256);
			gb_manifest_done(&mm);
			*ret = v;
			*ret_n = n;
			return 1;
		}
		if (r >= 0 && !(a = add(&v, &n))) {
			snprintf(err, errsz, "out of memory");
			r = -ENOMEM;
		}
		if (r >= 0) {
			*a = man;
			r = cuda_components(p, src, &mm, &red, &v, &n, err, errsz);
		}
		gb_manifest_done(&red);
		if (r < 0)
			goto fail;
	}
	for (size_t i = 0; i < n; i++)
		v[i].in_cache = gb_cache_has(o->state_dir, v[i].sha256);
	gb_manifest_done(&mm);
	*ret = v;
	*ret_n = n;
	return 0;
fail:
	gb_manifest_done(&mm);
	free(v);
	return r < 0 ? r : -EIO;
}

int gb_mirror_load_own(const char *dir, const char *sign_key, struct gb_manifest *ret, char *err, size_t errsz)
{
	_cleanup_free_ char *text = NULL, *sig = NULL;
	char path[1100], again[GB_SIG_HEX_LEN], kid[GB_KEY_ID_LEN];
	size_t len = 0, slen = 0;
	int r;

	*ret = (struct gb_manifest){ 0 };
	snprintf(path, sizeof(path), "%s/manifest.json", dir);
	r = gb_read_file(path, 8u << 20, &text, &len);
	if (r == -ENOENT)
		return 0;
	if (r >= 0) {
		snprintf(path, sizeof(path), "%s/manifest.json.sig", dir);
		r = gb_read_file(path, 4096, &sig, &slen);
	}
	if (r < 0) {
		snprintf(err, errsz, "cannot read %s: %s", path, strerror(-r));
		return r;
	}
	r = gb_sig_sign(sign_key, text, len, again, kid, err, errsz);
	if (r < 0)
		return r;
	if (slen < 128 || strncmp(sig, again, 128) != 0) {
		snprintf(err, errsz,
		         "%s/manifest.json is not signed by %s (another key's mirror, or changed after it was signed): "
		         "publish into a mirror of this key, or re-create it with gpuboot mirror",
		         dir, sign_key);
		return -EPERM;
	}
	return gb_mirror_manifest_parse(text, len, ret, err, errsz);
}

int gb_mirror_publish(struct gb_ctx *ctx, const char *dir, struct gb_manifest *m, const char *sign_key,
                      uint64_t version, char *err, size_t errsz)
{
	char *text = NULL, *sig = NULL, path[1100];
	time_t now = (time_t)(ctx->ops->now_realtime_ns(ctx->ops) / 1000000000ull), exp = now + 90 * 24 * 3600;
	uint64_t floor = m->version + 1;
	struct tm tm;
	int r;

	m->version = version ? version : (uint64_t)now;
	if (m->version < floor)
		m->version = floor; /* a node that saw the last one must take this one */
	gmtime_r(&now, &tm);
	strftime(m->created, sizeof(m->created), "%Y-%m-%dT%H:%M:%SZ", &tm);
	gmtime_r(&exp, &tm);
	strftime(m->expires, sizeof(m->expires), "%Y-%m-%dT%H:%M:%SZ", &tm);
	r = gb_mirror_manifest_sign(m, sign_key, &text, &sig, err, errsz);
	if (r < 0)
		return r;
	snprintf(path, sizeof(path), "%s/manifest.json", dir);
	r = gb_write_file_atomic(path, text, strlen(text), 0644);
	if (r >= 0) {
		snprintf(path, sizeof(path), "%s/manifest.json.sig", dir);
		r = gb_write_file_atomic(path, sig, strlen(sig), 0644);
	}
	if (r < 0)
		snprintf(err, errsz, "cannot write the manifest in %s: %s", dir, strerror(-r));
	free(text);
	free(sig);
	return r;
}

/* The old manifest's modules whose package is still in DIR, with their
 * artifact rows, into M. */
static int carry_modules(const char *dir, const struct gb_manifest *old, struct gb_manifest *m)
{
	char path[1100];
	int r = 0;

	for (size_t i = 0; i < old->n_mods && r >= 0; i++) {
		const struct gb_mirror_module *mod = &old->mods[i];
		const struct gb_manifest_entry *e = gb_manifest_find(old, mod->path);
		struct stat st;
		snprintf(path, sizeof(path), "%s/%s", dir, mod->path);
		if (!e || stat(path, &st) < 0 || (unsigned long long)st.st_size != e->size)
			continue;
		r = gb_manifest_find(m, e->path) ? 0 : gb_manifest_put(m, e);
		if (r >= 0)
			r = gb_mirror_module_put(m, mod);
	}
	return r;
}

int gb_mirror_write(struct gb_ctx *ctx, const char *dir, const struct gb_artifact *a, size_t n, const char *sign_key,
                    uint64_t version, char *err, size_t errsz)
{
	struct gb_manifest m = { 0 }, old = { 0 };
	char path[1600], e2[512] = "";
	int r = 0;

	m.v = calloc(n ? n : 1, sizeof(*m.v));
	if (!m.v)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, a[i].path);
		r = gb_copy_file_atomic(a[i].cache_path, path, 0644);
		if (r < 0) {
			snprintf(err, errsz, "cannot copy %s to %s: %s", a[i].cache_path, path, strerror(-r));
			goto out;
		}
		gb_strscpy(m.v[i].path, sizeof(m.v[i].path), a[i].path);
		gb_strscpy(m.v[i].sha256, sizeof(m.v[i].sha256), a[i].sha256);
		m.v[i].size = a[i].size;
	}
	m.n = n;
	r = gb_mirror_load_own(dir, sign_key, &old, e2, sizeof(e2));
	if (r == -ENOMEM)
		goto out;
	if (r < 0)
		gb_log_warning("%s: its prebuilt modules are not carried over", e2);
	else if ((r = carry_modules(dir, &old, &m)) < 0)
		goto out;
	/* a rewrite never goes below the version it replaces */
	m.version = r >= 0 ? old.version : 0;
	r = gb_mirror_publish(ctx, dir, &m, sign_key, version, err, errsz);
out:
	gb_manifest_done(&old);
	gb_manifest_done(&m);
	return r;
}
