/* SPDX-License-Identifier: MIT */
/* The packages method on dnf and zypper with the fake operations table,
 * on image roots built from the real fixtures' os-release (a100-rhel9,
 * a10g-al2023) and SLES 15 SP5's (tests/data/os-release/): the repo file
 * bytes against tests/expected/install/, the commands in order (key
 * import, module stream, exact versions, versionlock or addlock), a wrong
 * key refused with nothing written, a missing version refused before any
 * install, another repo file for the same URL refused, the locks of rpm,
 * dnf and zypp waited for and named, a rerun with everything in place
 * that runs no command and changes nothing, every command chrooted; the
 * Container Toolkit on RHEL 9 and SLES 15 (userspace only, its repository
 * signing its metadata, its four packages and nothing else locked); and
 * the parsers of what rpm, dnf and zypper print, fed hostile input. */
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
#include "fetch/pgpkey.h"
#include "install/install-internal.h"
#include "install/install.h"
#include "effect/journal.h"
#include "shared/fileio.h"
#include "shared/macro.h"
#include "shared/util.h"
#include "unit.h"

#define RHEL_KVER "5.14.0-362.8.1.el9_3.x86_64"
#define AL_KVER "6.1.72-96.166.amzn2023.x86_64"
#define SLES_KVER "5.14.21-150500.55.39-default"
#define TEST_KEY "tests/data/test-repo-key/public.asc"
#define WRONG_KEY "tests/data/nvidia-keys/gpgkey"

static char base[] = "/tmp/gpuboot-test-install-rpm.XXXXXX";
static char rootdir[4200]; /* canonical */
static char pubkey_line[64]; /* the test key as `rpm -q gpg-pubkey` prints it */

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

static bool exists(const char *rel)
{
	char p[4400];
	snprintf(p, sizeof(p), "%s/%s", rootdir, rel);
	return access(p, F_OK) == 0;
}

/* ---- the parsers ---- */

TEST(os_release)
{
	char id[32], ver[32];
	char *rhel = slurp("tests/fixtures/a100-rhel9/etc/os-release");
	char *al = slurp("tests/fixtures/a10g-al2023/etc/os-release");
	char *sles = slurp("tests/data/os-release/sles-15.5");

	CHECK(rhel && al && sles);
	CHECK_INT(gb_rpm_os_parse(rhel, id, ver), GB_PKGMGR_DNF);
	CHECK_STREQ(id, "rhel");
	CHECK_STREQ(ver, "9.3");
	CHECK_INT(gb_rpm_os_parse(al, id, ver), GB_PKGMGR_DNF);
	CHECK_STREQ(id, "amzn");
	CHECK_STREQ(ver, "2023");
	CHECK_INT(gb_rpm_os_parse(sles, id, ver), GB_PKGMGR_ZYPPER);
	CHECK_STREQ(id, "sles");
	CHECK_STREQ(ver, "15.5");
	/* by ID_LIKE: a rebuild that names itself */
	CHECK_INT(gb_rpm_os_parse("ID=\"myel\"\nID_LIKE=\"rhel centos fedora\"\nVERSION_ID=9.4\n", id, ver),
	          GB_PKGMGR_DNF);
	CHECK_INT(gb_rpm_os_parse("ID=opensuse-leap\nVERSION_ID=\"15.6\"\n", id, ver), GB_PKGMGR_ZYPPER);
	/* not ours: Fedora, Tumbleweed, Debian, nothing, hostile bytes */
	CHECK_INT(gb_rpm_os_parse("ID=fedora\nVERSION_ID=41\n", id, ver), GB_PKGMGR_NONE);
	CHECK_INT(gb_rpm_os_parse("ID=\"opensuse-tumbleweed\"\nID_LIKE=\"opensuse suse\"\n", id, ver), GB_PKGMGR_NONE);
	CHECK_INT(gb_rpm_os_parse("ID=debian\nVERSION_ID=\"12\"\n", id, ver), GB_PKGMGR_NONE);
	CHECK_INT(gb_rpm_os_parse("", id, ver), GB_PKGMGR_NONE);
	CHECK_INT(gb_rpm_os_parse(NULL, id, ver), GB_PKGMGR_NONE);
	CHECK_INT(gb_rpm_os_parse("ID=rhel;reboot\nVERSION_ID=9$(id)\n", id, ver), GB_PKGMGR_NONE);
	CHECK_STREQ(id, "");
	CHECK_STREQ(ver, "");
	CHECK_INT(gb_rpm_os_parse("ID=\"rhel centos\"\n", id, ver), GB_PKGMGR_NONE);
	free(rhel);
	free(al);
	free(sles);
}

TEST(versions)
{
	CHECK(gb_rpm_name_valid("nvidia-open"));
	CHECK(gb_rpm_name_valid("nvidia-open-driver-G06-signed-cuda-kmp-default"));
	CHECK(gb_rpm_name_valid("kernel6.12-devel"));
	CHECK(!gb_rpm_name_valid("-y"));
	CHECK(!gb_rpm_name_valid("a b"));
	CHECK(!gb_rpm_name_valid("a;b"));
	CHECK(!gb_rpm_name_valid("*nvidia*"));
	CHECK(!gb_rpm_name_valid(""));
	CHECK(gb_rpm_evr_valid("3:580.95.05-1.el9"));
	CHECK(gb_rpm_evr_valid("580.95.05"));
	CHECK(gb_rpm_evr_valid("5.14.21-150500.55.39.1"));
	CHECK(gb_rpm_evr_valid("1.0~rc1^git2-1"));
	CHECK(!gb_rpm_evr_valid("3:"));
	CHECK(!gb_rpm_evr_valid(":1.0"));
	CHECK(!gb_rpm_evr_valid("x:1.0"));
	CHECK(!gb_rpm_evr_valid("1.0-1-2"));
	CHECK(!gb_rpm_evr_valid("1.0-"));
	CHECK(!gb_rpm_evr_valid("1.0 -1"));
	CHECK(!gb_rpm_evr_valid("1.0;reboot"));
	CHECK(!gb_rpm_evr_valid("-1.0"));
	CHECK(!gb_rpm_evr_valid("1234567890:1.0"));

	CHECK(gb_rpm_version_matches("3:595.84-1.el9", "595.84"));
	CHECK(gb_rpm_version_matches("3:595.84-1.el9", "595.84-1.el9"));
	CHECK(gb_rpm_version_matches("3:595.84-1.el9", "3:595.84-1.el9"));
	CHECK(gb_rpm_version_matches("0:5.14.0-362.8.1.el9_3", "5.14.0-362.8.1.el9_3"));
	CHECK(gb_rpm_version_matches("595.84-1", ""));
	CHECK(!gb_rpm_version_matches("3:595.84-1.el9", "2:595.84-1.el9"));
	CHECK(!gb_rpm_version_matches("3:595.84-1.el9", "595.8"));
	CHECK(!gb_rpm_version_matches("3:595.84.01-1.el9", "595.84"));
	CHECK(!gb_rpm_version_matches("3:595.84-2.el9", "595.84-1.el9"));
	CHECK(!gb_rpm_version_matches("", "595.84"));
	CHECK(!gb_rpm_version_matches("", ""));
	CHECK(!gb_rpm_version_matches("1;x", ""));

	CHECK(gb_rpm_evr_cmp("3:580.95.05-1.el9", "3:580.105.08-1.el9") < 0);
	CHECK(gb_rpm_evr_cmp("3:580.95.05-1.el9", "2:590.1-1.el9") > 0);
	CHECK(gb_rpm_evr_cmp("595.84-2.el9", "595.84-10.el9") < 0);
	CHECK(gb_rpm_evr_cmp("595.84-1.el9", "0:595.84-1.el9") == 0);
	CHECK(gb_rpm_evr_cmp("595.84", "595.84-7") == 0);
}

TEST(qf_and_list)
{
	struct gb_rpm_pkg p[8];
	const struct gb_rpm_pkg *f;
	const char *qf = "package nvidia-open is not installed\n"
	                 "kernel-devel\t0:5.14.0-284.11.1.el9_2\tx86_64\n"
	                 "kernel-devel\t0:5.14.0-362.8.1.el9_3\tx86_64\n"
	                 "nvidia-driver\t3:595.84-1.el9\tx86_64\n";
	CHECK_INT(gb_rpm_qf_parse(qf, p, ARRAY_SIZE(p)), 3);
	f = gb_rpm_pkg_find(p, 3, "kernel-devel", "5.14.0-362.8.1.el9_3");
	CHECK(f && streq(f->evr, "0:5.14.0-362.8.1.el9_3"));
	f = gb_rpm_pkg_find(p, 3, "kernel-devel", "6.0");
	CHECK(f && streq(f->evr, "0:5.14.0-284.11.1.el9_2")); /* installed, not at the version */
	CHECK(gb_rpm_pkg_find(p, 3, "nvidia-open", "") == NULL);
	CHECK_INT(gb_rpm_qf_parse("", p, ARRAY_SIZE(p)), 0);
	/* hostile: a tab but not three fields, shell bytes, a bad arch, too many */
	CHECK_INT(gb_rpm_qf_parse("nvidia-open\t3:1-1\n", p, ARRAY_SIZE(p)), -EINVAL);
	CHECK_INT(gb_rpm_qf_parse("nvidia-open\t3:1-1;reboot\tx86_64\n", p, ARRAY_SIZE(p)), -EINVAL);
	CHECK_INT(gb_rpm_qf_parse("-rf\t1-1\tx86_64\n", p, ARRAY_SIZE(p)), -EINVAL);
	CHECK_INT(gb_rpm_qf_parse("a\t1-1\tx86 64\n", p, ARRAY_SIZE(p)), -EINVAL);
	CHECK_INT(gb_rpm_qf_parse("a\t1-1\tx\nb\t1-1\tx\nc\t1-1\tx\n", p, 2), -E2BIG);

	/* dnf 4's list: a header, both sections, a name too wide for its
	 * column (the version wrapped onto the next line), another package
	 * whose name starts the same, garbage */
	const char *list = "Last metadata expiration check: 0:01:02 ago on Mon 01 Dec 2026 10:00:00 AM UTC.\n"
	                   "Installed Packages\n"
	                   "nvidia-open.noarch           3:580.95.05-1.el9          @gpuboot-cuda-rhel9-x86_64\n"
	                   "Available Packages\n"
	                   "nvidia-open.noarch           3:595.84-1.el9             gpuboot-cuda-rhel9-x86_64\n"
	                   "nvidia-open.noarch\n"
	                   "                             3:595.84-2.el9             gpuboot-cuda-rhel9-x86_64\n"
	                   "nvidia-open-dkms.noarch      3:595.84-1.el9             gpuboot-cuda-rhel9-x86_64\n"
	                   "nvidia-open.noarch           3:595.84-3.el9;reboot      x\n"
	                   "nvidia-open.x86_64\n";
	CHECK_INT(gb_dnf_list_parse(list, "nvidia-open", p, ARRAY_SIZE(p)), 3);
	CHECK_STREQ(p[0].evr, "3:580.95.05-1.el9");
	CHECK_STREQ(p[0].repo, "@gpuboot-cuda-rhel9-x86_64");
	CHECK_STREQ(p[1].evr, "3:595.84-1.el9");
	CHECK_STREQ(p[2].evr, "3:595.84-2.el9");
	CHECK_STREQ(p[2].arch, "noarch");
	CHECK_INT(gb_dnf_list_parse(list, "nvidia-open", p, 2), -E2BIG);
	CHECK_INT(gb_dnf_list_parse("Error: No matching Packages to list\n", "nvidia-open", p, ARRAY_SIZE(p)), 0);
	CHECK_INT(gb_dnf_list_parse(list, "-x", p, ARRAY_SIZE(p)), -EINVAL);
	CHECK_INT(gb_dnf_list_parse("nvidia-open.noarch 3:1-1 repo\x01x\n", "nvidia-open", p, ARRAY_SIZE(p)), 0);
}

TEST(state_files)
{
	char stream[64];
	bool on;

	CHECK(gb_zypper_missing("Loading repository data...\nNo provider of 'nvidia-open = 595.84' found.\n",
	                        "nvidia-open"));
	CHECK(gb_zypper_missing("Package 'nvidia-compute-G06' not found.\n", "nvidia-compute-G06"));
	CHECK(!gb_zypper_missing("No provider of 'nvidia-open-driver = 1' found.\n", "nvidia-open"));
	CHECK(!gb_zypper_missing("'nvidia-open' not found in package names. Trying capabilities.\n", "nvidia"));
	CHECK(!gb_zypper_missing("Nothing to do.\n", "nvidia-open"));

	CHECK(gb_rpm_pubkey_present("d42d0685-62cb9e8e\n5b9a16d4-6930a0c0\n",
	                            "BE80C2141607512AE17ACDF40A0F6E3F5B9A16D4"));
	CHECK(gb_rpm_pubkey_present("be80c2141607512ae17acdf40a0f6e3f5b9a16d4-1\n",
	                            "BE80C2141607512AE17ACDF40A0F6E3F5B9A16D4"));
	CHECK(!gb_rpm_pubkey_present("package gpg-pubkey is not installed\n",
	                             "BE80C2141607512AE17ACDF40A0F6E3F5B9A16D4"));
	CHECK(!gb_rpm_pubkey_present("d42d0685-62cb9e8e\n", "BE80C2141607512AE17ACDF40A0F6E3F5B9A16D4"));
	CHECK(!gb_rpm_pubkey_present("5b9a16d4-1\n", "short"));

	const char *vl = "# Added lock on Mon Dec  1 10:00:00 2026\n"
	                 "nvidia-open-3:595.84-1.el9.*\n"
	                 "kernel-devel-0:5.14.0-362.8.1.el9_3.*\n"
	                 "libfoo-1.0-1.*\n"
	                 "!nvidia-driver-3:580.95.05-1.el9.*\n";
	CHECK(gb_dnf_versionlock_has(vl, "nvidia-open", "3:595.84-1.el9"));
	CHECK(gb_dnf_versionlock_has(vl, "kernel-devel", "5.14.0-362.8.1.el9_3"));
	CHECK(gb_dnf_versionlock_has(vl, "libfoo", "0:1.0-1"));
	CHECK(!gb_dnf_versionlock_has(vl, "nvidia-open", "3:595.84-2.el9"));
	CHECK(!gb_dnf_versionlock_has(vl, "nvidia-driver", "3:580.95.05-1.el9")); /* an exclude, not a lock */
	CHECK(!gb_dnf_versionlock_has(NULL, "nvidia-open", "3:595.84-1.el9"));
	CHECK(gb_dnf_versionlock_names(vl, "nvidia-open"));
	CHECK(!gb_dnf_versionlock_names(vl, "nvidia"));
	CHECK(!gb_dnf_versionlock_names(vl, "nvidia-driver"));

	const char *zl = "type: package\nmatch_type: glob\ncase_sensitive: on\nsolvable_name: nvidia-open\n\n"
	                 "type: package\nsolvable_name: nvidia-compute-G06\nversion: = 580.95.05\n\n"
	                 "solvable_name: kernel-default-devel\n";
	CHECK(gb_zypp_locks_has(zl, "nvidia-open"));
	CHECK(!gb_zypp_locks_has(zl, "nvidia-compute-G06")); /* a version lock, not addlock's */
	CHECK(gb_zypp_locks_has(zl, "kernel-default-devel"));
	CHECK(!gb_zypp_locks_has(zl, "nvidia"));
	CHECK(!gb_zypp_locks_has(NULL, "nvidia-open"));

	CHECK_INT(
	    gb_dnf_module_parse("[nvidia-driver]\nname=nvidia-driver\nstream=595-open\nprofiles=\nstate=enabled\n",
	                        "nvidia-driver", stream, &on),
	    0);
	CHECK_STREQ(stream, "595-open");
	CHECK(on);
	CHECK_INT(gb_dnf_module_parse("[nvidia-driver]\nstream=\nstate=disabled\n", "nvidia-driver", stream, &on), 0);
	CHECK(!on);
	CHECK_INT(gb_dnf_module_parse("[other]\nstream=1\nstate=enabled\n", "nvidia-driver", stream, &on), 0);
	CHECK(!on && !stream[0]);
	CHECK_INT(gb_dnf_module_parse("[nvidia-driver]\nstream=5 9;x\nstate=enabled\n", "nvidia-driver", stream, &on),
	          -EINVAL);
}

/* The binary key (the cuda-keyring package's) armored reads back as the
 * same key; NVIDIA's own armored copy has the same fingerprint. */
TEST(armor)
{
	char *bin = NULL, *asc = NULL, *armor = NULL, err[256];
	size_t bl, al, nl;
	struct gb_pgp_key a, b, c;

	CHECK_INT(gb_read_file("tests/data/nvidia-keys/cuda-archive-keyring.gpg", 65536, &bin, &bl), 0);
	CHECK_INT(gb_read_file("tests/data/nvidia-keys/3bf863cc.pub", 65536, &asc, &al), 0);
	CHECK_INT(gb_pgp_key_read(bin, bl, &a, err, sizeof(err)), 0);
	CHECK(!a.armored);
	CHECK_INT(gb_pgp_armor(a.bin, a.bin_len, &armor, &nl), 0);
	CHECK(armor && gb_startswith(armor, "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\n"));
	CHECK(armor && strstr(armor, "\n-----END PGP PUBLIC KEY BLOCK-----\n"));
	CHECK_INT(gb_pgp_key_read(armor, nl, &b, err, sizeof(err)), 0); /* the CRC line is checked there */
	CHECK(b.armored);
	CHECK_STREQ(b.fpr, a.fpr);
	CHECK(b.bin_len == a.bin_len && memcmp(b.bin, a.bin, a.bin_len) == 0);
	CHECK_INT(gb_pgp_key_read(asc, al, &c, err, sizeof(err)), 0);
	CHECK_STREQ(c.fpr, a.fpr);
	CHECK_INT(gb_pgp_armor(NULL, 0, &armor, &nl), -EINVAL);
	gb_pgp_key_free(&a);
	gb_pgp_key_free(&b);
	gb_pgp_key_free(&c);
	free(bin);
	free(asc);
	free(armor);
}

/* ---- the engine, on image roots ---- */

struct family {
	const char *os_release; /* a real one, copied */
	const char *kver;
	const char *kernel_pkg; /* `rpm -qf /boot/vmlinuz-KVER`, as rpm prints it */
	const char *repo; /* NVIDIA's directory: rhel9, amzn2023, sles15 */
	const char *repo_path; /* gpuboot's repo file below the root */
};

static const struct family rhel9 = {
	"tests/fixtures/a100-rhel9/etc/os-release",       RHEL_KVER,
	"kernel-core\t0:5.14.0-362.8.1.el9_3\tx86_64\n",  "rhel9",
	"etc/yum.repos.d/gpuboot-cuda-rhel9-x86_64.repo",
};
static const struct family al2023 = {
	"tests/fixtures/a10g-al2023/etc/os-release",         AL_KVER,
	"kernel\t0:6.1.72-96.166.amzn2023\tx86_64\n",        "amzn2023",
	"etc/yum.repos.d/gpuboot-cuda-amzn2023-x86_64.repo",
};
static const struct family sles15 = {
	"tests/data/os-release/sles-15.5",
	SLES_KVER,
	"kernel-default\t0:5.14.21-150500.55.39.1\tx86_64\n",
	"sles15",
	"etc/zypp/repos.d/gpuboot-cuda-sles15-x86_64.repo",
};

/* A fresh image root: the family's os-release, one kernel. */
static void make_root(const struct family *f)
{
	char p[4400], *osr = slurp(f->os_release);
	snprintf(p, sizeof(p), "rm -rf '%s/root' '%s/state' '%s/record' '%s/out'", base, base, base, base);
	CHECK_INT(system(p), 0);
	CHECK(osr != NULL);
	put("root/etc/os-release", osr ? osr : "");
	free(osr);
	snprintf(p, sizeof(p), "root/boot/vmlinuz-%s", f->kver);
	put(p, "");
	snprintf(p, sizeof(p), "root/lib/modules/%s/modules.dep", f->kver);
	put(p, "");
	snprintf(p, sizeof(p), "%s/root", base);
	CHECK(realpath(p, rootdir) != NULL);
}

/* out/NAME with text; ",command:PREFIX:EXIT:out/NAME" appended to spec. */
static void script(char *spec, size_t sz, const char *prefix, int exit_status, const char *name, const char *text)
{
	char p[256];
	size_t o = strlen(spec);
	snprintf(p, sizeof(p), "out/%s", name);
	put(p, text);
	snprintf(spec + o, sz - o, ",command:%s:%d:%s/%s", prefix, exit_status, base, p);
}

struct run {
	struct gb_ctx ctx;
	struct gb_journal *j;
	struct gb_install_result res;
	char state[4400];
	int r;
	char *record;
};

static void run_install(struct run *x, const struct family *f, const char *spec, const char *key,
                        const char *const *names, const char *version)
{
	struct gb_pkg_spec pkgs[4];
	char id[64], uri[160], key_url[4400], abs[4200], err[512], p[4400];
	struct gb_apt_repo repo = { .id = id, .uri = uri, .key_url = key_url, .key_pin = "cuda-rpm" };
	struct gb_install_input in = { .method = GB_INSTALL_PACKAGES,
		                       .flavor = "open",
		                       .driver_version = version,
		                       .packages = pkgs,
		                       .repo = &repo,
		                       .lock_timeout_ms = 3000 };
	json_object *plan = json_object_new_object();

	for (size_t i = 0; names[i] && i < ARRAY_SIZE(pkgs); i++, in.n_packages++) {
		pkgs[i] = (struct gb_pkg_spec){ .hold = true };
		CHECK(gb_pkg_spec_parse(names[i], &pkgs[i]) == 0);
		gb_strscpy(pkgs[i].version, sizeof(pkgs[i].version), version);
	}
	snprintf(id, sizeof(id), "cuda-%s-x86_64", f->repo);
	snprintf(uri, sizeof(uri), "https://developer.download.nvidia.com/compute/cuda/repos/%s/x86_64/", f->repo);
	if (!realpath(key, abs))
		snprintf(abs, sizeof(abs), "/nonexistent/%s", key);
	snprintf(key_url, sizeof(key_url), "file://%s", abs);

	memset(x, 0, sizeof(*x));
	snprintf(x->state, sizeof(x->state), "%s/state", base);
	x->ctx.opt.root = rootdir;
	x->ctx.opt.state_dir = x->state;
	CHECK_INT(gb_ops_fake_new(spec, &x->ctx.ops), 0);
	CHECK_INT(gb_root_open(rootdir, &x->ctx.root), 0);
	json_object_object_add(plan, "test", json_object_new_string("install-rpm"));
	CHECK_INT(gb_journal_open(&x->ctx, plan, "run", &x->j, err, sizeof(err)), 0);
	json_object_put(plan);
	x->r = gb_install(&x->ctx, &in, x->j, &x->res);
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

/* Every mount the run made was unmounted, policy-rc.d is gone. */
static void check_cleaned(const struct run *x)
{
	const char *names[] = { "proc", "sys", "dev" };
	for (size_t i = 0; i < 3; i++) {
		char m[4400], u[4400];
		snprintf(m, sizeof(m), "mount_bind /%s %s/%s\n", names[i], rootdir, names[i]);
		snprintf(u, sizeof(u), "umount %s/%s\n", rootdir, names[i]);
		CHECK(!strstr(x->record, m) == !strstr(x->record, u));
		CHECK(!strstr(x->record, m) || strstr(x->record, u) > strstr(x->record, m));
	}
	CHECK(!exists("usr/sbin/policy-rc.d"));
}

/* Each line of want, in this order, in the record, each chrooted into the root. */
static void check_sequence(const char *record, const char *const *want)
{
	const char *at = record;
	for (size_t i = 0; want[i]; i++) {
		char line[1200];
		const char *hit;
		snprintf(line, sizeof(line), "run chroot=%s %s\n", rootdir, want[i]);
		hit = strstr(at, line);
		CHECK(hit != NULL);
		if (!hit) {
			fprintf(stderr, "not in order in the record: %s\nrecord:\n%s", line, record);
			return;
		}
		at = hit + strlen(line);
	}
}

static void check_bytes(const char *rel, const char *expected_file)
{
	char p[4400], *got, *want = slurp(expected_file);
	snprintf(p, sizeof(p), "%s/%s", rootdir, rel);
	got = slurp(p);
	CHECK(got && want);
	CHECK_STREQ(got ? got : "", want ? want : "-");
	free(got);
	free(want);
}

static void base_spec(char *spec, size_t sz, const struct family *f)
{
	snprintf(spec, sz, "record=%s/record,root=%s,clock:1000000000", base, rootdir);
	script(spec, sz, "rpm -qf", 0, "kernel", f->kernel_pkg);
	script(spec, sz, "rpm -q gpg-pubkey", 1, "pubkey", "package gpg-pubkey is not installed\n");
}

static const char rhel_before[] = "package nvidia-open is not installed\n"
                                  "package python3-dnf-plugin-versionlock is not installed\n"
                                  "package kernel-devel is not installed\n"
                                  "package kernel-headers is not installed\n";
static const char rhel_after[] = "nvidia-open\t3:595.84-1.el9\tnoarch\n"
                                 "nvidia-driver\t3:595.84-1.el9\tx86_64\n"
                                 "kmod-nvidia-open-dkms\t3:595.84-1.el9\tnoarch\n"
                                 "nvidia-driver-cuda-libs\t3:595.84-1.el9\tx86_64\n"
                                 "nvidia-container-toolkit\t0:1.17.8-1\tx86_64\n"
                                 "python3-dnf-plugin-versionlock\t0:4.3.0-13.el9\tnoarch\n"
                                 "kernel-devel\t0:5.14.0-362.8.1.el9_3\tx86_64\n"
                                 "kernel-headers\t0:5.14.0-427.13.1.el9_4\tx86_64\n";

/* RHEL 9 with the plan's @nvidia-driver:595-open, the dnf side of a run. */
static void rhel_spec(char *spec, size_t sz, bool installed)
{
	base_spec(spec, sz, &rhel9);
	script(spec, sz, "rpm -q --qf", installed ? 0 : 4, "before", installed ? rhel_after : rhel_before);
	script(spec, sz, "rpm -qa", 0, "after", rhel_after);
	script(spec, sz, "dnf -q list --showduplicates nvidia-open-595.84", 0, "list-open",
	       "Available Packages\n"
	       "nvidia-open.noarch    3:595.84-1.el9    gpuboot-cuda-rhel9-x86_64\n"
	       "nvidia-open.noarch    3:595.84.01-1.el9 gpuboot-cuda-rhel9-x86_64\n");
	script(spec, sz, "dnf -q list --showduplicates kernel-devel-5.14.0-362.8.1.el9_3", 0, "list-devel",
	       "Available Packages\nkernel-devel.x86_64    5.14.0-362.8.1.el9_3    rhel-9-for-x86_64-appstream-rpms\n");
	script(
	    spec, sz, "dnf -q list kernel-headers", 0, "list-headers",
	    "Available Packages\nkernel-headers.x86_64    5.14.0-427.13.1.el9_4    rhel-9-for-x86_64-appstream-rpms\n");
	script(
	    spec, sz, "dnf -q list python3-dnf-plugin-versionlock", 0, "list-plugin",
	    "Available Packages\npython3-dnf-plugin-versionlock.noarch  4.3.0-13.el9  rhel-9-for-x86_64-baseos-rpms\n");
	snprintf(spec + strlen(spec), sz - strlen(spec), ",creates:install:0:lib/modules/%s/extra/nvidia.ko.xz",
	         RHEL_KVER);
}

static const char *const open_stream[] = { "@nvidia-driver:595-open", NULL };

TEST(dnf_install)
{
	char spec[8192], *key;
	struct run x;
	const char *const want[] = {
		"rpm --import /etc/pki/rpm-gpg/RPM-GPG-KEY-gpuboot-cuda-rhel9-x86_64",
		"dnf -y module enable nvidia-driver:595-open",
		"dnf -q list --showduplicates nvidia-open-595.84",
		/* the family at the driver's version before the install: real dnf
		 * resolves a loose dependency to the stream's newest otherwise */
		"dnf versionlock add *nvidia*-595.84-*",
		"dnf -y install nvidia-open-3:595.84-1.el9 python3-dnf-plugin-versionlock-4.3.0-13.el9 "
		"kernel-devel-5.14.0-362.8.1.el9_3 kernel-headers-5.14.0-427.13.1.el9_4",
		"dnf versionlock add nvidia-open-3:595.84-1.el9 nvidia-driver-3:595.84-1.el9 "
		"kmod-nvidia-open-dkms-3:595.84-1.el9 nvidia-driver-cuda-libs-3:595.84-1.el9",
		NULL,
	};

	make_root(&rhel9);
	rhel_spec(spec, sizeof(spec), false);
	run_install(&x, &rhel9, spec, TEST_KEY, open_stream, "595.84");
	check_sequence(x.record, want);
	if (getenv("SHOW_RECORD"))
		fputs(x.record, stderr);
	/* the fake runs no dnf: the versionlock it asked for is not in
	 * versionlock.list, and the check after it says so */
	CHECK_INT(x.r, -EIO);
	CHECK(strstr(x.res.error, "nvidia-open is not locked at 3:595.84-1.el9") != NULL);
	if (!strstr(x.res.error, "not locked"))
		fprintf(stderr, "error: %s\nrecord:\n%s", x.res.error, x.record);
	CHECK(x.res.sources_changed && x.res.packages_changed);
	CHECK_STREQ(x.res.distro, "rhel");
	CHECK_STREQ(x.res.pkgs[0].resolved, "3:595.84-1.el9"); /* not 595.84.01 */
	CHECK_STREQ(x.res.pkgs[0].suite, "gpuboot-cuda-rhel9-x86_64");
	CHECK(!strstr(x.record, "nvidia-container-toolkit-")); /* not the driver's: not locked */
	check_bytes(rhel9.repo_path, "tests/expected/install/gpuboot-cuda-rhel9-x86_64.repo");
	check_bytes("etc/pki/rpm-gpg/RPM-GPG-KEY-gpuboot-cuda-rhel9-x86_64", TEST_KEY); /* armored, as served */
	check_bytes("etc/modprobe.d/gpuboot-blacklist-nouveau.conf", "tests/expected/install/blacklist-nouveau.conf");
	key = slurp(TEST_KEY);
	CHECK(key && gb_startswith(key, "-----BEGIN PGP PUBLIC KEY BLOCK-----"));
	free(key);
	check_cleaned(&x);
	run_done(&x);
}

/* A RHEL 9 root with everything in place: the driver's packages at
 * 595.84 and versionlocked (as dnf's plugin writes them), the stream
 * enabled, the module built, the key in rpm's database. */
static void rhel_in_place(char *spec, size_t sz)
{
	make_root(&rhel9);
	put("root/etc/dnf/plugins/versionlock.list",
	    "\n# Added lock on Mon Dec  1 10:00:00 2026\nnvidia-open-3:595.84-1.el9.*\nnvidia-driver-3:595.84-1.el9.*\n"
	    "kmod-nvidia-open-dkms-3:595.84-1.el9.*\nnvidia-driver-cuda-libs-3:595.84-1.el9.*\n");
	put("root/etc/dnf/modules.d/nvidia-driver.module",
	    "[nvidia-driver]\nname=nvidia-driver\nstream=595-open\nprofiles=\nstate=enabled\n");
	put("root/lib/modules/" RHEL_KVER "/extra/nvidia.ko.xz", "");
	rhel_spec(spec, sz, true);
	script(spec, sz, "rpm -q gpg-pubkey", 0, "pubkey", pubkey_line);
}

/* Everything in place: the first run writes the key, the repo file and
 * the blacklist and runs no package manager; the second changes nothing
 * and does not even download the key (its URL is gone). */
TEST(dnf_rerun)
{
	char spec[8192], p[4400];
	struct run x;
	json_object *o;

	rhel_in_place(spec, sizeof(spec));
	run_install(&x, &rhel9, spec, TEST_KEY, open_stream, "595.84");
	CHECK_INT(x.r, 0);
	if (x.r)
		fprintf(stderr, "error: %s\nrecord:\n%s", x.res.error, x.record);
	CHECK(!strstr(x.record, "dnf -y") && !strstr(x.record, "rpm --import") && !strstr(x.record, "versionlock add"));
	CHECK(!strstr(x.record, "mount_bind"));
	CHECK(x.res.sources_changed && !x.res.packages_changed);
	run_done(&x);

	snprintf(p, sizeof(p), "%s/record", base);
	unlink(p);
	run_install(&x, &rhel9, spec, "tests/data/no-such-key.asc", open_stream, "595.84");
	CHECK_INT(x.r, 0);
	CHECK_INT(x.j->n_effects, 0);
	CHECK(!x.res.sources_changed && !x.res.packages_changed);
	CHECK(!strstr(x.record, "dnf -y") && !strstr(x.record, "rpm --import") && !strstr(x.record, "versionlock add"));
	CHECK_STREQ(x.res.pkgs[0].name, "nvidia-open");
	CHECK_STREQ(x.res.pkgs[0].after, "3:595.84-1.el9");
	CHECK(x.res.pkgs[0].held_after);
	CHECK_INT(x.res.n_kernels, 1);
	CHECK_STREQ(x.res.kernels[0].module, "lib/modules/" RHEL_KVER "/extra/nvidia.ko.xz");
	o = gb_install_result_to_json(&x.res);
	CHECK(strstr(json_object_to_json_string(o), "\"held\": true") ||
	      strstr(json_object_to_json_string(o), "\"held\":true"));
	CHECK(strstr(json_object_to_json_string(o), "\"method\": \"packages\"") ||
	      strstr(json_object_to_json_string(o), "\"method\":\"packages\""));
	json_object_put(o);
	run_done(&x);
}

/* Another key at the URL: refused before anything is written or run. */
TEST(wrong_key)
{
	char spec[8192];
	struct run x;

	make_root(&rhel9);
	rhel_spec(spec, sizeof(spec), false);
	run_install(&x, &rhel9, spec, WRONG_KEY, open_stream, "595.84");
	CHECK_INT(x.r, -EKEYREJECTED);
	CHECK(strstr(x.res.error, "not the pinned") != NULL);
	CHECK_INT(x.j->n_effects, 0);
	CHECK(!exists("etc/pki/rpm-gpg"));
	CHECK(!exists(rhel9.repo_path));
	CHECK(!strstr(x.record, "rpm --import") && !strstr(x.record, " dnf ") && !strstr(x.record, "mount_bind"));
	run_done(&x);

	/* NVIDIA's own repo file for the same URL: refused, named, nothing written */
	make_root(&rhel9);
	put("root/etc/yum.repos.d/cuda-rhel9.repo",
	    "[cuda-rhel9-x86_64]\nname=cuda-rhel9-x86_64\n"
	    "baseurl=https://developer.download.nvidia.com/compute/cuda/repos/rhel9/x86_64\nenabled=1\ngpgcheck=1\n"
	    "gpgkey=https://developer.download.nvidia.com/compute/cuda/repos/rhel9/x86_64/D42D0685.pub\n");
	rhel_spec(spec, sizeof(spec), false);
	run_install(&x, &rhel9, spec, TEST_KEY, open_stream, "595.84");
	CHECK_INT(x.r, -EEXIST);
	CHECK(strstr(x.res.error, "/etc/yum.repos.d/cuda-rhel9.repo") != NULL);
	CHECK(!exists("etc/pki/rpm-gpg"));
	CHECK_INT(x.j->n_effects, 0);
	run_done(&x);

	/* another branch's stream enabled: switching is the admin's, refused */
	make_root(&rhel9);
	put("root/etc/dnf/modules.d/nvidia-driver.module", "[nvidia-driver]\nname=nvidia-driver\nstream=580-open\n"
	                                                   "profiles=\nstate=enabled\n");
	rhel_spec(spec, sizeof(spec), false);
	run_install(&x, &rhel9, spec, TEST_KEY, open_stream, "595.84");
	CHECK_INT(x.r, -EEXIST);
	CHECK(strstr(x.res.error, "dnf module switch-to nvidia-driver:595-open") != NULL);
	CHECK_INT(x.j->n_effects, 0);
	run_done(&x);
}

/* Amazon Linux 2023, the proprietary stream: the version the plan pinned
 * is not in the repository; refused before any install, naming it. */
TEST(missing_version)
{
	char spec[8192];
	struct run x;
	const char *const dkms[] = { "@nvidia-driver:580-dkms", NULL };
	const char *const want[] = {
		"rpm --import /etc/pki/rpm-gpg/RPM-GPG-KEY-gpuboot-cuda-amzn2023-x86_64",
		"dnf -y module enable nvidia-driver:580-dkms",
		"dnf -q list --showduplicates cuda-drivers-580.95.05",
		"dnf -q list --showduplicates kernel-devel-6.1.72-96.166.amzn2023",
		NULL,
	};

	make_root(&al2023);
	base_spec(spec, sizeof(spec), &al2023);
	script(spec, sizeof(spec), "rpm -q --qf", 4, "before", "package cuda-drivers is not installed\n");
	script(spec, sizeof(spec), "dnf -q list --showduplicates cuda-drivers-580.95.05", 1, "list-cd",
	       "Error: No matching Packages to list\n");
	script(spec, sizeof(spec), "dnf -q list --showduplicates kernel-devel-6.1.72-96.166.amzn2023", 0, "list-devel",
	       "Available Packages\nkernel-devel.x86_64   6.1.72-96.166.amzn2023   amazonlinux\n");
	run_install(&x, &al2023, spec, TEST_KEY, dkms, "580.95.05");
	CHECK_INT(x.r, -ENOPKG);
	CHECK(strstr(x.res.error, "cuda-drivers 580.95.05 (no such package or version)") != NULL);
	if (x.r != -ENOPKG)
		fprintf(stderr, "error: %s\nrecord:\n%s", x.res.error, x.record);
	check_sequence(x.record, want);
	CHECK(!strstr(x.record, "dnf -y install") && !strstr(x.record, "versionlock add"));
	CHECK(!exists("etc/modprobe.d/gpuboot-blacklist-nouveau.conf"));
	check_bytes(al2023.repo_path, "tests/expected/install/gpuboot-cuda-amzn2023-x86_64.repo");
	check_cleaned(&x);
	run_done(&x);
}

static const char sles_after[] = "nvidia-open\t0:595.84-1\tx86_64\n"
                                 "nvidia-compute-G06\t0:595.84-1\tx86_64\n"
                                 "nvidia-open-driver-G06-signed-cuda-kmp-default\t0:595.84_k5.14.21_150500.55.39-1\t"
                                 "x86_64\n"
                                 "kernel-default-devel\t0:5.14.21-150500.55.39.1\tnoarch\n";

static void sles_spec(char *spec, size_t sz, bool installed, int dry_run, const char *dry_out)
{
	base_spec(spec, sz, &sles15);
	script(spec, sz, "rpm -q --qf", installed ? 0 : 2, "before",
	       installed ? sles_after
	                 : "package nvidia-open is not installed\npackage kernel-default-devel is not installed\n");
	script(spec, sz, "rpm -qa", 0, "after", sles_after);
	script(spec, sz, "zypper --non-interactive --no-refresh install --dry-run", dry_run, "dry-run", dry_out);
	snprintf(spec + strlen(spec), sz - strlen(spec), ",creates:install:0:lib/modules/%s/updates/nvidia.ko",
	         SLES_KVER);
}

TEST(zypper)
{
	char spec[8192], p[4400];
	struct run x;
	const char *const open[] = { "nvidia-open", NULL };
	const char *const want[] = {
		"rpm --import /etc/pki/rpm-gpg/RPM-GPG-KEY-gpuboot-cuda-sles15-x86_64",
		"zypper --non-interactive refresh",
		"zypper --non-interactive --no-refresh install --dry-run --auto-agree-with-licenses nvidia-open=595.84 "
		"kernel-default-devel=5.14.21-150500.55.39.1",
		"zypper --non-interactive install --auto-agree-with-licenses nvidia-open=595.84 "
		"kernel-default-devel=5.14.21-150500.55.39.1",
		"zypper --non-interactive addlock nvidia-open nvidia-compute-G06 "
		"nvidia-open-driver-G06-signed-cuda-kmp-default",
		NULL,
	};

	make_root(&sles15);
	sles_spec(spec, sizeof(spec), false, 0, "Nothing to do.\n");
	run_install(&x, &sles15, spec, TEST_KEY, open, "595.84");
	check_sequence(x.record, want);
	CHECK_INT(x.r, -EIO); /* the fake's addlock locked nothing, and the check says so */
	CHECK(strstr(x.res.error, "After zypper addlock, nvidia-open is not locked") != NULL);
	CHECK(!strstr(x.record, "--gpg-auto-import-keys"));
	check_bytes(sles15.repo_path, "tests/expected/install/gpuboot-cuda-sles15-x86_64.repo");
	check_cleaned(&x);
	run_done(&x);

	/* the version is not in any repository: the dry run says so, no install */
	make_root(&sles15);
	sles_spec(spec, sizeof(spec), false, 104,
	          "Loading repository data...\nReading installed packages...\n"
	          "'nvidia-open' not found in package names. Trying capabilities.\n"
	          "No provider of 'nvidia-open = 595.84' found.\n");
	run_install(&x, &sles15, spec, TEST_KEY, open, "595.84");
	CHECK_INT(x.r, -ENOPKG);
	CHECK(strstr(x.res.error, "nvidia-open 595.84 (no such package or version)") != NULL);
	CHECK(!strstr(x.record, "zypper --non-interactive install") && !strstr(x.record, "addlock"));
	check_cleaned(&x);
	run_done(&x);

	/* everything in place, locked as zypper addlock writes it: twice, the second changes nothing */
	make_root(&sles15);
	put("root/etc/zypp/locks", "type: package\nmatch_type: glob\ncase_sensitive: on\nsolvable_name: nvidia-open\n\n"
	                           "type: package\nmatch_type: glob\ncase_sensitive: on\n"
	                           "solvable_name: nvidia-compute-G06\n\n"
	                           "type: package\nmatch_type: glob\ncase_sensitive: on\n"
	                           "solvable_name: nvidia-open-driver-G06-signed-cuda-kmp-default\n");
	put("root/lib/modules/" SLES_KVER "/updates/nvidia.ko", "");
	sles_spec(spec, sizeof(spec), true, 0, "");
	script(spec, sizeof(spec), "rpm -q gpg-pubkey", 0, "pubkey", pubkey_line);
	run_install(&x, &sles15, spec, TEST_KEY, open, "595.84");
	CHECK_INT(x.r, 0);
	if (x.r)
		fprintf(stderr, "error: %s\nrecord:\n%s", x.res.error, x.record);
	run_done(&x);
	snprintf(p, sizeof(p), "%s/record", base);
	unlink(p);
	run_install(&x, &sles15, spec, TEST_KEY, open, "595.84");
	CHECK_INT(x.r, 0);
	CHECK_INT(x.j->n_effects, 0);
	CHECK(!strstr(x.record, "zypper") && !strstr(x.record, "rpm --import"));
	CHECK_STREQ(x.res.kernels[0].module, "lib/modules/" SLES_KVER "/updates/nvidia.ko");
	CHECK(x.res.pkgs[0].held_after);
	run_done(&x);
}

/* A repomd.xml whose signature does not verify: zypper's refresh fails
 * (exit 4) with what real zypper 1.14 says (vm-tests/image-rpm-sles15.sh),
 * refused as a verification failure, -EKEYREJECTED (exit 13), no dry run,
 * no install, no lock. */
TEST(zypper_tampered)
{
	char spec[8192];
	struct run x;
	const char *const open[] = { "nvidia-open", NULL };

	make_root(&sles15);
	sles_spec(spec, sizeof(spec), false, 0, "Nothing to do.\n");
	script(spec, sizeof(spec), "zypper --non-interactive refresh", 4, "refresh",
	       "Retrieving repository 'gpuboot-cuda-sles15-x86_64' metadata [.\n"
	       "Signature verification failed for file 'repomd.xml' from repository 'gpuboot-cuda-sles15-x86_64'. "
	       "Continue? [yes/no] (no): no\nerror]\n"
	       "Signature verification failed for file 'repomd.xml' from repository 'gpuboot-cuda-sles15-x86_64'.\n"
	       "Repository 'gpuboot-cuda-sles15-x86_64' is invalid.\n"
	       "Skipping repository 'gpuboot-cuda-sles15-x86_64' because of the above error.\n"
	       "Some of the repositories have not been refreshed because of an error.\n");
	run_install(&x, &sles15, spec, TEST_KEY, open, "595.84");
	CHECK_INT(x.r, -EKEYREJECTED);
	CHECK(strstr(x.res.error, "zypper refused") &&
	      strstr(x.res.error, "Signature verification failed for file 'repomd.xml'"));
	CHECK(!strstr(x.record, "--dry-run") && !strstr(x.record, "zypper --non-interactive install") &&
	      !strstr(x.record, "addlock"));
	check_cleaned(&x);
	run_done(&x);
}

/* Locks held by another process: rpm's (fcntl), dnf's (a pid file of a
 * live pid), waited for, named with pid and comm, never broken; a pid file
 * of a dead process or an empty one holds nothing. */
TEST(lock_wait)
{
	struct gb_ctx ctx = { 0 };
	char p[4400], err[512] = "", want[128], spec[8192], *comm;
	int sync[2];
	pid_t pid;
	struct run x;

	make_root(&rhel9);
	put("root/var/lib/rpm/.rpm.lock", "");
	put("root/run/zypp.pid", "");
	CHECK(pipe(sync) == 0);
	pid = fork();
	if (pid == 0) {
		struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
		int fd;
		char c = 'x';
		snprintf(p, sizeof(p), "%s/var/lib/rpm/.rpm.lock", rootdir);
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
	snprintf(p, sizeof(p), "/proc/%d/comm", (int)pid);
	comm = slurp(p);
	CHECK(comm != NULL);
	if (comm)
		gb_strstrip(comm);
	snprintf(want, sizeof(want), "pid %d (%s)", (int)pid, comm ? comm : "?");
	CHECK_INT(gb_ops_fake_new("clock:1000000000", &ctx.ops), 0);
	CHECK_INT(gb_root_open(rootdir, &ctx.root), 0);
	ctx.opt.root = rootdir;
	CHECK_INT(gb_rpm_lock_wait(&ctx, 3000, err, sizeof(err)), -EBUSY);
	CHECK(strstr(err, want) && strstr(err, "var/lib/rpm/.rpm.lock"));

	/* the engine waits on it before its first command, and stops */
	rhel_spec(spec, sizeof(spec), false);
	run_install(&x, &rhel9, spec, TEST_KEY, open_stream, "595.84");
	CHECK_INT(x.r, -EBUSY);
	CHECK(strstr(x.res.error, want) && strstr(x.res.error, "does not stop it"));
	CHECK(strstr(x.record, "sleep 1000") && !strstr(x.record, "rpm --import") && !strstr(x.record, "dnf -y"));
	check_cleaned(&x);
	run_done(&x);

	/* dnf's pid file naming the same live process */
	snprintf(p, sizeof(p), "%s/var/lib/rpm/.rpm.lock", rootdir);
	unlink(p);
	snprintf(p, sizeof(p), "%d\n", (int)pid);
	put("root/var/lib/dnf/rpmdb_lock.pid", p);
	CHECK_INT(gb_rpm_lock_wait(&ctx, 3000, err, sizeof(err)), -EBUSY);
	CHECK(strstr(err, want) && strstr(err, "var/lib/dnf/rpmdb_lock.pid"));
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
	/* the process is gone, its pid file stays: not a lock */
	CHECK_INT(gb_rpm_lock_wait(&ctx, 3000, err, sizeof(err)), 0);
	put("root/var/lib/dnf/rpmdb_lock.pid", "not a pid\n");
	CHECK_INT(gb_rpm_lock_wait(&ctx, 3000, err, sizeof(err)), 0);
	free(comm);
	gb_root_free(ctx.root);
	gb_ops_fake_free(ctx.ops);
	close(sync[0]);
	close(sync[1]);
}

/* The plan moves the driver from 595.80 to 595.84 within its stream: the
 * locks of the old versions are lifted before the install, the Container
 * Toolkit's lock is left alone; the fake installs nothing, so the check
 * after finds the old driver packages: a split, refused, nothing locked. */
TEST(version_change)
{
	char spec[8192];
	struct run x;
	const char *old = "nvidia-open\t3:595.80-1.el9\tnoarch\n"
	                  "nvidia-driver\t3:595.80-1.el9\tx86_64\n"
	                  "nvidia-container-toolkit\t0:1.17.8-1\tx86_64\n"
	                  "python3-dnf-plugin-versionlock\t0:4.3.0-13.el9\tnoarch\n"
	                  "kernel-devel\t0:5.14.0-362.8.1.el9_3\tx86_64\n"
	                  "kernel-headers\t0:5.14.0-427.13.1.el9_4\tx86_64\n";
	const char *const want[] = {
		"dnf -q list --showduplicates nvidia-open-595.84",
		"dnf versionlock delete nvidia-open nvidia-driver",
		"dnf versionlock add *nvidia*-595.84-*",
		"dnf -y install nvidia-open-3:595.84-1.el9 python3-dnf-plugin-versionlock-4.3.0-13.el9 "
		"kernel-devel-5.14.0-362.8.1.el9_3 kernel-headers-5.14.0-427.13.1.el9_4",
		NULL,
	};

	make_root(&rhel9);
	put("root/etc/dnf/plugins/versionlock.list",
	    "nvidia-open-3:595.80-1.el9.*\nnvidia-driver-3:595.80-1.el9.*\nnvidia-container-toolkit-0:1.17.8-1.*\n");
	put("root/etc/dnf/modules.d/nvidia-driver.module",
	    "[nvidia-driver]\nname=nvidia-driver\nstream=595-open\nprofiles=\nstate=enabled\n");
	rhel_spec(spec, sizeof(spec), false);
	script(spec, sizeof(spec), "rpm -q --qf", 0, "before", old);
	script(spec, sizeof(spec), "rpm -qa", 0, "after", old);
	run_install(&x, &rhel9, spec, TEST_KEY, open_stream, "595.84");
	check_sequence(x.record, want);
	CHECK(!strstr(x.record, "dnf -y module enable")); /* enabled already */
	CHECK(!strstr(x.record, "delete nvidia-open nvidia-driver nvidia-container-toolkit"));
	CHECK_INT(x.r, -EIO);
	/* a driver package left at the old version is a split: nothing is locked */
	CHECK(strstr(x.res.error, "nvidia-driver is at 3:595.80-1.el9, not the driver's 595.84") != NULL);
	CHECK(strstr(x.res.error, "split") != NULL);
	CHECK(!strstr(x.record, "versionlock add nvidia-open")); /* only the family's glob, before the install */
	CHECK(x.res.pkgs[0].held_before);
	run_done(&x);
}

/* An upgrade a kill cut: rpm's database holds nvidia-driver at two
 * versions. dnf's own repair first (remove --duplicates), journaled and
 * said in the result, then the install; zypper has none: refused, the way
 * out named. A kernel at two versions is no duplicate. */
TEST(interrupted_upgrade)
{
	char spec[8192];
	struct run x;
	const char *dup = "nvidia-open\t3:595.84-1.el9\tnoarch\n"
	                  "nvidia-driver\t3:595.80-1.el9\tx86_64\n"
	                  "nvidia-driver\t3:595.84-1.el9\tx86_64\n"
	                  "kernel-devel\t0:5.14.0-362.8.1.el9_3\tx86_64\n"
	                  "kernel-devel\t0:5.14.0-427.13.1.el9_4\tx86_64\n";
	const char *const want[] = {
		"dnf -y remove --duplicates",
		"dnf -y install nvidia-open-3:595.84-1.el9 python3-dnf-plugin-versionlock-4.3.0-13.el9 "
		"kernel-devel-5.14.0-362.8.1.el9_3 kernel-headers-5.14.0-427.13.1.el9_4",
		NULL,
	};
	const char *const open[] = { "nvidia-open", NULL };

	make_root(&rhel9);
	rhel_spec(spec, sizeof(spec), false);
	script(spec, sizeof(spec), "rpm -qa --qf", 0, "after-dup", dup);
	run_install(&x, &rhel9, spec, TEST_KEY, open_stream, "595.84");
	check_sequence(x.record, want);
	CHECK(strstr(x.res.recovered, "rpm held two versions of nvidia-driver 3:595.80-1.el9 and 3:595.84-1.el9") !=
	      NULL);
	CHECK(!strstr(x.res.recovered, "kernel-devel"));
	if (!strstr(x.res.recovered, "nvidia-driver"))
		fprintf(stderr, "recovered: '%s'\nrecord:\n%s", x.res.recovered, x.record);
	run_done(&x);

	make_root(&sles15);
	sles_spec(spec, sizeof(spec), false, 0, "Nothing to do.\n");
	script(spec, sizeof(spec), "rpm -qa --qf", 0, "after-dup",
	       "nvidia-open\t595.84-1\tx86_64\nnvidia-compute-G06\t595.80-1\tx86_64\n"
	       "nvidia-compute-G06\t595.84-1\tx86_64\n");
	run_install(&x, &sles15, spec, TEST_KEY, open, "595.84");
	CHECK_INT(x.r, -EIO);
	CHECK(strstr(x.res.error, "two versions of nvidia-compute-G06 595.80-1 and 595.84-1") &&
	      strstr(x.res.error, "rpm -e --noscripts"));
	CHECK(!strstr(x.record, "zypper --non-interactive install"));
	run_done(&x);
}

/* Every package at its version and locked, but files of one missing
 * (rpm -V: a kill inside the transaction, a disk repaired after a power
 * cut): the package is reinstalled at its version, journaled and said;
 * the others are left alone. With nothing missing, nothing runs. */
TEST(missing_files)
{
	char spec[8192];
	struct run x;
	const char *const want[] = { "dnf -y reinstall nvidia-open", NULL };
	const char *const want_zypper[] = { "zypper --non-interactive removelock nvidia-open",
		                            "zypper --non-interactive install --force nvidia-open", NULL };
	const char *const open[] = { "nvidia-open", NULL };

	rhel_in_place(spec, sizeof(spec));
	/* rpm's own words (lib/verify.c): "missing", the attribute, the path */
	script(
	    spec, sizeof(spec),
	    "rpm -V --nodeps --noscripts --nofiledigest --nosize --nomtime --nomode --nordev "
	    "--nouser --nogroup --nolinkto --nocaps nvidia-open",
	    1, "verify-open",
	    "missing     /usr/lib64/libnvidia-ml.so.595.84\nmissing   c /etc/nvidia/nvidia-application-profiles-rc\n");
	run_install(&x, &rhel9, spec, TEST_KEY, open, "595.84");
	CHECK_INT(x.r, 0);
	check_sequence(x.record, want);
	CHECK(!strstr(x.record, "dnf -y install"));
	CHECK(strstr(x.res.recovered, "files of nvidia-open were missing (rpm -V): reinstalled by dnf reinstall") !=
	      NULL);
	CHECK(gb_journal_step_changed(x.j, "dnf-reinstall"));
	if (x.r || !strstr(x.res.recovered, "nvidia-open"))
		fprintf(stderr, "error: %s\nrecovered: %s\nrecord:\n%s", x.res.error, x.res.recovered, x.record);
	run_done(&x);

	/* the same, nothing missing: nothing runs */
	rhel_in_place(spec, sizeof(spec));
	script(spec, sizeof(spec), "rpm -V", 1, "verify-changed",
	       "S.5....T.  c /etc/nvidia/nvidia-application-profiles-rc\n");
	run_install(&x, &rhel9, spec, TEST_KEY, open, "595.84");
	CHECK_INT(x.r, 0);
	CHECK(!strstr(x.record, "dnf -y") && !x.res.recovered[0]);
	run_done(&x);

	/* zypper: its lock refuses even the same version, so lifted first */
	make_root(&sles15);
	put("root/etc/zypp/locks", "type: package\nmatch_exact: 1\nsolvable_name: nvidia-open\n\n"
	                           "type: package\nmatch_exact: 1\nsolvable_name: nvidia-compute-G06\n\n"
	                           "type: package\nmatch_exact: 1\nsolvable_name: "
	                           "nvidia-open-driver-G06-signed-cuda-kmp-default\n");
	sles_spec(spec, sizeof(spec), true, 0, "Nothing to do.\n");
	script(spec, sizeof(spec),
	       "rpm -V --nodeps --noscripts --nofiledigest --nosize --nomtime --nomode --nordev --nouser --nogroup "
	       "--nolinkto --nocaps nvidia-open",
	       1, "verify-open", "missing     /usr/lib64/libnvidia-ml.so.595.84\n");
	run_install(&x, &sles15, spec, TEST_KEY, open, "595.84");
	check_sequence(x.record, want_zypper);
	CHECK(strstr(x.res.recovered, "reinstalled by zypper install --force") != NULL);
	if (!strstr(x.res.recovered, "zypper"))
		fprintf(stderr, "error: %s\nrecovered: %s\nrecord:\n%s", x.res.error, x.res.recovered, x.record);
	run_done(&x);
}

/* The key served binary: written armored (gpuboot's armor), the same key;
 * served armored without its last newline: written with it. */
TEST(key_forms)
{
	char spec[8192], *asc, *written, err[256], served[4400], p[4400];
	size_t len, wl;
	struct gb_pgp_key k, w;
	struct run x;

	CHECK_INT(gb_read_file(TEST_KEY, 65536, &asc, &len), 0);
	CHECK_INT(gb_pgp_key_read(asc, len, &k, err, sizeof(err)), 0);
	make_root(&rhel9);
	rhel_spec(spec, sizeof(spec), false);
	snprintf(served, sizeof(served), "%s/out/public.gpg", base);
	CHECK_INT(gb_write_file_atomic(served, k.bin, k.bin_len, 0644), 0);
	run_install(&x, &rhel9, spec, served, open_stream, "595.84");
	snprintf(p, sizeof(p), "%s/etc/pki/rpm-gpg/RPM-GPG-KEY-gpuboot-cuda-rhel9-x86_64", rootdir);
	CHECK_INT(gb_read_file(p, 65536, &written, &wl), 0);
	CHECK(written && gb_startswith(written, "-----BEGIN PGP PUBLIC KEY BLOCK-----\n"));
	CHECK_INT(gb_pgp_key_read(written, wl, &w, err, sizeof(err)), 0);
	CHECK(w.armored);
	CHECK_STREQ(w.fpr, k.fpr);
	CHECK(strstr(x.record, "rpm --import") != NULL);
	gb_pgp_key_free(&w);
	free(written);
	run_done(&x);

	CHECK(len > 1 && asc[len - 1] == '\n');
	make_root(&rhel9);
	rhel_spec(spec, sizeof(spec), false);
	snprintf(served, sizeof(served), "%s/out/public-no-newline.asc", base);
	CHECK_INT(gb_write_file_atomic(served, asc, len - 1, 0644), 0);
	run_install(&x, &rhel9, spec, served, open_stream, "595.84");
	check_bytes("etc/pki/rpm-gpg/RPM-GPG-KEY-gpuboot-cuda-rhel9-x86_64", TEST_KEY);
	run_done(&x);
	gb_pgp_key_free(&k);
	free(asc);
}

/* ---- the Container Toolkit ---- */

#define CTK_KEY "tests/data/nvidia-keys/gpgkey" /* NVIDIA's own, pinned as container-toolkit */
#define CTK_KEYFILE "etc/pki/rpm-gpg/RPM-GPG-KEY-gpuboot-nvidia-container-toolkit"
#define CTK_DNF_REPO "etc/yum.repos.d/gpuboot-nvidia-container-toolkit.repo"
#define CTK_ZYPP_REPO "etc/zypp/repos.d/gpuboot-nvidia-container-toolkit.repo"

static const char *const ctk_names[] = { "nvidia-container-toolkit", "nvidia-container-toolkit-base",
	                                 "libnvidia-container-tools", "libnvidia-container1", NULL };
static char ctk_pubkey_line[64]; /* NVIDIA's toolkit key as `rpm -q gpg-pubkey` prints it */

/* gb_install with in, on the root made last, the fake per spec. */
static void run_in(struct run *x, const char *spec, const struct gb_install_input *in)
{
	char err[512], p[4400];
	json_object *plan = json_object_new_object();

	memset(x, 0, sizeof(*x));
	snprintf(x->state, sizeof(x->state), "%s/state", base);
	x->ctx.opt.root = rootdir;
	x->ctx.opt.state_dir = x->state;
	CHECK_INT(gb_ops_fake_new(spec, &x->ctx.ops), 0);
	CHECK_INT(gb_root_open(rootdir, &x->ctx.root), 0);
	json_object_object_add(plan, "test", json_object_new_string("install-rpm-toolkit"));
	CHECK_INT(gb_journal_open(&x->ctx, plan, "run", &x->j, err, sizeof(err)), 0);
	json_object_put(plan);
	x->r = gb_install(&x->ctx, in, x->j, &x->res);
	CHECK_INT(gb_journal_finish(x->j, x->r < 0 ? "failed" : "done", x->r < 0 ? 1 : 0), 0);
	snprintf(p, sizeof(p), "%s/record", base);
	x->record = slurp(p);
	if (!x->record)
		x->record = strdup("");
}

/* The input run.c's install_toolkit gives on an rpm root: NVIDIA's rpm
 * repository for arch (its metadata signed), the key pin
 * container-toolkit, the names at version, held, userspace only, no
 * driver version. NVIDIA's key is served from a file. */
static void run_toolkit(struct run *x, const char *spec, const char *arch, const char *const *names,
                        const char *version)
{
	struct gb_pkg_spec pkgs[6];
	char uri[160], key_url[4400], abs[4200];
	struct gb_apt_repo repo = { .id = "nvidia-container-toolkit",
		                    .uri = uri,
		                    .key_url = key_url,
		                    .key_pin = "container-toolkit",
		                    .signing = GB_REPO_SIGNS_METADATA };
	struct gb_install_input in = { .method = GB_INSTALL_PACKAGES,
		                       .packages = pkgs,
		                       .repo = &repo,
		                       .userspace_only = true,
		                       .pin_name = "nvidia-container-toolkit",
		                       .pin_version = version,
		                       .lock_timeout_ms = 3000 };

	for (size_t i = 0; names[i] && i < ARRAY_SIZE(pkgs); i++, in.n_packages++) {
		pkgs[i] = (struct gb_pkg_spec){ .hold = true };
		CHECK(gb_pkg_spec_parse(names[i], &pkgs[i]) == 0);
		gb_strscpy(pkgs[i].version, sizeof(pkgs[i].version), version);
	}
	snprintf(uri, sizeof(uri), "https://nvidia.github.io/libnvidia-container/stable/rpm/%s/", arch);
	CHECK(realpath(CTK_KEY, abs) != NULL);
	snprintf(key_url, sizeof(key_url), "file://%s", abs);
	run_in(x, spec, &in);
}

/* Nothing of the kernel's: no development package, no module stream, no
 * blacklist, no kernel looked up or checked. */
static void check_userspace_only(const struct run *x)
{
	CHECK(!strstr(x->record, "rpm -qf") && !strstr(x->record, "kernel-") && !strstr(x->record, "module enable"));
	CHECK(!strstr(x->record, "--gpg-auto-import-keys"));
	CHECK(!exists("etc/modprobe.d/gpuboot-blacklist-nouveau.conf"));
	CHECK_INT(x->res.n_kernels, 0);
}

/* After the install: the four at 1.17.8-1, the driver's packages beside them. */
static const char ctk_rhel_after[] = "nvidia-open\t3:595.84-1.el9\tnoarch\n"
                                     "nvidia-driver\t3:595.84-1.el9\tx86_64\n"
                                     "nvidia-container-toolkit\t0:1.17.8-1\tx86_64\n"
                                     "nvidia-container-toolkit-base\t0:1.17.8-1\tx86_64\n"
                                     "libnvidia-container-tools\t0:1.17.8-1\tx86_64\n"
                                     "libnvidia-container1\t0:1.17.8-1\tx86_64\n"
                                     "python3-dnf-plugin-versionlock\t0:4.3.0-13.el9\tnoarch\n";

/* missing: the one of the four whose 1.17.8 the repository lacks, or NULL */
static void ctk_rhel_spec(char *spec, size_t sz, bool installed, const char *missing)
{
	base_spec(spec, sz, &rhel9);
	script(spec, sz, "rpm -q --qf", installed ? 0 : 5, "before",
	       installed ? ctk_rhel_after
	                 : "package nvidia-container-toolkit is not installed\n"
	                   "package nvidia-container-toolkit-base is not installed\n"
	                   "package libnvidia-container-tools is not installed\n"
	                   "package libnvidia-container1 is not installed\n"
	                   "package python3-dnf-plugin-versionlock is not installed\n");
	script(spec, sz, "rpm -qa", 0, "after", ctk_rhel_after);
	for (size_t i = 0; ctk_names[i]; i++) {
		char prefix[160], name[64], out[400];
		snprintf(prefix, sizeof(prefix), "dnf -q list --showduplicates %s-1.17.8", ctk_names[i]);
		snprintf(name, sizeof(name), "list-ctk%zu", i);
		snprintf(out, sizeof(out),
		         "Available Packages\n%s.x86_64    1.17.8-1    gpuboot-nvidia-container-toolkit\n",
		         ctk_names[i]);
		if (missing && streq(missing, ctk_names[i]))
			script(spec, sz, prefix, 1, name, "Error: No matching Packages to list\n");
		else
			script(spec, sz, prefix, 0, name, out);
	}
	script(
	    spec, sz, "dnf -q list python3-dnf-plugin-versionlock", 0, "list-plugin",
	    "Available Packages\npython3-dnf-plugin-versionlock.noarch  4.3.0-13.el9  rhel-9-for-x86_64-baseos-rpms\n");
}

/* A repomd.xml whose signature does not verify: dnf's makecache fails with
 * what real dnf 4.14 says (vm-tests/image-rpm.sh), refused as a
 * verification failure, -EKEYREJECTED (exit 13), nothing installed. */
TEST(toolkit_dnf_tampered)
{
	char spec[8192];
	struct run x;

	make_root(&rhel9);
	ctk_rhel_spec(spec, sizeof(spec), false, NULL);
	script(spec, sizeof(spec), "dnf -y makecache", 1, "makecache",
	       "gpuboot-nvidia-container-toolkit  993  B/s | 228  B     00:00\n"
	       "Error: Failed to download metadata for repo 'gpuboot-nvidia-container-toolkit': repomd.xml GPG "
	       "signature verification error: Bad GPG signature\n");
	run_toolkit(&x, spec, "x86_64", ctk_names, "1.17.8");
	CHECK_INT(x.r, -EKEYREJECTED);
	CHECK(strstr(x.res.error, "dnf refused") && strstr(x.res.error, "repomd.xml GPG signature verification error"));
	CHECK(!strstr(x.record, "dnf -y install"));
	run_done(&x);
}

/* RHEL 9 (a driver from NVIDIA's repository already there): the repo file
 * with repo_gpgcheck, the key, the four at 1.17.8-1 and only they locked. */
TEST(toolkit_dnf)
{
	char spec[8192];
	struct run x;
	const char *const want[] = {
		"rpm --import /" CTK_KEYFILE,
		"dnf -y makecache --repo=gpuboot-nvidia-container-toolkit",
		"dnf -q list --showduplicates nvidia-container-toolkit-1.17.8",
		"dnf -q list --showduplicates nvidia-container-toolkit-base-1.17.8",
		"dnf -q list --showduplicates libnvidia-container-tools-1.17.8",
		"dnf -q list --showduplicates libnvidia-container1-1.17.8",
		"dnf -q list python3-dnf-plugin-versionlock",
		"dnf -y install nvidia-container-toolkit-1.17.8-1 nvidia-container-toolkit-base-1.17.8-1 "
		"libnvidia-container-tools-1.17.8-1 libnvidia-container1-1.17.8-1 "
		"python3-dnf-plugin-versionlock-4.3.0-13.el9",
		"dnf versionlock add nvidia-container-toolkit-0:1.17.8-1 nvidia-container-toolkit-base-0:1.17.8-1 "
		"libnvidia-container-tools-0:1.17.8-1 libnvidia-container1-0:1.17.8-1",
		NULL,
	};

	make_root(&rhel9);
	put("root/etc/dnf/plugins/versionlock.list", "nvidia-open-3:595.84-1.el9.*\nnvidia-driver-3:595.84-1.el9.*\n");
	ctk_rhel_spec(spec, sizeof(spec), false, NULL);
	run_toolkit(&x, spec, "x86_64", ctk_names, "1.17.8");
	check_sequence(x.record, want);
	if (getenv("SHOW_RECORD"))
		fputs(x.record, stderr);
	/* the fake's versionlock wrote nothing; the check after reads the file */
	CHECK_INT(x.r, -EIO);
	CHECK(strstr(x.res.error, "nvidia-container-toolkit is not locked at 0:1.17.8-1") != NULL);
	check_userspace_only(&x);
	CHECK(!strstr(x.record, "versionlock delete")); /* the driver's locks stay */
	CHECK(!strstr(x.record, "versionlock add *nvidia*")); /* no driver family to lock: its four are named */
	CHECK(!strstr(x.record, "zypper"));
	CHECK_INT(x.res.n_pkgs, 5);
	CHECK_STREQ(x.res.pkgs[0].resolved, "1.17.8-1");
	CHECK_STREQ(x.res.pkgs[0].suite, "gpuboot-nvidia-container-toolkit");
	CHECK(x.res.sources_changed && x.res.packages_changed);
	check_bytes(CTK_DNF_REPO, "tests/expected/install/gpuboot-nvidia-container-toolkit-dnf.repo");
	check_bytes(CTK_KEYFILE, CTK_KEY);
	check_cleaned(&x);
	run_done(&x);
}

/* Everything in place (the four installed and locked, the key imported):
 * the first run writes the key and the repo file and runs no package
 * manager, the second has no effect at all. */
TEST(toolkit_dnf_rerun)
{
	char spec[8192], p[4400];
	struct run x;

	make_root(&rhel9);
	put("root/etc/dnf/plugins/versionlock.list",
	    "nvidia-open-3:595.84-1.el9.*\nnvidia-container-toolkit-0:1.17.8-1.*\n"
	    "nvidia-container-toolkit-base-0:1.17.8-1.*\nlibnvidia-container-tools-0:1.17.8-1.*\n"
	    "libnvidia-container1-0:1.17.8-1.*\n");
	ctk_rhel_spec(spec, sizeof(spec), true, NULL);
	script(spec, sizeof(spec), "rpm -q gpg-pubkey", 0, "pubkey", ctk_pubkey_line);
	run_toolkit(&x, spec, "x86_64", ctk_names, "1.17.8");
	CHECK_INT(x.r, 0);
	if (x.r)
		fprintf(stderr, "error: %s\nrecord:\n%s", x.res.error, x.record);
	CHECK(!strstr(x.record, " dnf ") && !strstr(x.record, "rpm --import"));
	CHECK(x.res.sources_changed && !x.res.packages_changed);
	run_done(&x);
	snprintf(p, sizeof(p), "%s/record", base);
	unlink(p);
	run_toolkit(&x, spec, "x86_64", ctk_names, "1.17.8");
	CHECK_INT(x.r, 0);
	CHECK_INT(x.j->n_effects, 0);
	CHECK(!strstr(x.record, " dnf ") && !strstr(x.record, "rpm --import") && !strstr(x.record, "mount_bind"));
	CHECK(!x.res.sources_changed && !x.res.packages_changed);
	for (size_t i = 0; i < 4; i++) {
		CHECK_STREQ(x.res.pkgs[i].after, "0:1.17.8-1");
		CHECK(x.res.pkgs[i].held_after);
	}
	check_userspace_only(&x);
	check_bytes(CTK_DNF_REPO, "tests/expected/install/gpuboot-nvidia-container-toolkit-dnf.repo");
	run_done(&x);
}

/* The version the plan pinned is not in the repository for one of the
 * four: refused before any install, naming it; no version at all,
 * NVIDIA's own repo file for the same repository, or a module stream in a
 * userspace install: refused before anything is written. */
TEST(toolkit_refused)
{
	char spec[8192];
	struct run x;
	const char *const stream[] = { "nvidia-container-toolkit", "@nvidia-driver:595-open", NULL };

	make_root(&rhel9);
	ctk_rhel_spec(spec, sizeof(spec), false, "libnvidia-container1");
	run_toolkit(&x, spec, "x86_64", ctk_names, "1.17.8");
	CHECK_INT(x.r, -ENOPKG);
	CHECK(strstr(x.res.error, "libnvidia-container1 1.17.8 (no such package or version)") != NULL);
	CHECK(strstr(x.res.error, "nothing was installed") != NULL);
	CHECK(strstr(x.record, "dnf -q list --showduplicates libnvidia-container1-1.17.8") != NULL);
	CHECK(!strstr(x.record, "dnf -y install") && !strstr(x.record, "dnf versionlock"));
	check_userspace_only(&x);
	check_cleaned(&x);
	run_done(&x);

	make_root(&rhel9);
	ctk_rhel_spec(spec, sizeof(spec), false, NULL);
	run_toolkit(&x, spec, "x86_64", ctk_names, "");
	CHECK_INT(x.r, -EINVAL);
	CHECK(strstr(x.res.error, "nvidia-container-toolkit has no version") != NULL);
	CHECK_INT(x.j->n_effects, 0);
	CHECK(!exists(CTK_DNF_REPO) && !exists("etc/pki/rpm-gpg"));
	CHECK(!strstr(x.record, "run "));
	run_done(&x);

	/* NVIDIA's own repo file for the toolkit ($basearch in its baseurl): refused, named */
	make_root(&rhel9);
	put("root/etc/yum.repos.d/nvidia-container-toolkit.repo",
	    "[nvidia-container-toolkit]\nname=nvidia-container-toolkit\n"
	    "baseurl=https://nvidia.github.io/libnvidia-container/stable/rpm/$basearch\nrepo_gpgcheck=1\n"
	    "gpgcheck=0\nenabled=1\ngpgkey=https://nvidia.github.io/libnvidia-container/gpgkey\n");
	ctk_rhel_spec(spec, sizeof(spec), false, NULL);
	run_toolkit(&x, spec, "x86_64", ctk_names, "1.17.8");
	CHECK_INT(x.r, -EEXIST);
	CHECK(strstr(x.res.error, "/etc/yum.repos.d/nvidia-container-toolkit.repo") != NULL);
	CHECK_INT(x.j->n_effects, 0);
	CHECK(!exists(CTK_DNF_REPO) && !exists("etc/pki/rpm-gpg"));
	run_done(&x);

	make_root(&rhel9);
	ctk_rhel_spec(spec, sizeof(spec), false, NULL);
	run_toolkit(&x, spec, "x86_64", stream, "1.17.8");
	CHECK_INT(x.r, -EINVAL);
	CHECK(strstr(x.res.error, "userspace only") != NULL);
	CHECK_INT(x.j->n_effects, 0);
	CHECK(!exists(CTK_DNF_REPO));
	run_done(&x);
}

static const char ctk_sles_after[] = "nvidia-open\t0:595.84-1\taarch64\n"
                                     "nvidia-container-toolkit\t0:1.17.8-1\taarch64\n"
                                     "nvidia-container-toolkit-base\t0:1.17.8-1\taarch64\n"
                                     "libnvidia-container-tools\t0:1.17.8-1\taarch64\n"
                                     "libnvidia-container1\t0:1.17.8-1\taarch64\n";

static void ctk_sles_spec(char *spec, size_t sz, bool installed)
{
	base_spec(spec, sz, &sles15);
	script(spec, sz, "rpm -q --qf", installed ? 0 : 4, "before",
	       installed ? ctk_sles_after
	                 : "package nvidia-container-toolkit is not installed\n"
	                   "package nvidia-container-toolkit-base is not installed\n"
	                   "package libnvidia-container-tools is not installed\n"
	                   "package libnvidia-container1 is not installed\n");
	script(spec, sz, "rpm -qa", 0, "after", ctk_sles_after);
	script(spec, sz, "zypper --non-interactive --no-refresh install --dry-run", 0, "dry-run", "Nothing to do.\n");
}

/* SLES 15 on aarch64: the zypper repo file with repo_gpgcheck, refresh,
 * the dry run and the install at NAME=1.17.8, addlock of the four and
 * nothing else; then in place, twice: the second run has no effect. */
TEST(toolkit_zypper)
{
	char spec[8192], p[4400];
	struct run x;
	const char *const want[] = {
		"rpm --import /" CTK_KEYFILE,
		"zypper --non-interactive refresh",
		"zypper --non-interactive --no-refresh install --dry-run --auto-agree-with-licenses "
		"nvidia-container-toolkit=1.17.8 nvidia-container-toolkit-base=1.17.8 libnvidia-container-tools=1.17.8 "
		"libnvidia-container1=1.17.8",
		"zypper --non-interactive install --auto-agree-with-licenses nvidia-container-toolkit=1.17.8 "
		"nvidia-container-toolkit-base=1.17.8 libnvidia-container-tools=1.17.8 libnvidia-container1=1.17.8",
		"zypper --non-interactive addlock nvidia-container-toolkit nvidia-container-toolkit-base "
		"libnvidia-container-tools libnvidia-container1",
		NULL,
	};

	make_root(&sles15);
	ctk_sles_spec(spec, sizeof(spec), false);
	run_toolkit(&x, spec, "aarch64", ctk_names, "1.17.8");
	check_sequence(x.record, want);
	CHECK_INT(x.r, -EIO); /* the fake's addlock locked nothing */
	CHECK(strstr(x.res.error, "After zypper addlock, nvidia-container-toolkit is not locked") != NULL);
	check_userspace_only(&x);
	CHECK(!strstr(x.record, " dnf ") && !strstr(x.record, "removelock"));
	CHECK_INT(x.res.n_pkgs, 4);
	check_bytes(CTK_ZYPP_REPO, "tests/expected/install/gpuboot-nvidia-container-toolkit-zypper.repo");
	check_bytes(CTK_KEYFILE, CTK_KEY);
	check_cleaned(&x);
	run_done(&x);

	make_root(&sles15);
	put("root/etc/zypp/locks", "type: package\nmatch_type: glob\ncase_sensitive: on\nsolvable_name: nvidia-open\n\n"
	                           "type: package\nmatch_type: glob\ncase_sensitive: on\n"
	                           "solvable_name: nvidia-container-toolkit\n\n"
	                           "type: package\nmatch_type: glob\ncase_sensitive: on\n"
	                           "solvable_name: nvidia-container-toolkit-base\n\n"
	                           "type: package\nmatch_type: glob\ncase_sensitive: on\n"
	                           "solvable_name: libnvidia-container-tools\n\n"
	                           "type: package\nmatch_type: glob\ncase_sensitive: on\n"
	                           "solvable_name: libnvidia-container1\n");
	ctk_sles_spec(spec, sizeof(spec), true);
	script(spec, sizeof(spec), "rpm -q gpg-pubkey", 0, "pubkey", ctk_pubkey_line);
	run_toolkit(&x, spec, "aarch64", ctk_names, "1.17.8");
	CHECK_INT(x.r, 0);
	if (x.r)
		fprintf(stderr, "error: %s\nrecord:\n%s", x.res.error, x.record);
	CHECK(!strstr(x.record, "zypper") && !strstr(x.record, "rpm --import"));
	run_done(&x);
	snprintf(p, sizeof(p), "%s/record", base);
	unlink(p);
	run_toolkit(&x, spec, "aarch64", ctk_names, "1.17.8");
	CHECK_INT(x.r, 0);
	CHECK_INT(x.j->n_effects, 0);
	CHECK(!strstr(x.record, "zypper") && !strstr(x.record, "rpm --import") && !strstr(x.record, "mount_bind"));
	for (size_t i = 0; i < 4; i++)
		CHECK(x.res.pkgs[i].held_after);
	check_userspace_only(&x);
	check_bytes(CTK_ZYPP_REPO, "tests/expected/install/gpuboot-nvidia-container-toolkit-zypper.repo");
	run_done(&x);
}

/* The test key as rpm names it once imported: gpg-pubkey-KEYID8-CREATED. */
static void make_pubkey_line(void)
{
	char *asc, err[256];
	size_t len;
	struct gb_pgp_key k;
	CHECK_INT(gb_read_file(TEST_KEY, 65536, &asc, &len), 0);
	CHECK_INT(gb_pgp_key_read(asc, len, &k, err, sizeof(err)), 0);
	snprintf(pubkey_line, sizeof(pubkey_line), "%.8s-%08x\n", k.key_id + 8, (unsigned)k.created);
	for (char *c = pubkey_line; *c; c++)
		if (*c >= 'A' && *c <= 'F')
			*c = (char)(*c - 'A' + 'a');
	gb_pgp_key_free(&k);
	free(asc);
}

static void make_ctk_pubkey_line(void)
{
	char *asc, err[256];
	size_t len;
	struct gb_pgp_key k;
	CHECK_INT(gb_read_file(CTK_KEY, 65536, &asc, &len), 0);
	CHECK_INT(gb_pgp_key_read(asc, len, &k, err, sizeof(err)), 0);
	snprintf(ctk_pubkey_line, sizeof(ctk_pubkey_line), "%.8s-%08x\n", k.key_id + 8, (unsigned)k.created);
	for (char *c = ctk_pubkey_line; *c; c++)
		if (*c >= 'A' && *c <= 'F')
			*c = (char)(*c - 'A' + 'a');
	CHECK(gb_startswith(ctk_pubkey_line, "f796ecb0-"));
	gb_pgp_key_free(&k);
	free(asc);
}

/* The typed package spec and its spelling in the plan: every kind round
 * trips; a stream without its parts, or too long a name, is no spec. */
/* A kept driver's fabric manager alone (install-plan.c's fm_only on dnf):
 * userspace only, at the driver's version, NVLSM and infiniband-diags
 * beside it at their own versions, held: not refused for their missing
 * versions (only a userspace install with no driver version, the
 * toolkit's, must give every version), nothing of the kernel's. */
TEST(fm_only_dnf)
{
	char spec[8192], id[] = "cuda-rhel9-x86_64", abs[4200], key_url[4400];
	char uri[] = "https://developer.download.nvidia.com/compute/cuda/repos/rhel9/x86_64/";
	struct gb_apt_repo repo = { .id = id, .uri = uri, .key_url = key_url, .key_pin = "cuda-rpm" };
	struct gb_pkg_spec pkgs[3] = { { .hold = true }, { .hold = true }, { .hold = true } };
	struct gb_install_input in = { .method = GB_INSTALL_PACKAGES,
		                       .flavor = "open",
		                       .driver_version = "580.95.05",
		                       .packages = pkgs,
		                       .n_packages = 3,
		                       .repo = &repo,
		                       .userspace_only = true,
		                       .pin_name = "nvidia-fabricmanager",
		                       .pin_packages = "nvidia-fabricmanager",
		                       .pin_version = "580.95.05",
		                       .lock_timeout_ms = 3000 };
	struct run x;

	gb_strscpy(pkgs[0].name, sizeof(pkgs[0].name), "nvidia-fabricmanager");
	gb_strscpy(pkgs[0].version, sizeof(pkgs[0].version), "580.95.05");
	gb_strscpy(pkgs[1].name, sizeof(pkgs[1].name), "nvlsm");
	gb_strscpy(pkgs[2].name, sizeof(pkgs[2].name), "infiniband-diags");
	CHECK(realpath(TEST_KEY, abs) != NULL);
	snprintf(key_url, sizeof(key_url), "file://%s", abs);
	make_root(&rhel9);
	base_spec(spec, sizeof(spec), &rhel9);
	run_in(&x, spec, &in);
	if (getenv("SHOW_RECORD"))
		fputs(x.record, stderr);
	CHECK(!strstr(x.res.error, "has no version"));
	CHECK(strstr(x.record, "rpm --import") != NULL); /* past the list: the repository's key */
	check_userspace_only(&x);
	run_done(&x);
}

TEST(pkg_spec)
{
	static const char *const good[] = { "nvidia-open", "@nvidia-driver:595-open", "versionlock:*nvidia*580*",
		                            "@nvidia-driver:580-dkms" };
	struct gb_pkg_spec s;
	char out[GB_INSTALL_NAME + 72], lng[GB_INSTALL_NAME + 8];

	for (size_t i = 0; i < ARRAY_SIZE(good); i++) {
		memset(&s, 0, sizeof(s));
		CHECK_INT(gb_pkg_spec_parse(good[i], &s), 0);
		CHECK_INT(gb_pkg_spec_format(&s, out, sizeof(out)), 0);
		CHECK_STREQ(out, good[i]);
	}
	CHECK_INT(gb_pkg_spec_parse("@nvidia-driver:595-open", &s), 0);
	CHECK_INT(s.kind, GB_PKG_STREAM);
	CHECK_STREQ(s.name, "nvidia-driver");
	CHECK_STREQ(s.stream, "595-open");
	CHECK(gb_pkg_stream_open(s.stream));
	CHECK(gb_pkg_stream_open("open"));
	CHECK(!gb_pkg_stream_open("580-dkms"));
	CHECK(!gb_pkg_stream_open("-open"));
	CHECK_INT(gb_pkg_spec_parse("versionlock:*nvidia*580*", &s), 0);
	CHECK_INT(s.kind, GB_PKG_BRANCH_LOCK);
	CHECK_STREQ(s.name, "*nvidia*580*");
	CHECK_INT(gb_pkg_spec_parse("@nvidia-driver", &s), -EINVAL);
	CHECK_INT(gb_pkg_spec_parse("@:595-open", &s), -EINVAL);
	CHECK_INT(gb_pkg_spec_parse("@nvidia-driver:", &s), -EINVAL);
	CHECK_INT(gb_pkg_spec_parse("versionlock:", &s), -EINVAL);
	CHECK_INT(gb_pkg_spec_parse("", &s), -EINVAL);
	memset(lng, 'a', sizeof(lng) - 1);
	lng[sizeof(lng) - 1] = '\0';
	CHECK_INT(gb_pkg_spec_parse(lng, &s), -ENAMETOOLONG);
	CHECK_INT(gb_pkg_spec_parse("nvidia-open", &s), 0);
	CHECK_INT(gb_pkg_spec_format(&s, out, 4), -ENAMETOOLONG);
}

int main(void)
{
	char cmd[200];
	if (!mkdtemp(base))
		return 1;
	make_pubkey_line();
	make_ctk_pubkey_line();
	unit_run_tests();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
	if (system(cmd) != 0)
		return 1;
	UNIT_DONE();
}
