/* SPDX-License-Identifier: MIT */
/* The fake operations table: records what was asked, fails on cue. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "shared/ops.h"
#include "unit.h"

int main(void)
{
	char rec[] = "/tmp/gpuboot-test-ops.XXXXXX";
	char spec[256], line[256];
	const struct gb_ops *ops = NULL;
	int fd = mkstemp(rec), status = -1;
	struct utsname u;
	FILE *f;

	CHECK(fd >= 0);
	close(fd);
	snprintf(spec, sizeof(spec),
	         "record=%s,module:nvidia:22,command:update-initramfs:1,clock:1000,uname:5.15.0-1-generic:aarch64",
	         rec);
	CHECK_INT(gb_ops_fake_setup(spec, &ops), 0);
	CHECK_STREQ(ops->name, "fake");
	CHECK_INT(ops->module_insert("nvidia", "NVreg_OpenRmEnableUnsupportedGpus=1"), -EINVAL);
	CHECK_INT(ops->module_insert("nvidia_uvm", ""), 0);
	CHECK_INT(ops->run_command((char *[]){ "update-initramfs", "-u", NULL }, 1000, &status), 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 1);
	CHECK_INT(ops->reboot(), 0);
	CHECK_INT(ops->now_monotonic_ns(), 1001000);
	CHECK_INT(ops->uname(&u), 0);
	CHECK_STREQ(u.release, "5.15.0-1-generic");
	CHECK_STREQ(u.machine, "aarch64");

	f = fopen(rec, "re");
	CHECK(f != NULL);
	if (f) {
		CHECK(fgets(line, sizeof(line), f) && strstr(line, "module_insert nvidia NVreg"));
		CHECK(fgets(line, sizeof(line), f) && strstr(line, "module_insert nvidia_uvm"));
		CHECK(fgets(line, sizeof(line), f) && strstr(line, "run update-initramfs -u"));
		CHECK(fgets(line, sizeof(line), f) && strstr(line, "reboot"));
		fclose(f);
	}
	unlink(rec);

	CHECK_INT(gb_ops_fake_setup("module:nvidia", &ops), -EINVAL);
	CHECK_INT(gb_ops_fake_setup("bogus:x:1", &ops), -EINVAL);
	CHECK_INT(gb_ops_fake_setup("module:nvidia:notanumber", &ops), -EINVAL);

	/* The real table runs commands and reports their status. */
	CHECK_INT(gb_ops_real.run_command((char *[]){ "false", NULL }, 5000, &status), 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 1);
	CHECK_INT(gb_ops_real.run_command((char *[]){ "sleep", "5", NULL }, 100, &status), -ETIMEDOUT);
	UNIT_DONE();
}
