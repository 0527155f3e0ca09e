/* SPDX-License-Identifier: MIT */
#include "fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "macro.h"
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

int gb_write_file_atomic(const char *path, const void *data, size_t len, unsigned mode)
{
	char dir[4096], tmp[4200];
	const char *slash = strrchr(path, '/');
	const char *p = data;
	int fd = -1, dfd = -1, r = 0;

	if (!slash || (size_t)(slash - path) >= sizeof(dir))
		return -EINVAL;
	memcpy(dir, path, (size_t)(slash - path));
	dir[slash - path] = '\0';
	if (!dir[0])
		gb_strscpy(dir, sizeof(dir), "/");
	r = gb_mkdir_p(dir, 0755);
	if (r < 0)
		return r;
	snprintf(tmp, sizeof(tmp), "%s/.%s.XXXXXX", dir, slash + 1);
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return negative_errno();
	while (len > 0) {
		ssize_t w = write(fd, p, len);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			r = negative_errno();
			goto fail;
		}
		p += w;
		len -= (size_t)w;
	}
	if (fchmod(fd, mode) < 0 || fsync(fd) < 0) {
		r = negative_errno();
		goto fail;
	}
	if (close(fd) < 0) {
		fd = -1;
		r = negative_errno();
		goto fail;
	}
	fd = -1;
	if (rename(tmp, path) < 0) {
		r = negative_errno();
		goto fail;
	}
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	unlink(tmp);
	return r;
}
