/* SPDX-License-Identifier: MIT */
#include "unpack.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shared/fileio.h"
#include "shared/killpoint.h"
#include "shared/log.h"
#include "shared/macro.h"
#include "shared/swap.h"
#include "shared/util.h"

void gb_unpack_opts_default(struct gb_unpack_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->max_bytes = 16ull << 30;
	o->max_entries = 200000;
}

#define MAKESELF_HEADER_MAX (64 * 1024)

int gb_makeself_offset(const char *file, unsigned long long *ret, char *err, size_t errsz)
{
	char buf[MAKESELF_HEADER_MAX + 1];
	const char *p;
	uint32_t lines = 0;
	ssize_t n;
	int fd = open(file, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		snprintf(err, errsz, "%s: %s", file, strerror(errno));
		return negative_errno();
	}
	n = read(fd, buf, MAKESELF_HEADER_MAX);
	close(fd);
	if (n <= 0) {
		snprintf(err, errsz, "%s: empty", file);
		return -EBADMSG;
	}
	buf[n] = '\0';
	if (strncmp(buf, "#!/bin/sh", 9) != 0) {
		snprintf(err, errsz, "%s: not a makeself archive (no #!/bin/sh header)", file);
		return -EBADMSG;
	}
	/* NVIDIA's header: skip=N (the line after which the payload starts), or
	 * makeself 2.x: offset=`head -n N "$0" | wc -c | tr -d " "`. */
	bool tail_form = false; /* skip=N: `tail -n +N`, the payload starts on line N */
	if ((p = strstr(buf, "\nskip="))) {
		p += 6;
		tail_form = true;
	} else if ((p = strstr(buf, "offset=`head -n "))) {
		p += 16;
	}
	if (!p) {
		snprintf(err, errsz, "%s: makeself header names no payload offset (skip= or offset=`head -n N`)", file);
		return -EBADMSG;
	}
	{
		char num[12];
		size_t k = strspn(p, "0123456789");
		if (k == 0 || k >= sizeof(num)) {
			snprintf(err, errsz, "%s: unreadable payload offset in the makeself header", file);
			return -EBADMSG;
		}
		memcpy(num, p, k);
		num[k] = '\0';
		if (gb_safe_atou32(num, 10, &lines) < 0 || lines == 0 || lines > 100000) {
			snprintf(err, errsz, "%s: payload offset %s out of range", file, num);
			return -EBADMSG;
		}
		if (tail_form)
			lines--;
	}
	/* The payload begins after that many lines of the header. */
	{
		unsigned long long off = 0;
		uint32_t seen = 0;
		if (lines == 0) {
			*ret = 0;
			return 0;
		}
		for (ssize_t i = 0; i < n && seen < lines; i++)
			if (buf[i] == '\n') {
				seen++;
				off = (unsigned long long)i + 1;
			}
		if (seen < lines) {
			snprintf(err, errsz, "%s: the header is shorter than its %u-line offset", file, lines);
			return -EBADMSG;
		}
		*ret = off;
	}
	return 0;
}

static bool path_ok(const char *p)
{
	/* Relative, no "..", no empty names: checked here as well as by libarchive. */
	if (!p || !*p || p[0] == '/')
		return false;
	for (const char *s = p; *s;) {
		const char *e = strchr(s, '/');
		size_t n = e ? (size_t)(e - s) : strlen(s);
		if (n == 2 && s[0] == '.' && s[1] == '.')
			return false;
		s += n;
		while (*s == '/')
			s++;
	}
	return true;
}

/* The errno behind a libarchive failure (ENOSPC stays ENOSPC), or fallback
 * where libarchive names none (its own refusals, format errors). */
static int la_errno(struct archive *ar, int fallback)
{
	int e = archive_errno(ar);
	return e > 0 ? -e : fallback;
}

struct unpack {
	const char *file;
	const struct gb_unpack_opts *o;
	struct archive *a, *w;
	unsigned long long total, entries;
	char *err;
	size_t errsz;
};

/* Refuse what an archive has no business doing: too many entries, absolute
 * or climbing names and links, devices, bombs; drop setid bits. */
static int entry_check(struct unpack *u, struct archive_entry *e)
{
	const char *name = archive_entry_pathname(e), *link = archive_entry_hardlink(e);
	mode_t type = archive_entry_filetype(e), mode = archive_entry_perm(e);

	if (++u->entries > u->o->max_entries) {
		snprintf(u->err, u->errsz, "%s: more than %llu entries", u->file, u->o->max_entries);
		return -EFBIG;
	}
	if (!path_ok(name)) {
		snprintf(u->err, u->errsz, "%s: entry '%s' is absolute or climbs out with '..': refused", u->file,
		         name ? name : "");
		return -EPERM;
	}
	if (link && !path_ok(link)) {
		snprintf(u->err, u->errsz, "%s: hard link '%s' -> '%s' points outside the tree: refused", u->file, name,
		         link);
		return -EPERM;
	}
	if (!link && type != AE_IFREG && type != AE_IFDIR && type != AE_IFLNK) {
		snprintf(u->err, u->errsz, "%s: entry '%s' is a device, FIFO or socket: refused", u->file, name);
		return -EPERM;
	}
	if ((mode & 06000) && !u->o->allow_setid)
		archive_entry_set_perm(e, mode & ~(mode_t)06000); /* setid bits only where the caller allows them */
	if (type == AE_IFLNK) {
		link = archive_entry_symlink(e);
		if (!link || link[0] == '/' || !path_ok(link)) {
			snprintf(u->err, u->errsz, "%s: symlink '%s' -> '%s' points outside the tree: refused", u->file,
			         name, link ? link : "");
			return -EPERM;
		}
	}
	u->total += (unsigned long long)(archive_entry_size(e) > 0 ? archive_entry_size(e) : 0);
	if (u->total > u->o->max_bytes) {
		snprintf(u->err, u->errsz, "%s: unpacks to more than %llu bytes (a decompression bomb?): refused",
		         u->file, u->o->max_bytes);
		return -EFBIG;
	}
	return 0;
}

/* Copy one regular file's data, never more than its header declares. */
static int entry_data(struct unpack *u, struct archive_entry *e, const char *name)
{
	unsigned long long written = 0;
	const void *buf;
	size_t len;
	la_int64_t off;
	int rr;

	while ((rr = archive_read_data_block(u->a, &buf, &len, &off)) == ARCHIVE_OK) {
		written += len;
		if (written > (unsigned long long)archive_entry_size(e)) {
			snprintf(u->err, u->errsz, "%s: '%s' holds more data than its header says", u->file, name);
			return -EBADMSG;
		}
		if (archive_write_data_block(u->w, buf, len, off) != ARCHIVE_OK) {
			snprintf(u->err, u->errsz, "%s: cannot write '%s': %s", u->file, name,
			         archive_error_string(u->w));
			return la_errno(u->w, -EIO);
		}
	}
	if (rr != ARCHIVE_EOF) {
		snprintf(u->err, u->errsz, "%s: corrupt data in '%s': %s", u->file, name, archive_error_string(u->a));
		return -EBADMSG;
	}
	return 0;
}

static int unpack_entries(struct unpack *u)
{
	struct archive_entry *e;
	int r;

	for (;;) {
		const char *name;
		int rr = archive_read_next_header(u->a, &e);
		if (rr == ARCHIVE_EOF)
			break;
		if (rr != ARCHIVE_OK) {
			snprintf(u->err, u->errsz, "%s: corrupt archive: %s", u->file, archive_error_string(u->a));
			return -EBADMSG;
		}
		if ((r = entry_check(u, e)) < 0)
			return r;
		name = archive_entry_pathname(e);
		if (archive_write_header(u->w, e) != ARCHIVE_OK) {
			snprintf(u->err, u->errsz, "%s: cannot write '%s': %s", u->file, name,
			         archive_error_string(u->w));
			/* libarchive's own refusals (a write through a symlink) carry no errno. */
			return la_errno(u->w, -EPERM);
		}
		if (archive_entry_filetype(e) == AE_IFREG && archive_entry_size(e) > 0 &&
		    (r = entry_data(u, e, name)) < 0)
			return r;
		if (archive_write_finish_entry(u->w) != ARCHIVE_OK) {
			snprintf(u->err, u->errsz, "%s: cannot finish '%s': %s", u->file, name,
			         archive_error_string(u->w));
			return la_errno(u->w, -EIO);
		}
		gb_kill_point("unpack");
	}
	if (archive_write_close(u->w) != ARCHIVE_OK) {
		snprintf(u->err, u->errsz, "%s: %s", u->file, archive_error_string(u->w));
		return la_errno(u->w, -EIO);
	}
	return 0;
}

/* Open the archive and the disk writer; entries go relative to the staging
 * directory (the working directory of the thread that writes them:
 * unpack_in), so libarchive's refusal of absolute paths and ".." holds for
 * every name. */
static int unpack_open(struct unpack *u, int fd)
{
	const int flags = ARCHIVE_EXTRACT_SECURE_SYMLINKS | ARCHIVE_EXTRACT_SECURE_NODOTDOT |
	                  ARCHIVE_EXTRACT_SECURE_NOABSOLUTEPATHS | ARCHIVE_EXTRACT_PERM | ARCHIVE_EXTRACT_TIME;

	u->a = archive_read_new();
	u->w = archive_write_disk_new();
	if (!u->a || !u->w) {
		snprintf(u->err, u->errsz, "out of memory");
		return -ENOMEM;
	}
	archive_read_support_filter_gzip(u->a);
	archive_read_support_filter_xz(u->a);
	archive_read_support_filter_zstd(u->a);
	archive_read_support_format_tar(u->a);
	archive_write_disk_set_options(u->w, flags);
	archive_write_disk_set_standard_lookup(u->w);
	if (archive_read_open_fd(u->a, fd, 1 << 16) != ARCHIVE_OK) {
		snprintf(u->err, u->errsz, "%s: not a gzip/xz/zstd tar archive: %s", u->file,
		         archive_error_string(u->a));
		return -EBADMSG;
	}
	return 0;
}

/* What a killed unpack of base (in the directory dir_fd) left beside it
 * (its staging directory, the old tree moved aside): gpuboot's own names,
 * removed before a new one. */
static void remove_leftovers(int dir_fd, const char *dir, const char *base)
{
	size_t n = strlen(base);
	int fd = openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((e = readdir(d)))
		if (strneq(e->d_name, base, n) &&
		    (gb_startswith(e->d_name + n, ".staging.") || gb_startswith(e->d_name + n, ".old.")) &&
		    gb_remove_tree_at(dir_fd, e->d_name) < 0)
			gb_log_warning("Failed to remove '%s/%s' (left by an interrupted unpack), ignoring", dir,
			               e->d_name);
	closedir(d);
}

static int unpack_here(struct unpack *u, int fd)
{
	int r = unpack_open(u, fd);
	return r < 0 ? r : unpack_entries(u);
}

struct unpack_thread {
	struct unpack *u;
	const char *staging;
	int fd, staging_fd, r;
	bool own_cwd; /* the thread had its own working directory */
};

static void *unpack_main(void *p)
{
	struct unpack_thread *t = p;

	if (unshare(CLONE_FS) < 0) {
		t->r = negative_errno();
		return NULL;
	}
	t->own_cwd = true;
	if (fchdir(t->staging_fd) < 0) {
		t->r = negative_errno();
		snprintf(t->u->err, t->u->errsz, "cannot enter %s: %s", t->staging, strerror(-t->r));
		return NULL;
	}
	t->r = unpack_here(t->u, t->fd);
	return NULL;
}

/* libarchive's disk writer resolves names against the working directory,
 * so the entries are written by a thread with a working directory of its
 * own (unshare CLONE_FS), the staging directory: no other thread's moves.
 * Where that is refused (a seccomp filter without CAP_SYS_ADMIN), the
 * fallback: the process's working directory, changed for the unpack and
 * changed back. */
static int unpack_in(struct unpack *u, int fd, int staging_fd, const char *staging)
{
	struct unpack_thread t = { .u = u, .staging = staging, .fd = fd, .staging_fd = staging_fd };
	pthread_attr_t attr;
	pthread_t tid;
	int cwd, r = -EAGAIN;

	if (pthread_attr_init(&attr) == 0) {
		(void)pthread_attr_setstacksize(&attr, 1u << 20); /* musl's default is 128 KiB */
		if (pthread_create(&tid, &attr, unpack_main, &t) == 0) {
			pthread_join(tid, NULL);
			r = t.r;
		}
		pthread_attr_destroy(&attr);
	}
	if (t.own_cwd)
		return r;
	gb_log_debug("unpack: no thread of its own working directory (%s): changing the process's", strerror(-r));
	cwd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cwd < 0 || fchdir(staging_fd) < 0) {
		r = negative_errno();
		snprintf(u->err, u->errsz, "cannot enter %s: %s", staging, strerror(-r));
		if (cwd >= 0)
			close(cwd);
		return r;
	}
	r = unpack_here(u, fd);
	if (fchdir(cwd) < 0 && r >= 0) {
		r = negative_errno();
		snprintf(u->err, u->errsz, "cannot return to the working directory: %s", strerror(-r));
	}
	close(cwd);
	return r;
}

/* dest's directory, opened, and its last name in *ret_base. */
static int open_parent(const char *dest, char *dir, size_t dirsz, const char **ret_base)
{
	const char *slash = strrchr(dest, '/');
	int fd;

	*ret_base = slash ? slash + 1 : dest;
	snprintf(dir, dirsz, "%.*s", slash ? (int)(slash - dest) : 1, slash ? dest : ".");
	if (!dir[0])
		gb_strscpy(dir, dirsz, "/");
	if (!**ret_base)
		return -EINVAL;
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return fd < 0 ? negative_errno() : fd;
}

int gb_unpack(const char *file, const char *dest, const struct gb_unpack_opts *o, char *err, size_t errsz)
{
	struct unpack u = { .file = file, .o = o, .err = err, .errsz = errsz };
	char staging[PATH_MAX], dir[PATH_MAX], aside[NAME_MAX + 32];
	const char *base;
	int dir_fd, fd = -1, staging_fd = -1, r = 0;

	if (snprintf(staging, sizeof(staging), "%s.staging.XXXXXX", dest) >= (int)sizeof(staging))
		return -ENAMETOOLONG;
	dir_fd = open_parent(dest, dir, sizeof(dir), &base);
	if (dir_fd < 0) {
		snprintf(err, errsz, "cannot open the directory of %s: %s", dest, strerror(-dir_fd));
		return dir_fd;
	}
	remove_leftovers(dir_fd, dir, base);
	if (!mkdtemp(staging)) {
		r = negative_errno();
		snprintf(err, errsz, "cannot create a staging directory next to %s: %s", dest, strerror(-r));
		close(dir_fd);
		return r;
	}
	fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || (o->offset && lseek(fd, (off_t)o->offset, SEEK_SET) < 0)) {
		r = negative_errno();
		snprintf(err, errsz, "%s: %s", file, strerror(-r));
		goto out;
	}
	staging_fd = open(staging, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (staging_fd < 0) {
		r = negative_errno();
		snprintf(err, errsz, "cannot enter %s: %s", staging, strerror(-r));
		goto out;
	}
	r = unpack_in(&u, fd, staging_fd, staging);
	if (r == -ENOSPC) { /* what is needed: at least what fit, and the rest of the archive */
		char what[512];
		gb_strscpy(what, sizeof(what), err);
		snprintf(err, errsz, "%s: %s (needs more than the %llu bytes written so far; %llu available)", what,
		         strerror(ENOSPC), u.total, gb_fs_available(staging));
	}
	snprintf(aside, sizeof(aside), "%s.old.%ld", base, (long)getpid());
	if (r >= 0 && (r = gb_swap_into_place(dir_fd, staging + (base - dest), base, aside, NULL)) < 0)
		snprintf(err, errsz, "cannot move the unpacked tree to %s: %s", dest, strerror(-r));
	if (r >= 0)
		staging[0] = '\0';
out:
	if (u.a)
		archive_read_free(u.a);
	if (u.w)
		archive_write_free(u.w);
	if (fd >= 0)
		close(fd);
	if (staging_fd >= 0)
		close(staging_fd);
	if (staging[0])
		(void)gb_remove_tree_at(dir_fd, staging + (base - dest));
	close(dir_fd);
	return r;
}
