/* SPDX-License-Identifier: MIT */
/* Durable writes: the directory sync after the rename is checked, and its
 * failure returned (GPUBOOT_TEST_FAIL_DIR_FSYNC, a test-build hook). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shared/fileio.h"
#include "unit.h"

int main(void)
{
	char dir[] = "/tmp/gpuboot-test-fileio.XXXXXX", path[200], copy[200], *text = NULL;
	size_t len = 0;

	if (!mkdtemp(dir))
		return 1;
	snprintf(path, sizeof(path), "%s/sub/file", dir);
	snprintf(copy, sizeof(copy), "%s/sub/copy", dir);
	CHECK_INT(gb_write_file_atomic(path, "one\n", 4, 0644), 0);
	CHECK_INT(gb_copy_file_atomic(path, copy, 0644), 0);
	CHECK_INT(gb_fsync_dir(dir), 0);
	CHECK_INT(gb_fsync_dir("/nonexistent-gpuboot-dir"), -ENOENT);

	/* The directory cannot be synced: the write is not durable, and says so. */
	setenv("GPUBOOT_TEST_FAIL_DIR_FSYNC", "/sub", 1);
	CHECK_INT(gb_write_file_atomic(path, "two\n", 4, 0644), -EIO);
	CHECK_INT(gb_copy_file_atomic(path, copy, 0644), -EIO);
	unsetenv("GPUBOOT_TEST_FAIL_DIR_FSYNC");
	/* The rename happened; only its durability is in doubt. */
	CHECK_INT(gb_read_file(path, 100, &text, &len), 0);
	CHECK_STREQ(text, "two\n");
	free(text);

	unlink(path);
	unlink(copy);
	snprintf(path, sizeof(path), "%s/sub", dir);
	rmdir(path);
	rmdir(dir);
	UNIT_DONE();
}
