/* SPDX-License-Identifier: MIT */
/* Durable writes: the directory sync after the rename is checked, and its
 * failure returned (GPUBOOT_TEST_FAIL_DIR_FSYNC, a test-build hook); the
 * temp files a power cut left in an earlier boot are removed by the next
 * write into their directory, this boot's (a write in flight) kept. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shared/fileio.h"
#include "unit.h"

static bool exists(const char *dir, const char *name)
{
	char p[300];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return access(p, F_OK) == 0;
}

static void touch(const char *dir, const char *name)
{
	char p[300];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd >= 0)
		close(fd);
}

/* Count the entries of dir that begin with prefix. */
static int count_prefix(const char *dir, const char *prefix)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;
	while (d && (e = readdir(d)))
		n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
	if (d)
		closedir(d);
	return n;
}

/* Remove dir and the files in it. */
static void rm_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	while (d && (e = readdir(d)))
		if (e->d_name[0] != '.' || (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")))
			unlinkat(dirfd(d), e->d_name, 0);
	if (d)
		closedir(d);
	rmdir(dir);
}

/* A power cut between the temp file and the rename leaves
 * ".<file>.<boot tag>.XXXXXX" behind: the next write into that directory in
 * a later boot removes it, whatever file it was for; this boot's temp files
 * and other names stay. */
static void test_stale_temps(const char *dir)
{
	char sub[200], path[220], id[40] = "", tag[9], other[9], name[64];
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");

	if (!f || !fgets(id, sizeof(id), f) || strlen(id) < 8) {
		if (f)
			fclose(f);
		printf("# no boot id: the stale-temp test is skipped\n");
		return;
	}
	fclose(f);
	memcpy(tag, id, 8);
	tag[8] = '\0';
	memcpy(other, tag, sizeof(other));
	other[0] = other[0] == '0' ? '1' : '0';
	snprintf(sub, sizeof(sub), "%s/stale", dir);
	CHECK(mkdir(sub, 0755) == 0);
	snprintf(name, sizeof(name), ".status.json.%s.AbCdEf", other);
	touch(sub, name);
	snprintf(name, sizeof(name), ".mirror-version.%s.ghIJkl", other);
	touch(sub, name);
	snprintf(name, sizeof(name), ".status.json.%s.MnOpQr", tag);
	touch(sub, name);
	touch(sub, ".status.json.AbCdEf"); /* untagged (older versions): unknown boot, kept */
	touch(sub, ".status.json.1234567.AbCdEf"); /* 7 hex digits: not ours */
	touch(sub, ".status.json.0000000g.AbCdEf"); /* not hex */
	snprintf(path, sizeof(path), "%s/status.json", sub);
	CHECK_INT(gb_write_file_atomic(path, "{}\n", 3, 0644), 0);

	snprintf(name, sizeof(name), ".status.json.%s.AbCdEf", other);
	CHECK(!exists(sub, name));
	snprintf(name, sizeof(name), ".mirror-version.%s.ghIJkl", other);
	CHECK(!exists(sub, name));
	snprintf(name, sizeof(name), ".status.json.%s.MnOpQr", tag);
	CHECK(exists(sub, name));
	CHECK(exists(sub, ".status.json.AbCdEf"));
	CHECK(exists(sub, ".status.json.1234567.AbCdEf"));
	CHECK(exists(sub, ".status.json.0000000g.AbCdEf"));
	CHECK(exists(sub, "status.json"));
	/* Only this boot's stand-in and the three foreign names: the write left no temp file. */
	CHECK_INT(count_prefix(sub, ".status.json."), 4);
	CHECK_INT(count_prefix(sub, ".mirror-version."), 0);
	rm_dir(sub);
}

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

	test_stale_temps(dir);
	unlink(path);
	unlink(copy);
	snprintf(path, sizeof(path), "%s/sub", dir);
	rmdir(path);
	rmdir(dir);
	UNIT_DONE();
}
