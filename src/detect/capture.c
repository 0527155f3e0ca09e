/* SPDX-License-Identifier: MIT */
/* detect --capture: turn what detect read into a fixture tree, so a bug
 * report from any machine becomes a test. */
#include "capture.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shared/log.h"
#include "shared/macro.h"
#include "shared/util.h"

#define CAPTURE_FILE_MAX (4u << 20)

static int mkdir_p_at(int dfd, const char *path)
{
	char buf[4096];
	if (gb_strscpy(buf, sizeof(buf), path) < 0)
		return -ENAMETOOLONG;
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdirat(dfd, buf, 0755) < 0 && errno != EEXIST)
			return negative_errno();
		*p = '/';
	}
	if (mkdirat(dfd, buf, 0755) < 0 && errno != EEXIST)
		return negative_errno();
	return 0;
}

static int mkparent(int dfd, const char *path)
{
	char buf[4096];
	char *slash;
	if (gb_strscpy(buf, sizeof(buf), path) < 0)
		return -ENAMETOOLONG;
	slash = strrchr(buf, '/');
	if (!slash)
		return 0;
	*slash = '\0';
	return mkdir_p_at(dfd, buf);
}

static int write_at(int dfd, const char *path, const char *data, size_t len)
{
	_cleanup_close_ int fd = openat(dfd, path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return negative_errno();
	while (len > 0) {
		ssize_t n = write(fd, data, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return negative_errno();
		}
		data += n;
		len -= (size_t)n;
	}
	return 0;
}

int gb_capture_write(struct gb_root *root, const char *dir)
{
	_cleanup_close_ int dfd = -1;
	struct gb_root_record *rec = root->records;
	size_t n = root->n_records;
	int r;

	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return gb_log_error_errno(negative_errno(), "Failed to create '%s': %m", dir);
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return gb_log_error_errno(negative_errno(), "Failed to open '%s': %m", dir);
	/* Stop recording while we read the files again. */
	root->records = NULL;

	/* Pass 1: directories; pass 2: files and links; pass 3: existence-only paths. */
	for (int pass = 1; pass <= 3; pass++)
		for (size_t i = 0; i < n; i++) {
			const char *p = rec[i].path;
			struct stat st;
			if (streq(p, ".") || strstr(p, "..") || p[0] == '/')
				continue;
			if (pass == 1 && rec[i].kind == GB_ROOT_DIR) {
				r = mkdir_p_at(dfd, p);
			} else if (pass == 2 && rec[i].kind == GB_ROOT_FILE) {
				_cleanup_free_ char *data = NULL;
				size_t len = 0;
				r = gb_root_read_file(root, p, CAPTURE_FILE_MAX, &data, &len);
				if (r < 0) {
					gb_log_warning_errno(r, "Failed to read '%s' again: %m, not captured", p);
					continue;
				}
				r = mkparent(dfd, p);
				if (r >= 0)
					r = write_at(dfd, p, data, len);
			} else if (pass == 2 && rec[i].kind == GB_ROOT_LINK) {
				_cleanup_free_ char *target = NULL;
				if (gb_root_readlink(root, p, &target) < 0)
					continue;
				r = mkparent(dfd, p);
				if (r >= 0 && fstatat(dfd, p, &st, AT_SYMLINK_NOFOLLOW) < 0 &&
				    symlinkat(target, dfd, p) < 0)
					r = negative_errno();
			} else if (pass == 3 && rec[i].kind == GB_ROOT_STAT) {
				if (fstatat(dfd, p, &st, AT_SYMLINK_NOFOLLOW) == 0)
					continue;
				r = mkparent(dfd, p);
				if (r >= 0)
					r = write_at(dfd, p, "", 0);
			} else {
				continue;
			}
			if (r < 0) {
				root->records = rec;
				return gb_log_error_errno(r, "Failed to capture '%s' into '%s': %m", p, dir);
			}
		}
	root->records = rec;
	return 0;
}
