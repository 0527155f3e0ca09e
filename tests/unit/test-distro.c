/* SPDX-License-Identifier: MIT */
/* The catalog's distribution table (src/catalog/distro.c): each os-release
 * ID's family and package manager, the ID_LIKE fallback, the release
 * numbering, and what the stages once decided from tables of their own
 * that disagreed (Oracle Linux is "ol"; there is no ID "al2023"). */
#include <errno.h>
#include <string.h>

#include "catalog/catalog.h"
#include "detect/detect.h"
#include "plan/plan.h"
#include "shared/macro.h"
#include "shared/util.h"
#include "unit.h"

TEST(rows)
{
	static const struct {
		const char *id;
		enum gb_os_family family;
		enum gb_pkgmgr pm;
	} want[] = {
		{ "ubuntu", GB_OS_FAMILY_DEBIAN, GB_PKGMGR_APT },
		{ "debian", GB_OS_FAMILY_DEBIAN, GB_PKGMGR_APT },
		{ "rhel", GB_OS_FAMILY_RHEL, GB_PKGMGR_DNF },
		{ "rocky", GB_OS_FAMILY_RHEL, GB_PKGMGR_DNF },
		{ "almalinux", GB_OS_FAMILY_RHEL, GB_PKGMGR_DNF },
		{ "ol", GB_OS_FAMILY_RHEL, GB_PKGMGR_DNF },
		{ "centos", GB_OS_FAMILY_RHEL, GB_PKGMGR_DNF },
		{ "amzn", GB_OS_FAMILY_FEDORA, GB_PKGMGR_DNF },
		{ "fedora", GB_OS_FAMILY_FEDORA, GB_PKGMGR_DNF },
		{ "sles", GB_OS_FAMILY_SUSE, GB_PKGMGR_ZYPPER },
		{ "opensuse-leap", GB_OS_FAMILY_SUSE, GB_PKGMGR_ZYPPER },
		{ "alpine", GB_OS_FAMILY_ALPINE, GB_PKGMGR_APK },
	};

	CHECK_INT((long long)gb_oses_len, (long long)ARRAY_SIZE(want));
	for (size_t i = 0; i < ARRAY_SIZE(want); i++) {
		const struct gb_os *os = gb_os_find(want[i].id);
		CHECK(os != NULL);
		if (!os)
			continue;
		CHECK_STREQ(os->id, want[i].id);
		CHECK_INT(os->family, want[i].family);
		CHECK_INT(os->pkgmgr, want[i].pm);
		CHECK(gb_os_release_plausible(os, os->min_version ? os->min_version : "1"));
		/* a row's own ID_LIKE leads into its family, or the one it came from (RHEL from Fedora) */
		if (os->like[0]) {
			const struct gb_os *l = gb_os_lookup("no-such-id", os->like);
			CHECK(!l || l->family == os->family ||
			      (l->family == GB_OS_FAMILY_FEDORA && os->family == GB_OS_FAMILY_RHEL));
		}
	}
	/* ids appear once */
	for (size_t i = 0; i < gb_oses_len; i++)
		for (size_t k = i + 1; k < gb_oses_len; k++)
			CHECK(!streq(gb_oses[i].id, gb_oses[k].id));
	/* each row's repository is one gb_distros knows, or one it has no release of */
	CHECK_STREQ(gb_os_find("ol")->repo, "rhel");
	CHECK_STREQ(gb_os_find("centos")->repo, "rhel");
	CHECK(gb_os_find("fedora")->repo == NULL);
	CHECK_STREQ(gb_os_find("sles")->headers, "kernel-default-devel");
	CHECK_STREQ(gb_os_find("amzn")->headers, "kernel-devel-%s");
	CHECK_STREQ(gb_os_find("ubuntu")->headers, "linux-headers-%s");
	CHECK_STREQ(gb_os_find("alpine")->libc, "musl");
	CHECK_STREQ(gb_os_family_to_string(gb_os_find("rocky")->family), "rhel");
}

TEST(lookup)
{
	const struct gb_os *os;

	/* an unknown ID: its ID_LIKE, word by word */
	os = gb_os_lookup("myel", "rhel fedora");
	CHECK(os != NULL && os->family == GB_OS_FAMILY_RHEL && os->pkgmgr == GB_PKGMGR_DNF);
	os = gb_os_lookup("pop", "ubuntu debian");
	CHECK(os != NULL && streq(os->id, "ubuntu"));
	os = gb_os_lookup("tumbleweed-ish", "  opensuse   sles ");
	CHECK(os != NULL && streq(os->id, "sles"));
	/* the ID first, whatever ID_LIKE says */
	os = gb_os_lookup("amzn", "rhel");
	CHECK(os != NULL && streq(os->id, "amzn"));
	/* nothing known: none */
	CHECK(gb_os_lookup("arch", NULL) == NULL);
	CHECK(gb_os_lookup("arch", "") == NULL);
	CHECK(gb_os_lookup("opensuse-tumbleweed", "opensuse suse") == NULL);
	CHECK(gb_os_lookup("", "gentoo") == NULL);
	CHECK(gb_os_lookup(NULL, NULL) == NULL);
	/* no os-release has ID al2023 (Amazon Linux 2023 is ID=amzn VERSION_ID=2023) */
	CHECK(gb_os_find("al2023") == NULL);
	CHECK(gb_os_find("oracle") == NULL);
	CHECK(gb_os_find("") == NULL);
}

TEST(releases)
{
	CHECK(gb_os_release_plausible(gb_os_find("ubuntu"), "22.04"));
	CHECK(!gb_os_release_plausible(gb_os_find("ubuntu"), "22.4"));
	CHECK(!gb_os_release_plausible(gb_os_find("ubuntu"), "22.05"));
	CHECK(gb_os_release_plausible(gb_os_find("debian"), "12"));
	CHECK(!gb_os_release_plausible(gb_os_find("debian"), "12.1"));
	CHECK(gb_os_release_plausible(gb_os_find("amzn"), "2023"));
	CHECK(!gb_os_release_plausible(gb_os_find("amzn"), "2024"));
	CHECK(gb_os_release_plausible(gb_os_find("sles"), "15.6"));
	CHECK(!gb_os_release_plausible(gb_os_find("opensuse-leap"), "9"));
	CHECK(gb_os_release_plausible(gb_os_find("ol"), "9.4"));
	CHECK(gb_os_release_plausible(gb_os_find("alpine"), "3.20"));
	CHECK(!gb_os_release_plausible(gb_os_find("rhel"), "9.x"));
	CHECK(!gb_os_release_plausible(NULL, "9"));
	CHECK_INT(gb_pkgmgr_from_string("yum"), GB_PKGMGR_DNF);
	CHECK_INT(gb_pkgmgr_from_string("tdnf"), GB_PKGMGR_NONE);
	CHECK_INT(gb_pkgmgr_from_string(NULL), GB_PKGMGR_NONE);
	CHECK_STREQ(gb_pkgmgr_to_string(GB_PKGMGR_ZYPPER), "zypper");
}

/* --target-os answers from the table: Oracle Linux and CentOS are known
 * (the parser's own list once refused them while the plan's find_distro
 * knew them), with their family's ID_LIKE and package manager; a release
 * that is not one of the distribution's names the distribution's form. */
TEST(target_os)
{
	struct gb_plan_input in;
	char err[256];

	memset(&in, 0, sizeof(in));
	CHECK_INT(gb_plan_input_target_os("ol:9.4", &in, err, sizeof(err)), 0);
	CHECK_STREQ(in.os_id, "ol");
	CHECK_STREQ(in.os_id_like, "fedora");
	CHECK_STREQ(in.pkgmgr, "dnf");
	CHECK_STREQ(in.libc, "glibc");
	memset(&in, 0, sizeof(in));
	CHECK_INT(gb_plan_input_target_os("centos:9", &in, err, sizeof(err)), 0);
	CHECK_STREQ(in.pkgmgr, "dnf");
	memset(&in, 0, sizeof(in));
	CHECK_INT(gb_plan_input_target_os("alpine:3.20", &in, err, sizeof(err)), 0);
	CHECK_STREQ(in.libc, "musl");
	CHECK_STREQ(in.pkgmgr, "apk");
	CHECK_INT(gb_plan_input_target_os("al2023:2023", &in, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "unknown distribution 'al2023'") != NULL);
	CHECK(strstr(err, "amzn") != NULL && strstr(err, ", ol,") != NULL);
	/* openSUSE Leap numbers as SLES does: the example says so (it once said "like 9 or 9.4") */
	CHECK_INT(gb_plan_input_target_os("opensuse-leap:9", &in, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "like 15.6") != NULL);
}

/* The one os-release parser (detect's) gives the stages their words. */
TEST(os_release_words)
{
	struct gb_os_release osr;
	const char *t = "NAME=\"Oracle Linux Server\"\nID=\"ol\"\nID_LIKE=\"fedora\"\nVERSION_ID=\"9.4\"\n";

	CHECK_INT(gb_os_release_words(t, strlen(t), &osr), 0);
	CHECK_STREQ(osr.id, "ol");
	CHECK_STREQ(osr.id_like, "fedora");
	CHECK_STREQ(osr.version_id, "9.4");
	CHECK_STREQ(osr.version_codename, "");
	t = "ID=\"rhel centos\"\nVERSION_ID=9$(id)\nID_LIKE=\"Rhel\"\n";
	CHECK_INT(gb_os_release_words(t, strlen(t), &osr), 0);
	CHECK_STREQ(osr.id, "");
	CHECK_STREQ(osr.version_id, "");
	CHECK_STREQ(osr.id_like, "");
	CHECK_INT(gb_os_release_words(NULL, 0, &osr), 0);
	CHECK_STREQ(osr.id, "");
}

/* The architectures: each spelling from one row, and what asks them. */
TEST(cpu_arches)
{
	static const struct {
		const char *name, *deb, *rpm, *cuda_repo, *platform;
	} want[] = {
		{ "x86_64", "amd64", "x86_64", "x86_64", "linux-x86_64" },
		{ "aarch64", "arm64", "aarch64", "sbsa", "linux-sbsa" },
	};

	for (size_t i = 0; i < ARRAY_SIZE(want); i++) {
		const struct gb_cpu_arch *a = gb_cpu_arch_find(want[i].name);
		CHECK(a != NULL && a->supported);
		if (!a)
			continue;
		CHECK_STREQ(a->deb, want[i].deb);
		CHECK_STREQ(a->rpm, want[i].rpm);
		CHECK_STREQ(a->cuda_repo, want[i].cuda_repo);
		CHECK_STREQ(a->platform, want[i].platform);
		CHECK(gb_cpu_arch_parse(want[i].deb) == a);
		CHECK(gb_cpu_arch_parse(want[i].name) == a);
		CHECK(gb_cpu_arch_by_cuda_repo(want[i].cuda_repo) == a);
		CHECK(gb_cpu_arch_target(want[i].name) == a);
	}
	/* ppc64le is known (detect names its platform), never planned for: the target is x86_64's */
	CHECK(gb_cpu_arch_find("ppc64le") && !gb_cpu_arch_find("ppc64le")->supported);
	CHECK_STREQ(gb_cpu_arch_target("ppc64le")->name, "x86_64");
	CHECK_STREQ(gb_cpu_arch_target(NULL)->name, "x86_64");
	CHECK_STREQ(gb_cpu_arch_target("")->cuda_repo, "x86_64");
	CHECK(gb_cpu_arch_find("arm64") == NULL); /* the kernel's names only */
	CHECK(gb_cpu_arch_parse("sbsa") == NULL);
	CHECK(gb_cpu_arch_parse(NULL) == NULL && gb_cpu_arch_by_cuda_repo("linux-sbsa") == NULL);
	/* every spelling names one row */
	for (size_t i = 0; i < gb_cpu_arches_len; i++)
		for (size_t k = i + 1; k < gb_cpu_arches_len; k++) {
			CHECK(!streq(gb_cpu_arches[i].name, gb_cpu_arches[k].name));
			CHECK(!streq(gb_cpu_arches[i].deb, gb_cpu_arches[k].deb));
			CHECK(!streq(gb_cpu_arches[i].cuda_repo, gb_cpu_arches[k].cuda_repo));
			CHECK(!streq(gb_cpu_arches[i].platform, gb_cpu_arches[k].platform));
		}
	/* each loader names a row and a libc */
	for (size_t i = 0; i < gb_loaders_len; i++) {
		CHECK(gb_cpu_arch_find(gb_loaders[i].arch) != NULL);
		CHECK(streq(gb_loaders[i].libc, "glibc") || streq(gb_loaders[i].libc, "musl"));
	}
}

/* Every runfile row is named by its architecture, and lies in its directory
 * where XFree86/ has one (tesla/<version>/ has none): runfile_dir, or
 * Linux-<arch>, the name NVIDIA's server also gives aarch64's (the later
 * pins in data/nvidia/driver-runfiles-update.tsv use it; the same packaging
 * repository there pins 580.173.02's aarch64 runfile under it with the
 * sha256 and size it has under aarch64/). */
TEST(cpu_arch_runfiles)
{
	size_t seen[2] = { 0, 0 };

	for (size_t i = 0; i < gb_runfiles_len; i++) {
		const struct gb_runfile *rf = &gb_runfiles[i];
		const struct gb_cpu_arch *a = gb_cpu_arch_find(rf->arch);
		char dir[64], linux_dir[64], name[64];
		CHECK(a != NULL && a->supported && a->runfile_dir);
		if (!a || !a->runfile_dir)
			continue;
		snprintf(dir, sizeof(dir), "/XFree86/%s/%s/", a->runfile_dir, rf->version);
		snprintf(linux_dir, sizeof(linux_dir), "/XFree86/Linux-%s/%s/", a->name, rf->version);
		snprintf(name, sizeof(name), "/NVIDIA-Linux-%s-%s", a->name, rf->version);
		CHECK(!strstr(rf->url, "/XFree86/") || strstr(rf->url, dir) != NULL ||
		      strstr(rf->url, linux_dir) != NULL);
		CHECK(strstr(rf->url, name) != NULL);
		seen[a == gb_cpu_arch_find("aarch64")]++;
	}
	CHECK(seen[0] > 0 && seen[1] > 0);
}

/* The CUDA components by platform: the flags the catalog keeps. */
TEST(cuda_component_platform)
{
	const struct gb_cuda_component both = { "12.8.0", "cuda_cudart", "12.8.57", true, true };
	const struct gb_cuda_component x86 = { "12.8.0", "cuda_x", "1", true, false };
	const struct gb_cuda_component arm = { "12.8.0", "cuda_a", "1", false, true };

	CHECK(gb_cuda_component_for(&both, "linux-x86_64") && gb_cuda_component_for(&both, "linux-sbsa"));
	CHECK(gb_cuda_component_for(&x86, "linux-x86_64") && !gb_cuda_component_for(&x86, "linux-sbsa"));
	CHECK(!gb_cuda_component_for(&arm, "linux-x86_64") && gb_cuda_component_for(&arm, "linux-sbsa"));
	CHECK(!gb_cuda_component_for(&both, "linux-ppc64le") && !gb_cuda_component_for(&both, NULL));
}

/* --target-os's arch: the kernel's name or Debian's, the platform from the same row. */
TEST(target_os_arch)
{
	struct gb_plan_input in;
	char err[256];

	memset(&in, 0, sizeof(in));
	CHECK_INT(gb_plan_input_target_os("ubuntu:22.04:arm64", &in, err, sizeof(err)), 0);
	CHECK_STREQ(in.arch, "aarch64");
	CHECK_STREQ(in.platform, "linux-sbsa");
	CHECK(in.arch_explicit);
	memset(&in, 0, sizeof(in));
	CHECK_INT(gb_plan_input_target_os("rhel:9:amd64", &in, err, sizeof(err)), 0);
	CHECK_STREQ(in.arch, "x86_64");
	CHECK_STREQ(in.platform, "linux-x86_64");
	/* no arch: this machine's when planned for, else x86_64 */
	memset(&in, 0, sizeof(in));
	snprintf(in.arch, sizeof(in.arch), "aarch64");
	CHECK_INT(gb_plan_input_target_os("debian:12", &in, err, sizeof(err)), 0);
	CHECK_STREQ(in.arch, "aarch64");
	CHECK_STREQ(in.platform, "linux-sbsa");
	CHECK(!in.arch_explicit);
	memset(&in, 0, sizeof(in));
	snprintf(in.arch, sizeof(in.arch), "ppc64le");
	CHECK_INT(gb_plan_input_target_os("debian:12", &in, err, sizeof(err)), 0);
	CHECK_STREQ(in.arch, "x86_64");
	CHECK_STREQ(in.platform, "linux-x86_64");
	CHECK_INT(gb_plan_input_target_os("debian:12:ppc64le", &in, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "arch must be x86_64 or aarch64 (arm64)") != NULL);
	CHECK_INT(gb_plan_input_target_os("debian:12:sbsa", &in, err, sizeof(err)), -EINVAL);
	CHECK_INT(gb_plan_input_target_os("debian:12:", &in, err, sizeof(err)), -EINVAL);
}

/* The kernel's module suffixes, one list (install once knew no .ko.gz). */
TEST(kmod_suffixes)
{
	CHECK_STREQ(gb_kmod_suffix("nvidia.ko"), ".ko");
	CHECK_STREQ(gb_kmod_suffix("nvidia.ko.xz"), ".ko.xz");
	CHECK_STREQ(gb_kmod_suffix("nvidia.ko.zst"), ".ko.zst");
	CHECK_STREQ(gb_kmod_suffix("nvidia-current-open.ko.gz"), ".ko.gz");
	CHECK(gb_kmod_suffix("nvidia.ko.bz2") == NULL);
	CHECK(gb_kmod_suffix("nvidia") == NULL);
	CHECK(gb_kmod_suffix(".ko") == NULL);
	CHECK(gb_kmod_suffix(NULL) == NULL);
	CHECK_STREQ(gb_kmod_suffixes[0], ".ko");
}

/* Where each method's module lands, and detect looks in each. */
TEST(module_dirs)
{
	static const enum gb_module_source methods[] = { GB_MODULES_DEB, GB_MODULES_RPM, GB_MODULES_RUNFILE };
	const char *const *any = gb_module_dirs(GB_MODULES_ANY);

	CHECK_STREQ(gb_module_dirs(GB_MODULES_DEB)[0], "updates/dkms");
	CHECK_STREQ(gb_module_dirs(GB_MODULES_DEB)[1], "updates/gpuboot"); /* a mirror's prebuilt package */
	CHECK(gb_module_dirs(GB_MODULES_DEB)[2] == NULL);
	CHECK_STREQ(gb_module_dirs(GB_MODULES_RPM)[0], "extra");
	CHECK_STREQ(gb_module_dirs(GB_MODULES_RPM)[1], "updates");
	CHECK_STREQ(gb_module_dirs(GB_MODULES_RUNFILE)[0], "kernel/drivers/video");
	CHECK_STREQ(any[0], "updates/dkms"); /* depmod's order: updates/ first */
	/* every method's directory is one detect looks in (the runfile's oldest video/ aside) */
	for (size_t m = 0; m < ARRAY_SIZE(methods); m++)
		for (const char *const *d = gb_module_dirs(methods[m]); *d; d++) {
			bool found = streq(*d, "video");
			for (const char *const *a = any; *a; a++)
				found |= streq(*a, *d);
			CHECK(found);
		}
}

/* A release's NVIDIA repository row, and which have dnf module streams
 * (the plan's stream or branch lock, the rpm engine's stream enable). */
TEST(distro_find_streams)
{
	const struct gb_distro *d;

	d = gb_distro_find("rhel", "9.4");
	CHECK(d && streq(d->repo, "rhel9") && d->module_streams);
	d = gb_distro_find("rocky", "9.3");
	CHECK(d && streq(d->repo, "rhel9") && d->module_streams);
	d = gb_distro_find("rhel", "8.10");
	CHECK(d && streq(d->repo, "rhel8") && d->module_streams);
	d = gb_distro_find("rhel", "10.0");
	CHECK(d && streq(d->repo, "rhel10") && !d->module_streams);
	d = gb_distro_find("amzn", "2023");
	CHECK(d && streq(d->repo, "amzn2023") && d->module_streams);
	d = gb_distro_find("ubuntu", "22.04");
	CHECK(d && streq(d->repo, "ubuntu2204") && !d->module_streams);
	CHECK(gb_distro_find("ubuntu", "22.10") == NULL);
	CHECK(gb_distro_find("gentoo", "2.15") == NULL);
	CHECK(gb_distro_find("rhel", NULL) == NULL);
}

int main(void)
{
	unit_run_tests();
	UNIT_DONE();
}
