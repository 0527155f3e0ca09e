/* SPDX-License-Identifier: MIT */
/* The install stage with the fake operations table: the sources edit
 * (deb822 and one-line, a rerun changes nothing), apt's output parsed, a
 * missing package or version refused before any install command, the lock
 * wait naming its holder, bind mounts undone on every failure path, the
 * journal showing the commands, and a rerun with everything in place that
 * runs nothing. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "context.h"
#include "install/install-internal.h"
#include "install/install.h"
#include "effect/journal.h"
#include "shared/fileio.h"
#include "shared/macro.h"
#include "unit.h"

#define KVER "6.1.0-57-cloud-amd64"

static char base[] = "/tmp/gpuboot-test-install.XXXXXX";
static char rootdir[4200]; /* canonical */

static char *slurp(const char *path)
{
	char *t = NULL;
	size_t n;
	return gb_read_file(path, 1u << 20, &t, &n) < 0 ? NULL : t;
}

static void put(const char *rel, const char *text)
{
	char p[4400];
	snprintf(p, sizeof(p), "%s/%s", base, rel);
	CHECK_INT(gb_write_file_atomic(p, text, strlen(text), 0644), 0);
}

static const char deb822_in[] = "# Debian's cloud image\n"
                                "Types: deb\n"
                                "URIs: http://deb.debian.org/debian\n"
                                "Suites: bookworm bookworm-updates\n"
                                "Components: main\n"
                                "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n"
                                "\n"
                                "Types: deb\n"
                                "URIs: http://security.debian.org/debian-security\n"
                                "Suites: bookworm-security\n"
                                "components: main contrib\n"
                                "\n"
                                "Types: deb\n"
                                "URIs: https://example.com/third-party\n"
                                "Suites: stable\n"
                                "Components: main\n"
                                "\n"
                                "Types: deb-src\n"
                                "URIs: http://deb.debian.org/debian\n"
                                "Suites: bookworm\n"
                                "Components: main\n"
                                "Enabled: no\n";

TEST(sources)
{
	char *out = NULL, *again = NULL;
	size_t len, len2;
	unsigned n = 0;
	bool changed = false;
	const char *expect = "# Debian's cloud image\n"
	                     "Types: deb\n"
	                     "URIs: http://deb.debian.org/debian\n"
	                     "Suites: bookworm bookworm-updates\n"
	                     "Components: main contrib non-free non-free-firmware\n"
	                     "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n"
	                     "\n"
	                     "Types: deb\n"
	                     "URIs: http://security.debian.org/debian-security\n"
	                     "Suites: bookworm-security\n"
	                     "components: main contrib non-free non-free-firmware\n";

	CHECK_INT(gb_apt_sources_deb822(deb822_in, strlen(deb822_in), "bookworm", &out, &len, &n, &changed), 0);
	CHECK_INT(n, 2);
	CHECK(changed);
	CHECK(out && strneq(out, expect, strlen(expect)));
	/* the third-party and disabled stanzas, byte for byte */
	CHECK(out && strstr(out, "Suites: stable\nComponents: main\n") != NULL);
	CHECK(out && strstr(out, "Suites: bookworm\nComponents: main\nEnabled: no\n") != NULL);
	CHECK_INT(len, strlen(deb822_in) + 2 * strlen(" non-free non-free-firmware") + strlen(" contrib"));
	/* idempotent */
	CHECK_INT(gb_apt_sources_deb822(out, len, "bookworm", &again, &len2, &n, &changed), 0);
	CHECK(!changed);
	CHECK(again && len2 == len && memcmp(again, out, len) == 0);
	free(out);
	free(again);

	const char *one = "deb http://deb.debian.org/debian bookworm main\n"
	                  "# deb http://deb.debian.org/debian bookworm-backports main\n"
	                  "deb [arch=amd64 signed-by=/k.gpg] http://security.debian.org/debian-security "
	                  "bookworm-security main non-free  # security\n"
	                  "deb https://download.docker.com/linux/debian bookworm stable\n"
	                  "deb http://deb.debian.org/debian trixie main";
	const char *one_expect = "deb http://deb.debian.org/debian bookworm main contrib non-free non-free-firmware\n"
	                         "# deb http://deb.debian.org/debian bookworm-backports main\n"
	                         "deb [arch=amd64 signed-by=/k.gpg] http://security.debian.org/debian-security "
	                         "bookworm-security main non-free contrib non-free-firmware  # security\n"
	                         "deb https://download.docker.com/linux/debian bookworm stable\n"
	                         "deb http://deb.debian.org/debian trixie main";
	CHECK_INT(gb_apt_sources_oneline(one, strlen(one), "bookworm", &out, &len, &n, &changed), 0);
	CHECK_INT(n, 2);
	CHECK(changed);
	CHECK_STREQ(out, one_expect);
	CHECK_INT(gb_apt_sources_oneline(out, len, "bookworm", &again, &len2, &n, &changed), 0);
	CHECK(!changed);
	CHECK_STREQ(again, out);
	free(out);
	free(again);
	out = NULL;
	/* malformed: an option bracket never closed */
	CHECK_INT(gb_apt_sources_oneline("deb [arch=amd64 http://x bookworm main\n", 39, "bookworm", &out, &len, &n,
	                                 &changed),
	          -EINVAL);
	CHECK(out == NULL);
}

TEST(parsers)
{
	struct gb_apt_version v[4];
	char ver[GB_INSTALL_VERSION];
	bool held;
	const char *madison =
	    "N: Unable to locate package nothing\n"
	    "  libcuda1 | 535.309.01-0+deb12u1 | http://security.debian.org/debian-security bookworm-security/non-free "
	    "amd64 Packages\n"
	    "  libcuda1 | 535.261.03-1 | http://deb.debian.org/debian bookworm/non-free amd64 Packages\n"
	    "  libcuda1 | 535.261.03-1 | http://mirror.example/debian bookworm/non-free amd64 Packages\n"
	    "nvidia-graphics-drivers | 535.261.03-1 | http://deb.debian.org/debian bookworm/non-free Sources\n"
	    "  libcuda1 | 535 261;rm -rf / | http://x bookworm/non-free amd64 Packages\n"
	    "  libcuda10 | 9.9-1 | http://x bookworm/non-free amd64 Packages\n"
	    "|||\n";
	CHECK_INT(gb_apt_madison_parse(madison, "libcuda1", v, 4), 2);
	CHECK_STREQ(v[0].version, "535.309.01-0+deb12u1");
	CHECK_STREQ(v[0].suite, "bookworm-security/non-free");
	CHECK_STREQ(v[1].version, "535.261.03-1");
	CHECK_STREQ(v[1].suite, "bookworm/non-free");
	CHECK_INT(gb_apt_madison_parse("", "libcuda1", v, 4), 0);
	/* a flat repository (NVIDIA's), as apt 2.6 prints it: no suite, two spaces */
	const char *flat =
	    "cuda-drivers |  999.1.2-1 | https://127.0.0.1:45385/good/compute/cuda/repos/debian12/x86_64  "
	    "Packages\n"
	    "cuda-drivers | 580.173.02-1 | https://developer.download.nvidia.com/compute/cuda/repos/"
	    "debian12/x86_64  Packages\n"
	    "cuda-drivers | 1-1 | https://x  Sources\n"
	    "cuda-drivers | 2-1 | Packages\n";
	CHECK_INT(gb_apt_madison_parse(flat, "cuda-drivers", v, 4), 2);
	CHECK_STREQ(v[0].version, "999.1.2-1");
	CHECK_STREQ(v[1].version, "580.173.02-1");
	CHECK_STREQ(v[1].suite, "/");

	CHECK(gb_deb_version_matches("535.261.03-1", "535.261.03"));
	CHECK(gb_deb_version_matches("1:535.261.03-2~deb12u1", "535.261.03"));
	CHECK(gb_deb_version_matches("535.261.03-1", "535.261.03-1"));
	CHECK(!gb_deb_version_matches("535.309.01-0+deb12u1", "535.261.03"));
	CHECK(!gb_deb_version_matches("535.261.031-1", "535.261.03"));
	CHECK(!gb_deb_version_matches("", "535.261.03"));
	CHECK(gb_deb_version_matches("6.1.192-3", ""));

	const char *dq = "dpkg-query: no packages found matching linux-image-foo\n"
	                 "nvidia-smi\t535.261.03-1\thold ok installed\n"
	                 "libcuda1\t535.261.03-1\tinstall ok installed\n"
	                 "libnvidia-ml1\t535.261.03-1\tdeinstall ok config-files\n"
	                 "evil\t1;reboot\tinstall ok installed\n";
	CHECK_INT(gb_dpkg_query_parse(dq, "nvidia-smi", ver, &held), 0);
	CHECK_STREQ(ver, "535.261.03-1");
	CHECK(held);
	CHECK_INT(gb_dpkg_query_parse(dq, "libcuda1", ver, &held), 0);
	CHECK(!held);
	CHECK_INT(gb_dpkg_query_parse(dq, "libnvidia-ml1", ver, &held), 0);
	CHECK_STREQ(ver, "");
	CHECK_INT(gb_dpkg_query_parse(dq, "absent", ver, &held), 0);
	CHECK_STREQ(ver, "");
	CHECK_INT(gb_dpkg_query_parse(dq, "evil", ver, &held), -EINVAL);
	CHECK(!gb_deb_name_valid("a b"));
	CHECK(!gb_deb_name_valid("-o"));
	CHECK(gb_deb_name_valid("linux-headers-6.1.0-57-cloud-amd64"));
}

/* A fresh image root: Debian 12, one kernel, deb822 sources with main. */
static void make_root(void)
{
	char p[4400];
	snprintf(p, sizeof(p), "rm -rf '%s/root' '%s/state' '%s/record'", base, base, base);
	CHECK_INT(system(p), 0);
	put("root/etc/os-release",
	    "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nID=debian\nVERSION_CODENAME=bookworm\n");
	put("root/etc/apt/sources.list.d/debian.sources", deb822_in);
	put("root/boot/vmlinuz-" KVER, "");
	put("root/lib/modules/" KVER "/modules.dep", "");
	snprintf(p, sizeof(p), "%s/root", base);
	CHECK(realpath(p, rootdir) != NULL);
}

static const char pkgs[][32] = { "nvidia-open-kernel-dkms", "firmware-nvidia-gsp", "nvidia-smi", "libcuda1",
	                         "libnvidia-ml1" };

/* Scripted outputs: madison for every package (version ver; "" leaves
 * one package out of the archive), dpkg-query (what is installed). */
static void script(char *spec, size_t sz, const char *missing, bool installed)
{
	char p[4400], line[512];
	size_t o;
	o = (size_t)snprintf(spec, sz, "record=%s/record,clock:1000000000", base);
	for (size_t i = 0; i < sizeof(pkgs) / sizeof(pkgs[0]); i++) {
		snprintf(line, sizeof(line),
		         "  %s | 535.261.03-1 | http://deb.debian.org/debian bookworm/non-free amd64 Packages\n",
		         pkgs[i]);
		snprintf(p, sizeof(p), "out/madison-%s", pkgs[i]);
		put(p, missing && streq(missing, pkgs[i]) ? "" : line);
		o += (size_t)snprintf(spec + o, sz - o, ",command:apt-cache madison %s:0:%s/%s", pkgs[i], base, p);
	}
	put("out/madison-headers",
	    "linux-headers-" KVER " | 6.1.192-3 | http://security.debian.org bookworm-security/main amd64 Packages\n"
	    "linux-headers-cloud-amd64 | 6.1.192-3 | http://security.debian.org bookworm-security/main amd64 "
	    "Packages\n");
	o += (size_t)snprintf(spec + o, sz - o, ",command:apt-cache madison linux-headers-%s:0:%s/out/madison-headers",
	                      KVER, base);
	o += (size_t)snprintf(spec + o, sz - o,
	                      ",command:apt-cache madison linux-headers-cloud-amd64:0:%s/out/madison-headers", base);
	put("out/dpkg", installed ? "linux-image-" KVER "\t6.1.192-3\tinstall ok installed\n"
	                            "linux-image-cloud-amd64\t6.1.192-3\tinstall ok installed\n"
	                            "linux-headers-" KVER "\t6.1.192-3\tinstall ok installed\n"
	                            "linux-headers-cloud-amd64\t6.1.192-3\tinstall ok installed\n"
	                            "nvidia-open-kernel-dkms\t535.261.03-1\thold ok installed\n"
	                            "firmware-nvidia-gsp\t535.261.03-1\thold ok installed\n"
	                            "nvidia-smi\t535.261.03-1\thold ok installed\n"
	                            "libcuda1\t535.261.03-1\thold ok installed\n"
	                            "libnvidia-ml1\t535.261.03-1\thold ok installed\n"
	                          : "linux-image-" KVER "\t6.1.192-3\tinstall ok installed\n"
	                            "linux-image-cloud-amd64\t6.1.192-3\tinstall ok installed\n");
	snprintf(spec + o, sz - o, ",command:dpkg-query:1:%s/out/dpkg", base);
}

struct run {
	struct gb_ctx ctx;
	struct gb_journal *j;
	struct gb_install_result res;
	char state[4400];
	int r;
	char *record;
};

static void run_install_in(struct run *x, const char *spec, const struct gb_install_input *in);

static void run_install(struct run *x, const char *spec)
{
	struct gb_install_input in = { .method = GB_INSTALL_DISTRO, .flavor = "open", .driver_version = "535.261.03" };
	run_install_in(x, spec, &in);
}

static void run_install_in(struct run *x, const char *spec, const struct gb_install_input *in)
{
	json_object *plan = json_object_new_object();
	char err[512], p[4400];

	memset(x, 0, sizeof(*x));
	snprintf(x->state, sizeof(x->state), "%s/state", base);
	x->ctx.opt.root = rootdir;
	x->ctx.opt.state_dir = x->state;
	CHECK_INT(gb_ops_fake_new(spec, &x->ctx.ops), 0);
	CHECK_INT(gb_root_open(rootdir, &x->ctx.root), 0);
	json_object_object_add(plan, "test", json_object_new_string("install"));
	CHECK_INT(gb_journal_open(&x->ctx, plan, "run", &x->j, err, sizeof(err)), 0);
	json_object_put(plan);
	x->r = gb_install(&x->ctx, in, x->j, &x->res);
	CHECK_INT(gb_journal_finish(x->j, x->r < 0 ? "failed" : "done", x->r < 0 ? 1 : 0), 0);
	snprintf(p, sizeof(p), "%s/record", base);
	x->record = slurp(p);
	if (!x->record)
		x->record = strdup("");
}

static void run_done(struct run *x)
{
	gb_journal_free(x->j);
	gb_root_free(x->ctx.root);
	gb_ops_fake_free(x->ctx.ops);
	free(x->record);
}

/* Every mount the run made was unmounted, and policy-rc.d is gone. */
static void check_cleaned(const struct run *x, const char *failed)
{
	char p[4400];
	const char *names[] = { "proc", "sys", "dev" };
	for (size_t i = 0; i < 3; i++) {
		char m[4400], u[4400];
		if (failed && streq(failed, names[i]))
			continue; /* a mount that failed is not unmounted */
		snprintf(m, sizeof(m), "mount_bind /%s %s/%s\n", names[i], rootdir, names[i]);
		snprintf(u, sizeof(u), "umount %s/%s\n", rootdir, names[i]);
		CHECK(!strstr(x->record, m) == !strstr(x->record, u));
		CHECK(!strstr(x->record, m) || strstr(x->record, u) > strstr(x->record, m));
	}
	snprintf(p, sizeof(p), "%s/usr/sbin/policy-rc.d", rootdir);
	CHECK(access(p, F_OK) < 0);
}

TEST(missing_refused)
{
	char spec[8192];
	struct run x;
	make_root();
	script(spec, sizeof(spec), "libnvidia-ml1", false);
	run_install(&x, spec);
	CHECK_INT(x.r, -ENOPKG);
	CHECK(strstr(x.res.error, "libnvidia-ml1 535.261.03 (no such package)") != NULL);
	if (!strstr(x.res.error, "(no such package)"))
		fprintf(stderr, "error: %s\n", x.res.error);
	CHECK(strstr(x.record, "apt-get update") != NULL);
	CHECK(strstr(x.record, "apt-get install") == NULL);
	CHECK(strstr(x.record, "apt-mark") == NULL);
	CHECK(strstr(x.record, "mount_bind /proc") != NULL);
	check_cleaned(&x, NULL);
	/* the sources were edited, the refusal wrote no blacklist */
	char p[4400], *t;
	snprintf(p, sizeof(p), "%s/etc/apt/sources.list.d/debian.sources", rootdir);
	t = slurp(p);
	CHECK(t && strstr(t, "Components: main contrib non-free non-free-firmware\n"));
	free(t);
	snprintf(p, sizeof(p), "%s/etc/modprobe.d/gpuboot-blacklist-nouveau.conf", rootdir);
	CHECK(access(p, F_OK) < 0);
	run_done(&x);

	/* a version the archive does not have: named, with the version */
	make_root();
	script(spec, sizeof(spec), NULL, false);
	put("out/madison-nvidia-smi", "nvidia-smi | 535.309.01-0+deb12u1 | http://security.debian.org/debian-security "
	                              "bookworm-security/non-free amd64 Packages\n");
	run_install(&x, spec);
	CHECK_INT(x.r, -ENOPKG);
	CHECK(strstr(x.res.error, "nvidia-smi 535.261.03 (not this version)") != NULL);
	CHECK(strstr(x.record, "apt-get install") == NULL);
	check_cleaned(&x, NULL);
	run_done(&x);
}

TEST(install_fails)
{
	char spec[8192], p[4400], *t;
	struct run x;
	json_object *doc, *steps;
	bool seen = false;

	make_root();
	script(spec, sizeof(spec), NULL, false);
	put("out/apt-fail", "E: Sub-process /usr/bin/dpkg returned an error code (1)\n");
	snprintf(spec + strlen(spec), sizeof(spec) - strlen(spec), ",command:apt-get install:100:%s/out/apt-fail",
	         base);
	run_install(&x, spec);
	CHECK_INT(x.r, -EIO);
	if (x.r != -EIO)
		fprintf(stderr, "error: %s\nrecord:\n%s", x.res.error, x.record);
	CHECK(strstr(x.res.error, "returned an error code") != NULL);
	CHECK(strstr(x.record, "apt-get install -y -q --no-install-recommends") != NULL);
	CHECK(strstr(x.record, "nvidia-open-kernel-dkms=535.261.03-1") != NULL);
	CHECK(strstr(x.record, "linux-headers-" KVER "=6.1.192-3") != NULL);
	CHECK(strstr(x.record, "apt-mark hold") == NULL);
	check_cleaned(&x, NULL);
	/* the pin and the blacklist were written before the install */
	snprintf(p, sizeof(p), "%s/etc/apt/preferences.d/gpuboot-nvidia.pref", rootdir);
	t = slurp(p);
	CHECK(t && strstr(t, "Pin: version 535.261.03-*\n") && strstr(t, "src:nvidia-graphics-drivers"));
	free(t);
	/* the journal shows the commands: argv, chroot, exit status, output */
	snprintf(p, sizeof(p), "%s/journal.json", x.state);
	doc = json_object_from_file(p);
	steps = doc ? json_object_object_get(doc, "steps") : NULL;
	for (size_t i = 0; steps && i < json_object_array_length(steps); i++) {
		json_object *s = json_object_array_get_idx(steps, i);
		const char *id = json_object_get_string(json_object_object_get(s, "id"));
		if (!streq(id, "apt-get-install"))
			continue;
		seen = true;
		CHECK_STREQ(json_object_get_string(json_object_object_get(s, "state")), "failed");
		CHECK_INT(json_object_get_int(json_object_object_get(s, "exit_status")), 100);
		CHECK_STREQ(json_object_get_string(json_object_object_get(s, "chroot")), rootdir);
		CHECK(strstr(json_object_get_string(json_object_object_get(s, "output_tail")), "error code (1)") !=
		      NULL);
	}
	CHECK(seen);
	json_object_put(doc);
	run_done(&x);

	/* a bind mount that fails: what was mounted is unmounted, no apt runs */
	make_root();
	script(spec, sizeof(spec), NULL, false);
	snprintf(spec + strlen(spec), sizeof(spec) - strlen(spec), ",mount:%s/sys:1", rootdir);
	run_install(&x, spec);
	CHECK_INT(x.r, -EPERM);
	snprintf(p, sizeof(p), "umount %s/proc\n", rootdir);
	CHECK(strstr(x.record, p) != NULL);
	snprintf(p, sizeof(p), "umount %s/sys\n", rootdir);
	CHECK(strstr(x.record, p) == NULL);
	CHECK(strstr(x.record, "apt-get") == NULL);
	check_cleaned(&x, "sys");
	run_done(&x);

	/* the mountpoint is a symlink in the image: refused, nothing mounted */
	make_root();
	script(spec, sizeof(spec), NULL, false);
	snprintf(p, sizeof(p), "%s/dev", rootdir);
	CHECK(symlink("/etc", p) == 0);
	run_install(&x, spec);
	CHECK(x.r < 0);
	CHECK(strstr(x.record, "mount_bind /dev") == NULL);
	check_cleaned(&x, NULL);
	run_done(&x);
}

/* Everything in place: no command, no mount, zero effects. */
TEST(rerun_nothing)
{
	char spec[8192], p[4400];
	struct run x;
	make_root();
	put("root/etc/apt/sources.list.d/debian.sources",
	    "Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm\nComponents: main contrib non-free "
	    "non-free-firmware\n");
	put("root/lib/modules/" KVER "/updates/dkms/nvidia-current-open.ko", "");
	put("root/etc/modprobe.d/gpuboot-blacklist-nouveau.conf",
	    "# Written by gpuboot: the NVIDIA driver owns the GPUs; nouveau must not bind.\nblacklist nouveau\noptions "
	    "nouveau modeset=0\n");
	script(spec, sizeof(spec), NULL, true);
	run_install(&x, spec);
	CHECK_INT(x.r, 0);
	CHECK(strstr(x.record, "apt-get") == NULL);
	CHECK(strstr(x.record, "mount_bind") == NULL);
	CHECK(x.j->n_effects == 1); /* the pin file, new here */
	CHECK_STREQ(x.res.kernels[0].module, "lib/modules/" KVER "/updates/dkms/nvidia-current-open.ko");
	run_done(&x);
	run_install(&x, spec);
	CHECK_INT(x.r, 0);
	CHECK_INT(x.j->n_effects, 0);
	CHECK(!x.res.packages_changed && !x.res.sources_changed);
	CHECK_STREQ(x.res.pkgs[0].after, "535.261.03-1");
	json_object *o = gb_install_result_to_json(&x.res);
	CHECK(strstr(json_object_to_json_string(o), "\"held\": true") ||
	      strstr(json_object_to_json_string(o), "\"held\":true"));
	json_object_put(o);
	snprintf(p, sizeof(p), "%s/usr/sbin/policy-rc.d", rootdir);
	CHECK(access(p, F_OK) < 0);
	run_done(&x);
}

/* The distro method with the mirror's prebuilt module (#25 item 2): the
 * package put into the root and given to apt by its path, in place of the
 * DKMS package; no headers asked for, none resolved; a root kernel the
 * prebuilt packages do not cover is refused before anything changes. */
TEST(prebuilt)
{
	char spec[8192], p[4400], deb[4400], *t;
	struct gb_install_prebuilt pb = { .kernel = KVER,
		                          .package = "gpuboot-nvidia-open-modules-" KVER,
		                          .version = "535.261.03-1+k6.1.192.3" };
	struct gb_install_input in = { .method = GB_INSTALL_DISTRO,
		                       .flavor = "open",
		                       .driver_version = "535.261.03",
		                       .prebuilt = &pb,
		                       .n_prebuilt = 1 };
	struct run x;

	make_root();
	snprintf(deb, sizeof(deb), "%s/cached.deb", base);
	put("cached.deb", "!<arch>\nthe mirror's package\n");
	pb.file = deb;
	script(spec, sizeof(spec), NULL, false);
	run_install_in(&x, spec, &in);
	CHECK(strstr(x.record, "apt-get update") != NULL);
	CHECK(strstr(x.record, "apt-cache madison gpuboot-nvidia") == NULL);
	CHECK(strstr(x.record, "madison linux-headers") == NULL);
	CHECK(strstr(x.record,
	             "apt-get install -y -q --no-install-recommends -o Dpkg::Options::=--force-confdef -o "
	             "Dpkg::Options::=--force-confold /var/cache/gpuboot/modules/gpuboot-nvidia-open-modules-" KVER
	             ".deb firmware-nvidia-gsp=535.261.03-1") != NULL);
	CHECK(strstr(x.record, "nvidia-open-kernel-dkms") == NULL);
	CHECK(strstr(x.record, "linux-headers-") == NULL);
	snprintf(p, sizeof(p), "%s/var/cache/gpuboot/modules/gpuboot-nvidia-open-modules-" KVER ".deb", rootdir);
	t = slurp(p);
	CHECK(t && streq(t, "!<arch>\nthe mirror's package\n"));
	free(t);
	CHECK_STREQ(x.res.pkgs[0].name, "gpuboot-nvidia-open-modules-" KVER);
	CHECK_STREQ(x.res.pkgs[0].suite, "the site's mirror");
	/* the scripted dpkg-query says nothing got installed: the check after apt names the package */
	CHECK_INT(x.r, -EIO);
	CHECK(strstr(x.res.error, "gpuboot-nvidia-open-modules-" KVER " is at ''") != NULL);
	check_cleaned(&x, NULL);
	run_done(&x);

	/* another kernel in the root, no package for it: refused, nothing run */
	make_root();
	put("root/boot/vmlinuz-6.1.0-99-cloud-amd64", "");
	put("root/lib/modules/6.1.0-99-cloud-amd64/modules.dep", "");
	put("cached.deb", "!<arch>\n");
	run_install_in(&x, spec, &in);
	CHECK_INT(x.r, -ENOPKG);
	CHECK(strstr(x.res.error, "do not cover the kernel 6.1.0-99-cloud-amd64") != NULL);
	CHECK(strstr(x.record, "apt-get") == NULL);
	run_done(&x);
}

static size_t count_of(const char *hay, const char *needle)
{
	size_t n = 0;
	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* The real cause named: a source apt-get update could not reach (it exits
 * 0), a full filesystem (apt's last lines cut "No space left" off). */
TEST(causes)
{
	char spec[8192];
	struct run x;

	make_root();
	script(spec, sizeof(spec), "nvidia-smi", false);
	put("out/update-offline", "Err:1 http://deb.debian.org/debian bookworm InRelease\n"
	                          "  Temporary failure resolving 'deb.debian.org'\n"
	                          "Reading package lists...\n"
	                          "W: Failed to fetch http://deb.debian.org/debian/dists/bookworm/InRelease  Temporary "
	                          "failure resolving 'deb.debian.org'\n"
	                          "W: Some index files failed to download. They have been ignored, or old ones used "
	                          "instead.\n");
	snprintf(spec + strlen(spec), sizeof(spec) - strlen(spec), ",command:apt-get update:0:%s/out/update-offline",
	         base);
	run_install(&x, spec);
	CHECK_INT(x.r, -EHOSTUNREACH);
	CHECK(strstr(x.res.error, "could not reach the archive (http://deb.debian.org/debian/dists/bookworm/InRelease  "
	                          "Temporary failure resolving 'deb.debian.org')") != NULL);
	CHECK(strstr(x.res.error, "nvidia-smi 535.261.03 (no such package)") != NULL);
	CHECK(strstr(x.record, "apt-get install") == NULL);
	if (x.r != -EHOSTUNREACH)
		fprintf(stderr, "error: %s\n", x.res.error);
	run_done(&x);

	make_root();
	script(spec, sizeof(spec), NULL, false);
	put("out/apt-full", "Need to get 95.3 MB of archives.\n"
	                    "After this operation, 402 MB of additional disk space will be used.\n"
	                    "Unpacking nvidia-open-kernel-dkms (535.261.03-1) ...\n"
	                    "dpkg: error processing archive /var/cache/apt/archives/nvidia-open-kernel-dkms.deb "
	                    "(--unpack):\n cannot copy extracted data for './usr/src/nv/nv.c' to "
	                    "'/usr/src/nv/nv.c.dpkg-new': failed to write (No space left on device)\n"
	                    "E: Sub-process /usr/bin/dpkg returned an error code (1)\n");
	snprintf(spec + strlen(spec), sizeof(spec) - strlen(spec), ",command:apt-get install:100:%s/out/apt-full",
	         base);
	run_install(&x, spec);
	CHECK_INT(x.r, -ENOSPC);
	CHECK(strstr(x.res.error, "No space left on device: the filesystem mounted at /") != NULL);
	CHECK(strstr(x.res.error, "MiB free; apt: Need to get 95.3 MB of archives. After this operation, 402 MB of "
	                          "additional disk space will be used.") != NULL);
	if (x.r != -ENOSPC)
		fprintf(stderr, "error: %s\n", x.res.error);
	check_cleaned(&x, NULL);
	run_done(&x);

	/* Debian's own index refused (a mirror serving a tampered Packages):
	 * exit 13 before any install, and the components this run enabled in
	 * debian.sources are taken out again, the file as it was */
	make_root();
	script(spec, sizeof(spec), NULL, false);
	put("out/update-tampered",
	    "Get:1 http://deb.debian.org/debian bookworm InRelease [151 kB]\n"
	    "Err:2 http://deb.debian.org/debian bookworm/non-free amd64 Packages\n"
	    "  Hash Sum mismatch\n"
	    "E: Failed to fetch http://deb.debian.org/debian/dists/bookworm/non-free/binary-amd64/"
	    "Packages.xz  Hash Sum mismatch\n");
	snprintf(spec + strlen(spec), sizeof(spec) - strlen(spec), ",command:apt-get update:100:%s/out/update-tampered",
	         base);
	run_install(&x, spec);
	CHECK_INT(x.r, -EKEYREJECTED);
	CHECK(strstr(x.res.error, "Hash Sum mismatch") != NULL);
	CHECK(strstr(x.res.error, "components this run enabled in Debian's sources were taken out again") != NULL);
	CHECK(strstr(x.record, "apt-get install") == NULL);
	{
		char sp[4400];
		_cleanup_free_ char *now = NULL;
		snprintf(sp, sizeof(sp), "%s/etc/apt/sources.list.d/debian.sources", rootdir);
		now = slurp(sp);
		CHECK(now && streq(now, deb822_in));
	}
	if (x.r != -EKEYREJECTED)
		fprintf(stderr, "error: %s\n", x.res.error);
	run_done(&x);
}

/* A lock held by another process: waited for (bounded), holder named. */
TEST(lock_wait)
{
	struct gb_ctx ctx = { 0 };
	char p[4400], err[512] = "", want[64];
	int sync[2];
	pid_t pid;

	make_root();
	put("root/var/lib/dpkg/lock-frontend", "");
	CHECK(pipe(sync) == 0);
	pid = fork();
	if (pid == 0) {
		struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
		int fd;
		char c = 'x';
		snprintf(p, sizeof(p), "%s/var/lib/dpkg/lock-frontend", rootdir);
		fd = open(p, O_RDWR);
		if (fd < 0 || fcntl(fd, F_SETLK, &fl) < 0)
			_exit(1);
		if (write(sync[1], &c, 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	{
		char c;
		CHECK(read(sync[0], &c, 1) == 1);
	}
	CHECK_INT(gb_ops_fake_new("clock:1000000000", &ctx.ops), 0);
	CHECK_INT(gb_root_open(rootdir, &ctx.root), 0);
	ctx.opt.root = rootdir;
	CHECK_INT(gb_pkg_lock_wait(&ctx, 3000, err, sizeof(err)), -EBUSY);
	snprintf(want, sizeof(want), "pid %d (test-install)", (int)pid);
	CHECK(strstr(err, want) != NULL);
	CHECK(strstr(err, "var/lib/dpkg/lock-frontend") != NULL);
	if (!strstr(err, want))
		fprintf(stderr, "lock message: %s\n", err);
	{
		/* while it waits: who holds it, once, then every 30 s (0, 30, 60 of 65) */
		char logp[4400], *log;
		int saved = dup(STDERR_FILENO), fd;
		snprintf(logp, sizeof(logp), "%s/lock-wait.log", base);
		fd = open(logp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		CHECK(fd >= 0 && saved >= 0);
		if (fd >= 0 && saved >= 0) {
			dup2(fd, STDERR_FILENO);
			close(fd);
			CHECK_INT(gb_pkg_lock_wait(&ctx, 65000, err, sizeof(err)), -EBUSY);
			dup2(saved, STDERR_FILENO);
			close(saved);
			log = slurp(logp);
			CHECK(log && count_of(log, want) == 3 && count_of(log, "waiting for it (0 of 65 s)") == 1 &&
			      count_of(log, "still waiting (30 of 65 s)") == 1 &&
			      count_of(log, "still waiting (60 of 65 s)") == 1);
			if (log && count_of(log, want) != 3)
				fprintf(stderr, "lock wait log: %s\n", log);
			free(log);
		}
	}
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
	CHECK_INT(gb_pkg_lock_wait(&ctx, 3000, err, sizeof(err)), 0);
	gb_root_free(ctx.root);
	gb_ops_fake_free(ctx.ops);
	close(sync[0]);
	close(sync[1]);
}

/* The packages method: NVIDIA's repository, its key pinned. */
#define REPO_URI "https://127.0.0.1:1/compute/cuda/repos/debian12/x86_64/"
#define KEYRING "root/usr/share/keyrings/gpuboot-cuda-debian12-x86_64.gpg"
static void packages_script(char *spec, size_t sz)
{
	size_t o = (size_t)snprintf(spec, sz, "record=%s/record,clock:1000000000", base);
	put("out/madison-pin", "nvidia-driver-pinning-580 | 580.173.02-1 | " REPO_URI " Packages\n");
	put("out/madison-cuda", "cuda-drivers | 590.44.01-1 | " REPO_URI " Packages\n"
	                        "cuda-drivers | 580.173.02-1 | " REPO_URI " Packages\n");
	put("out/madison-headers",
	    "linux-headers-" KVER " | 6.1.192-3 | http://security.debian.org bookworm-security/main amd64 Packages\n"
	    "linux-headers-cloud-amd64 | 6.1.192-3 | http://security.debian.org bookworm-security/main amd64 "
	    "Packages\n");
	put("out/dpkg", "linux-image-" KVER "\t6.1.192-3\tinstall ok installed\n"
	                "linux-image-cloud-amd64\t6.1.192-3\tinstall ok installed\n");
	o += (size_t)snprintf(spec + o, sz - o,
	                      ",command:apt-cache madison nvidia-driver-pinning-580:0:%s/out/madison-pin"
	                      ",command:apt-cache madison cuda-drivers:0:%s/out/madison-cuda"
	                      ",command:apt-cache madison linux-headers-" KVER ":0:%s/out/madison-headers"
	                      ",command:apt-cache madison linux-headers-cloud-amd64:0:%s/out/madison-headers"
	                      ",command:dpkg-query:1:%s/out/dpkg",
	                      base, base, base, base, base);
}

TEST(packages)
{
	static const struct gb_pkg_spec pk[] = { { "nvidia-driver-pinning-580", "", true },
		                                 { "cuda-drivers", "580.173.02", true } };
	struct gb_apt_repo repo = {
		.id = "cuda-debian12-x86_64", .uri = REPO_URI, .key_url = REPO_URI "3bf863cc.pub", .key_pin = "cuda-deb"
	};
	struct gb_install_input in = { .method = GB_INSTALL_PACKAGES,
		                       .flavor = "proprietary",
		                       .driver_version = "580.173.02",
		                       .packages = pk,
		                       .n_packages = 2,
		                       .repo = &repo };
	char spec[8192], p[4400], keyfile[4400], *t, *key = slurp("tests/data/test-repo-key/public.asc");
	struct run x;

	CHECK(key != NULL);
	/* The keyring already holds a pinned key: no download (the URL cannot answer). */
	make_root();
	put(KEYRING, key ? key : "");
	packages_script(spec, sizeof(spec));
	run_install_in(&x, spec, &in);
	CHECK_INT(x.r, -EIO);
	/* the fake dpkg-query still shows nothing installed: the check after refuses */
	CHECK(strstr(x.res.error, "After apt-get install, nvidia-driver-pinning-580 is at ''") != NULL);
	CHECK(strstr(x.record, "apt-get install -y -q --no-install-recommends -o Dpkg::Options::=--force-confdef -o "
	                       "Dpkg::Options::=--force-confold nvidia-driver-pinning-580=580.173.02-1 "
	                       "cuda-drivers=580.173.02-1 linux-headers-" KVER "=6.1.192-3 "
	                       "linux-headers-cloud-amd64=6.1.192-3\n") != NULL);
	CHECK(strstr(x.record, "apt-mark hold nvidia-driver-pinning-580 cuda-drivers\n") != NULL);
	snprintf(p, sizeof(p), "%s/etc/apt/sources.list.d/gpuboot-cuda-debian12-x86_64.sources", rootdir);
	t = slurp(p);
	CHECK(t && strstr(t, "\nTypes: deb\nURIs: " REPO_URI "\nSuites: /\nSigned-By: "
	                     "/usr/share/keyrings/gpuboot-cuda-debian12-x86_64.gpg\n"));
	free(t);
	snprintf(p, sizeof(p), "%s/etc/apt/preferences.d/gpuboot-nvidia.pref", rootdir);
	t = slurp(p);
	CHECK(t && strstr(t, "\nPackage: cuda-drivers* nvidia-* libnvidia-* ") &&
	      strstr(t, "\nPin: version 580.173.02-*\n"));
	free(t);
	snprintf(p, sizeof(p), "%s/etc/apt/apt.conf.d/51gpuboot-nvidia-unattended-upgrades", rootdir);
	t = slurp(p);
	CHECK(t && strstr(t, "Unattended-Upgrade::Package-Blacklist {\n    \"^nvidia-driver-pinning-580$\";\n    "
	                     "\"^cuda-drivers$\";\n};\n"));
	free(t);
	/* the sources of Debian are not touched by this method */
	snprintf(p, sizeof(p), "%s/etc/apt/sources.list.d/debian.sources", rootdir);
	t = slurp(p);
	CHECK(t && streq(t, deb822_in));
	free(t);
	CHECK_STREQ(x.res.method, "packages");
	CHECK_STREQ(x.res.pkgs[1].resolved, "580.173.02-1");
	CHECK_STREQ(x.res.pkgs[1].suite, "/");
	check_cleaned(&x, NULL);
	run_done(&x);

	/* cuda-keyring's own entry for the same repository: refused, nothing run */
	make_root();
	put(KEYRING, key ? key : "");
	put("root/etc/apt/sources.list.d/cuda-debian12-x86_64.list",
	    "deb [signed-by=/usr/share/keyrings/cuda-archive-keyring.gpg] "
	    "https://127.0.0.1:1/compute/cuda/repos/debian12/x86_64/ /\n");
	packages_script(spec, sizeof(spec));
	run_install_in(&x, spec, &in);
	CHECK_INT(x.r, -EEXIST);
	CHECK(strstr(x.res.error, "cuda-debian12-x86_64.list") != NULL);
	CHECK(strstr(x.record, "apt-get") == NULL);
	run_done(&x);

	/* a key that is not the pinned one: refused before anything is written */
	make_root();
	CHECK(realpath("tests/data/nvidia-keys/gpgkey", keyfile) != NULL);
	snprintf(p, sizeof(p), "file://%s", keyfile);
	repo.key_url = p;
	packages_script(spec, sizeof(spec));
	run_install_in(&x, spec, &in);
	CHECK_INT(x.r, -EKEYREJECTED);
	CHECK(strstr(x.res.error, "C95B321B61E88C1809C4F759DDCAE044F796ECB0") != NULL);
	CHECK(strstr(x.record, "apt-get") == NULL);
	CHECK_INT(x.j->n_effects, 0);
	run_done(&x);

	/* the pinned key itself (the test build also pins the test key) */
	make_root();
	CHECK(realpath("tests/data/test-repo-key/public.asc", keyfile) != NULL);
	snprintf(p, sizeof(p), "file://%s", keyfile);
	packages_script(spec, sizeof(spec));
	run_install_in(&x, spec, &in);
	CHECK_INT(x.r, -EIO);
	snprintf(p, sizeof(p), "%s/" KEYRING, base);
	t = slurp(p);
	CHECK(t && t[0] == (char)0x98); /* binary OpenPGP: an old-format public-key packet */
	free(t);
	run_done(&x);

	/* an index apt refuses (unsigned, another key, tampered): exit 13's
	 * error, nothing installed, the repository this run added taken out */
	make_root();
	CHECK(realpath("tests/data/test-repo-key/public.asc", keyfile) != NULL);
	snprintf(p, sizeof(p), "file://%s", keyfile);
	packages_script(spec, sizeof(spec));
	put("out/update-unsigned", "Get:1 " REPO_URI " InRelease\n"
	                           "E: The repository '" REPO_URI " ./ InRelease' is not signed.\n");
	snprintf(spec + strlen(spec), sizeof(spec) - strlen(spec), ",command:apt-get update:100:%s/out/update-unsigned",
	         base);
	run_install_in(&x, spec, &in);
	CHECK_INT(x.r, -EKEYREJECTED);
	CHECK(strstr(x.res.error, "is not signed") && strstr(x.res.error, "sources entry this run added were removed"));
	CHECK(strstr(x.record, "apt-get install") == NULL);
	snprintf(p, sizeof(p), "%s/" KEYRING, base);
	CHECK(access(p, F_OK) < 0);
	snprintf(p, sizeof(p), "%s/etc/apt/sources.list.d/gpuboot-cuda-debian12-x86_64.sources", rootdir);
	CHECK(access(p, F_OK) < 0);
	if (x.r != -EKEYREJECTED)
		fprintf(stderr, "error: %s\n", x.res.error);
	run_done(&x);
	repo.key_url = REPO_URI "3bf863cc.pub";

	/* no key pinned for the repository: refused, nothing downloaded */
	make_root();
	repo.key_pin = "cuda-deb-8793f200";
	packages_script(spec, sizeof(spec));
	run_install_in(&x, spec, &in);
	CHECK_INT(x.r, -ENOKEY);
	CHECK_INT(x.j->n_effects, 0);
	run_done(&x);
	free(key);
}

int main(void)
{
	char cmd[200];
	if (!mkdtemp(base))
		return 1;
	unit_run_tests();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
	if (system(cmd) != 0)
		return 1;
	UNIT_DONE();
}
