/* SPDX-License-Identifier: MIT */
/* The distributions: one row per os-release ID, the one table every stage
 * asks what a distribution is (its family, package manager, release
 * numbering, oldest release, NVIDIA repository and headers package). A
 * release's own facts (its NVIDIA repository directory, kernels) are
 * gb_distros, keyed by a row's repo. */
#include "catalog.h"

#include <string.h>

#include "shared/macro.h"
#include "shared/util.h"

#define DEB_HEADERS "linux-headers-%s"
#define RPM_HEADERS "kernel-devel-%s"

/* ID_LIKE as each distribution's own os-release writes it. Oracle Linux's
 * ID is "ol"; Amazon Linux 2023's is "amzn" (VERSION_ID 2023). Fedora has
 * no repo: NVIDIA's fedoraNN repositories follow Fedora's releases, which
 * outrun the catalog, and gpuboot drives none of them. */
/* id, ID_LIKE, family, package manager, libc, release numbering and its
 * examples, oldest release, NVIDIA repository prefix and whether it is per
 * major release, headers package. */
const char *const gb_nvidia_lib_dirs[] = {
	"usr/lib/x86_64-linux-gnu",
	"usr/lib/x86_64-linux-gnu/nvidia/current", /* Debian: the real files behind its alternatives */
	"usr/lib/aarch64-linux-gnu",
	"usr/lib/aarch64-linux-gnu/nvidia/current",
	"usr/lib64",
	"usr/lib",
	"usr/local/nvidia/lib64",
	"lib/x86_64-linux-gnu",
	"lib64",
	NULL,
};

const struct gb_debian_driver gb_debian_drivers[] = {
	{ "open", "nvidia-open-kernel-dkms", "nvidia-current-open" },
	{ "proprietary", "nvidia-kernel-dkms", "nvidia-current" },
	{ NULL, NULL, NULL },
};

const char *const gb_debian_userspace[] = { "firmware-nvidia-gsp", "nvidia-smi", "libcuda1", "libnvidia-ml1", NULL };

const struct gb_debian_driver *gb_debian_driver_find(const char *flavor)
{
	for (const struct gb_debian_driver *d = gb_debian_drivers; flavor && d->flavor; d++)
		if (streq(d->flavor, flavor))
			return d;
	return NULL;
}

const struct gb_os gb_oses[] = {
	{ "ubuntu", "debian", GB_OS_FAMILY_DEBIAN, GB_PKGMGR_APT, "glibc", GB_RELEASE_YEAR_MONTH,
	  "like 20.04, 22.04, 24.04", "20.04", "ubuntu", false, DEB_HEADERS },
	{ "debian", "", GB_OS_FAMILY_DEBIAN, GB_PKGMGR_APT, "glibc", GB_RELEASE_MAJOR, "like 12, 13", "11", "debian",
	  false, DEB_HEADERS },
	{ "rhel", "fedora", GB_OS_FAMILY_RHEL, GB_PKGMGR_DNF, "glibc", GB_RELEASE_MAJOR_MINOR, "like 9 or 9.4", "8",
	  "rhel", true, RPM_HEADERS },
	{ "rocky", "rhel centos fedora", GB_OS_FAMILY_RHEL, GB_PKGMGR_DNF, "glibc", GB_RELEASE_MAJOR_MINOR,
	  "like 9 or 9.4", "8", "rhel", true, RPM_HEADERS },
	{ "almalinux", "rhel centos fedora", GB_OS_FAMILY_RHEL, GB_PKGMGR_DNF, "glibc", GB_RELEASE_MAJOR_MINOR,
	  "like 9 or 9.4", "8", "rhel", true, RPM_HEADERS },
	{ "ol", "fedora", GB_OS_FAMILY_RHEL, GB_PKGMGR_DNF, "glibc", GB_RELEASE_MAJOR_MINOR, "like 9 or 9.4", "8",
	  "rhel", true, RPM_HEADERS },
	{ "centos", "rhel fedora", GB_OS_FAMILY_RHEL, GB_PKGMGR_DNF, "glibc", GB_RELEASE_MAJOR_MINOR, "like 9", "8",
	  "rhel", true, RPM_HEADERS },
	{ "amzn", "fedora", GB_OS_FAMILY_FEDORA, GB_PKGMGR_DNF, "glibc", GB_RELEASE_AMAZON, "2023", "2023", "amzn",
	  false, RPM_HEADERS },
	{ "fedora", "", GB_OS_FAMILY_FEDORA, GB_PKGMGR_DNF, "glibc", GB_RELEASE_MAJOR_MINOR, "like 41 or 42", NULL,
	  NULL, false, RPM_HEADERS },
	{ "sles", "suse", GB_OS_FAMILY_SUSE, GB_PKGMGR_ZYPPER, "glibc", GB_RELEASE_SUSE, "like 15.6", "15", "sles",
	  true, "kernel-default-devel" },
	{ "opensuse-leap", "suse opensuse", GB_OS_FAMILY_SUSE, GB_PKGMGR_ZYPPER, "glibc", GB_RELEASE_SUSE, "like 15.6",
	  "15", "opensuse", true, "kernel-default-devel" },
	{ "alpine", "", GB_OS_FAMILY_ALPINE, GB_PKGMGR_APK, "musl", GB_RELEASE_MAJOR_MINOR, "like 3.20", NULL, NULL,
	  false, NULL },
};
const size_t gb_oses_len = ARRAY_SIZE(gb_oses);

const struct gb_os *gb_os_find(const char *id)
{
	for (size_t i = 0; id && *id && i < gb_oses_len; i++)
		if (streq(gb_oses[i].id, id))
			return &gb_oses[i];
	return NULL;
}

const struct gb_os *gb_os_lookup(const char *id, const char *id_like)
{
	const struct gb_os *os = gb_os_find(id);
	const char *w = id_like;
	char word[32];

	while (!os && gb_next_word(&w, " \t", word, sizeof(word)))
		os = gb_os_find(word);
	return os;
}

bool gb_os_release_plausible(const struct gb_os *os, const char *version)
{
	uint32_t major, minor = 0;
	char buf[32];
	char *dot;

	if (!os || !version || gb_strscpy(buf, sizeof(buf), version) < 0)
		return false;
	dot = strchr(buf, '.');
	if (dot)
		*dot++ = '\0';
	if (gb_safe_atou32(buf, 10, &major) < 0 || (dot && gb_safe_atou32(dot, 10, &minor) < 0))
		return false;
	switch (os->release) {
	case GB_RELEASE_YEAR_MONTH: /* YY.MM, April or October, two digits each */
		return dot && strlen(buf) == 2 && strlen(dot) == 2 && (minor == 4 || minor == 10) && major >= 14;
	case GB_RELEASE_MAJOR: return !dot && major >= 8 && major < 30;
	case GB_RELEASE_AMAZON: return !dot && (major == 2 || major == 2023);
	case GB_RELEASE_SUSE: return major >= 12 && major < 30;
	case GB_RELEASE_MAJOR_MINOR: break;
	}
	return major >= 1 && major < 100;
}

static const struct {
	const char *name;
	enum gb_pkgmgr pm;
} pkgmgr_names[] = {
	{ "apt", GB_PKGMGR_APT },       { "dnf", GB_PKGMGR_DNF }, { "yum", GB_PKGMGR_DNF },
	{ "zypper", GB_PKGMGR_ZYPPER }, { "apk", GB_PKGMGR_APK },
};

enum gb_pkgmgr gb_pkgmgr_from_string(const char *name)
{
	for (size_t i = 0; name && i < ARRAY_SIZE(pkgmgr_names); i++)
		if (streq(pkgmgr_names[i].name, name))
			return pkgmgr_names[i].pm;
	return GB_PKGMGR_NONE;
}

const char *gb_pkgmgr_to_string(enum gb_pkgmgr pm)
{
	switch (pm) {
	case GB_PKGMGR_APT: return "apt";
	case GB_PKGMGR_DNF: return "dnf";
	case GB_PKGMGR_ZYPPER: return "zypper";
	case GB_PKGMGR_APK: return "apk";
	case GB_PKGMGR_NONE: break;
	}
	return "";
}

const char *gb_os_family_to_string(enum gb_os_family f)
{
	switch (f) {
	case GB_OS_FAMILY_DEBIAN: return "debian";
	case GB_OS_FAMILY_RHEL: return "rhel";
	case GB_OS_FAMILY_FEDORA: return "fedora";
	case GB_OS_FAMILY_SUSE: return "suse";
	case GB_OS_FAMILY_ALPINE: return "alpine";
	case GB_OS_FAMILY_NONE: break;
	}
	return "";
}

/* One row per CPU architecture: its name as the kernel, dpkg, rpm, NVIDIA's
 * CUDA repositories, the CUDA redistributables and the driver runfiles
 * spell it. ppc64le is known (a root's loader names it) but not planned
 * for: NVIDIA's data-center drivers are not built for it. */
const struct gb_cpu_arch gb_cpu_arches[] = {
	{ "x86_64", "amd64", "x86_64", "x86_64", "linux-x86_64", "Linux-x86_64", true },
	{ "aarch64", "arm64", "aarch64", "sbsa", "linux-sbsa", "aarch64", true },
	{ "ppc64le", "ppc64el", "ppc64le", "ppc64le", "linux-ppc64le", NULL, false },
};
const size_t gb_cpu_arches_len = ARRAY_SIZE(gb_cpu_arches);

const struct gb_cpu_arch *gb_cpu_arch_find(const char *name)
{
	for (size_t i = 0; name && i < gb_cpu_arches_len; i++)
		if (streq(gb_cpu_arches[i].name, name))
			return &gb_cpu_arches[i];
	return NULL;
}

const struct gb_cpu_arch *gb_cpu_arch_parse(const char *word)
{
	const struct gb_cpu_arch *a = gb_cpu_arch_find(word);

	for (size_t i = 0; !a && word && i < gb_cpu_arches_len; i++)
		if (streq(gb_cpu_arches[i].deb, word))
			a = &gb_cpu_arches[i];
	return a;
}

const struct gb_cpu_arch *gb_cpu_arch_by_cuda_repo(const char *dir)
{
	for (size_t i = 0; dir && i < gb_cpu_arches_len; i++)
		if (streq(gb_cpu_arches[i].cuda_repo, dir))
			return &gb_cpu_arches[i];
	return NULL;
}

const struct gb_cpu_arch *gb_cpu_arch_target(const char *name)
{
	const struct gb_cpu_arch *a = gb_cpu_arch_find(name);
	return a && a->supported ? a : &gb_cpu_arches[0];
}

bool gb_cuda_component_for(const struct gb_cuda_component *c, const char *platform)
{
	const char *repo = NULL;

	for (size_t i = 0; platform && i < gb_cpu_arches_len; i++)
		if (streq(gb_cpu_arches[i].platform, platform))
			repo = gb_cpu_arches[i].cuda_repo;
	/* the redistrib JSON's platforms the catalog keeps (scripts/gen-catalog.py) */
	return repo && (streq(repo, "sbsa") ? c->sbsa : streq(repo, "x86_64") ? c->x86_64 : false);
}

/* glibc's loaders (the FHS path, then Debian's multiarch one), then musl's. */
const struct gb_loader gb_loaders[] = {
	{ "lib64/ld-linux-x86-64.so.2", "x86_64", "glibc" },
	{ "lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", "x86_64", "glibc" },
	{ "lib/ld-linux-aarch64.so.1", "aarch64", "glibc" },
	{ "lib/aarch64-linux-gnu/ld-linux-aarch64.so.1", "aarch64", "glibc" },
	{ "lib64/ld64.so.2", "ppc64le", "glibc" },
	{ "lib/ld-musl-x86_64.so.1", "x86_64", "musl" },
	{ "lib/ld-musl-aarch64.so.1", "aarch64", "musl" },
};
const size_t gb_loaders_len = ARRAY_SIZE(gb_loaders);

/* Where NVIDIA's module lands below lib/modules/<release>/: DKMS's
 * updates/dkms on Debian and Ubuntu (updates/gpuboot: a mirror's prebuilt
 * module package, repair/modules-build.c); DKMS and kmod packages' extra/ on RHEL
 * and Amazon Linux, SUSE's KMPs' updates/; nvidia-installer's
 * kernel/drivers/video (video/ on its oldest layouts, extra/nvidia where a
 * distribution's kmod build puts it). */
static const char *const module_dirs_any[] = {
	"updates/dkms", "updates/gpuboot", "updates", "extra", "extra/nvidia", "kernel/drivers/video", NULL,
};
static const char *const module_dirs_deb[] = { "updates/dkms", "updates/gpuboot", NULL };
static const char *const module_dirs_rpm[] = { "extra", "updates", NULL };
static const char *const module_dirs_runfile[] = { "kernel/drivers/video", "updates/dkms", "extra", "video", NULL };

const char *const *gb_module_dirs(enum gb_module_source source)
{
	switch (source) {
	case GB_MODULES_DEB: return module_dirs_deb;
	case GB_MODULES_RPM: return module_dirs_rpm;
	case GB_MODULES_RUNFILE: return module_dirs_runfile;
	case GB_MODULES_ANY: break;
	}
	return module_dirs_any;
}

const struct gb_distro *gb_distro_find(const char *os_id, const char *os_version)
{
	const struct gb_os *os = gb_os_find(os_id);
	char major[16];

	if (!os || !os->repo || !os_version)
		return NULL;
	gb_strscpy(major, sizeof(major), os_version);
	if (os->repo_major)
		major[strcspn(major, ".")] = '\0';
	for (size_t i = 0; i < gb_distros_len; i++) {
		const struct gb_distro *d = &gb_distros[i];
		if (streq(d->id, os->repo) && (streq(d->version_id, os_version) || streq(d->version_id, major)))
			return d;
	}
	return NULL;
}
