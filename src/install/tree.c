/* SPDX-License-Identifier: MIT */
/* The parallel unpacker of CUDA's redistributable components, and tree
 * removal, both relative to a directory fd (tree.h says why). */
#include "tree.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shared/killpoint.h"
#include "shared/macro.h"
#include "shared/util.h"
#include "unpack.h"

int gb_tree_mkdir_open(int dirfd, const char *path)
{
	char buf[PATH_MAX];
	int cur = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (cur < 0)
		return negative_errno();
	if (gb_strscpy(buf, sizeof(buf), path) < 0) {
		close(cur);
		return -ENAMETOOLONG;
	}
	for (char *save = NULL, *c = strtok_r(buf, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		int next;
		if (streq(c, ".") || streq(c, "..")) {
			close(cur);
			return -EPERM;
		}
		if (mkdirat(cur, c, 0755) < 0 && errno != EEXIST) {
			int r = negative_errno();
			close(cur);
			return r;
		}
		/* O_NOFOLLOW: a symlink where a directory belongs is refused, never followed */
		next = openat(cur, c, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		close(cur);
		if (next < 0)
			return errno == ELOOP ? -ENOTDIR : negative_errno();
		cur = next;
	}
	return cur;
}

/* ---- the unpacker ---- */

struct pool {
	int dirfd;
	const char *label, *target;
	struct gb_cuda_part *p;
	size_t n;
	const struct gb_unpack_opts *o;
	atomic_size_t next;
	atomic_bool stop;
};

/* One worker's state while it unpacks one part. */
struct job {
	struct pool *pool;
	struct gb_cuda_part *p;
	struct archive *a;
	char top[256]; /* the archive's top-level directory, once seen */
	char parent[PATH_MAX]; /* the cached parent directory and its fd */
	int parent_fd;
	unsigned long long entries;
};

#define JFAIL(jb, e, ...) (snprintf((jb)->p->err, sizeof((jb)->p->err), __VA_ARGS__), (jb)->p->r = (e))

static bool name_ok(const char *p)
{
	if (!p || !*p || p[0] == '/')
		return false;
	for (const char *s = p; *s;) {
		size_t n = strcspn(s, "/");
		if ((n == 2 && s[0] == '.' && s[1] == '.') || (n == 1 && s[0] == '.'))
			return false;
		s += n;
		s += strspn(s, "/");
	}
	return true;
}

/* The top-level directory must be <name>-linux-<arch>-<version>-archive. */
static bool top_ok(const struct gb_cuda_part *p, const char *top, size_t n)
{
	char suffix[96];
	size_t ln = strlen(p->name), ls;
	snprintf(suffix, sizeof(suffix), "-%s-archive", p->version);
	ls = strlen(suffix);
	return n > ln + 7 + ls && strneq(top, p->name, ln) && strneq(top + ln, "-linux-", 7) &&
	       strneq(top + n - ls, suffix, ls);
}

/* Map an archive name to its place in the tree: below the top-level
 * directory, lib/ and include/ under targets/<target>/, top-level files
 * under share/doc/<name>/. 0, 1 for the top directory itself (nothing to
 * do), or a negative errno. */
static int map_name(struct job *jb, const char *name, bool is_dir, char *out, size_t outsz)
{
	size_t n = strcspn(name, "/");
	const char *rest = name + n;
	int k;

	if (!jb->top[0]) {
		if (!top_ok(jb->p, name, n) || n >= sizeof(jb->top))
			return JFAIL(jb, -EBADMSG, "%s: '%.*s' is not %s-linux-<arch>-%s-archive/: refused",
			             jb->p->archive, (int)n, name, jb->p->name, jb->p->version);
		memcpy(jb->top, name, n);
		jb->top[n] = '\0';
	} else if (n != strlen(jb->top) || !strneq(name, jb->top, n)) {
		return JFAIL(jb, -EBADMSG, "%s: entry '%s' lies outside %s/: refused", jb->p->archive, name, jb->top);
	}
	rest += strspn(rest, "/");
	if (!*rest)
		return 1;
	if (gb_startswith(rest, "lib/") || streq(rest, "lib") || gb_startswith(rest, "include/") ||
	    streq(rest, "include"))
		k = snprintf(out, outsz, "targets/%s/%s", jb->pool->target, rest);
	else if (!strchr(rest, '/') && !is_dir)
		k = snprintf(out, outsz, "share/doc/%s/%s", jb->p->name, rest);
	else
		k = snprintf(out, outsz, "%s", rest);
	if (k < 0 || (size_t)k >= outsz)
		return JFAIL(jb, -ENAMETOOLONG, "%s: entry '%s' has too long a name", jb->p->archive, name);
	while (k > 0 && out[k - 1] == '/')
		out[--k] = '\0';
	return 0;
}

/* dir below dirfd ("" for dirfd itself), created when missing. */
static int open_dir(int dirfd, const char *dir)
{
	int fd;
	if (dir[0])
		return gb_tree_mkdir_open(dirfd, dir);
	fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return fd < 0 ? negative_errno() : fd;
}

/* The directory that holds path (created when missing), cached: the
 * entries of an archive come grouped by directory. *leaf points into path. */
static int parent_of(struct job *jb, char *path, const char **leaf)
{
	char *slash = strrchr(path, '/');
	const char *dir = "";
	int fd;

	*leaf = path;
	if (slash) {
		*slash = '\0';
		dir = path;
		*leaf = slash + 1;
	}
	if (jb->parent_fd >= 0 && streq(jb->parent, dir)) {
		fd = jb->parent_fd;
	} else {
		if (jb->parent_fd >= 0)
			close(jb->parent_fd);
		jb->parent_fd = -1;
		fd = open_dir(jb->pool->dirfd, dir);
		if (fd >= 0) {
			jb->parent_fd = fd;
			gb_strscpy(jb->parent, sizeof(jb->parent), dir);
		}
	}
	if (slash)
		*slash = '/';
	if (fd < 0)
		JFAIL(jb, fd, "Failed to create the directory of %s/%s (%s %s): %s", jb->pool->label, path, jb->p->name,
		      jb->p->version, strerror(-fd));
	return fd;
}

/* A regular file's data, never more than its header declares. */
static int write_data(struct job *jb, struct archive_entry *e, int fd, const char *path)
{
	la_int64_t size = archive_entry_size(e), off;
	unsigned long long seen = 0;
	const void *buf;
	size_t len;
	int rr;

	while ((rr = archive_read_data_block(jb->a, &buf, &len, &off)) == ARCHIVE_OK) {
		seen += len;
		if (off < 0 || seen > (unsigned long long)size ||
		    (unsigned long long)off + len > (unsigned long long)size)
			return JFAIL(jb, -EBADMSG, "%s: '%s' holds more data than its header says", jb->p->archive,
			             path);
		for (size_t done = 0; done < len;) {
			ssize_t w = pwrite(fd, (const char *)buf + done, len - done, (off_t)off + (off_t)done);
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0) {
				int r = w < 0 ? negative_errno() : -EIO;
				return JFAIL(jb, r, "Failed to write %s/%s (%s %s): %s", jb->pool->label, path,
				             jb->p->name, jb->p->version, strerror(-r));
			}
			done += (size_t)w;
		}
	}
	if (rr != ARCHIVE_EOF)
		return JFAIL(jb, -EBADMSG, "%s: corrupt data in '%s': %s", jb->p->archive, path,
		             archive_error_string(jb->a));
	if (ftruncate(fd, (off_t)size) < 0) {
		int r = negative_errno();
		return JFAIL(jb, r, "Failed to write %s/%s (%s %s): %s", jb->pool->label, path, jb->p->name,
		             jb->p->version, strerror(-r));
	}
	return 0;
}

static int put_file(struct job *jb, struct archive_entry *e, char *path)
{
	const char *leaf;
	struct timespec ts[2] = { { .tv_nsec = UTIME_OMIT }, { .tv_sec = archive_entry_mtime(e) } };
	int dir = parent_of(jb, path, &leaf), fd, r;

	if (dir < 0)
		return dir;
	fd = openat(dir, leaf, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
	            (mode_t)(archive_entry_perm(e) & 0755) | 0600);
	if (fd < 0) {
		r = negative_errno();
		if (r == -EEXIST)
			return JFAIL(jb, r, "%s (%s %s) is carried by another component too: refused", path,
			             jb->p->name, jb->p->version);
		return JFAIL(jb, r, "Failed to create %s/%s (%s %s): %s", jb->pool->label, path, jb->p->name,
		             jb->p->version, strerror(-r));
	}
	r = write_data(jb, e, fd, path);
	if (r >= 0 && futimens(fd, ts) < 0)
		r = 0; /* a timestamp is not worth failing for */
	if (close(fd) < 0 && r >= 0) {
		r = negative_errno();
		JFAIL(jb, r, "Failed to write %s/%s (%s %s): %s", jb->pool->label, path, jb->p->name, jb->p->version,
		      strerror(-r));
	}
	if (r >= 0)
		jb->p->files++;
	return r;
}

static int put_link(struct job *jb, struct archive_entry *e, char *path)
{
	const char *target = archive_entry_symlink(e), *leaf;
	char old[PATH_MAX];
	int dir;
	ssize_t n;

	if (!target || !name_ok(target) || strstr(target, ".."))
		return JFAIL(jb, -EPERM, "%s: symlink '%s' -> '%s' points outside its directory: refused",
		             jb->p->archive, path, target ? target : "");
	dir = parent_of(jb, path, &leaf);
	if (dir < 0)
		return dir;
	if (symlinkat(target, dir, leaf) == 0)
		return 0;
	if (errno == EEXIST && (n = readlinkat(dir, leaf, old, sizeof(old) - 1)) >= 0) {
		old[n] = '\0';
		if (streq(old, target))
			return 0; /* the same link from two components */
	}
	{
		int r = negative_errno();
		return JFAIL(jb, r, "Failed to create the link %s/%s (%s %s): %s", jb->pool->label, path, jb->p->name,
		             jb->p->version, strerror(-r));
	}
}

static int put_hardlink(struct job *jb, const char *link, char *path)
{
	char to[PATH_MAX];
	const char *leaf, *to_leaf;
	int r = map_name(jb, link, false, to, sizeof(to)), dir, to_dir;

	if (r != 0)
		return r < 0 ? r
		             : JFAIL(jb, -EPERM, "%s: hard link '%s' to a directory: refused", jb->p->archive, path);
	{
		char *slash = strrchr(to, '/');
		if (slash)
			*slash = '\0';
		to_dir = open_dir(jb->pool->dirfd, slash ? to : "");
		to_leaf = slash ? slash + 1 : to;
		if (to_dir < 0)
			return JFAIL(jb, to_dir, "Failed to open the directory of %s in %s: %s", link, jb->pool->label,
			             strerror(-to_dir));
	}
	dir = parent_of(jb, path, &leaf);
	r = dir < 0 ? dir : 0;
	if (r >= 0 && linkat(to_dir, to_leaf, dir, leaf, 0) < 0) {
		r = negative_errno();
		JFAIL(jb, r, "Failed to link %s/%s to %s (%s %s): %s", jb->pool->label, path, link, jb->p->name,
		      jb->p->version, strerror(-r));
	}
	close(to_dir);
	if (r >= 0)
		jb->p->files++;
	return r;
}

/* One entry: checked, mapped, written. */
static int put_entry(struct job *jb, struct archive_entry *e)
{
	const char *name = archive_entry_pathname(e), *link = archive_entry_hardlink(e);
	mode_t type = archive_entry_filetype(e);
	char path[PATH_MAX];
	int r;

	if (++jb->entries > jb->pool->o->max_entries)
		return JFAIL(jb, -EFBIG, "%s: more than %llu entries", jb->p->archive, jb->pool->o->max_entries);
	if (!name_ok(name) || (link && !name_ok(link)))
		return JFAIL(jb, -EPERM, "%s: entry '%s' is absolute or climbs out with '..': refused", jb->p->archive,
		             name ? name : "");
	if (!link && type != AE_IFREG && type != AE_IFDIR && type != AE_IFLNK)
		return JFAIL(jb, -EPERM, "%s: entry '%s' is a device, FIFO or socket: refused", jb->p->archive, name);
	jb->p->bytes += (unsigned long long)(archive_entry_size(e) > 0 ? archive_entry_size(e) : 0);
	if (jb->p->bytes > jb->pool->o->max_bytes)
		return JFAIL(jb, -EFBIG, "%s: unpacks to more than %llu bytes (a decompression bomb?): refused",
		             jb->p->archive, jb->pool->o->max_bytes);
	r = map_name(jb, name, !link && type == AE_IFDIR, path, sizeof(path));
	if (r != 0)
		return r < 0 ? r : 0;
	if (link)
		return put_hardlink(jb, link, path);
	if (type == AE_IFDIR) {
		int fd = gb_tree_mkdir_open(jb->pool->dirfd, path);
		if (fd < 0)
			return JFAIL(jb, fd, "Failed to create %s/%s (%s %s): %s", jb->pool->label, path, jb->p->name,
			             jb->p->version, strerror(-fd));
		close(fd);
		return 0;
	}
	return type == AE_IFLNK ? put_link(jb, e, path) : put_file(jb, e, path);
}

static void part_unpack(struct pool *pool, struct gb_cuda_part *p)
{
	struct job jb = { .pool = pool, .p = p, .parent_fd = -1 };
	struct archive_entry *e;

	p->r = 0;
	p->err[0] = '\0';
	p->bytes = p->files = 0;
	jb.a = archive_read_new();
	if (!jb.a) {
		JFAIL(&jb, -ENOMEM, "out of memory");
		return;
	}
	archive_read_support_filter_xz(jb.a);
	archive_read_support_filter_gzip(jb.a);
	archive_read_support_filter_zstd(jb.a);
	archive_read_support_format_tar(jb.a);
	if (archive_read_open_filename(jb.a, p->archive, 1 << 16) != ARCHIVE_OK) {
		int en = archive_errno(jb.a);
		JFAIL(&jb, en == ENOENT ? -ENOENT : -EBADMSG, "%s: not a readable xz/gzip/zstd tar archive: %s",
		      p->archive, archive_error_string(jb.a));
	}
	while (p->r == 0) {
		int rr = archive_read_next_header(jb.a, &e);
		if (rr == ARCHIVE_EOF)
			break;
		if (atomic_load(&pool->stop)) {
			JFAIL(&jb, -ECANCELED, "%s: stopped (another component failed)", p->archive);
			break;
		}
		if (rr != ARCHIVE_OK && rr != ARCHIVE_WARN) {
			JFAIL(&jb, -EBADMSG, "%s: corrupt archive: %s", p->archive, archive_error_string(jb.a));
			break;
		}
		(void)put_entry(&jb, e);
		gb_kill_point("unpack");
	}
	if (p->r == 0 && !jb.top[0])
		JFAIL(&jb, -EBADMSG, "%s: an empty archive", p->archive);
	if (jb.parent_fd >= 0)
		close(jb.parent_fd);
	archive_read_free(jb.a);
}

static void *worker(void *arg)
{
	struct pool *pool = arg;
	for (;;) {
		size_t i = atomic_fetch_add(&pool->next, 1);
		if (i >= pool->n || atomic_load(&pool->stop))
			break;
		part_unpack(pool, &pool->p[i]);
		if (pool->p[i].r < 0)
			atomic_store(&pool->stop, true);
	}
	return NULL;
}

int gb_cuda_unpack_parts(int dirfd, const char *label, const char *target, struct gb_cuda_part *p, size_t n,
                         unsigned threads, const struct gb_unpack_opts *o, char *err, size_t errsz)
{
	struct pool pool = { .dirfd = dirfd, .label = label, .target = target, .p = p, .n = n, .o = o };
	pthread_t tid[16];
	size_t started = 0;

	atomic_init(&pool.next, 0);
	atomic_init(&pool.stop, false);
	for (size_t i = 0; i < n; i++)
		p[i].r = -ECANCELED; /* until a worker reaches it */
	if (threads > ARRAY_SIZE(tid))
		threads = ARRAY_SIZE(tid);
	if (threads > n)
		threads = (unsigned)n;
	for (unsigned t = 1; t < threads; t++)
		if (pthread_create(&tid[started], NULL, worker, &pool) == 0)
			started++;
	worker(&pool); /* the calling thread is one of the workers */
	for (size_t t = 0; t < started; t++)
		pthread_join(tid[t], NULL);
	/* The failure that stopped the rest, not the ones it cancelled. */
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < n; i++)
			if (p[i].r < 0 && (pass == 1 || p[i].r != -ECANCELED)) {
				snprintf(err, errsz, "%s", p[i].err[0] ? p[i].err : "not unpacked");
				return p[i].r;
			}
	return 0;
}

int gb_cuda_parts_size(const struct gb_cuda_part *p, size_t n, unsigned long long *ret)
{
	unsigned long long total = 0;
	for (size_t i = 0; i < n; i++) {
		struct archive *a = archive_read_new();
		struct archive_entry *e;
		int rr = ARCHIVE_FATAL;
		if (!a)
			return -ENOMEM;
		archive_read_support_filter_xz(a);
		archive_read_support_filter_gzip(a);
		archive_read_support_filter_zstd(a);
		archive_read_support_format_tar(a);
		if (archive_read_open_filename(a, p[i].archive, 1 << 16) == ARCHIVE_OK)
			while ((rr = archive_read_next_header(a, &e)) == ARCHIVE_OK)
				total += (unsigned long long)(archive_entry_size(e) > 0 ? archive_entry_size(e) : 0) +
				         4096; /* a block per entry, roughly: names and small files */
		archive_read_free(a);
		if (rr != ARCHIVE_EOF)
			return -EBADMSG;
	}
	*ret = total;
	return 0;
}
