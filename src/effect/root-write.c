/* SPDX-License-Identifier: MIT */
#include "root-write.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "shared/digest.h"
#include "shared/fileio.h"
#include "shared/killpoint.h"
#include "shared/macro.h"
#include "shared/root.h"
#include "shared/util.h"

static int open_dir_in_root(struct gb_root *root, const char *rel, int flags)
{
	return gb_root_openat_strict(root, rel, flags | O_DIRECTORY);
}

int gb_root_mkdir_p(struct gb_root *root, const char *path, mode_t mode)
{
	char buf[4096], *p;
	int r;

	while (*path == '/')
		path++;
	if (!*path)
		return 0;
	if (gb_strscpy(buf, sizeof(buf), path) < 0)
		return -ENAMETOOLONG;
	/* Each level: open the parent inside the root, mkdirat the child there. */
	for (p = buf;; p++) {
		char saved;
		if (*p != '/' && *p != '\0')
			continue;
		saved = *p;
		*p = '\0';
		{
			const char *slash = strrchr(buf, '/');
			const char *name = slash ? slash + 1 : buf;
			_cleanup_close_ int dfd = -1;
			if (slash) {
				*(char *)slash = '\0';
				dfd = open_dir_in_root(root, buf, O_RDONLY);
				*(char *)slash = '/';
			} else {
				dfd = open_dir_in_root(root, ".", O_RDONLY);
			}
			if (dfd < 0)
				return dfd;
			if (*name && mkdirat(dfd, name, saved ? 0755 : mode) < 0 && errno != EEXIST)
				return negative_errno();
		}
		if (!saved)
			break;
		*p = saved;
	}
	/* What exists now must be a directory inside the root, not a link out. */
	r = open_dir_in_root(root, buf, O_RDONLY);
	if (r < 0)
		return r;
	close(r);
	return 0;
}

int gb_root_resolve_dir(struct gb_root *root, const char *path, const char *const *entries, char *ret, size_t n,
                        const char **ret_bad)
{
	_cleanup_close_ int fd = -1;
	char proc[64], link[PATH_MAX];
	ssize_t len;
	int r = gb_root_mkdir_p(root, path, 0755);

	*ret_bad = NULL;
	if (r < 0)
		return r;
	fd = open_dir_in_root(root, path, O_RDONLY);
	if (fd < 0)
		return fd;
	for (size_t i = 0; entries && entries[i]; i++) {
		struct stat st;
		if (fstatat(fd, entries[i], &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode)) {
			*ret_bad = entries[i];
			return -ELOOP;
		}
	}
	/* The kernel's name for the directory it opened inside the root. */
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	len = readlink(proc, link, sizeof(link) - 1);
	if (len < 0)
		return negative_errno();
	if ((size_t)len >= n || (size_t)len >= sizeof(link) - 1)
		return -ENAMETOOLONG;
	link[len] = '\0';
	if (link[0] != '/' || strstr(link, " (deleted)"))
		return -ENOENT;
	memcpy(ret, link, (size_t)len + 1);
	return 0;
}

int gb_root_open_parent(struct gb_root *root, const char *path, bool create, const char **ret_name)
{
	char dir[4096];
	const char *slash;
	int r;

	while (*path == '/')
		path++;
	slash = strrchr(path, '/');
	if (!*path || (slash && !slash[1]))
		return -EINVAL;
	if (slash) {
		if ((size_t)(slash - path) >= sizeof(dir))
			return -ENAMETOOLONG;
		memcpy(dir, path, (size_t)(slash - path));
		dir[slash - path] = '\0';
	} else {
		gb_strscpy(dir, sizeof(dir), ".");
	}
	if (create && (r = gb_root_mkdir_p(root, dir, 0755)) < 0)
		return r;
	*ret_name = slash ? slash + 1 : path;
	return open_dir_in_root(root, dir, O_RDONLY);
}

/* A temp copy of NAME a killed writer left (".#NAME." and 8 hex digits):
 * removed before the next write, never left beside the file for good.
 * 0, or a negative errno when the directory cannot be read (the write
 * fails rather than leave them). */
static int remove_stale_temps(int dfd, const char *name)
{
	_cleanup_close_ int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	size_t n = strlen(name);
	struct dirent *e;
	DIR *d;

	if (fd < 0 || !(d = fdopendir(fd)))
		return negative_errno();
	fd = -1; /* the DIR owns it */
	while ((e = readdir(d)))
		if (gb_startswith(e->d_name, ".#") && strneq(e->d_name + 2, name, n) && e->d_name[2 + n] == '.' &&
		    strlen(e->d_name + 3 + n) == 8 && strspn(e->d_name + 3 + n, "0123456789abcdef") == 8)
			(void)unlinkat(dirfd(d), e->d_name, 0);
	closedir(d);
	return 0;
}

int gb_root_write_file(struct gb_root *root, const char *path, const void *data, size_t len, mode_t mode)
{
	_cleanup_close_ int dfd = -1;
	const char *name;
	char tmp[300];
	int fd, r = 0;

	dfd = gb_root_open_parent(root, path, true, &name);
	if (dfd < 0)
		return dfd;
	if (strlen(name) > 200)
		return -ENAMETOOLONG;
	r = remove_stale_temps(dfd, name);
	if (r < 0)
		return r;
	for (int tries = 0;; tries++) {
		snprintf(tmp, sizeof(tmp), ".#%s.%08x", name, (unsigned)(getpid() ^ (tries * 2654435761u)));
		fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode & 07777);
		if (fd >= 0)
			break;
		if (errno != EEXIST || tries > 16)
			return negative_errno();
	}
	r = gb_write_all(fd, data, len);
	if (r == 0 && (fchmod(fd, mode & 07777) < 0 || fsync(fd) < 0))
		r = negative_errno();
	if (close(fd) < 0 && r == 0)
		r = negative_errno();
	if (r == 0)
		gb_kill_point("write");
	/* rename replaces a symlink at the target itself; it never follows it. */
	if (r == 0 && renameat(dfd, tmp, dfd, name) < 0)
		r = negative_errno();
	if (r < 0) {
		unlinkat(dfd, tmp, 0);
		return r;
	}
	return fsync(dfd) < 0 ? negative_errno() : 0;
}

int gb_root_unlink(struct gb_root *root, const char *path)
{
	_cleanup_close_ int dfd = -1;
	const char *name;

	dfd = gb_root_open_parent(root, path, false, &name);
	if (dfd == -ENOENT)
		return 0;
	if (dfd < 0)
		return dfd;
	if (unlinkat(dfd, name, 0) < 0)
		return errno == ENOENT ? 0 : negative_errno();
	return fsync(dfd) < 0 ? negative_errno() : 0;
}

int gb_root_sha256(struct gb_root *root, const char *path, char ret_hex[65], mode_t *ret_mode)
{
	_cleanup_close_ int dfd = -1, fd = -1;
	unsigned long long size;
	const char *name;
	struct stat st;
	int r;

	dfd = gb_root_open_parent(root, path, false, &name);
	if (dfd < 0)
		return dfd;
	fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return negative_errno();
	if (fstat(fd, &st) < 0)
		return negative_errno();
	if (!S_ISREG(st.st_mode))
		return -EISDIR;
	r = gb_sha256_file(fd, ret_hex, &size);
	if (r < 0)
		return r;
	if (ret_mode)
		*ret_mode = st.st_mode & 07777;
	return 0;
}

int gb_root_symlink(struct gb_root *root, const char *path, const char *target)
{
	_cleanup_close_ int dfd = -1;
	const char *name;

	dfd = gb_root_open_parent(root, path, true, &name);
	if (dfd < 0)
		return dfd;
	if (unlinkat(dfd, name, 0) < 0 && errno != ENOENT)
		return negative_errno();
	if (symlinkat(target, dfd, name) < 0)
		return negative_errno();
	return fsync(dfd) < 0 ? negative_errno() : 0;
}
