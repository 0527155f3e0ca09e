/* SPDX-License-Identifier: MIT */
#include "root.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "log.h"
#include "macro.h"
#include "util.h"

#ifndef SYS_openat2
#define SYS_openat2 437
#endif

int gb_root_open(const char *dir, struct gb_root **ret)
{
	_cleanup_close_ int fd = -1;
	struct gb_root *root;
	struct stat st;

	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return negative_errno();
	if (fstat(fd, &st) < 0)
		return negative_errno();
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	root = calloc(1, sizeof(*root));
	if (!root)
		return -ENOMEM;
	root->path = strdup(dir);
	if (!root->path) {
		free(root);
		return -ENOMEM;
	}
	{
		struct stat host;
		root->is_host = stat("/", &host) == 0 && host.st_dev == st.st_dev && host.st_ino == st.st_ino;
	}
	root->have_openat2 = true;
	root->fd = TAKE_FD(fd);
	*ret = root;
	return 0;
}

struct gb_root *gb_root_free(struct gb_root *root)
{
	if (!root)
		return NULL;
	if (root->fd >= 0)
		close(root->fd);
	for (size_t i = 0; i < root->n_records; i++)
		free(root->records[i].path);
	free(root->records);
	free(root->path);
	free(root);
	return NULL;
}

void gb_root_freep(struct gb_root **root)
{
	*root = gb_root_free(*root);
}

void gb_root_record_start(struct gb_root *root)
{
	root->cap_records = root->cap_records ? root->cap_records : 1;
	if (!root->records)
		root->records = calloc(root->cap_records, sizeof(*root->records));
}

static const char *rel(const char *path)
{
	while (*path == '/')
		path++;
	return *path ? path : ".";
}

/* r, remembering in root when it is -ENOMEM */
static int noted(struct gb_root *root, int r)
{
	if (r == -ENOMEM)
		root->oom = true;
	return r;
}

static void record(struct gb_root *root, const char *path, enum gb_root_kind kind)
{
	if (!root->records)
		return;
	if (root->n_records == root->cap_records) {
		size_t n = root->cap_records * 2;
		struct gb_root_record *r = realloc(root->records, n * sizeof(*r));
		if (!r) {
			root->oom = true; /* a capture that lost a record is not complete */
			return;
		}
		root->records = r;
		root->cap_records = n;
	}
	root->records[root->n_records].path = strdup(rel(path));
	if (root->records[root->n_records].path) {
		root->records[root->n_records].kind = kind;
		root->n_records++;
	} else {
		root->oom = true;
	}
}

/* openat2 RESOLVE_IN_ROOT, or where the kernel lacks it: plain openat when
 * allowed (reads, and anything on the host's own root), else -EOPNOTSUPP. */
/* How often a walk raced by renames is tried again: each try is a few
 * microseconds, and a rename loop in another process loses to it within a
 * handful (tests/unit/test-root.c). */
#define GB_ROOT_EAGAIN_TRIES 1000

static int openat_in_root(struct gb_root *root, const char *path, int flags, bool allow_plain)
{
	const char *p = rel(path);
	int fd;

	flags |= O_CLOEXEC;
	if (root->have_openat2) {
		struct open_how how = {
			.flags = (uint64_t)flags,
			.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
		};
		/* RESOLVE_IN_ROOT answers EAGAIN when a rename or a mount anywhere
		 * raced the walk of a ".." (sysfs links are ../../../devices/...,
		 * Debian's os-release is ../usr/lib/os-release), and first boot is
		 * full of renames (dpkg, cloud-init, journald): try again, bounded. */
		for (unsigned tries = 0;; tries++) {
			fd = (int)syscall(SYS_openat2, root->fd, p, &how, sizeof(how));
			if (fd >= 0 || errno != EAGAIN || tries >= GB_ROOT_EAGAIN_TRIES)
				break;
		}
		if (fd >= 0)
			return fd;
		if (errno != ENOSYS && errno != EPERM)
			return negative_errno();
		/* No openat2 (kernel < 5.6, or a seccomp filter): plain openat. */
		root->have_openat2 = false;
	}
	if (!allow_plain)
		return -EOPNOTSUPP;
	fd = openat(root->fd, p, flags);
	return fd < 0 ? negative_errno() : fd;
}

int gb_root_openat(struct gb_root *root, const char *path, int flags)
{
	return openat_in_root(root, path, flags, true);
}

int gb_root_openat_strict(struct gb_root *root, const char *path, int flags)
{
	return openat_in_root(root, path, flags, root->is_host);
}

/* A file read whole is a regular file (os-release, sysfs and proc
 * attributes are): opened without blocking, so a FIFO planted where one is
 * read never hangs gpuboot, then refused (-EINVAL) with anything else that
 * is not a regular file. */
static int open_regular(struct gb_root *root, const char *path)
{
	struct stat st;
	int fd = gb_root_openat(root, path, O_RDONLY | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0) {
		int r = negative_errno();
		close(fd);
		return r;
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	return fd;
}

static int root_read_file(struct gb_root *root, const char *path, size_t max, char **ret, size_t *ret_len)
{
	_cleanup_close_ int fd = -1;
	_cleanup_free_ char *buf = NULL;
	size_t len = 0, cap = 4096;

	fd = open_regular(root, path);
	if (fd < 0)
		return fd;
	if (cap > max + 1)
		cap = max + 1;
	buf = malloc(cap);
	if (!buf)
		return -ENOMEM;
	for (;;) {
		ssize_t n;
		if (len + 1 >= cap) {
			char *nb;
			if (cap > max) {
				/* Full at the cap: it fits only if this is the end. */
				char probe;
				ssize_t m = read(fd, &probe, 1);
				if (m < 0 && errno == EINTR)
					continue;
				if (m < 0)
					return negative_errno();
				if (m == 0)
					break;
				return -EFBIG;
			}
			cap = cap * 2 > max + 1 ? max + 1 : cap * 2;
			nb = realloc(buf, cap);
			if (!nb)
				return -ENOMEM;
			buf = nb;
		}
		n = read(fd, buf + len, cap - 1 - len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return negative_errno();
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len > max)
			return -EFBIG;
	}
	buf[len] = '\0';
	record(root, path, GB_ROOT_FILE);
	*ret = TAKE_PTR(buf);
	if (ret_len)
		*ret_len = len;
	return 0;
}

int gb_root_read_file(struct gb_root *root, const char *path, size_t max, char **ret, size_t *ret_len)
{
	return noted(root, root_read_file(root, path, max, ret, ret_len));
}

static int root_read_head(struct gb_root *root, const char *path, size_t max, char **ret, size_t *ret_len)
{
	_cleanup_close_ int fd = -1;
	char *buf;
	size_t len = 0;

	fd = open_regular(root, path);
	if (fd < 0)
		return fd;
	buf = malloc(max + 1);
	if (!buf)
		return -ENOMEM;
	while (len < max) {
		ssize_t n = read(fd, buf + len, max - len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			free(buf);
			return negative_errno();
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	record(root, path, GB_ROOT_FILE);
	*ret = buf;
	if (ret_len)
		*ret_len = len;
	return 0;
}

int gb_root_read_head(struct gb_root *root, const char *path, size_t max, char **ret, size_t *ret_len)
{
	return noted(root, root_read_head(root, path, max, ret, ret_len));
}

static int root_read_attr(struct gb_root *root, const char *path, char **ret)
{
	_cleanup_free_ char *buf = NULL;
	size_t len;
	int r;

	r = gb_root_read_file(root, path, 4096, &buf, &len);
	if (r < 0)
		return r;
	return gb_sysfs_attr_parse(buf, len, ret);
}

int gb_root_read_attr(struct gb_root *root, const char *path, char **ret)
{
	return noted(root, root_read_attr(root, path, ret));
}

static int root_readlink(struct gb_root *root, const char *path, char **ret)
{
	_cleanup_free_ char *dir = NULL;
	_cleanup_close_ int dfd = -1;
	const char *p = rel(path), *slash, *base;
	char buf[4096];
	ssize_t n;

	/* Resolve the parent inside the root, then readlink the last component. */
	slash = strrchr(p, '/');
	if (slash) {
		dir = strndup(p, (size_t)(slash - p));
		if (!dir)
			return -ENOMEM;
		base = slash + 1;
		dfd = gb_root_openat(root, dir, O_RDONLY | O_DIRECTORY | O_PATH);
		if (dfd < 0)
			return dfd;
	} else {
		base = p;
	}
	n = readlinkat(dfd >= 0 ? dfd : root->fd, base, buf, sizeof(buf) - 1);
	if (n < 0)
		return negative_errno();
	buf[n] = '\0';
	*ret = strdup(buf);
	if (!*ret)
		return -ENOMEM;
	record(root, path, GB_ROOT_LINK);
	return 0;
}

int gb_root_readlink(struct gb_root *root, const char *path, char **ret)
{
	return noted(root, root_readlink(root, path, ret));
}

bool gb_root_exists(struct gb_root *root, const char *path)
{
	_cleanup_close_ int fd = gb_root_openat(root, path, O_PATH);
	if (fd < 0)
		return false;
	return true;
}

bool gb_root_lexists(struct gb_root *root, const char *path)
{
	_cleanup_free_ char *dir = NULL;
	_cleanup_close_ int dfd = -1;
	const char *p = rel(path), *slash, *base = p;
	struct stat st;

	slash = strrchr(p, '/');
	if (slash) {
		dir = strndup(p, (size_t)(slash - p));
		if (!dir) {
			root->oom = true;
			return false;
		}
		base = slash + 1;
		dfd = gb_root_openat(root, dir, O_RDONLY | O_DIRECTORY | O_PATH);
		if (dfd < 0)
			return false;
	}
	if (fstatat(dfd >= 0 ? dfd : root->fd, base, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return false;
	if (S_ISLNK(st.st_mode)) {
		char buf[4096];
		ssize_t n = readlinkat(dfd >= 0 ? dfd : root->fd, base, buf, sizeof(buf) - 1);
		(void)n;
		record(root, path, GB_ROOT_LINK);
	} else if (S_ISDIR(st.st_mode)) {
		record(root, path, GB_ROOT_DIR);
	} else {
		record(root, path, GB_ROOT_STAT);
	}
	return true;
}

int gb_root_lexists_r(struct gb_root *root, const char *path)
{
	bool before = root->oom, yes;

	root->oom = false;
	yes = gb_root_lexists(root, path);
	if (root->oom)
		return -ENOMEM;
	root->oom = before;
	return yes;
}

void gb_strv_free(char **v)
{
	if (!v)
		return;
	for (char **p = v; *p; p++)
		free(*p);
	free(v);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int root_list_dir(struct gb_root *root, const char *path, char ***ret, size_t *ret_n)
{
	int fd;
	DIR *d;
	struct dirent *de;
	char **v = NULL;
	size_t n = 0, cap = 0;

	fd = gb_root_openat(root, path, O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		return fd;
	d = fdopendir(fd);
	if (!d) {
		int r = negative_errno();
		close(fd);
		return r;
	}
	while ((errno = 0, de = readdir(d))) {
		if (streq(de->d_name, ".") || streq(de->d_name, ".."))
			continue;
		if (n + 2 > cap) {
			size_t nc = cap ? cap * 2 : 16;
			char **nv;
			if (nc > 1u << 20)
				break; /* a directory of a million entries is not a machine we read */
			nv = realloc(v, nc * sizeof(*v));
			if (!nv)
				goto oom;
			v = nv;
			cap = nc;
		}
		v[n] = strdup(de->d_name);
		if (!v[n])
			goto oom;
		n++;
		v[n] = NULL;
	}
	closedir(d);
	if (!v) {
		v = calloc(1, sizeof(*v));
		if (!v)
			return -ENOMEM;
	}
	qsort(v, n, sizeof(*v), cmp_str);
	record(root, path, GB_ROOT_DIR);
	*ret = v;
	if (ret_n)
		*ret_n = n;
	return 0;
oom:
	closedir(d);
	gb_strv_free(v);
	return -ENOMEM;
}

int gb_root_list_dir(struct gb_root *root, const char *path, char ***ret, size_t *ret_n)
{
	return noted(root, root_list_dir(root, path, ret, ret_n));
}
