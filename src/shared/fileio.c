/* SPDX-License-Identifier: MIT */
#include "fileio.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "log.h"
#include "macro.h"
#include "test-knob.h"
#include "root.h"
#include "util.h"

int gb_mkdir_p(const char *path, unsigned mode)
{
	char buf[4096];
	if (gb_strscpy(buf, sizeof(buf), path) < 0)
		return -ENAMETOOLONG;
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) < 0 && errno != EEXIST)
			return negative_errno();
		*p = '/';
	}
	if (mkdir(buf, mode) < 0 && errno != EEXIST)
		return negative_errno();
	return 0;
}

int gb_read_file(const char *path, size_t max, char **ret, size_t *ret_len)
{
	_cleanup_(gb_root_freep) struct gb_root *base = NULL;
	int r = gb_root_open(path[0] == '/' ? "/" : ".", &base);
	if (r < 0)
		return r;
	/* A path the user gave: resolved as the system resolves it, not inside a root. */
	base->have_openat2 = false;
	return gb_root_read_file(base, path, max, ret, ret_len);
}

/* This boot's tag in temp names: the first 8 hex digits of the kernel's
 * boot id (the running kernel's, whatever --root is); "" when unknown. */
static void boot_tag(char tag[9])
{
	char id[40] = "";
	int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, id, sizeof(id) - 1);

	if (fd >= 0)
		close(fd);
	tag[0] = '\0';
	if (n >= 8 && strspn(id, "0123456789abcdef") >= 8) {
		memcpy(tag, id, 8);
		tag[8] = '\0';
	}
}

/* Whether name is a temp file of an earlier boot: ".<file>.<tag>.XXXXXX",
 * the tag 8 hex digits that are not this boot's. Its writer cannot be
 * running: a power cut (or a crash) stopped it between the temp file and
 * the rename. */
static bool stale_temp(const char *name, const char *tag)
{
	size_t n = strlen(name);
	const char *t;

	if (name[0] != '.' || n < 2 + 1 + 8 + 1 + 6)
		return false;
	t = name + n - 6 - 1 - 8;
	if (t[-1] != '.' || t[8] != '.')
		return false;
	if (strspn(t, "0123456789abcdef") < 8 || strneq(t, tag, 8))
		return false;
	for (size_t i = 9; i < 15; i++)
		if (!isalnum((unsigned char)t[i]))
			return false;
	return true;
}

/* Remove what a power cut left of earlier writes into dir: temp files of
 * earlier boots, of any file (one written once, like mirror-version, may
 * never be written again). A temp file of this boot may be another
 * process's write in flight (`gpuboot verify` beside a run): kept. Best
 * effort (the next write tries again), except that an allocation failure
 * is the caller's: -ENOMEM. */
static int remove_stale_temps(const char *dir, const char *tag)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	if (!d)
		return errno == ENOMEM ? -ENOMEM : 0;
	while ((e = readdir(d)))
		if (stale_temp(e->d_name, tag) && unlinkat(dirfd(d), e->d_name, 0) == 0)
			gb_log_debug("removed '%s/%s', the temp file of a write a power cut stopped", dir, e->d_name);
	closedir(d);
	return 0;
}

/* Create a temp file beside path, named with this boot's tag; on success
 * *ret_fd and tmp (the name) are set. */
static int temp_beside(const char *path, char *tmp, size_t tmpsz, char *dir, size_t dirsz, int *ret_fd)
{
	const char *slash = strrchr(path, '/');
	char tag[9];
	int r;

	if (!slash || (size_t)(slash - path) >= dirsz)
		return -EINVAL;
	memcpy(dir, path, (size_t)(slash - path));
	dir[slash - path] = '\0';
	if (!dir[0])
		gb_strscpy(dir, dirsz, "/");
	r = gb_mkdir_p(dir, 0755);
	if (r < 0)
		return r;
	boot_tag(tag);
	if (tag[0]) {
		r = remove_stale_temps(dir, tag);
		if (r < 0)
			return r;
		snprintf(tmp, tmpsz, "%s/.%s.%s.XXXXXX", dir, slash + 1, tag);
	} else
		snprintf(tmp, tmpsz, "%s/.%s.XXXXXX", dir, slash + 1);
	*ret_fd = mkostemp(tmp, O_CLOEXEC);
	return *ret_fd < 0 ? negative_errno() : 0;
}

unsigned long long gb_fs_available(const char *path)
{
	char dir[PATH_MAX];
	struct statvfs sv;
	if (statvfs(path, &sv) == 0)
		return (unsigned long long)sv.f_bavail * sv.f_frsize;
	gb_strscpy(dir, sizeof(dir), path);
	if (strrchr(dir, '/'))
		*strrchr(dir, '/') = '\0';
	return statvfs(dir[0] ? dir : "/", &sv) == 0 ? (unsigned long long)sv.f_bavail * sv.f_frsize : 0;
}

int gb_fsync_dir(const char *dir)
{
	int dfd, r = 0;

	/* Test builds: a directory whose path contains this string fails to sync. */
	const char *hook = gb_test_knob("GPUBOOT_TEST_FAIL_DIR_FSYNC");
	if (hook && *hook && strstr(dir, hook))
		return -EIO;
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return negative_errno();
	if (fsync(dfd) < 0)
		r = negative_errno();
	if (close(dfd) < 0 && r == 0)
		r = negative_errno();
	return r;
}

/* fchmod, fsync, close, rename over path, fsync the directory; unlink tmp on
 * failure. A failed directory sync is returned too: the rename may not
 * survive a power cut, so the write is not durable. */
static int commit_temp(int fd, const char *tmp, const char *path, const char *dir, unsigned mode)
{
	int r = 0;

	if (fchmod(fd, mode) < 0 || fsync(fd) < 0)
		r = negative_errno();
	if (close(fd) < 0 && r == 0)
		r = negative_errno();
	if (r == 0 && rename(tmp, path) < 0)
		r = negative_errno();
	if (r < 0) {
		unlink(tmp);
		return r;
	}
	return gb_fsync_dir(dir);
}

int gb_write_all(int fd, const void *data, size_t len)
{
	const char *p = data;
	while (len > 0) {
		ssize_t w = write(fd, p, len);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return negative_errno();
		}
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

int gb_copy_file_atomic(const char *src, const char *dst, unsigned mode)
{
	char dir[4096], tmp[4200];
	static char buf[1 << 20];
	int in, fd = -1, r;

	in = open(src, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return negative_errno();
	r = temp_beside(dst, tmp, sizeof(tmp), dir, sizeof(dir), &fd);
	while (r >= 0) {
		ssize_t n = read(in, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			r = negative_errno();
		else if (n == 0)
			break;
		else
			r = gb_write_all(fd, buf, (size_t)n);
	}
	close(in);
	if (fd < 0)
		return r;
	if (r < 0) {
		close(fd);
		unlink(tmp);
		return r;
	}
	return commit_temp(fd, tmp, dst, dir, mode);
}

int gb_write_file_atomic(const char *path, const void *data, size_t len, unsigned mode)
{
	char dir[4096], tmp[4200];
	int fd = -1, r;

	r = temp_beside(path, tmp, sizeof(tmp), dir, sizeof(dir), &fd);
	if (r < 0)
		return r;
	r = gb_write_all(fd, data, len);
	if (r < 0) {
		close(fd);
		unlink(tmp);
		return r;
	}
	return commit_temp(fd, tmp, path, dir, mode);
}
