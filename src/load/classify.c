/* SPDX-License-Identifier: MIT */
/* The load-failure classifier: two tables, the causes (what the status
 * shows) and the kernel lines that name them (what the kernel prints),
 * read in order, first match wins; the errno decides only when no line
 * does. docs/load.md cites where every line comes from: a real capture
 * where we have one, else the kernel's or NVIDIA's source. */
#include "classify.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "exit-codes.h"
#include "shared/macro.h"
#include "shared/util.h"

#define DOCS "see docs/load.md"

static const struct gb_load_cause_info causes[] = {
	{ GB_CAUSE_NONE, "none", "loaded", "", 0 },
	{ GB_CAUSE_SECURE_BOOT_UNSIGNED, "secure-boot-unsigned", "Secure Boot rejected the unsigned NVIDIA module",
	  "sign the module with a key the firmware trusts (enrol it with mokutil --import, then reboot) or use "
	  "vendor-signed modules; " DOCS "#secure-boot",
	  GB_EXIT_MODULE },
	{ GB_CAUSE_SECURE_BOOT_UNTRUSTED_KEY, "secure-boot-untrusted-key",
	  "the module is signed by a key the kernel does not trust",
	  "enrol the signing certificate (mokutil --import CERT, confirm at the next boot, or add it to the "
	  "firmware db), or use vendor-signed modules; " DOCS "#secure-boot",
	  GB_EXIT_MODULE },
	{ GB_CAUSE_SECURE_BOOT_REJECTED, "secure-boot-rejected", "the kernel rejected the module's signature",
	  "Secure Boot is enforcing module signatures: sign the module with an enrolled key or use vendor-signed "
	  "modules; " DOCS "#secure-boot",
	  GB_EXIT_MODULE },
	{ GB_CAUSE_SECURE_BOOT_LOCKDOWN, "secure-boot-lockdown",
	  "the locked-down kernel (Secure Boot) refuses unsigned modules",
	  "sign the module with a key the firmware trusts (mokutil --import) or use vendor-signed modules; "
	  "lockdown comes with Secure Boot; " DOCS "#secure-boot",
	  GB_EXIT_MODULE },
	{ GB_CAUSE_GPU_NEEDS_PROPRIETARY, "gpu-needs-proprietary",
	  "the open kernel module cannot drive this GPU (it has no GSP)",
	  "use the proprietary module flavour for GPUs older than Turing (module_flavour = proprietary in the "
	  "profile); " DOCS "#unsupported-gpu",
	  GB_EXIT_UNSUPPORTED_GPU },
	{ GB_CAUSE_GPU_UNSUPPORTED, "gpu-unsupported-by-branch", "this driver branch does not support the GPU",
	  "choose a branch that supports this GPU (gpuboot plan shows the catalog's last branch for it); " DOCS
	  "#unsupported-gpu",
	  GB_EXIT_UNSUPPORTED_GPU },
	{ GB_CAUSE_NO_GPU, "no-gpu", "no NVIDIA GPU the driver can drive",
	  "check that lspci shows a 10de device, that the VM has its GPU attached, and that no other driver "
	  "(vfio-pci, nouveau) holds it; " DOCS "#no-gpu",
	  GB_EXIT_NO_GPU },
	{ GB_CAUSE_FIRMWARE, "gsp-firmware", "the GPU's firmware (GSP) failed to load or start",
	  "install the firmware of this driver version (firmware-nvidia-gsp, nvidia-firmware-<branch>); with the "
	  "proprietary flavour NVreg_EnableGpuFirmware=0 runs without GSP; " DOCS "#firmware",
	  GB_EXIT_MODULE },
	{ GB_CAUSE_KERNEL_TOO_NEW, "kernel-too-new", "the kernel is too new for this driver",
	  "this driver uses kernel symbols that are GPL-only in this kernel: choose a newer driver branch, or "
	  "boot a kernel the branch supports; " DOCS "#kernel",
	  GB_EXIT_MODULE },
	{ GB_CAUSE_KERNEL_MISMATCH, "kernel-mismatch", "the module was built for another kernel",
	  "run gpuboot --repair to rebuild or reinstall the modules for the running kernel (uname -r); " DOCS "#kernel",
	  GB_EXIT_MODULE },
	{ GB_CAUSE_MODULE_MISSING, "module-missing", "no NVIDIA module for the running kernel",
	  "run gpuboot --repair, or install the NVIDIA module for the running kernel (uname -r); " DOCS "#kernel",
	  GB_EXIT_MODULE },
	{ GB_CAUSE_OTHER_VERSION_LOADED, "other-version-loaded", "another version of the NVIDIA module is loaded",
	  "stop its users (nvidia-persistenced, a display manager) and unload it (modprobe -r nvidia_drm "
	  "nvidia_modeset nvidia_uvm nvidia), or reboot; " DOCS "#loaded",
	  GB_EXIT_MODULE },
	{ GB_CAUSE_UNKNOWN, "unknown", "the module insert failed for a reason gpuboot does not know",
	  "the kernel's lines are in the status document (load.kernel_lines); " DOCS " for the known causes",
	  GB_EXIT_MODULE },
};

/* A kernel line naming a cause: every needle must occur in the line. err
 * is the errno the line stands for (the inner insert's), 0 to keep the one
 * the insert returned. */
struct line_rule {
	enum gb_load_cause cause;
	const char *needle[2];
	int err;
};

static const struct line_rule line_rules[] = {
	/* the signature check comes first in the loader: nothing else ran */
	{ GB_CAUSE_SECURE_BOOT_UNSIGNED, { "oading of unsigned module is rejected" }, EKEYREJECTED },
	{ GB_CAUSE_SECURE_BOOT_UNTRUSTED_KEY, { "oading of module with unavailable key is rejected" }, EKEYREJECTED },
	{ GB_CAUSE_SECURE_BOOT_UNTRUSTED_KEY,
	  { "oading of module with unsupported crypto is rejected" },
	  EKEYREJECTED },
	{ GB_CAUSE_SECURE_BOOT_LOCKDOWN, { "Lockdown:", "unsigned module loading is restricted" }, EPERM },
	/* NVIDIA's probe: the GPU is there, but this module cannot drive it */
	{ GB_CAUSE_GPU_NEEDS_PROPRIETARY, { "NVRM:", "is not supported by open nvidia.ko" }, ENODEV },
	{ GB_CAUSE_GPU_UNSUPPORTED, { "NVRM:", "installed in this system is not supported by the" }, ENODEV },
	/* the module loader: built for another kernel */
	{ GB_CAUSE_KERNEL_TOO_NEW, { "GPL-incompatible module", "uses GPL-only symbol" }, 0 },
	{ GB_CAUSE_KERNEL_MISMATCH, { "version magic '", "' should be '" }, ENOEXEC },
	{ GB_CAUSE_KERNEL_MISMATCH, { "disagrees about version of symbol" }, EINVAL },
	{ GB_CAUSE_KERNEL_MISMATCH, { "Unknown symbol" }, ENOENT },
	/* the GPU's firmware */
	{ GB_CAUSE_FIRMWARE, { "Direct firmware load for nvidia/", "failed with error" }, 0 },
	{ GB_CAUSE_FIRMWARE, { "NVRM:", "need firmware to initialize GSP" }, 0 },
	{ GB_CAUSE_FIRMWARE, { "NVRM:", "_kgspBootGspRm" }, 0 },
	{ GB_CAUSE_FIRMWARE, { "NVRM:", "GSP Timeout" }, 0 },
	{ GB_CAUSE_FIRMWARE, { "waiting for RPC response from GPU", "GSP" }, 0 },
	{ GB_CAUSE_FIRMWARE, { "NVRM:", "GSP firmware" }, 0 },
	{ GB_CAUSE_FIRMWARE, { "NVRM:", "RmInitAdapter failed" }, 0 },
	/* the driver found nothing to drive */
	{ GB_CAUSE_NO_GPU, { "NVRM: No NVIDIA GPU found" }, ENODEV },
};

const struct gb_load_cause_info *gb_load_cause_info(enum gb_load_cause cause)
{
	if ((int)cause < 0 || cause >= _GB_CAUSE_MAX)
		cause = GB_CAUSE_UNKNOWN;
	return &causes[cause];
}

const struct gb_load_cause_info *gb_load_cause_by_id(const char *id)
{
	for (size_t i = 0; i < ARRAY_SIZE(causes); i++)
		if (streq(causes[i].id, id))
			return &causes[i];
	return NULL;
}

const char *gb_load_errno_name(int err, char *buf, size_t bufsz)
{
	static const struct {
		int e;
		const char *name;
	} names[] = {
		{ EPERM, "EPERM" },     { ENOENT, "ENOENT" },       { EIO, "EIO" },
		{ ENOEXEC, "ENOEXEC" }, { ENOMEM, "ENOMEM" },       { EACCES, "EACCES" },
		{ EFAULT, "EFAULT" },   { EBUSY, "EBUSY" },         { EEXIST, "EEXIST" },
		{ ENODEV, "ENODEV" },   { EINVAL, "EINVAL" },       { ENOSPC, "ENOSPC" },
		{ ETXTBSY, "ETXTBSY" }, { ENOSYS, "ENOSYS" },       { ENODATA, "ENODATA" },
		{ EBADMSG, "EBADMSG" }, { ENOKEY, "ENOKEY" },       { EKEYREJECTED, "EKEYREJECTED" },
		{ ENOPKG, "ENOPKG" },   { ETIMEDOUT, "ETIMEDOUT" },
	};
	int e = err < 0 ? -err : err;
	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		if (names[i].e == e)
			return names[i].name;
	snprintf(buf, bufsz, "E%d", e);
	return buf;
}

static bool rule_matches(const struct line_rule *r, const char *line)
{
	for (size_t k = 0; k < ARRAY_SIZE(r->needle); k++)
		if (r->needle[k] && !strstr(line, r->needle[k]))
			return false;
	return true;
}

/* The first line worth quoting for an unknown cause: not the taint notices
 * every out-of-tree module prints. */
static const char *first_telling_line(const char *const *lines, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (lines[i] && !strstr(lines[i], "taint"))
			return lines[i];
	return n && lines[0] ? lines[0] : NULL;
}

static enum gb_load_cause cause_from_errno(int err)
{
	switch (err < 0 ? -err : err) {
	case EKEYREJECTED: return GB_CAUSE_SECURE_BOOT_REJECTED;
	case ENOEXEC: return GB_CAUSE_KERNEL_MISMATCH;
	case ENOENT: return GB_CAUSE_MODULE_MISSING;
	case ENODEV: return GB_CAUSE_NO_GPU;
	case EEXIST: return GB_CAUSE_OTHER_VERSION_LOADED;
	default: return GB_CAUSE_UNKNOWN;
	}
}

void gb_load_classify(int err, const char *const *lines, size_t n_lines, struct gb_load_class *ret)
{
	char ebuf[16];
	const char *first;

	memset(ret, 0, sizeof(*ret));
	ret->err = err > 0 ? -err : err;
	for (size_t r = 0; r < ARRAY_SIZE(line_rules); r++)
		for (size_t i = 0; i < n_lines; i++) {
			if (!lines[i] || !rule_matches(&line_rules[r], lines[i]))
				continue;
			ret->info = gb_load_cause_info(line_rules[r].cause);
			if (line_rules[r].err)
				ret->err = -line_rules[r].err;
			gb_strscpy(ret->detail, sizeof(ret->detail), lines[i]);
			return;
		}
	ret->info = gb_load_cause_info(err == 0 ? GB_CAUSE_UNKNOWN : cause_from_errno(err));
	if (ret->info->cause != GB_CAUSE_UNKNOWN)
		return;
	first = first_telling_line(lines, n_lines);
	snprintf(ret->detail, sizeof(ret->detail), "%s; %s%s",
	         err ? gb_load_errno_name(err, ebuf, sizeof(ebuf)) : "no errno",
	         first ? "the kernel said: " : "the kernel logged nothing", first ? first : "");
}
