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

/* SLES kernels ("5.14.21-150500.55.39-default") have no ABI-FLAVOUR form. */
static bool sles_kernel(const char *release)
{
	size_t n = strlen(release);
	return (n > 8 && streq(release + n - 8, "-default")) || (n > 6 && streq(release + n - 6, "-azure"));
}

/* "13.0" from a CUDA install: its version, else its directory name. */
static void cuda_major_minor(const struct gb_cuda_install *c, char *out, size_t n)
{
	const char *v = c->version;
	const char *dash = c->path ? strrchr(c->path, '-') : NULL;
	size_t len;
	if (!v && dash)
		v = dash + 1;
	out[0] = '\0';
	if (!v || !isdigit((unsigned char)*v))
		return;
	len = strspn(v, "0123456789.");
	{
		const char *dot = memchr(v, '.', len);
		const char *dot2 = dot ? memchr(dot + 1, '.', len - (size_t)(dot + 1 - v)) : NULL;
		if (dot2)
			len = (size_t)(dot2 - v);
	}
	if (len < n) {
		memcpy(out, v, len);
		out[len] = '\0';
	}
}

static void installed_from_facts(const struct gb_facts *f, struct gb_plan_input *in)
{
	const char *ver = f->nvidia.loaded_version ? f->nvidia.loaded_version : f->nvidia.installed.version;
	const char *flavor = f->nvidia.loaded_version ? f->nvidia.module_flavor : f->nvidia.installed.module_flavor;

	cp(in->installed.version, sizeof(in->installed.version), ver);
	cp(in->installed.flavor, sizeof(in->installed.flavor), flavor);
	cp(in->installed.source, sizeof(in->installed.source),
	   f->nvidia.loaded_version ? "loaded" : f->nvidia.installed.source);
	in->installed.loaded = f->nvidia.loaded_version != NULL;
	in->installed.module = in->installed.loaded || f->nvidia.installed.module_kernel != NULL;
	if (f->nvidia.installed.module_kernel)
		cp(in->installed.signer, sizeof(in->installed.signer),
		   f->nvidia.installed.module_kernel->nvidia.signer);
	for (size_t i = 0; i < f->nvidia.n_cuda && in->n_cuda_installed < ARRAY_SIZE(in->cuda_installed); i++) {
		cuda_major_minor(&f->nvidia.cuda[i], in->cuda_installed[in->n_cuda_installed],
		                 sizeof(in->cuda_installed[0]));
		if (in->cuda_installed[in->n_cuda_installed][0])
			in->n_cuda_installed++;
	}
	cp(in->toolkit_installed, sizeof(in->toolkit_installed), f->nvidia.container_toolkit);
	in->n_engines = (unsigned)f->nvidia.n_engines;
	/* nvidia-fabricmanager-580 (Ubuntu, NVIDIA's apt), nvidia-fabricmanager
	 * (newer), nvidia-fabric-manager (rpm): "580.65.06-1" is 580.65.06 */
	for (size_t i = 0; i < f->nvidia.installed.n_packages; i++) {
		const struct gb_package *pk = &f->nvidia.installed.packages[i];
		if (pk->name && pk->version &&
		    (gb_startswith(pk->name, "nvidia-fabricmanager") ||
		     gb_startswith(pk->name, "nvidia-fabric-manager"))) {
			cp(in->fabricmanager_installed, sizeof(in->fabricmanager_installed), pk->version);
			in->fabricmanager_installed[strcspn(in->fabricmanager_installed, "-")] = '\0';
		}
	}
	/* the runfile method's, placed from NVIDIA's archives (no package) */
	if (!in->fabricmanager_installed[0])
		cp(in->fabricmanager_installed, sizeof(in->fabricmanager_installed), f->nvidia.fabricmanager_runfile);
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
	cp(in->kernel_flavour, sizeof(in->kernel_flavour), f->kernel.flavour);
	/* The modules are for the target kernel: the running one where its
	 * modules are in the root, else the newest installed (a disk image runs
	 * no kernel, and an image root being built shows the builder's). */
	cp(in->kernel_release, sizeof(in->kernel_release), f->kernel.target ? f->kernel.target : f->kernel.release);
	in->kernel_known = in->kernel_release[0] != '\0';
	{
		_cleanup_free_ char *fl = NULL;
		if (in->kernel_known && gb_kernel_flavour(in->kernel_release, &fl) < 0)
			return -ENOMEM; /* not a custom kernel: an unknown one */
		in->custom_kernel = in->kernel_known && !fl && !sles_kernel(in->kernel_release);
		if (fl)
			cp(in->kernel_flavour, sizeof(in->kernel_flavour), fl);
	}
	in->headers = f->kernel.headers;
	/* What the kernel will enforce decides, where it is known; else the firmware's variable. */
	in->secure_boot = f->secure_boot_state.enforcing >= 0 ? f->secure_boot_state.enforcing : f->secure_boot;
	in->kernel_keys_known = f->secure_boot_state.keys_known;
	for (size_t i = 0; i < f->secure_boot_state.n_keys && in->n_kernel_keys < GB_PLAN_MAX_KERNEL_KEYS; i++) {
		cp(in->kernel_keys[in->n_kernel_keys].name, sizeof(in->kernel_keys[0].name),
		   f->secure_boot_state.keys[i].name);
		cp(in->kernel_keys[in->n_kernel_keys].key_id, sizeof(in->kernel_keys[0].key_id),
		   f->secure_boot_state.keys[i].key_id);
		in->n_kernel_keys++;
	}
	in->nouveau_loaded = f->nouveau.loaded;
	in->nouveau_blacklisted = f->nouveau.blacklisted;
	in->n_nvswitches = (unsigned)f->n_nvswitches;
	in->mellanox = f->network.mellanox;
	in->efa = f->network.efa;
	installed_from_facts(f, in);
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
	/* From B200 on, an 8-GPU HGX board's NVSwitches sit behind its ConnectX
	 * bridge and are no PCI functions of the host: eight such GPUs are the
	 * board, and its switches are assumed (said so in the plan). */
	for (size_t j = 0; j < in->n_devices && !in->n_nvswitches; j++) {
		const struct gb_gpu_traits *t = gb_catalog_traits(in->devices[j].device);
		if (t && t->nvswitches_hidden && in->devices[j].count >= 8) {
			in->n_nvswitches = t->hgx8_nvswitches;
			in->nvswitches_assumed = true;
		}
	}
	if (f->kernel.release && f->kernel.target && !streq(f->kernel.release, f->kernel.target)) {
		/* The kernel running is not the root's (an image being built): what
		 * it has loaded is the builder's, not the image's. */
		in->installed.loaded = false;
		if (streq(in->installed.source, "loaded"))
			in->installed.version[0] = in->installed.flavor[0] = '\0';
		in->nouveau_loaded = in->nouveau_bound = false;
	}
	return 0;
}

int gb_plan_input_target_os(const char *spec, struct gb_plan_input *in, char *err, size_t errsz)
{
	char buf[96], *id, *ver, *arch;
	const struct gb_os *os;
	const struct gb_cpu_arch *target = NULL;

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
	os = gb_os_find(id);
	if (!os) {
		char known[256] = "";
		for (size_t i = 0; i < gb_oses_len; i++)
			snprintf(known + strlen(known), sizeof(known) - strlen(known), "%s%s", i ? ", " : "",
			         gb_oses[i].id);
		snprintf(err, errsz, "--target-os '%s': unknown distribution '%s' (%s)", spec, id, known);
		return -EINVAL;
	}
	for (const char *q = ver; *q; q++)
		if (!isdigit((unsigned char)*q) && *q != '.')
			goto bad;
	if (!*ver)
		goto bad;
	if (arch) { /* the kernel's name, or Debian's and Ubuntu's ("arm64") */
		const struct gb_cpu_arch *a = gb_cpu_arch_parse(arch);
		if (!a || !a->supported) {
			snprintf(err, errsz, "--target-os '%s': arch must be x86_64 or aarch64 (arm64)", spec);
			return -EINVAL;
		}
		target = a;
	}
	if (!gb_os_release_plausible(os, ver)) {
		snprintf(err, errsz, "--target-os '%s': '%s' is not a release of %s (%s)", spec, ver, id,
		         os->release_examples);
		return -EINVAL;
	}
	/* Without an explicit arch, the target's is this machine's. */
	in->arch_explicit = target != NULL;
	if (!target)
		target = gb_cpu_arch_target(in->arch);
	cp(in->os_id, sizeof(in->os_id), id);
	cp(in->os_version, sizeof(in->os_version), ver);
	cp(in->os_id_like, sizeof(in->os_id_like), os->like);
	cp(in->pkgmgr, sizeof(in->pkgmgr), gb_pkgmgr_to_string(os->pkgmgr));
	cp(in->libc, sizeof(in->libc), os->libc);
	cp(in->arch, sizeof(in->arch), target->name);
	cp(in->platform, sizeof(in->platform), target->platform);
	/* The image's kernel is not known: decided at first boot. */
	in->kernel_known = false;
	in->kernel_release[0] = in->kernel_flavour[0] = '\0';
	in->headers = false;
	in->secure_boot = -1;
	in->nouveau_loaded = in->nouveau_bound = in->nouveau_blacklisted = false;
	/* Another OS: nothing of this machine's is installed there, its engines are not known. */
	memset(&in->installed, 0, sizeof(in->installed));
	in->n_cuda_installed = 0;
	in->toolkit_installed[0] = '\0';
	in->engines_unknown = true;
	in->custom_kernel = false;
	in->target_os = true;
	return 0;
bad:
	snprintf(err, errsz, "--target-os '%s': expected ID:VERSION[:ARCH], like ubuntu:22.04 or rhel:9:aarch64", spec);
	return -EINVAL;
}

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
	{
		/* A name first ("A100" and "B300" are hex too), then a device ID. */
		char suggest[400];
		uint16_t d16 = 0;
		int r = gb_catalog_gpu_find(buf, &d16, suggest, sizeof(suggest));
		if (r == 0) {
			dev = d16;
			found = true;
		}
		if (!found && strlen(buf) == 4 && gb_safe_atou32(buf, 16, &dev) == 0)
			found = true;
		if (!found && gb_startswith(buf, "10de:") && strlen(buf) == 9 && gb_safe_atou32(buf + 5, 16, &dev) == 0)
			found = true;
		if (!found && r == -ENOTUNIQ) {
			snprintf(err, errsz, "--target-gpu '%s': several GPUs match; did you mean %s?", spec, suggest);
			return -EINVAL;
		}
		if (!found) {
			snprintf(
			    err, errsz,
			    "--target-gpu '%s': not a known model (H100, A100, L4, T4, K80, RTX 4090, ...), a device "
			    "ID (2330) or a pci.ids name%s%s",
			    spec, suggest[0] ? "; did you mean " : "", suggest);
			return -EINVAL;
		}
	}
	{
		const struct gb_gpu_traits *t = gb_catalog_traits((uint16_t)dev);
		if (t && t->aarch64_only) {
			if (in->arch_explicit && !streq(in->arch, "aarch64")) {
				snprintf(err, errsz,
				         "--target-gpu '%s' is attached only to aarch64 hosts; --target-os asks for %s",
				         spec, in->arch);
				return -EINVAL;
			}
			if (!streq(in->arch, "aarch64")) {
				/* Another machine than this one: nothing of this one's is installed there. */
				memset(&in->installed, 0, sizeof(in->installed));
				in->n_cuda_installed = 0;
				in->toolkit_installed[0] = '\0';
				in->kernel_known = in->headers = in->custom_kernel = false;
				in->kernel_release[0] = in->kernel_flavour[0] = '\0';
			}
			cp(in->arch, sizeof(in->arch), "aarch64");
			cp(in->platform, sizeof(in->platform), gb_cpu_arch_find("aarch64")->platform);
		}
		in->n_nvswitches = count >= 8 && t ? t->hgx8_nvswitches : 0;
	}
	in->n_devices = 1;
	in->devices[0].device = (uint16_t)dev;
	in->devices[0].count = count;
	in->nouveau_bound = false;
	in->target_gpu = true;
	return 0;
bad:
	snprintf(err, errsz, "--target-gpu '%s': expected MODEL or DEVICE_ID, optionally xN (H100x8)", spec);
	return -EINVAL;
}
