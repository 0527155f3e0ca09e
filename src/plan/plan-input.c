/* SPDX-License-Identifier: MIT */
/* The plan's input: detected facts, or targets for a machine that is not
 * this one (image builds, fleet planning). */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"
#include "shared/macro.h"
#include "shared/util.h"

static void cp(char *dst, size_t n, const char *src)
{
	gb_strscpy(dst, n, src ? src : "");
}

int gb_plan_input_from_facts(const struct gb_facts *f, struct gb_plan_input *in)
{
	memset(in, 0, sizeof(*in));
	cp(in->os_id, sizeof(in->os_id), f->os.id);
	cp(in->os_version, sizeof(in->os_version), f->os.version_id);
	cp(in->os_id_like, sizeof(in->os_id_like), f->os.id_like);
	cp(in->libc, sizeof(in->libc), f->os.libc);
	cp(in->pkgmgr, sizeof(in->pkgmgr), f->os.package_manager);
	cp(in->arch, sizeof(in->arch), f->cpu.arch);
	cp(in->platform, sizeof(in->platform), f->cpu.nvidia_platform);
	cp(in->kernel_release, sizeof(in->kernel_release), f->kernel.release);
	cp(in->kernel_flavour, sizeof(in->kernel_flavour), f->kernel.flavour);
	in->kernel_known = f->kernel.release != NULL;
	in->headers = f->kernel.headers;
	in->secure_boot = f->secure_boot;
	in->nouveau_loaded = f->nouveau.loaded;
	in->nouveau_blacklisted = f->nouveau.blacklisted;
	in->n_nvswitches = (unsigned)f->n_nvswitches;
	in->mellanox = f->network.mellanox;
	for (size_t i = 0; i < f->n_gpus; i++) {
		const struct gb_pci_fn *g = &f->gpus[i];
		size_t j;
		if (g->bound_driver && streq(g->bound_driver, "nouveau"))
			in->nouveau_bound = true;
		for (j = 0; j < in->n_devices; j++)
			if (in->devices[j].device == g->device)
				break;
		if (j == in->n_devices) {
			if (in->n_devices == GB_PLAN_MAX_GPUS)
				continue;
			in->devices[j].device = g->device;
			in->n_devices++;
		}
		in->devices[j].count++;
	}
	return 0;
}

static const struct {
	const char *id;
	const char *pkgmgr;
	const char *id_like;
} families[] = {
	{ "ubuntu", "apt", "debian" },
	{ "debian", "apt", "" },
	{ "rhel", "dnf", "fedora" },
	{ "rocky", "dnf", "rhel centos fedora" },
	{ "almalinux", "dnf", "rhel centos fedora" },
	{ "amzn", "dnf", "fedora" },
	{ "fedora", "dnf", "" },
	{ "sles", "zypper", "suse" },
	{ "opensuse-leap", "zypper", "suse opensuse" },
	{ "alpine", "apk", "" },
};

int gb_plan_input_target_os(const char *spec, struct gb_plan_input *in, char *err, size_t errsz)
{
	char buf[96], *id, *ver, *arch;
	size_t i;

	if (gb_strscpy(buf, sizeof(buf), spec) < 0)
		goto bad;
	id = buf;
	ver = strchr(id, ':');
	if (!ver)
		goto bad;
	*ver++ = '\0';
	arch = strchr(ver, ':');
	if (arch)
		*arch++ = '\0';
	for (i = 0; i < ARRAY_SIZE(families); i++)
		if (streq(families[i].id, id))
			break;
	if (i == ARRAY_SIZE(families)) {
		snprintf(err, errsz,
		         "--target-os '%s': unknown distribution '%s' (ubuntu, debian, rhel, rocky, almalinux, amzn, "
		         "fedora, sles, opensuse-leap, alpine)",
		         spec, id);
		return -EINVAL;
	}
	for (const char *q = ver; *q; q++)
		if (!isdigit((unsigned char)*q) && *q != '.')
			goto bad;
	if (!*ver)
		goto bad;
	if (arch && !streq(arch, "x86_64") && !streq(arch, "aarch64")) {
		snprintf(err, errsz, "--target-os '%s': arch must be x86_64 or aarch64", spec);
		return -EINVAL;
	}
	cp(in->os_id, sizeof(in->os_id), id);
	cp(in->os_version, sizeof(in->os_version), ver);
	cp(in->os_id_like, sizeof(in->os_id_like), families[i].id_like);
	cp(in->pkgmgr, sizeof(in->pkgmgr), families[i].pkgmgr);
	cp(in->libc, sizeof(in->libc), streq(id, "alpine") ? "musl" : "glibc");
	cp(in->arch, sizeof(in->arch), arch ? arch : "x86_64");
	cp(in->platform, sizeof(in->platform), arch && streq(arch, "aarch64") ? "linux-sbsa" : "linux-x86_64");
	/* The image's kernel is not known: decided at first boot. */
	in->kernel_known = false;
	in->kernel_release[0] = in->kernel_flavour[0] = '\0';
	in->headers = false;
	in->secure_boot = -1;
	in->nouveau_loaded = in->nouveau_bound = in->nouveau_blacklisted = false;
	in->target_os = true;
	return 0;
bad:
	snprintf(err, errsz, "--target-os '%s': expected ID:VERSION[:ARCH], like ubuntu:22.04 or rhel:9:aarch64", spec);
	return -EINVAL;
}

/* Short names people use for data-center GPUs. */
static const struct {
	const char *alias;
	uint16_t device;
} gpu_aliases[] = {
	{ "V100", 0x1db1 },      { "T4", 0x1eb8 },       { "A100", 0x20b2 },  { "A100-40GB", 0x20b0 },
	{ "A100-PCIE", 0x20b5 }, { "A30", 0x20b7 },      { "A10", 0x2236 },   { "A10G", 0x2237 },
	{ "RTX-A6000", 0x2230 }, { "L4", 0x27b8 },       { "L40S", 0x26b9 },  { "H100", 0x2330 },
	{ "H100-PCIE", 0x2331 }, { "H100-NVL", 0x2321 }, { "H200", 0x2335 },  { "H200-NVL", 0x233b },
	{ "GH200", 0x2342 },     { "B200", 0x2901 },     { "GB200", 0x2941 }, { "B300", 0x3182 },
	{ "GB300", 0x31c2 },
};

int gb_plan_input_target_gpu(const char *spec, struct gb_plan_input *in, char *err, size_t errsz)
{
	char buf[96], *x;
	uint32_t count = 1, dev = 0;
	bool found = false;

	if (gb_strscpy(buf, sizeof(buf), spec) < 0)
		goto bad;
	/* "H100x8": a count after the last 'x' that is followed only by digits. */
	x = strrchr(buf, 'x');
	if (x && x != buf && x[1] && strspn(x + 1, "0123456789") == strlen(x + 1)) {
		if (gb_safe_atou32(x + 1, 10, &count) < 0 || count == 0 || count > 64)
			goto bad;
		*x = '\0';
	}
	for (size_t i = 0; i < ARRAY_SIZE(gpu_aliases); i++)
		if (strcasecmp(gpu_aliases[i].alias, buf) == 0) {
			dev = gpu_aliases[i].device;
			found = true;
		}
	if (!found && strlen(buf) == 4 && gb_safe_atou32(buf, 16, &dev) == 0)
		found = true;
	if (!found && gb_startswith(buf, "10de:") && strlen(buf) == 9 && gb_safe_atou32(buf + 5, 16, &dev) == 0)
		found = true;
	if (!found)
		for (size_t i = 0; i < gb_pci_names_len; i++)
			if (strcasecmp(gb_pci_names[i].name, buf) == 0) {
				dev = gb_pci_names[i].device;
				found = true;
				break;
			}
	if (!found) {
		snprintf(
		    err, errsz,
		    "--target-gpu '%s': not a known model (H100, A100, L4, ...), a device ID (2330) or a pci.ids name",
		    spec);
		return -EINVAL;
	}
	in->n_devices = 1;
	in->devices[0].device = (uint16_t)dev;
	in->devices[0].count = count;
	in->n_nvswitches = 0;
	/* 8-GPU HGX boards of the SXM generations carry NVSwitches. */
	if (count >= 8 && (dev == 0x2330 || dev == 0x2335 || dev == 0x20b0 || dev == 0x20b2 || dev == 0x2901))
		in->n_nvswitches = dev == 0x20b0 || dev == 0x20b2 ? 6 : 4;
	in->nouveau_bound = false;
	in->target_gpu = true;
	return 0;
bad:
	snprintf(err, errsz, "--target-gpu '%s': expected MODEL or DEVICE_ID, optionally xN (H100x8)", spec);
	return -EINVAL;
}
