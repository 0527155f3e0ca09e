/* SPDX-License-Identifier: MIT */
/* CURLOPT_PROTOCOLS (the bitmask) is the fallback for a libcurl without the
 * _STR options; newer headers mark it deprecated. */
#define CURL_DISABLE_DEPRECATION 1
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "context.h"
#include "shared/digest.h"
#include "fetch.h"
#include "shared/fileio.h"
#include "shared/killpoint.h"
#include "shared/log.h"
#include "shared/macro.h"
#include "shared/test-knob.h"
#include "shared/tls.h"
#include "shared/util.h"

void gb_fetch_opts_default(struct gb_fetch_opts *o, const char *state_dir)
{
	memset(o, 0, sizeof(*o));
	o->state_dir = state_dir;
	o->parallel = 4;
	o->max_attempts = 6;
	o->deadline_s = 3600;
	o->low_speed_s = 30;
	o->backoff_ms = 1000;
}

bool gb_cache_has(const char *state_dir, const char *sha256)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/cache/sha256/%s", state_dir, sha256);
	return access(path, F_OK) == 0;
}

int gb_cache_lookup(const char *state_dir, const char *sha256, unsigned long long size, char *ret_path, size_t n)
{
	char path[1024], hex[65];
	unsigned long long got = 0;
	int fd, r;

	snprintf(path, sizeof(path), "%s/cache/sha256/%s", state_dir, sha256);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return negative_errno();
	r = gb_sha256_file(fd, hex, &got);
	close(fd);
	if (r < 0)
		return r;
	if (got != size || strcmp(hex, sha256) != 0) {
		gb_log_warning("Cache entry '%s' is %s (%llu bytes, sha256 %.12s...): removed, fetching again", path,
		               got != size ? "truncated or extended" : "altered", got, hex);
		unlink(path);
		return -EBADMSG;
	}
	gb_strscpy(ret_path, n, path);
	return 0;
}

struct xfer {
	struct gb_artifact *a;
	CURL *easy;
	int fd;
	char tmp[1100];
	struct gb_sha256 h;
	unsigned long long got;
	uint64_t start_ns, next_try_ns, last_log_ns;
	bool running, finished, overflow, range, restarted;
	int write_err; /* the cache file's write failed: a negative errno */
	char errbuf[CURL_ERROR_SIZE];
};

static size_t on_write(char *data, size_t sz, size_t nm, void *userp)
{
	struct xfer *x = userp;
	size_t n = sz * nm;
	long code = 0;

	/* A Range request answered with the whole body: start over. */
	if (x->range && !x->restarted) {
		curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &code);
		x->restarted = true;
		if (code == 200) {
			gb_sha256_done(&x->h);
			if (gb_sha256_init(&x->h) < 0 || ftruncate(x->fd, 0) < 0 || lseek(x->fd, 0, SEEK_SET) < 0)
				return 0;
			x->got = 0;
		}
	}
	/* Never more bytes than the manifest declares. */
	if (x->got + n > x->a->size) {
		x->overflow = true;
		return 0;
	}
	for (size_t off = 0; off < n;) {
		ssize_t w = write(x->fd, data + off, n - off);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			x->write_err = negative_errno();
			return 0;
		}
		off += (size_t)w;
	}
	if (gb_sha256_update(&x->h, data, n) < 0)
		return 0;
	x->got += n;
	gb_kill_point("download");
	return n;
}

static bool transient_curl(CURLcode c)
{
	switch (c) {
	case CURLE_OPERATION_TIMEDOUT:
	case CURLE_COULDNT_CONNECT:
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
	case CURLE_RECV_ERROR:
	case CURLE_SEND_ERROR:
	case CURLE_PARTIAL_FILE:
	case CURLE_GOT_NOTHING:
	case CURLE_HTTP2:
	case CURLE_HTTP2_STREAM: return true;
	default: return false;
	}
}

static bool transient_http(long code)
{
	return code == 408 || code == 429 || (code >= 500 && code <= 599);
}

static long proto_mask(const char *list)
{
	long m = 0;
	for (const char *p = list; *p;) {
		size_t k = strcspn(p, ",");
		if (k == 4 && !strncmp(p, "file", 4))
			m |= CURLPROTO_FILE;
		else if (k == 4 && !strncmp(p, "http", 4))
			m |= CURLPROTO_HTTP;
		else if (k == 5 && !strncmp(p, "https", 5))
			m |= CURLPROTO_HTTPS;
		p += k;
		if (*p == ',')
			p++;
	}
	return m;
}

static CURLcode setopt_protocols_str(CURL *e, CURLoption opt, const char *list)
{
	/* Test builds: "nostr" behaves as a libcurl older than 7.85, "none" as one
	 * where the bitmask fails as well. */
	const char *hook = gb_test_knob("GPUBOOT_TEST_CURL_PROTOCOLS");
	if (hook && (streq(hook, "nostr") || streq(hook, "none")))
		return CURLE_UNKNOWN_OPTION;
#if LIBCURL_VERSION_NUM >= 0x075500
	return curl_easy_setopt(e, opt, list);
#else
	(void)e, (void)opt, (void)list;
	return CURLE_UNKNOWN_OPTION;
#endif
}

static CURLcode setopt_protocols_mask(CURL *e, CURLoption opt, long mask)
{
	const char *hook = gb_test_knob("GPUBOOT_TEST_CURL_PROTOCOLS");
	if (hook && streq(hook, "none"))
		return CURLE_UNKNOWN_OPTION;
	return curl_easy_setopt(e, opt, mask);
}

/* The protocols a transfer and its redirects may use. The _STR options need
 * libcurl 7.85; an older one answers CURLE_UNKNOWN_OPTION and the limit
 * would silently vanish: fall back to the bitmask, and when that does not
 * take either, refuse the transfer (-ENOTSUP, the reason in errbuf). */
static int limit_protocols(CURL *e, const char *allowed, const char *redir, char *errbuf)
{
	struct {
		CURLoption str, mask;
		const char *list;
	} opts[] = {
#if LIBCURL_VERSION_NUM >= 0x075500
		{ CURLOPT_PROTOCOLS_STR, CURLOPT_PROTOCOLS, allowed },
		{ CURLOPT_REDIR_PROTOCOLS_STR, CURLOPT_REDIR_PROTOCOLS, redir },
#else
		{ CURLOPT_PROTOCOLS, CURLOPT_PROTOCOLS, allowed },
		{ CURLOPT_REDIR_PROTOCOLS, CURLOPT_REDIR_PROTOCOLS, redir },
#endif
	};

	for (size_t i = 0; i < ARRAY_SIZE(opts); i++) {
		CURLcode c = setopt_protocols_str(e, opts[i].str, opts[i].list);
		if (c == CURLE_OK)
			continue;
		c = setopt_protocols_mask(e, opts[i].mask, proto_mask(opts[i].list));
		if (c != CURLE_OK) {
			snprintf(errbuf, CURL_ERROR_SIZE,
			         "this libcurl cannot limit transfers to %s (%s): refusing the transfer", opts[i].list,
			         curl_easy_strerror(c));
			return -ENOTSUP;
		}
	}
	return 0;
}

/* The options every transfer gets: HTTPS only (file:// for local bundles,
 * never both), redirects few and only to https, timeouts, the CA bundle.
 * Fails (errbuf says why) when the protocol limit cannot be set. */
static int common_opts(CURL *e, const char *url, const char *ca, char *errbuf, bool allow_http)
{
	bool is_file = gb_startswith(url, "file://") != NULL;
	bool is_http = allow_http && gb_startswith(url, "http://") != NULL;
	int r;

	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	r = limit_protocols(e, is_file ? "file" : is_http ? "http" : "https", is_http ? "http,https" : "https", errbuf);
	if (r < 0)
		return r;
	curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 1L);
	curl_easy_setopt(e, CURLOPT_MAXREDIRS, 5L);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT, 30L);
	curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L);
	curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L);
	curl_easy_setopt(e, CURLOPT_USERAGENT, "gpuboot/0.1");
	if (ca)
		curl_easy_setopt(e, CURLOPT_CAINFO, ca);
	return 0;
}

static int setup_easy(struct xfer *x, const struct gb_fetch_opts *o, const char *ca)
{
	CURL *e = curl_easy_init();
	int r;

	if (!e)
		return -ENOMEM;
	x->easy = e;
	x->errbuf[0] = '\0';
	r = common_opts(e, x->a->url, ca, x->errbuf, o->allow_http);
	if (r < 0)
		return r;
	curl_easy_setopt(e, CURLOPT_PRIVATE, x);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, x);
	curl_easy_setopt(e, CURLOPT_FAILONERROR, 0L);
	curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1024L);
	curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, (long)o->low_speed_s);
	curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, NULL);
	if (o->proxy)
		curl_easy_setopt(e, CURLOPT_PROXY, o->proxy);
	if (x->got > 0) {
		curl_easy_setopt(e, CURLOPT_RESUME_FROM_LARGE, (curl_off_t)x->got);
		x->range = true;
		x->restarted = false;
	} else {
		x->range = false;
	}
	return 0;
}

static void fail_xfer(struct xfer *x, int err, const char *fmt, const char *detail)
{
	x->a->result = err;
	x->a->verified = false;
	snprintf(x->a->error, sizeof(x->a->error), fmt, detail);
	x->finished = true;
	if (x->fd >= 0) {
		close(x->fd);
		x->fd = -1;
	}
	unlink(x->tmp);
	gb_sha256_done(&x->h);
}

/* What no retry helps: the cache's filesystem failed the write (full), or
 * the server sent more than declared. True when the transfer failed so. */
static bool fail_early(struct xfer *x)
{
	char detail[400];
	struct statvfs sv;
	unsigned long long avail;

	if (x->overflow) {
		snprintf(detail, sizeof(detail), "%s: the server sent more than the %llu bytes the manifest declares",
		         x->a->url, x->a->size);
		fail_xfer(x, -EFBIG, "%s", detail);
		return true;
	}
	if (!x->write_err)
		return false;
	avail = statvfs(x->tmp, &sv) == 0 ? (unsigned long long)sv.f_bavail * sv.f_frsize : 0;
	snprintf(detail, sizeof(detail), "cannot write the cache '%s': %s (need %llu bytes for %s, %llu available)",
	         x->tmp, strerror(-x->write_err), x->a->size, x->a->name, avail);
	fail_xfer(x, x->write_err, "%s", detail);
	return true;
}

/* The transfer ended: verify, then move into the cache, or plan a retry. */
static void finish_xfer(struct gb_ctx *ctx, struct xfer *x, CURLcode c, const struct gb_fetch_opts *o,
                        uint64_t deadline)
{
	struct gb_artifact *a = x->a;
	long code = 0;
	char detail[400];
	bool is_file = gb_startswith(a->url, "file://") != NULL;
	int r;

	curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_cleanup(x->easy);
	x->easy = NULL;
	x->running = false;
	a->attempts++;

	if (fail_early(x))
		return;
	if (c == CURLE_OK && !is_file && code >= 400) {
		snprintf(detail, sizeof(detail), "%s: HTTP %ld", a->url, code);
		if (!transient_http(code)) {
			fail_xfer(x, -ENOENT, "%s", detail);
			return;
		}
		gb_strscpy(a->error, sizeof(a->error), detail);
		goto retry;
	}
	if (c == CURLE_RANGE_ERROR) {
		/* The server cannot resume: start this one over from the first byte. */
		gb_sha256_done(&x->h);
		if (gb_sha256_init(&x->h) < 0 || ftruncate(x->fd, 0) < 0 || lseek(x->fd, 0, SEEK_SET) < 0) {
			fail_xfer(x, -EIO, "%s", "cannot restart the download");
			return;
		}
		x->got = 0;
		snprintf(a->error, sizeof(a->error), "%s: the server cannot resume; starting over", a->url);
		goto retry;
	}
	if (c != CURLE_OK) {
		snprintf(detail, sizeof(detail), "%s: %s", a->url, x->errbuf[0] ? x->errbuf : curl_easy_strerror(c));
		if (c == CURLE_UNSUPPORTED_PROTOCOL)
			snprintf(detail, sizeof(detail),
			         "%s: refused a redirect or URL to a scheme other than https (%s)", a->url,
			         x->errbuf[0] ? x->errbuf : curl_easy_strerror(c));
		if (!transient_curl(c) || is_file) {
			fail_xfer(x, c == CURLE_PEER_FAILED_VERIFICATION ? -EPERM : -EIO, "%s", detail);
			return;
		}
		gb_strscpy(a->error, sizeof(a->error), detail);
		goto retry;
	}
	if (x->got != a->size && is_file) {
		/* A local file does not get longer by asking again. */
		snprintf(detail, sizeof(detail), "%s: %llu bytes, but the manifest declares %llu", a->url, x->got,
		         a->size);
		fail_xfer(x, -EBADMSG, "%s", detail);
		return;
	}
	if (x->got != a->size) {
		snprintf(detail, sizeof(detail), "%s: got %llu of %llu bytes", a->url, x->got, a->size);
		gb_strscpy(a->error, sizeof(a->error), detail);
		goto retry;
	}
	{
		char hex[65];
		if (gb_sha256_final(&x->h, hex) < 0 || strcmp(hex, a->sha256) != 0) {
			snprintf(detail, sizeof(detail), "%s: sha256 %s does not match the manifest's %s", a->url, hex,
			         a->sha256);
			fail_xfer(x, -EBADMSG, "%s", detail);
			return;
		}
		gb_sha256_done(&x->h);
		r = fsync(x->fd) < 0 ? negative_errno() : 0;
		if (close(x->fd) < 0 && r == 0)
			r = negative_errno();
		x->fd = -1;
		if (r < 0) {
			fail_xfer(x, r, "cannot write the cache: %s", strerror(-r));
			return;
		}
		snprintf(a->cache_path, sizeof(a->cache_path), "%s/cache/sha256/%s", o->state_dir, a->sha256);
		if (rename(x->tmp, a->cache_path) < 0) {
			fail_xfer(x, negative_errno(), "cannot move into the cache: %s", strerror(errno));
			return;
		}
		gb_kill_point("cache");
		snprintf(detail, sizeof(detail), "%s/cache/sha256", o->state_dir);
		if ((r = gb_fsync_dir(detail)) < 0) {
			snprintf(detail, sizeof(detail),
			         "%s/cache/sha256: cannot sync the directory after the rename: %s", o->state_dir,
			         strerror(-r));
			a->cache_path[0] = '\0';
			fail_xfer(x, r, "%s", detail);
			return;
		}
		a->result = 0;
		a->verified = true;
		a->error[0] = '\0';
		a->seconds = (double)(ctx->ops->now_monotonic_ns(ctx->ops) - x->start_ns) / 1e9;
		x->finished = true;
		return;
	}
retry:
	if (a->attempts >= o->max_attempts || ctx->ops->now_monotonic_ns(ctx->ops) >= deadline) {
		char last[340];
		snprintf(last, sizeof(last), "%s (gave up after %u attempts)", a->error, a->attempts);
		fail_xfer(x, -ETIMEDOUT, "%s", last);
		return;
	}
	{
		/* Exponential backoff with jitter, capped at 30 s. */
		uint64_t base = (uint64_t)o->backoff_ms << (a->attempts > 5 ? 5 : a->attempts - 1);
		uint64_t jitter = base / 2 + gb_ops_random_below(ctx->ops, base + 1);
		if (jitter > 30000)
			jitter = 30000;
		x->next_try_ns = ctx->ops->now_monotonic_ns(ctx->ops) + jitter * 1000000ull;
		gb_log_info("%s: %s; retrying in %llu ms%s", a->name, a->error, (unsigned long long)jitter,
		            x->got ? " (resuming)" : "");
	}
}

/* Mark every artifact not yet decided as failed, with the reason: an
 * artifact never attempted must never read as verified. */
_printf_(4, 5) static void fail_undecided(struct gb_artifact *arts, size_t n, int err, const char *fmt, ...)
{
	char why[300];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	for (size_t i = 0; i < n; i++) {
		if (arts[i].verified || arts[i].result != GB_ARTIFACT_PENDING)
			continue;
		arts[i].result = err;
		snprintf(arts[i].error, sizeof(arts[i].error), "not fetched: %s", why);
	}
}

static CURLcode curl_init_result = CURLE_FAILED_INIT;
static void curl_init_once(void)
{
	curl_init_result = curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* curl_global_init once per process, from whichever thread comes first
 * (a background fetch and the install's key download may both use curl). */
int gb_fetch_global_init(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, curl_init_once);
	return curl_init_result == CURLE_OK ? 0 : -EIO;
}

/* The cache directories and the CA bundle: what every transfer needs. */
static int fetch_prepare(const struct gb_fetch_opts *o, const char **ret_ca, struct gb_artifact *arts, size_t n)
{
	char dir[1100];
	int r;

	if (gb_fetch_global_init() < 0) {
		fail_undecided(arts, n, -EIO, "libcurl failed to initialise");
		return -EIO;
	}
	snprintf(dir, sizeof(dir), "%s/cache/sha256", o->state_dir);
	if ((r = gb_mkdir_p(dir, 0755)) < 0) {
		fail_undecided(arts, n, r, "cannot create the cache '%s': %s", dir, strerror(-r));
		return gb_log_error_errno(r, "Failed to create the cache '%s': %m", dir);
	}
	snprintf(dir, sizeof(dir), "%s/cache/tmp", o->state_dir);
	if ((r = gb_mkdir_p(dir, 0700)) < 0) {
		fail_undecided(arts, n, r, "cannot create '%s': %s", dir, strerror(-r));
		return gb_log_error_errno(r, "Failed to create '%s': %m", dir);
	}
	if ((r = gb_ca_bundle_find(o->ca_file, ret_ca)) < 0 && o->ca_file) {
		fail_undecided(arts, n, r, "CA file '%s' cannot be read: %s", o->ca_file, strerror(-r));
		return gb_log_error_errno(r, "CA file '%s' cannot be read: %m; pass a PEM bundle with --ca-file",
		                          o->ca_file);
	}
	return 0;
}

/* Decide what an artifact needs before any transfer: refused (no checksum,
 * offline), already verified in the cache, or a temp file to download into.
 * Returns true when it is decided (nothing to transfer). */
static bool xfer_prepare(struct gb_ctx *ctx, struct xfer *x, size_t i, const struct gb_fetch_opts *o)
{
	struct gb_artifact *a = x->a;

	a->error[0] = '\0';
	if (!gb_sha256_valid(a->sha256) || a->size == 0) {
		snprintf(a->error, sizeof(a->error), "%s: no valid sha256 and size to check it against", a->name);
		a->result = -EINVAL;
		return true;
	}
	if (gb_cache_lookup(o->state_dir, a->sha256, a->size, a->cache_path, sizeof(a->cache_path)) == 0) {
		a->from_cache = a->in_cache = a->verified = true;
		a->result = 0;
		return true;
	}
	if (o->offline && !gb_startswith(a->url, "file://")) {
		snprintf(a->error, sizeof(a->error), "%s is not in the cache and --offline forbids %s", a->name,
		         a->url);
		a->result = -ENETUNREACH;
		return true;
	}
	snprintf(x->tmp, sizeof(x->tmp), "%s/cache/tmp/%s.%zu.part", o->state_dir, a->sha256, i);
	x->fd = open(x->tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (x->fd < 0 || gb_sha256_init(&x->h) < 0) {
		a->result = x->fd < 0 ? negative_errno() : -ENOMEM;
		snprintf(a->error, sizeof(a->error), "cannot create '%s': %s", x->tmp, strerror(-a->result));
		if (x->fd >= 0) {
			close(x->fd);
			unlink(x->tmp);
		}
		x->fd = -1;
		return true;
	}
	x->start_ns = ctx->ops->now_monotonic_ns(ctx->ops);
	return false;
}

/* Start what is due, up to the parallel limit; returns how many finished here. */
static size_t start_due(CURLM *m, struct xfer *xs, size_t n, const struct gb_fetch_opts *o, const char *ca,
                        uint64_t now, uint64_t deadline)
{
	unsigned running = 0;
	size_t done = 0;

	for (size_t i = 0; i < n; i++)
		running += xs[i].running;
	for (size_t i = 0; i < n && running < o->parallel; i++) {
		struct xfer *x = &xs[i];
		if (x->finished || x->running || x->next_try_ns > now)
			continue;
		if (now >= deadline) {
			fail_xfer(x, -ETIMEDOUT, "%s", "the fetch deadline passed");
			done++;
			continue;
		}
		int r = setup_easy(x, o, ca);
		if (r < 0 || curl_multi_add_handle(m, x->easy) != CURLM_OK) {
			fail_xfer(x, r < 0 ? r : -ENOMEM, "%s", x->errbuf[0] ? x->errbuf : "cannot start the transfer");
			done++;
			continue;
		}
		x->running = true;
		running++;
	}
	return done;
}

/* Progress: on a terminal one line per running transfer, redrawn in place
 * twice a second; otherwise a log line per transfer every 5 s. */
static void draw_progress(struct xfer *xs, size_t n, uint64_t now, unsigned *drawn)
{
	unsigned lines = 0;

	if (*drawn)
		fprintf(stderr, "\033[%uA", *drawn);
	for (size_t i = 0; i < n; i++) {
		struct xfer *x = &xs[i];
		double secs = (double)(now - x->start_ns) / 1e9, rate;
		if (!x->running || secs < 0.5)
			continue;
		rate = x->got / secs;
		fprintf(stderr, "\033[2K%-40.40s %7.1f/%7.1f MiB %7.1f MB/s ETA %4.0f s\n", x->a->name,
		        x->got / 1048576.0, x->a->size / 1048576.0, rate / 1e6,
		        rate > 0 ? (double)(x->a->size - x->got) / rate : 0.0);
		lines++;
	}
	for (unsigned k = lines; k < *drawn; k++)
		fputs("\033[2K\n", stderr);
	if (lines < *drawn)
		fprintf(stderr, "\033[%uA", *drawn - lines);
	*drawn = lines;
}

static void log_progress(struct xfer *xs, size_t n, uint64_t now)
{
	for (size_t i = 0; i < n; i++) {
		struct xfer *x = &xs[i];
		double secs;
		if (!x->running || now - x->last_log_ns < 5000000000ull)
			continue;
		x->last_log_ns = now;
		secs = (double)(now - x->start_ns) / 1e9;
		if (secs >= 1)
			gb_log_info("%s: %llu of %llu bytes, %.1f MB/s", x->a->name, x->got, x->a->size,
			            x->got / 1e6 / secs);
	}
}

/* Run the transfers until each artifact is decided. */
static void run_transfers(struct gb_ctx *ctx, CURLM *m, struct xfer *xs, size_t n, size_t done,
                          const struct gb_fetch_opts *o, const char *ca)
{
	uint64_t deadline = ctx->ops->now_monotonic_ns(ctx->ops) + (uint64_t)o->deadline_s * 1000000000ull;
	bool tty = !o->background && isatty(STDERR_FILENO);
	uint64_t last_draw_ns = 0;
	unsigned drawn = 0;

	while (done < n) {
		uint64_t now = ctx->ops->now_monotonic_ns(ctx->ops);
		int still = 0, msgs = 0;
		CURLMsg *msg;

		if (o->cancel && atomic_load(o->cancel)) {
			for (size_t i = 0; i < n; i++)
				if (!xs[i].finished)
					fail_xfer(&xs[i], -ECANCELED, "%s", "cancelled: the install it was for failed");
			break;
		}
		done += start_due(m, xs, n, o, ca, now, deadline);
		curl_multi_perform(m, &still);
		while ((msg = curl_multi_info_read(m, &msgs))) {
			struct xfer *x = NULL;
			if (msg->msg != CURLMSG_DONE)
				continue;
			curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&x);
			curl_multi_remove_handle(m, msg->easy_handle);
			finish_xfer(ctx, x, msg->data.result, o, deadline);
			if (x->finished)
				done++;
		}
		if (tty && now - last_draw_ns >= 500000000ull) {
			last_draw_ns = now;
			draw_progress(xs, n, now, &drawn);
		} else if (!tty) {
			log_progress(xs, n, now);
		}
		if (done < n)
			curl_multi_poll(m, NULL, 0, 100, NULL);
	}
	if (tty && drawn)
		fprintf(stderr, "\033[%uA\033[J", drawn);
}

int gb_fetch_all(struct gb_ctx *ctx, struct gb_artifact *arts, size_t n, const struct gb_fetch_opts *o)
{
	struct xfer *xs;
	CURLM *m;
	const char *ca = NULL;
	size_t done = 0;
	int failed = 0, r;

	/* Nothing is verified until this call has checked it. */
	for (size_t i = 0; i < n; i++) {
		arts[i].verified = arts[i].from_cache = false;
		arts[i].result = GB_ARTIFACT_PENDING;
		arts[i].cache_path[0] = '\0';
	}
	if (o->dry_run) {
		fail_undecided(arts, n, -EINVAL, "%s", "a dry run fetches nothing");
		return -EINVAL;
	}
	r = fetch_prepare(o, &ca, arts, n);
	if (r < 0)
		return r;
	xs = calloc(n ? n : 1, sizeof(*xs));
	m = curl_multi_init();
	if (!xs || !m) {
		free(xs);
		if (m)
			curl_multi_cleanup(m);
		fail_undecided(arts, n, -ENOMEM, "%s", "out of memory");
		return -ENOMEM;
	}
	curl_multi_setopt(m, CURLMOPT_MAX_TOTAL_CONNECTIONS, (long)o->parallel);
	curl_multi_setopt(m, CURLMOPT_MAX_HOST_CONNECTIONS, (long)o->parallel);

	for (size_t i = 0; i < n; i++) {
		xs[i].a = &arts[i];
		xs[i].fd = -1;
		if (xfer_prepare(ctx, &xs[i], i, o)) {
			xs[i].finished = true;
			done++;
		}
	}
	run_transfers(ctx, m, xs, n, done, o, ca);
	for (size_t i = 0; i < n; i++) {
		if (xs[i].easy) {
			curl_multi_remove_handle(m, xs[i].easy);
			curl_easy_cleanup(xs[i].easy);
		}
		if (xs[i].fd >= 0) {
			close(xs[i].fd);
			unlink(xs[i].tmp);
		}
		if (xs[i].h.md)
			gb_sha256_done(&xs[i].h);
	}
	curl_multi_cleanup(m);
	free(xs);
	/* Belt and braces: whatever was not decided is a failure, never a success. */
	fail_undecided(arts, n, -EIO, "%s", "the transfer loop ended without a verdict");
	for (size_t i = 0; i < n; i++)
		if (arts[i].result < 0 || !arts[i].verified)
			failed++;
	return failed ? -EIO : 0;
}

struct small {
	char *buf;
	size_t len, max;
	bool overflow;
};

static size_t on_small(char *data, size_t sz, size_t nm, void *userp)
{
	struct small *s = userp;
	size_t n = sz * nm;
	if (s->len + n > s->max) {
		s->overflow = true;
		return 0;
	}
	memcpy(s->buf + s->len, data, n);
	s->len += n;
	return n;
}

int gb_fetch_small(const char *url, const char *ca_file, bool allow_http, size_t max, char **ret, size_t *ret_len,
                   long *ret_http, char *err, size_t errsz)
{
	struct small s = { .max = max };
	char eb[CURL_ERROR_SIZE] = "";
	const char *ca = NULL;
	bool is_file = gb_startswith(url, "file://") != NULL;
	CURL *e;
	CURLcode c;
	long code = 0;
	int r;

	if (gb_fetch_global_init() < 0) {
		snprintf(err, errsz, "libcurl failed to initialise");
		return -EIO;
	}
	s.buf = malloc(max + 1);
	e = curl_easy_init();
	if (!s.buf || !e) {
		free(s.buf);
		if (e)
			curl_easy_cleanup(e);
		return -ENOMEM;
	}
	r = gb_ca_bundle_find(ca_file, &ca);
	if (r < 0 && ca_file) {
		/* Never fall back to another CA bundle than the one asked for. */
		snprintf(err, errsz, "%s: CA file '%s' cannot be read: %s", url, ca_file, strerror(-r));
		curl_easy_cleanup(e);
		free(s.buf);
		return r;
	}
	if (common_opts(e, url, ca, eb, allow_http) < 0) {
		snprintf(err, errsz, "%s: %s", url, eb);
		curl_easy_cleanup(e);
		free(s.buf);
		return -ENOTSUP;
	}
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_small);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, &s);
	curl_easy_setopt(e, CURLOPT_TIMEOUT, 120L);
	c = curl_easy_perform(e);
	curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_cleanup(e);
	if (ret_http)
		*ret_http = code;
	if (s.overflow) {
		snprintf(err, errsz, "%s: larger than %zu bytes", url, max);
		free(s.buf);
		return -EFBIG;
	}
	if (c != CURLE_OK) {
		snprintf(err, errsz, "%s: %s", url, eb[0] ? eb : curl_easy_strerror(c));
		free(s.buf);
		return c == CURLE_FILE_COULDNT_READ_FILE ? -ENOENT : -EIO;
	}
	if (!is_file && code >= 400) {
		snprintf(err, errsz, "%s: HTTP %ld", url, code);
		free(s.buf);
		return code == 404 ? -ENOENT : -EIO;
	}
	s.buf[s.len] = '\0';
	*ret = s.buf;
	*ret_len = s.len;
	return 0;
}
