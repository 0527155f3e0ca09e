/* SPDX-License-Identifier: MIT */
/* The runfile method: the installer's flags per version, flavour, DKMS and
 * kernel; a generated makeself runfile unpacked by gpuboot and its
 * recording nvidia-installer really run for a live root (the root's
 * is_host forced on a temp tree, real operations, no chroot); an image
 * root with the fake operations (chrooted runs recorded, --kernel-name per
 * kernel, --kernel-module-only or dkms install for the further ones); a
 * failing installer's exit status and output in the journal; a rerun with
 * everything in place runs nothing; a file that is no runfile refused. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "context.h"
#include "install/install.h"
#include "effect/journal.h"
#include "shared/fileio.h"
#include "shared/macro.h"
#include "unit.h"

#define VER "580.95.05"
#define K1 "6.8.0-40-generic"
#define K2 "6.8.0-41-generic"

static char base[] = "/tmp/gpuboot-test-install-runfile.XXXXXX";
static char rootdir[4200];

static char *slurp(const char *path)
{
	char *t = NULL;
	size_t n;
	return gb_read_file(path, 1u << 20, &t, &n) < 0 ? NULL : t;
}

static void put(const char *rel, const char *text)
{
	char p[4400];
	snprintf(p, sizeof(p), "%s/root/%s", base, rel);
	CHECK_INT(gb_write_file_atomic(p, text, strlen(text), 0644), 0);
}

static bool has(const char *hay, const char *needle)
{
	return hay && strstr(hay, needle) != NULL;
}

static void test_argv(void)
{
	const char *argv[GB_RUNFILE_ARGV_MAX];
	char buf[4][4400];
	char line[2048];

#define JOIN()                                                                             \
	do {                                                                               \
		size_t o = 0;                                                              \
		for (size_t i = 0; argv[i]; i++)                                           \
			o += (size_t)snprintf(line + o, sizeof(line) - o, " %s", argv[i]); \
	} while (0)
	CHECK_INT(gb_runfile_argv("/d", "580.95.05", "open", false, NULL, true, "/l", argv, buf), 0);
	JOIN();
	CHECK(has(line, " --silent --no-questions --ui=none --accept-license --no-nouveau-check --skip-module-load "
	                "--kernel-module-type=open --no-dkms --log-file-name=/l"));
	CHECK(!has(line, "--kernel-name") && !has(line, "--kernel-module-only"));
	CHECK_STREQ(argv[0], "sh");
	CHECK_STREQ(argv[4], "/d");
	CHECK_INT(gb_runfile_argv("/d", "570.172.08", "proprietary", true, K1, false, "/l", argv, buf), 0);
	JOIN();
	CHECK(has(line, "--skip-module-load --kernel-module-type=proprietary --dkms --kernel-name=" K1
	                " --kernel-module-only --log-file-name=/l"));
	/* before 555: the build directory; before 550: no --skip-module-load */
	CHECK_INT(gb_runfile_argv("/d", "550.163.01", "open", false, NULL, true, "/l", argv, buf), 0);
	JOIN();
	CHECK(has(line, "--skip-module-load --kernel-module-build-directory=kernel-open --no-dkms"));
	CHECK_INT(gb_runfile_argv("/d", "535.261.03", "proprietary", false, NULL, true, "/l", argv, buf), 0);
	JOIN();
	CHECK(!has(line, "--skip-module-load") && !has(line, "kernel-module-type") && !has(line, "build-directory"));
	CHECK_INT(gb_runfile_argv("/d", "470.256.02", "open", false, NULL, true, "/l", argv, buf), -EINVAL);
	CHECK_INT(gb_runfile_argv("/d", "580.95.05", "nouveau", false, NULL, true, "/l", argv, buf), -EINVAL);
	CHECK_INT(gb_runfile_argv("/d", "x580", "open", false, NULL, true, "/l", argv, buf), -EINVAL);
#undef JOIN
}

struct run {
	struct gb_ctx ctx;
	struct gb_journal *j;
	struct gb_runfile_result res;
	char state[4400], runfile[4400];
	int r;
	char *record, *args, *journal;
};

static void make_root(bool recording_live, bool dkms)
{
	char p[8800];
	snprintf(p, sizeof(p), "rm -rf '%s/root' '%s/state' '%s/record' && mkdir -p '%s/root'", base, base, base, base);
	CHECK_INT(system(p), 0);
	put("boot/vmlinuz-" K1, "");
	put("lib/modules/" K1 "/modules.dep", "");
	put("boot/vmlinuz-" K2, "");
	put("lib/modules/" K2 "/modules.dep", "");
	if (dkms)
		put("usr/sbin/dkms", "#!/bin/sh\n");
	snprintf(p, sizeof(p), "%s/root", base);
	CHECK(realpath(p, rootdir) != NULL);
	snprintf(p, sizeof(p), "MAKE_RUNFILE_RECORDING=1 MAKE_RUNFILE_ROOT='%s' tests/make-runfile '%s/r.run' " VER,
	         recording_live ? rootdir : "", base);
	CHECK_INT(system(p), 0);
}

/* live: the root's is_host forced, the real operations (the recording
 * installer runs, writing under the temp root); else an image with the
 * fake operations of spec. */
static void run_install(struct run *x, bool live, const char *spec, const char *flavor, const char *const *kernels,
                        size_t n_kernels)
{
	struct gb_runfile_input in = { .version = VER, .flavor = flavor, .kernels = kernels, .n_kernels = n_kernels };
	json_object *plan = json_object_new_object();
	char err[512], p[4400];

	memset(x, 0, sizeof(*x));
	snprintf(x->state, sizeof(x->state), "%s/state", base);
	snprintf(x->runfile, sizeof(x->runfile), "%s/r.run", base);
	in.runfile = x->runfile;
	x->ctx.opt.root = rootdir;
	x->ctx.opt.state_dir = x->state;
	if (live)
		x->ctx.ops = &gb_ops_real;
	else
		CHECK_INT(gb_ops_fake_new(spec, &x->ctx.ops), 0);
	CHECK_INT(gb_root_open(rootdir, &x->ctx.root), 0);
	x->ctx.root->is_host = live;
	json_object_object_add(plan, "test", json_object_new_string("runfile"));
	CHECK_INT(gb_journal_open(&x->ctx, plan, "run", &x->j, err, sizeof(err)), 0);
	json_object_put(plan);
	x->r = gb_install_runfile(&x->ctx, &in, x->j, &x->res);
	CHECK_INT(gb_journal_finish(x->j, x->r < 0 ? "failed" : "done", x->r < 0 ? 1 : 0), 0);
	snprintf(p, sizeof(p), "%s/record", base);
	x->record = slurp(p);
	snprintf(p, sizeof(p), "%s/var/log/fake-installer.args", rootdir);
	x->args = slurp(p);
	snprintf(p, sizeof(p), "%s/journal.json", x->state);
	x->journal = slurp(p);
}

static void run_done(struct run *x)
{
	gb_journal_free(x->j);
	if (x->ctx.ops != &gb_ops_real)
		gb_ops_fake_free(x->ctx.ops);
	gb_root_free(x->ctx.root);
	free(x->record);
	free(x->args);
	free(x->journal);
}

/* The live machine: the installer really runs (from its unpacked tree, in
 * it as its working directory), for the running kernel, no chroot. */
static void test_live(bool dkms)
{
	struct utsname u;
	struct run x;
	char p[4400];

	CHECK_INT(uname(&u), 0);
	make_root(true, dkms);
	run_install(&x, true, NULL, "open", NULL, 0);
	CHECK_INT(x.r, 0);
	if (x.r < 0)
		fprintf(stderr, "runfile: %s\n", x.res.error);
	CHECK(!x.res.image && x.res.changed);
	CHECK(x.res.dkms == dkms);
	CHECK_INT(x.res.n_kernels, 1);
	CHECK_STREQ(x.res.kernels[0], u.release);
	CHECK(has(x.args, "--silent\n--no-questions\n--ui=none\n--accept-license\n--no-nouveau-check\n"
	                  "--skip-module-load\n--kernel-module-type=open\n"));
	CHECK(has(x.args, dkms ? "\n--dkms\n" : "\n--no-dkms\n"));
	CHECK(!has(x.args, "--kernel-name") && !has(x.args, "--kernel-module-only"));
	snprintf(p, sizeof(p), "--log-file-name=%s/nvidia-installer.log\n", x.state);
	CHECK(has(x.args, p));
	snprintf(p, sizeof(p), "lib/modules/%s/%s/nvidia.ko", u.release,
	         dkms ? "updates/dkms" : "kernel/drivers/video");
	CHECK_STREQ(x.res.modules[0], p);
	CHECK(has(x.journal, "\"exit_status\":0") || has(x.journal, "\"exit_status\": 0"));
	CHECK(has(x.journal, "installed"));
	/* the unpacked tree has gone, the record stays */
	snprintf(p, sizeof(p), "%s/runfile/driver-" VER, x.state);
	CHECK(access(p, F_OK) < 0);
	snprintf(p, sizeof(p), "%s/var/lib/gpuboot/runfile-driver", rootdir);
	CHECK(access(p, F_OK) == 0);
	run_done(&x);
	/* again: nothing runs, nothing is written */
	run_install(&x, true, NULL, "open", NULL, 0);
	CHECK_INT(x.r, 0);
	CHECK(!x.res.changed);
	CHECK_INT(x.j->n_effects, 0);
	run_done(&x);
}

/* The image: chrooted, --kernel-name for each kernel; the fake operations
 * record the runs (the modules are put where an installer would). */
static void test_image(bool dkms, const char *flavor)
{
	const char *const kernels[] = { K1, K2 };
	char spec[4400], want[4400];
	struct run x;

	make_root(false, dkms);
	put("lib/modules/" K1 "/kernel/drivers/video/nvidia.ko", "x");
	put("lib/modules/" K2 "/kernel/drivers/video/nvidia.ko", "x");
	put("usr/bin/nvidia-smi", "x");
	snprintf(spec, sizeof(spec), "record=%s/record,clock:1000000000", base);
	run_install(&x, false, spec, flavor, kernels, 2);
	CHECK_INT(x.r, 0);
	CHECK(x.res.image && x.res.dkms == dkms);
	snprintf(want, sizeof(want),
	         "run chroot=%s sh -c "
	         "cd -- \"$1\" && shift && exec ./nvidia-installer \"$@\" nvidia-installer "
	         "/var/lib/gpuboot/runfile/driver-" VER "/NVIDIA-Linux-x86_64-" VER
	         " --silent --no-questions --ui=none --accept-license --no-nouveau-check --skip-module-load "
	         "--kernel-module-type=%s %s --kernel-name=" K1
	         " --log-file-name=/var/lib/gpuboot/nvidia-installer.log\n",
	         rootdir, flavor, dkms ? "--dkms" : "--no-dkms");
	CHECK(has(x.record, want));
	if (!has(x.record, want))
		fprintf(stderr, "record:\n%s\nwanted:\n%s", x.record, want);
	if (dkms)
		snprintf(want, sizeof(want), "run chroot=%s dkms install -m nvidia -v " VER " -k " K2 "\n", rootdir);
	else
		snprintf(want, sizeof(want), "--no-dkms --kernel-name=" K2 " --kernel-module-only --log-file-name=");
	CHECK(has(x.record, want));
	/* /proc, /sys, /dev bound for the installer, unbound after */
	snprintf(want, sizeof(want), "mount_bind /proc %s/proc\n", rootdir);
	CHECK(has(x.record, want));
	snprintf(want, sizeof(want), "umount %s/proc\n", rootdir);
	CHECK(has(x.record, want));
	run_done(&x);
}

static void test_fails(void)
{
	const char *const kernels[] = { K1 };
	char spec[4400], p[4400];
	struct run x;

	make_root(false, false);
	snprintf(p, sizeof(p), "%s/out", base);
	CHECK_INT(gb_write_file_atomic(p, "ERROR: Unable to find the kernel source tree\n", 45, 0644), 0);
	snprintf(spec, sizeof(spec), "record=%s/record,command:sh:1:%s", base, p);
	run_install(&x, false, spec, "open", kernels, 1);
	CHECK_INT(x.r, -EIO);
	CHECK(has(x.res.error, "nvidia-installer " VER " failed"));
	CHECK(has(x.res.error, "/var/lib/gpuboot/nvidia-installer.log"));
	CHECK(has(x.res.error, "Unable to find the kernel source tree"));
	CHECK(has(x.journal, "\"exit_status\":1") || has(x.journal, "\"exit_status\": 1"));
	CHECK(has(x.journal, "Unable to find the kernel source tree"));
	run_done(&x);

	/* no module afterwards: named */
	snprintf(spec, sizeof(spec), "record=%s/record", base);
	run_install(&x, false, spec, "open", kernels, 1);
	CHECK_INT(x.r, -ENOENT);
	CHECK(has(x.res.error, "built no nvidia.ko for the kernel " K1));
	run_done(&x);

	/* not a runfile */
	snprintf(p, sizeof(p), "%s/r.run", base);
	CHECK_INT(gb_write_file_atomic(p, "#!/bin/bash\necho hi\n", 20, 0755), 0);
	run_install(&x, false, spec, "open", kernels, 1);
	CHECK_INT(x.r, -EBADMSG);
	run_done(&x);
}

int main(void)
{
	if (!mkdtemp(base)) {
		perror("mkdtemp");
		return 1;
	}
	test_argv();
	test_live(false);
	test_live(true);
	test_image(false, "open");
	test_image(true, "proprietary");
	test_fails();
	{
		char p[4400];
		snprintf(p, sizeof(p), "rm -rf '%s'", base);
		if (system(p) != 0)
			fprintf(stderr, "cannot remove %s\n", base);
	}
	UNIT_DONE();
}
