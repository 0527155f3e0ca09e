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
#include "fetch-plan.h"
#include "fetch.h"
#include "manifest.h"
#include "plan/plan.h"
#include "shared/fileio.h"
#include "shared/log.h"
#include "shared/macro.h"
#include "shared/util.h"

#define REDIST_DIR "compute/cuda/redist/"

#ifdef GB_TEST_HOOKS
/* Test builds: "SHA256:SIZE" in the environment replaces a catalog pin, so the
 * tests' loopback upstream can serve generated artifacts in NVIDIA's layout. */
static void test_pin(const char *env, char *sha, size_t shasz, unsigned long long *size)
{
	const char *v = getenv(env), *colon;
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

int gb_fetch_for_plan(struct gb_ctx *ctx, const struct gb_plan *p, const struct gb_fetch_source *src,
                      const struct gb_fetch_opts *o, struct gb_artifact **ret, size_t *ret_n, char *err, size_t errsz)
{
	struct gb_artifact *v = NULL, *a;
	struct gb_manifest mm = { 0 };
	size_t n = 0;
	int r = 0;

	/* A mirror: its signed manifest first, or nothing. */
	if (src->mirror) {
		char url[1100];
		char *text = NULL, *sig = NULL;
		size_t tlen = 0, slen = 0;
		uint64_t now = ctx->ops->now_realtime_ns(ctx->ops) / 1000000000ull;
		uint64_t seen = gb_mirror_version_load(o->state_dir);
		base_join(url, sizeof(url), src->mirror, "manifest.json");
		r = gb_fetch_small(url, src->ca_file, o->allow_http, 8u << 20, &text, &tlen, NULL, err, errsz);
		if (r >= 0) {
			base_join(url, sizeof(url), src->mirror, "manifest.json.sig");
			r = gb_fetch_small(url, src->ca_file, o->allow_http, 4096, &sig, &slen, NULL, err, errsz);
		}
		if (r >= 0)
			r = gb_mirror_manifest_verify(text, tlen, sig, src->trust_keys, now, seen, &mm, err, errsz);
		free(text);
		free(sig);
		if (r < 0)
			return r;
		gb_log_info("Mirror manifest version %llu, signed by %s, expires %s", (unsigned long long)mm.version,
		            mm.key_id, mm.expires);
		if (mm.version > seen && (r = gb_mirror_version_store(o->state_dir, mm.version)) < 0) {
			snprintf(err, errsz, "cannot record the mirror manifest version: %s", strerror(-r));
			gb_manifest_done(&mm);
			return r;
		}
	}

	/* The driver runfile. */
	if (p->driver.runfile) {
		const struct gb_runfile *rf = p->driver.runfile;
		const char *path = url_path(rf->url);
		if (!path || !(a = add(&v, &n))) {
			r = -ENOMEM;
			goto fail;
		}
		snprintf(a->name, sizeof(a->name), "driver runfile %s", rf->version);
		gb_strscpy(a->path, sizeof(a->path), path);
		if (src->mirror) {
			base_join(a->url, sizeof(a->url), src->mirror, path);
			if ((r = from_mirror(&mm, a, rf->sha256, err, errsz)) < 0)
				goto fail;
		} else {
			char sumurl[1200], *sum = NULL;
			size_t slen;
			long code = 0;
			if (src->upstream)
				base_join(a->url, sizeof(a->url), src->upstream, path);
			else
				gb_strscpy(a->url, sizeof(a->url), rf->url);
			gb_strscpy(a->sha256, sizeof(a->sha256), rf->sha256);
			a->size = rf->size;
#ifdef GB_TEST_HOOKS
			test_pin("GPUBOOT_TEST_RUNFILE_PIN", a->sha256, sizeof(a->sha256), &a->size);
#endif
			/* NVIDIA publishes <url>.sha256sum beside each runfile: it must agree with the
			 * pin. Not needed for a copy already in the cache (gb_fetch_all verifies it). */
			if (!o->offline && !gb_cache_has(o->state_dir, a->sha256)) {
				char e2[400];
				snprintf(sumurl, sizeof(sumurl), "%s.sha256sum", a->url);
				if (gb_fetch_small(sumurl, src->ca_file, false, 4096, &sum, &slen, &code, e2,
				                   sizeof(e2)) == 0) {
					if (slen < 64 || strncmp(sum, a->sha256, 64) != 0) {
						snprintf(err, errsz,
						         "%s: NVIDIA's published checksum (%s) disagrees with the "
						         "catalog's pin %.16s...: refusing it",
						         a->name, sumurl, a->sha256);
						free(sum);
						r = -EBADMSG;
						goto fail;
					}
					free(sum);
				} else {
					gb_log_info("%s: no published checksum (%s); the catalog's pin decides",
					            a->name, e2);
				}
			}
		}
	}

	/* CUDA: NVIDIA's redistrib manifest (its sha256 pinned in the catalog), then the components. */
	if (p->cuda.release && p->cuda.release->manifest) {
		const struct gb_cuda_release *cr = p->cuda.release;
		struct gb_artifact man;
		struct gb_manifest red = { 0 };
		char *text = NULL;
		size_t tlen = 0;

		memset(&man, 0, sizeof(man));
		snprintf(man.name, sizeof(man.name), "CUDA %s redistrib manifest", cr->manifest);
		snprintf(man.path, sizeof(man.path), REDIST_DIR "redistrib_%s.json", cr->manifest);
		if (src->mirror) {
			base_join(man.url, sizeof(man.url), src->mirror, man.path);
			if ((r = from_mirror(&mm, &man, cr->manifest_sha256, err, errsz)) < 0)
				goto fail;
		} else {
			base_join(man.url, sizeof(man.url),
			          src->upstream ? src->upstream : "https://developer.download.nvidia.com", man.path);
			gb_strscpy(man.sha256, sizeof(man.sha256), cr->manifest_sha256);
			man.size = cr->manifest_size;
#ifdef GB_TEST_HOOKS
			test_pin("GPUBOOT_TEST_CUDA_MANIFEST_PIN", man.sha256, sizeof(man.sha256), &man.size);
#endif
		}
		r = gb_fetch_all(ctx, &man, 1, o);
		if (r < 0) {
			snprintf(err, errsz, "%s", man.error);
			goto fail;
		}
		r = gb_read_file(man.cache_path, 16u << 20, &text, &tlen);
		if (r < 0) {
			snprintf(err, errsz, "cannot read the verified manifest %s: %s", man.cache_path, strerror(-r));
			goto fail;
		}
		r = gb_redistrib_parse(text, tlen, p->in.platform, NULL, &red, err, errsz);
		free(text);
		if (r < 0)
			goto fail;
		if (!(a = add(&v, &n))) {
			gb_manifest_done(&red);
			r = -ENOMEM;
			goto fail;
		}
		*a = man;
		for (char **c = p->cuda.components; c && *c; c++) {
			char name[64];
			const struct gb_manifest_entry *e = NULL;
			gb_strscpy(name, sizeof(name), *c);
			name[strcspn(name, " ")] = '\0';
			for (size_t i = 0; i < red.n; i++)
				if (streq(red.v[i].name, name))
					e = &red.v[i];
			if (!e) {
				snprintf(err, errsz, "CUDA %s manifest has no %s for %s", cr->manifest, name,
				         p->in.platform);
				gb_manifest_done(&red);
				r = -ENOENT;
				goto fail;
			}
			if (!(a = add(&v, &n))) {
				gb_manifest_done(&red);
				r = -ENOMEM;
				goto fail;
			}
			snprintf(a->name, sizeof(a->name), "%s %s", e->name, e->version);
			snprintf(a->path, sizeof(a->path), REDIST_DIR "%s", e->path);
			if (src->mirror) {
				base_join(a->url, sizeof(a->url), src->mirror, a->path);
				if ((r = from_mirror(&mm, a, e->sha256, err, errsz)) < 0) {
					gb_manifest_done(&red);
					goto fail;
				}
			} else {
				base_join(a->url, sizeof(a->url),
				          src->upstream ? src->upstream : "https://developer.download.nvidia.com",
				          a->path);
				gb_strscpy(a->sha256, sizeof(a->sha256), e->sha256);
				a->size = e->size;
			}
		}
		gb_manifest_done(&red);
	}
	gb_manifest_done(&mm);
	*ret = v;
	*ret_n = n;
	return 0;
fail:
	gb_manifest_done(&mm);
	free(v);
	return r < 0 ? r : -EIO;
}

int gb_mirror_write(struct gb_ctx *ctx, const char *dir, const struct gb_artifact *a, size_t n, const char *sign_key,
                    uint64_t version, char *err, size_t errsz)
{
	struct gb_manifest m = { 0 };
	char *text = NULL, *sig = NULL, path[1600];
	time_t now = (time_t)(ctx->ops->now_realtime_ns(ctx->ops) / 1000000000ull), exp = now + 90 * 24 * 3600;
	struct tm tm;
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
	m.version = version ? version : (uint64_t)now;
	gmtime_r(&now, &tm);
	strftime(m.created, sizeof(m.created), "%Y-%m-%dT%H:%M:%SZ", &tm);
	gmtime_r(&exp, &tm);
	strftime(m.expires, sizeof(m.expires), "%Y-%m-%dT%H:%M:%SZ", &tm);
	r = gb_mirror_manifest_sign(&m, sign_key, &text, &sig, err, errsz);
	if (r < 0)
		goto out;
	snprintf(path, sizeof(path), "%s/manifest.json", dir);
	r = gb_write_file_atomic(path, text, strlen(text), 0644);
	if (r >= 0) {
		snprintf(path, sizeof(path), "%s/manifest.json.sig", dir);
		r = gb_write_file_atomic(path, sig, strlen(sig), 0644);
	}
	if (r < 0)
		snprintf(err, errsz, "cannot write the manifest in %s: %s", dir, strerror(-r));
out:
	free(text);
	free(sig);
	gb_manifest_done(&m);
	return r;
}
