/* SPDX-License-Identifier: MIT */
/* The root: reads stay below it, sizes are capped, listings are sorted. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shared/root.h"
#include "unit.h"

static char tmp[] = "/tmp/gpuboot-test-root.XXXXXX";

static void put(const char *rel, const char *data)
{
	char p[512];
	FILE *f;
	snprintf(p, sizeof(p), "%s/%s", tmp, rel);
	f = fopen(p, "we");
	if (!f)
		abort();
	fputs(data, f);
	fclose(f);
}

int main(void)
{
	struct gb_root *root = NULL;
	char outside[600], p[600];
	char *buf = NULL, **names = NULL;
	size_t len = 0, n = 0;

	if (!mkdtemp(tmp))
		return 1;
	snprintf(p, sizeof(p), "%s/root", tmp);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/root/etc", tmp);
	mkdir(p, 0755);
	put("secret", "outside the root\n");
	put("root/etc/os-release", "ID=debian\n");
	put("root/etc/big", "0123456789abcdef");
	put("root/etc/b", "b");
	put("root/etc/a", "a");
	/* A link that tries to climb out, and an absolute one. */
	snprintf(p, sizeof(p), "%s/root/etc/escape", tmp);
	CHECK_INT(symlink("../../../../../../../secret", p), 0);
	snprintf(outside, sizeof(outside), "%s/secret", tmp);
	snprintf(p, sizeof(p), "%s/root/etc/absolute", tmp);
	CHECK_INT(symlink(outside, p), 0);
	snprintf(p, sizeof(p), "%s/root/etc/dangling", tmp);
	CHECK_INT(symlink("/nowhere", p), 0);

	snprintf(p, sizeof(p), "%s/root", tmp);
	CHECK_INT(gb_root_open(p, &root), 0);
	CHECK(!root->is_host);

	CHECK_INT(gb_root_read_file(root, "/etc/os-release", 1024, &buf, &len), 0);
	CHECK_STREQ(buf, "ID=debian\n");
	CHECK_INT(len, 10);
	free(buf);
	buf = NULL;

	/* Both links resolve inside the root, where there is no "secret". */
	CHECK(gb_root_read_file(root, "etc/escape", 1024, &buf, &len) < 0);
	CHECK(gb_root_read_file(root, "etc/absolute", 1024, &buf, &len) < 0);
	CHECK(buf == NULL);

	CHECK_INT(gb_root_read_file(root, "etc/big", 8, &buf, &len), -EFBIG);
	CHECK_INT(gb_root_read_file(root, "etc/big", 16, &buf, &len), 0);
	free(buf);

	CHECK(gb_root_lexists(root, "etc/dangling"));
	CHECK(!gb_root_exists(root, "etc/dangling"));
	CHECK(!gb_root_lexists(root, "etc/nothing"));

	CHECK_INT(gb_root_readlink(root, "etc/dangling", &buf), 0);
	CHECK_STREQ(buf, "/nowhere");
	free(buf);

	CHECK_INT(gb_root_list_dir(root, "etc", &names, &n), 0);
	CHECK_INT(n, 7);
	CHECK_STREQ(names[0], "a");
	CHECK_STREQ(names[1], "absolute");
	CHECK(names[n] == NULL);
	gb_strv_free(names);

	/* The recorder sees what was read. */
	gb_root_record_start(root);
	CHECK_INT(gb_root_read_file(root, "etc/a", 16, &buf, &len), 0);
	free(buf);
	CHECK(gb_root_lexists(root, "etc/b"));
	CHECK_INT(root->n_records, 2);
	CHECK_STREQ(root->records[0].path, "etc/a");
	CHECK_INT(root->records[1].kind, GB_ROOT_STAT);
	gb_root_free(root);

	snprintf(p, sizeof(p), "%s/secret", tmp);
	CHECK_INT(gb_root_open(p, &root), -ENOTDIR);

	snprintf(p, sizeof(p), "rm -rf '%s'", tmp);
	CHECK_INT(system(p), 0);
	UNIT_DONE();
}
