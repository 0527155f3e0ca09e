/* SPDX-License-Identifier: MIT */
/* The operations table: the fake records what was asked, fails on cue and
 * keeps the fixture's world in step; the real one runs commands with a
 * fixed environment, captures their output and kills a whole process group
 * on timeout; a program from an fd (the probe) and a sysfs write go
 * through it too. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "shared/fileio.h"
#include "shared/ops.h"
#include "shared/root.h"
#include "unit.h"

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "we");
	CHECK(f != NULL);
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static char *slurp(const char *path)
{
	char *t = NULL;
	size_t n;
	if (gb_read_file(path, 1u << 20, &t, &n) < 0)
		return NULL;
	return t;
}

TEST(fake)
{
	char dir[] = "/tmp/gpuboot-test-ops.XXXXXX";
	char spec[2048], p[1200], rec[1100], kmsg[1100], out[1100];
	const struct gb_ops *ops = NULL;
	enum gb_module_state st;
	struct gb_cmd_result res;
	struct utsname u;
	char *t;
	uint8_t rnd[4];

	CHECK(mkdtemp(dir) != NULL);
	snprintf(rec, sizeof(rec), "%s/record", dir);
	snprintf(kmsg, sizeof(kmsg), "%s/kmsg-lines", dir);
	snprintf(out, sizeof(out), "%s/apt-out", dir);
	write_text(kmsg, "NVRM: No NVIDIA GPU found.\n");
	write_text(out, "E: Unable to locate package nvidia-driver\n");
	snprintf(spec, sizeof(spec),
	         "record=%s,root=%s/root,module:nvidia:19,kmsg:nvidia:%s,command:update-initramfs:1,"
	         "command:apt-get install:100:%s,systemctl:reboot:5,clock:1000,random:7,"
	         "uname:5.15.0-1-generic:aarch64",
	         rec, dir, kmsg, out);
	CHECK_INT(gb_ops_fake_new(spec, &ops), 0);
	CHECK_STREQ(ops->name, "fake");

	/* A scripted failure leaves the kernel's lines in dev/kmsg and no module. */
	CHECK_INT(ops->module_load(ops, "nvidia", "NVreg_OpenRmEnableUnsupportedGpus=1"), -ENODEV);
	snprintf(p, sizeof(p), "%s/root/dev/kmsg", dir);
	t = slurp(p);
	CHECK(t && strstr(t, "No NVIDIA GPU found"));
	free(t);
	CHECK_INT(ops->module_state(ops, "nvidia", &st), 0);
	CHECK_INT(st, GB_MODULE_ABSENT);

	/* A load that succeeds shows in sys/module and proc/modules; unload undoes it. */
	CHECK_INT(ops->module_load(ops, "nvidia_uvm", NULL), 0);
	CHECK_INT(ops->module_state(ops, "nvidia_uvm", &st), 0);
	CHECK_INT(st, GB_MODULE_LIVE);
	snprintf(p, sizeof(p), "%s/root/proc/modules", dir);
	t = slurp(p);
	CHECK(t && strstr(t, "nvidia_uvm 1048576 0 - Live"));
	free(t);
	CHECK_INT(ops->module_unload(ops, "nvidia_uvm"), 0);
	CHECK_INT(ops->module_state(ops, "nvidia_uvm", &st), 0);
	CHECK_INT(st, GB_MODULE_ABSENT);
	t = slurp(p);
	CHECK(t && !strstr(t, "nvidia_uvm"));
	free(t);

	/* Commands match by argv prefix, the longest prefix winning, with scripted output. */
	CHECK_INT(ops->run_command(
	              ops, &(struct gb_cmd_spec){ .argv = (const char *[]){ "update-initramfs", "-u", NULL } }, &res),
	          0);
	CHECK(WIFEXITED(res.status) && WEXITSTATUS(res.status) == 1);
	CHECK_INT(ops->run_command(ops,
	                           &(struct gb_cmd_spec){
	                               .argv = (const char *[]){ "apt-get", "install", "-y", "nvidia-driver", NULL } },
	                           &res),
	          0);
	CHECK(WIFEXITED(res.status) && WEXITSTATUS(res.status) == 100);
	CHECK(strstr(res.output, "Unable to locate package") != NULL);
	CHECK_INT(ops->run_command(ops, &(struct gb_cmd_spec){ .argv = (const char *[]){ "apt-getx", NULL } }, &res),
	          0);
	CHECK(WIFEXITED(res.status) && WEXITSTATUS(res.status) == 0);

	/* systemctl fails on cue: the caller must see the error, not a success. */
	CHECK_INT(ops->systemctl(ops, "reboot", NULL), -EIO);
	CHECK_INT(ops->systemctl(ops, "enable", "gpuboot-resume.service"), 0);

	CHECK_INT(ops->random(ops, rnd, sizeof(rnd)), 0);
	CHECK(rnd[0] == 7 && rnd[3] == 7);
	CHECK_INT(ops->now_monotonic_ns(ops), 1001000);
	ops->sleep_ms(ops, 5);
	CHECK_INT(ops->now_monotonic_ns(ops), 7001000);
	CHECK_INT(ops->uname(ops, &u), 0);
	CHECK_STREQ(u.release, "5.15.0-1-generic");
	CHECK_STREQ(u.machine, "aarch64");

	t = slurp(rec);
	CHECK(t && strstr(t, "module_load nvidia NVreg") && strstr(t, "module_unload nvidia_uvm") &&
	      strstr(t, "run update-initramfs -u") && strstr(t, "systemctl reboot") && strstr(t, "sleep 5"));
	free(t);
	gb_ops_fake_free(ops);

	CHECK_INT(gb_ops_fake_new("module:nvidia", &ops), -EINVAL);
	CHECK_INT(gb_ops_fake_new("bogus:x:1", &ops), -EINVAL);
	CHECK_INT(gb_ops_fake_new("module:nvidia:notanumber", &ops), -EINVAL);
	CHECK_INT(gb_ops_fake_new("random:256", &ops), -EINVAL);
}

TEST(real)
{
	const struct gb_ops *ops = &gb_ops_real;
	struct gb_cmd_result *res = calloc(1, sizeof(*res));
	uint8_t a[16] = { 0 }, b[16] = { 0 };
	uint64_t t0;

	CHECK(res != NULL);
	if (!res)
		return;
	CHECK_INT(ops->run_command(
	              ops, &(struct gb_cmd_spec){ .argv = (const char *[]){ "false", NULL }, .timeout_ms = 5000 }, res),
	          0);
	CHECK(WIFEXITED(res->status) && WEXITSTATUS(res->status) == 1);
	/* The fixed environment, stdin from /dev/null, output captured. */
	CHECK_INT(ops->run_command(ops,
	                           &(struct gb_cmd_spec){ .argv = (const char *[]){ "sh", "-c",
	                                                                            "echo $LC_ALL $DEBIAN_FRONTEND "
	                                                                            "$EXTRA; cat; echo err >&2",
	                                                                            NULL },
	                                                  .env = (const char *[]){ "EXTRA=yes", NULL },
	                                                  .timeout_ms = 5000 },
	                           res),
	          0);
	CHECK(WIFEXITED(res->status) && WEXITSTATUS(res->status) == 0);
	CHECK_STREQ(res->output, "C noninteractive yes\nerr\n");
	/* A timeout kills the whole process group, grandchildren included. */
	t0 = ops->now_monotonic_ns(ops);
	CHECK_INT(
	    ops->run_command(ops,
	                     &(struct gb_cmd_spec){ .argv = (const char *[]){ "sh", "-c", "sleep 30 & sleep 30", NULL },
	                                            .timeout_ms = 200 },
	                     res),
	    -ETIMEDOUT);
	CHECK(res->timed_out);
	CHECK(ops->now_monotonic_ns(ops) - t0 < 10000000000ull);
	/* More output than the capture keeps: the tail is kept. */
	CHECK_INT(ops->run_command(
	              ops,
	              &(struct gb_cmd_spec){ .argv = (const char *[]){ "sh", "-c", "seq 1 5000; echo LAST", NULL },
	                                     .timeout_ms = 5000 },
	              res),
	          0);
	CHECK(res->output_len == GB_CMD_CAPTURE_MAX - 1);
	CHECK(strstr(res->output, "5000\nLAST\n") != NULL);
	CHECK_INT(
	    ops->run_command(ops, &(struct gb_cmd_spec){ .argv = (const char *[]){ "no-such-command-gb", NULL } }, res),
	    -ENOENT);
	CHECK_INT(ops->random(ops, a, sizeof(a)), 0);
	CHECK_INT(ops->random(ops, b, sizeof(b)), 0);
	CHECK(memcmp(a, b, sizeof(a)) != 0);
	for (int i = 0; i < 1000; i++)
		CHECK(gb_ops_random_below(ops, 7) < 7);
	free(res);
}

/* run_exec: a program from an fd, stdout and stderr apart, the exit status,
 * a refusal by the kernel, a hang before and after the output closes; the
 * fake records it, refuses on cue, else runs it. */
TEST(exec)
{
	const struct gb_ops *ops = &gb_ops_real, *fake = NULL;
	char out[64], err[64], dir[] = "/tmp/gpuboot-test-exec.XXXXXX", p[128], *t;
	struct gb_exec_result res;
	struct gb_exec_spec spec = { .envp = (char *[]){ "ONLY=this", NULL },
		                     .timeout_ms = 5000,
		                     .out = out,
		                     .out_max = sizeof(out) - 1,
		                     .err = err,
		                     .err_max = sizeof(err) - 1 };
	int sh = open("/bin/sh", O_RDONLY | O_CLOEXEC), plain;

	CHECK(sh >= 0 && mkdtemp(dir) != NULL);
	spec.fd = sh;
	spec.argv = (char *[]){ "sh", "-c", "echo out $ONLY $HOME; echo err >&2; exit 3", NULL };
	CHECK_INT(ops->run_exec(ops, &spec, &res), 0);
	CHECK(WIFEXITED(res.status) && WEXITSTATUS(res.status) == 3 && res.exec_errno == 0);
	out[res.out_len] = err[res.err_len] = '\0';
	CHECK_STREQ(out, "out this\n"); /* the environment given, nothing else */
	CHECK_STREQ(err, "err\n");
	/* More output than is kept: the first out_max bytes. */
	spec.argv = (char *[]){ "sh", "-c", "seq 1 100", NULL };
	CHECK_INT(ops->run_exec(ops, &spec, &res), 0);
	CHECK_INT(res.out_len, sizeof(out) - 1);
	/* A hang with the output open, then one after closing it: killed, the group too. */
	spec.timeout_ms = 200;
	spec.argv = (char *[]){ "sh", "-c", "sleep 30 & sleep 30", NULL };
	CHECK_INT(ops->run_exec(ops, &spec, &res), -ETIMEDOUT);
	CHECK(!res.output_closed && WIFSIGNALED(res.status));
	spec.argv = (char *[]){ "sh", "-c", "exec >&- 2>&-; sleep 30", NULL };
	CHECK_INT(ops->run_exec(ops, &spec, &res), -ETIMEDOUT);
	CHECK(res.output_closed);
	/* Not executable: the kernel's refusal, exit 127. */
	snprintf(p, sizeof(p), "%s/plain", dir);
	write_text(p, "#!/bin/sh\n");
	plain = open(p, O_RDONLY | O_CLOEXEC);
	spec.fd = plain;
	spec.timeout_ms = 5000;
	CHECK_INT(ops->run_exec(ops, &spec, &res), 0);
	CHECK_INT(res.exec_errno, EACCES);
	CHECK(WIFEXITED(res.status) && WEXITSTATUS(res.status) == 127);
	/* The fake: refused on cue and recorded then, else run and not
	 * recorded (a measurement changes nothing). */
	snprintf(p, sizeof(p), "record=%s/rec,exec:nope:2", dir);
	CHECK_INT(gb_ops_fake_new(p, &fake), 0);
	if (fake) {
		spec.fd = sh;
		spec.argv = (char *[]){ "sh", "-c", "echo real", NULL };
		CHECK_INT(fake->run_exec(fake, &spec, &res), 0);
		CHECK(res.out_len == 5 && memcmp(out, "real\n", 5) == 0);
		spec.argv = (char *[]){ "nope", "--x", NULL };
		CHECK_INT(fake->run_exec(fake, &spec, &res), 0);
		CHECK(res.exec_errno == ENOENT && WEXITSTATUS(res.status) == 127 && res.out_len == 0);
		gb_ops_fake_free(fake);
	}
	snprintf(p, sizeof(p), "%s/rec", dir);
	t = slurp(p);
	CHECK_STREQ(t, "exec nope --x\n");
	free(t);
	close(sh);
	close(plain);
	snprintf(p, sizeof(p), "rm -rf %s", dir);
	CHECK_INT(system(p), 0);
}

/* write_attr: one write below the root, kept by a fixture's O_APPEND; the
 * fake records it and fails on cue. */
TEST(write_attr)
{
	const struct gb_ops *fake = NULL;
	struct gb_root *root = NULL;
	char dir[] = "/tmp/gpuboot-test-attr.XXXXXX", p[160], *t;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(p, sizeof(p), "%s/sys", dir);
	CHECK_INT(gb_mkdir_p(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/sys/unbind", dir);
	write_text(p, "");
	CHECK_INT(gb_root_open(dir, &root), 0);
	if (!root)
		return;
	CHECK_INT(gb_ops_real.write_attr(&gb_ops_real, root, "sys/unbind", "0000:01:00.0"), 0);
	CHECK_INT(gb_ops_real.write_attr(&gb_ops_real, root, "sys/missing/unbind", "x"), -ENOENT);
	snprintf(p, sizeof(p), "record=%s/rec,write:sys/bind:16", dir);
	CHECK_INT(gb_ops_fake_new(p, &fake), 0);
	if (fake) {
		CHECK_INT(fake->write_attr(fake, root, "sys/unbind", "0000:02:00.0"), 0);
		CHECK_INT(fake->write_attr(fake, root, "sys/bind", "0000:02:00.0"), -EBUSY);
		gb_ops_fake_free(fake);
	}
	snprintf(p, sizeof(p), "%s/sys/unbind", dir);
	t = slurp(p);
	CHECK_STREQ(t, "0000:01:00.00000:02:00.0");
	free(t);
	snprintf(p, sizeof(p), "%s/rec", dir);
	t = slurp(p);
	CHECK_STREQ(t, "write sys/unbind 0000:02:00.0\nwrite sys/bind 0000:02:00.0\n");
	free(t);
	gb_root_free(root);
	snprintf(p, sizeof(p), "rm -rf %s", dir);
	CHECK_INT(system(p), 0);
}

int main(void)
{
	unit_run_tests();
	UNIT_DONE();
}
