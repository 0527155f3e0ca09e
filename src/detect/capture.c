/* SPDX-License-Identifier: MIT */
/* detect --capture: turn what detect read into a fixture tree, so a bug
 * report from any machine becomes a test. */
#include "capture.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shared/fileio.h"
#include "shared/log.h"
#include "shared/macro.h"
#include "shared/util.h"

#define CAPTURE_FILE_MAX (4u << 20)

/* Would writing p below dir go through a link the capture itself made
 * (lib/modules/<release>/build -> /usr/src/...)? Absolute targets point at
 * this machine, not into the capture: never write through them. */
static bool through_link(const char *dir, const char *p)
{
	char full[8192];
	struct stat st;
	int n = snprintf(full, sizeof(full), "%s/", dir);

	if (n < 0 || (size_t)n >= sizeof(full))
		return true;
	for (const char *c = p; (c = strchr(c, '/')); c++) {
		if ((size_t)n + (size_t)(c - p) >= sizeof(full))
			return true;
		memcpy(full + n, p, (size_t)(c - p));
		full[n + (c - p)] = '\0';
		if (lstat(full, &st) == 0 && S_ISLNK(st.st_mode))
			return true;
	}
	return false;
}

/* A kernel module is tens of MiB: kept by name only (empty). */
static bool is_kernel_module(const char *p)
{
	return gb_kmod_suffix(p) != NULL;
}

int gb_capture_write(struct gb_root *root, const char *dir)
{
	struct gb_root_record *rec = root->records;
	size_t n = root->n_records;
	char full[8192];
	int r = gb_mkdir_p(dir, 0755);

	if (r < 0)
		return gb_log_error_errno(r, "Failed to create '%s': %m", dir);
	/* Stop recording while we read the files again. */
	root->records = NULL;

	/* Pass 1: directories; pass 2: files and links; pass 3: existence-only paths. */
	for (int pass = 1; pass <= 3; pass++)
		for (size_t i = 0; i < n; i++) {
			const char *p = rec[i].path;
			struct stat st;
			if (streq(p, ".") || strstr(p, "..") || p[0] == '/')
				continue;
			snprintf(full, sizeof(full), "%s/%s", dir, p);
			if (pass > 1 && through_link(dir, p)) {
				gb_log_warning("'%s' lies behind a link in the capture, not captured", p);
				continue;
			}
			if (pass == 1 && rec[i].kind == GB_ROOT_DIR) {
				r = gb_mkdir_p(full, 0755);
			} else if (pass == 2 && rec[i].kind == GB_ROOT_FILE) {
				_cleanup_free_ char *data = NULL;
				size_t len = 0;
				r = gb_root_read_file(root, p, CAPTURE_FILE_MAX, &data, &len);
				if (r < 0) {
					gb_log_warning_errno(r, "Failed to read '%s' again: %m, not captured", p);
					continue;
				}
				r = gb_write_file_atomic(full, data, len, 0644);
			} else if (pass == 2 && rec[i].kind == GB_ROOT_LINK) {
				_cleanup_free_ char *target = NULL;
				char parent[8192];
				if (gb_root_readlink(root, p, &target) < 0 || lstat(full, &st) == 0)
					continue;
				gb_strscpy(parent, sizeof(parent), full);
				*strrchr(parent, '/') = '\0';
				r = gb_mkdir_p(parent, 0755);
				if (r >= 0 && symlink(target, full) < 0)
					r = negative_errno();
			} else if (pass == 3 && rec[i].kind == GB_ROOT_STAT) {
				if (lstat(full, &st) == 0)
					continue;
				if (is_kernel_module(p))
					gb_log_info("'%s' captured empty: a fixture keeps a module's .modinfo only "
					            "(docs/fixtures.md)",
					            p);
				r = gb_write_file_atomic(full, "", 0, 0644);
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
