/* SPDX-License-Identifier: MIT */
/* The initramfs reader. Two passes over one fd: the uncompressed cpio
 * archives at the start are walked header by header here (as the kernel
 * and unmkinitramfs do); the compressed rest goes through two libarchive
 * readers, the first a filter with the "raw" format (it only decompresses),
 * the second the cpio format reading the first's output through a callback
 * that counts every decompressed byte and watches the clock. */
#include "initramfs.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shared/macro.h"
#include "shared/ops.h"
#include "shared/util.h"

#define CHUNK (64u << 10)
#define CONF_MAX (64u << 10) /* a modprobe.d file we read to the end */
#define NAME_MAX_CPIO 4096 /* PATH_MAX: the kernel refuses longer names */
#define NEWC_HEADER 110

void gb_initramfs_limits_init(struct gb_initramfs_limits *l, const struct gb_ops *ops, unsigned timeout_ms)
{
	*l = (struct gb_initramfs_limits){
		.max_size = 1ull << 30,
		.max_unpacked = 4ull << 30,
		.max_entry = 1ull << 30,
		.max_entries = 500000,
		.ops = ops,
	};
	if (ops && timeout_ms)
		l->deadline_ns = ops->now_monotonic_ns(ops) + (uint64_t)timeout_ms * 1000000ull;
}

_printf_(3, 4) static int fail(struct gb_initramfs_scan *s, int err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(s->error, sizeof(s->error), fmt, ap);
	va_end(ap);
	return err;
}

static bool past_deadline(const struct gb_initramfs_limits *lim)
{
	return lim->ops && lim->deadline_ns && lim->ops->now_monotonic_ns(lim->ops) > lim->deadline_ns;
}

bool gb_modprobe_blacklists(const char *text, size_t len, const char *module)
{
	size_t pos = 0;
	while (pos < len) {
		const char *line = text + pos, *nl = memchr(line, '\n', len - pos);
		size_t l = nl ? (size_t)(nl - line) : len - pos;
		char buf[512], *save = NULL, *w0, *w1, *w2;
		pos += l + 1;
		if (l >= sizeof(buf))
			continue;
		memcpy(buf, line, l);
		buf[l] = '\0';
		buf[strcspn(buf, "#")] = '\0';
		w0 = strtok_r(buf, " \t\r", &save);
		w1 = w0 ? strtok_r(NULL, " \t\r", &save) : NULL;
		w2 = w1 ? strtok_r(NULL, " \t\r", &save) : NULL;
		if (!w1 || !streq(w1, module))
			continue;
		if (streq(w0, "blacklist"))
			return true;
		if (streq(w0, "install") && w2 && (streq(w2, "/bin/false") || streq(w2, "/bin/true")))
			return true;
	}
	return false;
}

const char *gb_initramfs_compression(const unsigned char *p, size_t n)
{
	static const struct {
		const char *name;
		unsigned char magic[6];
		size_t len;
	} m[] = {
		{ "gzip", { 0x1f, 0x8b }, 2 },
		{ "gzip", { 0x1f, 0x9e }, 2 }, /* the kernel's "old gzip" */
		{ "xz", { 0xfd, '7', 'z', 'X', 'Z', 0x00 }, 6 },
		{ "zstd", { 0x28, 0xb5, 0x2f, 0xfd }, 4 },
		{ "lz4", { 0x02, 0x21, 0x4c, 0x18 }, 4 }, /* legacy frame: lz4 -l, as the kernel wants */
		{ "lz4", { 0x04, 0x22, 0x4d, 0x18 }, 4 },
		{ "bzip2", { 'B', 'Z', 'h' }, 3 },
		{ "lzo", { 0x89, 'L', 'Z', 'O' }, 4 },
		{ "lzma", { 0x5d, 0x00, 0x00 }, 3 },
	};
	for (size_t i = 0; i < ARRAY_SIZE(m); i++)
		if (n >= m[i].len && memcmp(p, m[i].magic, m[i].len) == 0)
			return m[i].name;
	return NULL;
}

/* The path as the initramfs will have it: no "./" or "/" in front. */
static const char *entry_path(const char *name)
{
	for (;;) {
		if (name[0] == '/')
			name++;
		else if (name[0] == '.' && name[1] == '/')
			name += 2;
		else
			return name;
	}
}

static bool is_nouveau_module(const char *path)
{
	const char *base = strrchr(path, '/');
	return gb_startswith(base ? base + 1 : path, "nouveau.ko") != NULL;
}

static bool is_modprobe_conf(const char *path)
{
	static const char *const dirs[] = { "etc/modprobe.d/", "lib/modprobe.d/", "usr/lib/modprobe.d/",
		                            "run/modprobe.d/" };
	size_t l = strlen(path);
	if (l < 5 || !streq(path + l - 5, ".conf"))
		return false;
	for (size_t i = 0; i < ARRAY_SIZE(dirs); i++) {
		const char *rest = gb_startswith(path, dirs[i]);
		if (rest && !strchr(rest, '/'))
			return true;
	}
	return false;
}

/* One entry seen (either pass): count it against the bounds, note what it
 * is. data/len: a modprobe.d file's content when the caller read it. */
static int note_entry(struct gb_initramfs_scan *s, const struct gb_initramfs_limits *lim, const char *name,
                      bool regular, uint64_t size)
{
	const char *p = entry_path(name);

	if (++s->n_entries > lim->max_entries)
		return fail(s, -EFBIG, "more than %u entries", lim->max_entries);
	if (size > lim->max_entry)
		return fail(s, -EFBIG, "entry '%.80s' declares %llu bytes (at most %llu)", p, (unsigned long long)size,
		            (unsigned long long)lim->max_entry);
	if (size > lim->max_unpacked - s->unpacked)
		return fail(s, -EFBIG, "more than %llu bytes unpacked", (unsigned long long)lim->max_unpacked);
	s->unpacked += size;
	if ((s->n_entries & 255) == 0 && past_deadline(lim))
		return fail(s, -ETIME, "reading took longer than allowed (%u entries read)", s->n_entries);
	if (regular && is_nouveau_module(p) && !s->has_nouveau) {
		s->has_nouveau = true;
		gb_strscpy(s->nouveau_entry, sizeof(s->nouveau_entry), p);
	}
	return 0;
}

static void note_conf(struct gb_initramfs_scan *s, const char *name, const char *data, size_t len)
{
	if (!s->blacklisted && gb_modprobe_blacklists(data, len, "nouveau")) {
		s->blacklisted = true;
		gb_strscpy(s->blacklist_entry, sizeof(s->blacklist_entry), entry_path(name));
	}
}

static int read_at(int fd, uint64_t off, void *buf, size_t n, size_t *ret_n)
{
	size_t got = 0;
	while (got < n) {
		ssize_t r = pread(fd, (char *)buf + got, n - got, (off_t)(off + got));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return negative_errno();
		if (r == 0)
			break;
		got += (size_t)r;
	}
	*ret_n = got;
	return 0;
}

static int hex8(const char *p, uint32_t *ret)
{
	char b[9];
	memcpy(b, p, 8);
	b[8] = '\0';
	for (size_t i = 0; i < 8; i++)
		if (!strchr("0123456789abcdefABCDEF", b[i]))
			return -EBADMSG;
	return gb_safe_atou32(b, 16, ret) < 0 ? -EBADMSG : 0;
}

#define ALIGN4(x) (((x) + 3) & ~(uint64_t)3)

/* One newc header at *off. Returns 1 for the trailer, 0 for an entry, or
 * a negative errno; *off moves past the entry's data. */
static int walk_entry(int fd, uint64_t size, const struct gb_initramfs_limits *lim, struct gb_initramfs_scan *s,
                      uint64_t *off)
{
	char h[NEWC_HEADER], name[NAME_MAX_CPIO + 1];
	uint32_t mode, filesize, namesize;
	uint64_t data;
	size_t got;
	int r;

	if ((r = read_at(fd, *off, h, sizeof(h), &got)) < 0)
		return fail(s, r, "cannot read at offset %llu", (unsigned long long)*off);
	if (got < sizeof(h))
		return fail(s, -EBADMSG, "truncated cpio header at offset %llu", (unsigned long long)*off);
	if (hex8(h + 14, &mode) < 0 || hex8(h + 54, &filesize) < 0 || hex8(h + 94, &namesize) < 0)
		return fail(s, -EBADMSG, "malformed cpio header at offset %llu", (unsigned long long)*off);
	if (namesize < 2 || namesize > NAME_MAX_CPIO)
		return fail(s, -EBADMSG, "cpio name of %u bytes at offset %llu", namesize, (unsigned long long)*off);
	if ((r = read_at(fd, *off + NEWC_HEADER, name, namesize, &got)) < 0 || got < namesize)
		return fail(s, -EBADMSG, "truncated cpio name at offset %llu", (unsigned long long)*off);
	if (name[namesize - 1] != '\0' || memchr(name, '\0', namesize - 1))
		return fail(s, -EBADMSG, "malformed cpio name at offset %llu", (unsigned long long)*off);
	data = ALIGN4(*off + NEWC_HEADER + namesize);
	if (data + filesize > size)
		return fail(s, -EBADMSG, "'%.80s' is truncated (%u bytes at offset %llu, the file ends at %llu)",
		            entry_path(name), filesize, (unsigned long long)data, (unsigned long long)size);
	*off = ALIGN4(data + filesize);
	if (streq(name, "TRAILER!!!"))
		return 1;
	r = note_entry(s, lim, name, (mode & 0170000) == 0100000, filesize);
	if (r < 0)
		return r;
	if ((mode & 0170000) == 0100000 && filesize <= CONF_MAX && is_modprobe_conf(entry_path(name))) {
		_cleanup_free_ char *text = malloc(filesize + 1);
		if (!text)
			return -ENOMEM;
		if ((r = read_at(fd, data, text, filesize, &got)) < 0)
			return fail(s, r, "cannot read '%.80s'", entry_path(name));
		note_conf(s, name, text, got);
	}
	return 0;
}

/* Skip zero padding from *off. Returns 1 at the end of the file. */
static int skip_zeros(int fd, uint64_t size, uint64_t *off)
{
	unsigned char buf[4096];
	while (*off < size) {
		size_t got, i;
		int r = read_at(fd, *off, buf, sizeof(buf), &got);
		if (r < 0)
			return r;
		for (i = 0; i < got && buf[i] == 0; i++)
			;
		*off += i;
		if (i < got || got == 0)
			break;
	}
	return *off >= size ? 1 : 0;
}

/* The uncompressed archives at the start; *off ends where the compressed
 * rest begins (== size when there is none). */
static int walk_uncompressed(int fd, uint64_t size, const struct gb_initramfs_limits *lim, struct gb_initramfs_scan *s,
                             uint64_t *off)
{
	for (;;) {
		char magic[6];
		size_t got;
		int r = skip_zeros(fd, size, off);
		if (r != 0)
			return r < 0 ? fail(s, r, "cannot read") : 0;
		if ((r = read_at(fd, *off, magic, sizeof(magic), &got)) < 0)
			return fail(s, r, "cannot read");
		if (got < sizeof(magic) || (memcmp(magic, "070701", 6) != 0 && memcmp(magic, "070702", 6) != 0))
			return 0;
		/* an archive: entries up to its trailer */
		do {
			r = walk_entry(fd, size, lim, s, off);
			if (r == 0 && *off >= size)
				return fail(s, -EBADMSG, "the file ends inside a cpio archive (no TRAILER!!!)");
		} while (r == 0);
		if (r < 0)
			return r;
		s->n_early++;
	}
}

typedef int (*filter_fn)(struct archive *);

/* The libarchive filter for a compression, only when built in: libarchive
 * would otherwise run an external program (ARCHIVE_WARN), which a static
 * first-boot tool must not. */
static filter_fn builtin_filter(const char *name)
{
	static const struct {
		const char *name;
		filter_fn fn;
	} f[] = {
		{ "gzip", archive_read_support_filter_gzip }, { "xz", archive_read_support_filter_xz },
		{ "lzma", archive_read_support_filter_lzma }, { "zstd", archive_read_support_filter_zstd },
		{ "lz4", archive_read_support_filter_lz4 },   { "bzip2", archive_read_support_filter_bzip2 },
		{ "lzo", archive_read_support_filter_lzop },
	};
	for (size_t i = 0; i < ARRAY_SIZE(f); i++) {
		if (!streq(f[i].name, name))
			continue;
		struct archive *t = archive_read_new();
		int r = t ? f[i].fn(t) : ARCHIVE_FATAL;
		archive_read_free(t);
		return r == ARCHIVE_OK ? f[i].fn : NULL;
	}
	return NULL;
}

/* The compressed bytes, from the file at [off, end). */
struct source {
	int fd;
	uint64_t off, end;
	unsigned char buf[CHUNK];
};

static la_ssize_t source_read(struct archive *a, void *data, const void **buf)
{
	struct source *src = data;
	size_t want = src->end - src->off < CHUNK ? (size_t)(src->end - src->off) : CHUNK, got;
	int r = read_at(src->fd, src->off, src->buf, want, &got);
	if (r < 0) {
		archive_set_error(a, -r, "read failed");
		return -1;
	}
	src->off += got;
	*buf = src->buf;
	return (la_ssize_t)got;
}

/* The decompressed bytes, counted and timed, for the cpio reader. */
struct stream {
	struct archive *inner;
	const struct gb_initramfs_limits *lim;
	uint64_t total;
	unsigned chunks;
	int err;
	char why[160];
	unsigned char buf[CHUNK];
};

static la_ssize_t stream_read(struct archive *a, void *data, const void **buf)
{
	struct stream *st = data;
	la_ssize_t n = archive_read_data(st->inner, st->buf, CHUNK);

	if (n < 0) {
		st->err = -EBADMSG;
		snprintf(st->why, sizeof(st->why), "cannot decompress: %s",
		         archive_error_string(st->inner) ? archive_error_string(st->inner) : "?");
	} else if ((uint64_t)n > st->lim->max_unpacked - st->total) {
		st->err = -EFBIG;
		snprintf(st->why, sizeof(st->why), "more than %llu bytes decompressed",
		         (unsigned long long)st->lim->max_unpacked);
	} else if ((++st->chunks & 15) == 0 && past_deadline(st->lim)) {
		st->err = -ETIME;
		snprintf(st->why, sizeof(st->why), "decompressing took longer than allowed (%llu bytes)",
		         (unsigned long long)st->total);
	}
	if (st->err) {
		archive_set_error(a, EIO, "%s", st->why);
		return -1;
	}
	st->total += (uint64_t)n;
	*buf = st->buf;
	return n;
}

static int read_conf(struct archive *a, struct gb_initramfs_scan *s, const char *name, uint64_t size)
{
	_cleanup_free_ char *text = malloc(size + 1);
	size_t got = 0;
	if (!text)
		return -ENOMEM;
	while (got < size) {
		la_ssize_t n = archive_read_data(a, text + got, size - got);
		if (n <= 0)
			return fail(s, -EBADMSG, "cannot read '%.80s'", entry_path(name));
		got += (size_t)n;
	}
	note_conf(s, name, text, got);
	return 0;
}

/* The cpio entries of the decompressed stream. */
static int read_cpio(struct archive *a, struct stream *st, const struct gb_initramfs_limits *lim,
                     struct gb_initramfs_scan *s)
{
	for (;;) {
		struct archive_entry *e;
		int r = archive_read_next_header(a, &e);
		const char *name;
		uint64_t size;
		bool regular;

		if (r == ARCHIVE_EOF)
			return 0;
		if (r != ARCHIVE_OK && r != ARCHIVE_WARN)
			return st->err ? fail(s, st->err, "%s", st->why)
			               : fail(s, -EBADMSG, "the %s archive at offset %llu: %s", s->compression,
			                      (unsigned long long)s->main_offset,
			                      archive_error_string(a) ? archive_error_string(a) : "unreadable");
		name = archive_entry_pathname(e);
		if (!name)
			return fail(s, -EBADMSG, "an entry without a name");
		size = archive_entry_size_is_set(e) && archive_entry_size(e) > 0 ? (uint64_t)archive_entry_size(e) : 0;
		regular = archive_entry_filetype(e) == AE_IFREG;
		if ((r = note_entry(s, lim, name, regular, size)) < 0)
			return r;
		if (regular && size <= CONF_MAX && is_modprobe_conf(entry_path(name)) &&
		    (r = read_conf(a, s, name, size)) < 0)
			return r;
	}
}

static void archive_freep(struct archive **a)
{
	if (*a)
		archive_read_free(*a);
}

/* The buffers of the two readers, in one allocation. */
struct readers {
	struct source src;
	struct stream st;
};

static int scan_compressed(int fd, uint64_t off, uint64_t size, const struct gb_initramfs_limits *lim,
                           struct gb_initramfs_scan *s)
{
	_cleanup_(archive_freep) struct archive *outer = NULL, *inner = NULL;
	_cleanup_free_ struct readers *b = NULL;
	struct archive_entry *e;
	unsigned char head[8];
	const char *name;
	filter_fn filter;
	size_t got;
	int r;

	if ((r = read_at(fd, off, head, sizeof(head), &got)) < 0)
		return fail(s, r, "cannot read at offset %llu", (unsigned long long)off);
	name = gb_initramfs_compression(head, got);
	if (!name)
		return fail(s, -EBADMSG, "unrecognised bytes at offset %llu: neither cpio nor a known compression",
		            (unsigned long long)off);
	gb_strscpy(s->compression, sizeof(s->compression), name);
	s->main_offset = off;
	if (!(filter = builtin_filter(name)))
		return fail(s, -EPROTONOSUPPORT, "this build cannot decompress %s (offset %llu)", name,
		            (unsigned long long)off);
	if (!(inner = archive_read_new()) || !(outer = archive_read_new()))
		return -ENOMEM;
	if (filter(inner) != ARCHIVE_OK || archive_read_support_format_raw(inner) != ARCHIVE_OK ||
	    archive_read_support_format_cpio(outer) != ARCHIVE_OK)
		return fail(s, -EPROTONOSUPPORT, "libarchive refused the %s filter", name);
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->src = (struct source){ .fd = fd, .off = off, .end = size };
	if (archive_read_open(inner, &b->src, NULL, source_read, NULL) != ARCHIVE_OK ||
	    archive_read_next_header(inner, &e) != ARCHIVE_OK)
		return fail(s, -EBADMSG, "the %s data at offset %llu: %s", name, (unsigned long long)off,
		            archive_error_string(inner) ? archive_error_string(inner) : "unreadable");
	b->st.inner = inner;
	b->st.lim = lim;
	if (archive_read_open(outer, &b->st, NULL, stream_read, NULL) != ARCHIVE_OK)
		return b->st.err ? fail(s, b->st.err, "%s", b->st.why)
		                 : fail(s, -EBADMSG, "the %s data at offset %llu is not a cpio archive: %s", name,
		                        (unsigned long long)off,
		                        archive_error_string(outer) ? archive_error_string(outer) : "unreadable");
	return read_cpio(outer, &b->st, lim, s);
}

int gb_initramfs_scan_fd(int fd, const struct gb_initramfs_limits *lim, struct gb_initramfs_scan *ret)
{
	struct stat st;
	uint64_t off = 0;
	int r;

	memset(ret, 0, sizeof(*ret));
	gb_strscpy(ret->compression, sizeof(ret->compression), "none");
	if (fstat(fd, &st) < 0)
		return fail(ret, negative_errno(), "cannot stat");
	if (!S_ISREG(st.st_mode))
		return fail(ret, -EBADMSG, "not a regular file");
	if ((uint64_t)st.st_size > lim->max_size)
		return fail(ret, -EFBIG, "%llu bytes (at most %llu)", (unsigned long long)st.st_size,
		            (unsigned long long)lim->max_size);
	if (st.st_size == 0)
		return fail(ret, -EBADMSG, "empty");
	r = walk_uncompressed(fd, (uint64_t)st.st_size, lim, ret, &off);
	if (r < 0)
		return r;
	if (off < (uint64_t)st.st_size)
		return scan_compressed(fd, off, (uint64_t)st.st_size, lim, ret);
	return 0;
}
