/* SPDX-License-Identifier: MIT */
/* The detect stage: run each part, then render the facts. */
#include "detect.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "context.h"
#include "shared/log.h"
#include "shared/json-util.h"

int gb_detect(struct gb_ctx *ctx, struct gb_facts *ret)
{
	static int (*const parts[])(struct gb_ctx *, struct gb_facts *) = {
		gb_detect_os, gb_detect_kernel, gb_detect_platform, gb_detect_pci, gb_detect_net, gb_detect_nvidia,
	};
	struct gb_facts f = { .secure_boot = -1,
		              .secure_boot_state = { .shim_validation_disabled = -1, .enforcing = -1 } };
	int r;

	ctx->root->oom = false;
	for (size_t i = 0; i < ARRAY_SIZE(parts); i++) {
		r = parts[i](ctx, &f);
		if (r >= 0 && (ctx->root->oom || f.oom))
			r = -ENOMEM; /* a fact lost to memory would read as absent */
		if (r < 0) {
			gb_facts_done(&f);
			return r;
		}
	}
	*ret = f;
	return 0;
}

static void pci_fn_done(struct gb_pci_fn *fn)
{
	free(fn->bound_driver);
}

void gb_facts_done(struct gb_facts *f)
{
	free(f->os.id);
	free(f->os.version_id);
	free(f->os.id_like);
	free(f->os.pretty_name);
	free(f->os.version_codename);
	free(f->kernel.release);
	free(f->kernel.flavour);
	free(f->kernel.cmdline);
	free(f->kernel.target);
	for (size_t i = 0; i < f->kernel.n_installed; i++) {
		free(f->kernel.installed[i].release);
		gb_nvidia_module_done(&f->kernel.installed[i].nvidia);
	}
	free(f->kernel.installed);
	free(f->cpu.arch);
	free(f->secure_boot_state.lockdown);
	gb_kernel_keys_free(f->secure_boot_state.keys, f->secure_boot_state.n_keys);
	free(f->cloud.sys_vendor);
	free(f->cloud.product_name);
	for (size_t i = 0; i < f->n_gpus; i++)
		pci_fn_done(&f->gpus[i]);
	free(f->gpus);
	for (size_t i = 0; i < f->n_nvswitches; i++)
		pci_fn_done(&f->nvswitches[i]);
	free(f->nvswitches);
	for (size_t i = 0; i < f->network.n_ib; i++) {
		free(f->network.ib[i].device);
		free(f->network.ib[i].state);
		free(f->network.ib[i].rate);
		free(f->network.ib[i].link_layer);
	}
	free(f->network.ib);
	free(f->nvidia.loaded_version);
	free(f->nvidia.userspace_version);
	free(f->nvidia.userspace_path);
	for (size_t i = 0; i < f->nvidia.n_cuda; i++) {
		free(f->nvidia.cuda[i].path);
		free(f->nvidia.cuda[i].version);
	}
	free(f->nvidia.cuda);
	free(f->nvidia.container_toolkit);
	for (size_t i = 0; i < f->nvidia.n_engines; i++)
		free(f->nvidia.container_engines[i]);
	free(f->nvidia.container_engines);
	free(f->nvidia.installed.version);
	gb_packages_free(f->nvidia.installed.packages, f->nvidia.installed.n_packages);
	free(f->nvidia.installed.libcuda_version);
	free(f->nvidia.installed.libcuda_path);
	memset(f, 0, sizeof(*f));
}

static json_object *jstr(const char *s)
{
	return s ? gb_json_new_string(s) : NULL;
}

static json_object *jint(int v)
{
	return v >= 0 ? gb_json_new_int(v) : NULL;
}

/* 1, 0, -1 -> true, false, null */
static json_object *jbool(int v)
{
	return v >= 0 ? gb_json_new_boolean(v) : NULL;
}

static json_object *pci_fn_to_json(const struct gb_pci_fn *fn)
{
	json_object *o = gb_json_new_object(), *link = gb_json_new_object();
	char buf[32];

	gb_json_add(o, "pci_address", gb_json_new_string(fn->address));
	snprintf(buf, sizeof(buf), "%04x", fn->device);
	gb_json_add(o, "device_id", gb_json_new_string(buf));
	if (fn->subsystem_vendor >= 0 && fn->subsystem_device >= 0) {
		snprintf(buf, sizeof(buf), "%04x:%04x", (unsigned)fn->subsystem_vendor & 0xffffu,
		         (unsigned)fn->subsystem_device & 0xffffu);
		gb_json_add(o, "subsystem_id", gb_json_new_string(buf));
	} else {
		gb_json_add(o, "subsystem_id", NULL);
	}
	snprintf(buf, sizeof(buf), "%06x", fn->class_code & 0xffffffu);
	gb_json_add(o, "class", gb_json_new_string(buf));
	gb_json_add(o, "name", jstr(fn->catalog ? fn->catalog->name : NULL));
	gb_json_add(o, "chip", jstr(fn->catalog ? fn->catalog->chip : NULL));
	gb_json_add(o, "architecture", jstr(fn->catalog ? gb_arch_to_string(fn->catalog->arch) : NULL));
	gb_json_add(o, "compute_capability", jstr(fn->catalog ? fn->catalog->cc : NULL));
	gb_json_add(o, "bound_driver", jstr(fn->bound_driver));
	gb_json_add(o, "numa_node", fn->has_numa ? gb_json_new_int(fn->numa_node) : NULL);
	gb_json_add(link, "current_gen", jint(fn->link.current_gen));
	gb_json_add(link, "max_gen", jint(fn->link.max_gen));
	gb_json_add(link, "current_width", jint(fn->link.current_width));
	gb_json_add(link, "max_width", jint(fn->link.max_width));
	gb_json_add(o, "link", link);
	return o;
}

static json_object *module_to_json(const struct gb_nvidia_module *m)
{
	json_object *o;

	if (!m->path)
		return NULL;
	o = gb_json_new_object();
	gb_json_add(o, "path", jstr(m->path));
	gb_json_add(o, "version", jstr(m->version));
	gb_json_add(o, "flavor", jstr(m->flavor));
	gb_json_add(o, "signer", jstr(m->signer));
	return o;
}

static json_object *installed_to_json(const struct gb_facts *f)
{
	json_object *o = gb_json_new_object(), *pkgs = gb_json_new_array();
	const struct gb_kernel_install *k = f->nvidia.installed.module_kernel;

	gb_json_add(o, "version", jstr(f->nvidia.installed.version));
	gb_json_add(o, "source", jstr(f->nvidia.installed.source));
	gb_json_add(o, "module_flavor", jstr(f->nvidia.installed.module_flavor));
	gb_json_add(o, "module_path", jstr(k ? k->nvidia.path : NULL));
	gb_json_add(o, "module_kernel", jstr(k ? k->release : NULL));
	gb_json_add(o, "module_signer", jstr(k ? k->nvidia.signer : NULL));
	gb_json_add(o, "userspace_version", jstr(f->nvidia.userspace_version));
	gb_json_add(o, "libcuda_version", jstr(f->nvidia.installed.libcuda_version));
	for (size_t i = 0; i < f->nvidia.installed.n_packages; i++) {
		json_object *p = gb_json_new_object();
		gb_json_add(p, "name", jstr(f->nvidia.installed.packages[i].name));
		gb_json_add(p, "version", jstr(f->nvidia.installed.packages[i].version));
		gb_json_append(pkgs, p);
	}
	gb_json_add(o, "packages", pkgs);
	return o;
}

/* null when /proc/keys could not be read (an image root, a fixture without it) */
static json_object *kernel_keys_json(const struct gb_facts *f)
{
	json_object *a;
	if (!f->secure_boot_state.keys_known)
		return NULL;
	a = gb_json_new_array();
	for (size_t i = 0; i < f->secure_boot_state.n_keys; i++) {
		json_object *o = gb_json_new_object();
		gb_json_add(o, "name", jstr(f->secure_boot_state.keys[i].name));
		gb_json_add(o, "key_id", jstr(f->secure_boot_state.keys[i].key_id));
		gb_json_append(a, o);
	}
	return a;
}

json_object *gb_facts_to_json(const struct gb_facts *f)
{
	json_object *root = gb_json_new_object();
	json_object *os = gb_json_new_object(), *kernel = gb_json_new_object();
	json_object *cpu = gb_json_new_object(), *sb = gb_json_new_object();
	json_object *cloud = gb_json_new_object(), *gpus = gb_json_new_array();
	json_object *sw = gb_json_new_array(), *net = gb_json_new_object();
	json_object *ib = gb_json_new_array(), *nv = gb_json_new_object();
	json_object *cuda = gb_json_new_array(), *eng = gb_json_new_array();
	json_object *nouveau = gb_json_new_object(), *kernels = gb_json_new_array();

	gb_json_add(os, "id", jstr(f->os.id));
	gb_json_add(os, "version_id", jstr(f->os.version_id));
	gb_json_add(os, "id_like", jstr(f->os.id_like));
	gb_json_add(os, "version_codename", jstr(f->os.version_codename));
	gb_json_add(os, "pretty_name", jstr(f->os.pretty_name));
	gb_json_add(os, "libc", jstr(f->os.libc));
	gb_json_add(os, "package_manager", jstr(f->os.package_manager));
	gb_json_add(root, "os", os);

	gb_json_add(kernel, "release", jstr(f->kernel.release));
	gb_json_add(kernel, "flavour", jstr(f->kernel.flavour));
	gb_json_add(kernel, "headers", gb_json_new_boolean(f->kernel.headers));
	gb_json_add(kernel, "cmdline", jstr(f->kernel.cmdline));
	gb_json_add(kernel, "target", jstr(f->kernel.target));
	for (size_t i = 0; i < f->kernel.n_installed; i++) {
		const struct gb_kernel_install *k = &f->kernel.installed[i];
		json_object *o = gb_json_new_object();
		gb_json_add(o, "release", jstr(k->release));
		gb_json_add(o, "running", gb_json_new_boolean(k->running));
		gb_json_add(o, "headers", gb_json_new_boolean(k->headers));
		gb_json_add(o, "nvidia_module", module_to_json(&k->nvidia));
		gb_json_append(kernels, o);
	}
	gb_json_add(kernel, "installed", kernels);
	gb_json_add(root, "kernel", kernel);

	gb_json_add(cpu, "arch", jstr(f->cpu.arch));
	gb_json_add(cpu, "nvidia_platform", jstr(f->cpu.nvidia_platform));
	gb_json_add(root, "cpu", cpu);

	gb_json_add(sb, "enabled", jbool(f->secure_boot));
	gb_json_add(sb, "shim_validation_disabled", jbool(f->secure_boot_state.shim_validation_disabled));
	gb_json_add(sb, "lockdown", jstr(f->secure_boot_state.lockdown));
	gb_json_add(sb, "enforcing", jbool(f->secure_boot_state.enforcing));
	gb_json_add(sb, "kernel_keys", kernel_keys_json(f));
	gb_json_add(root, "secure_boot", sb);

	gb_json_add(cloud, "provider", jstr(f->cloud.provider));
	gb_json_add(cloud, "hypervisor", jstr(f->cloud.hypervisor));
	gb_json_add(cloud, "sys_vendor", jstr(f->cloud.sys_vendor));
	gb_json_add(cloud, "product_name", jstr(f->cloud.product_name));
	gb_json_add(root, "cloud", cloud);

	for (size_t i = 0; i < f->n_gpus; i++)
		gb_json_append(gpus, pci_fn_to_json(&f->gpus[i]));
	gb_json_add(root, "gpus", gpus);
	for (size_t i = 0; i < f->n_nvswitches; i++)
		gb_json_append(sw, pci_fn_to_json(&f->nvswitches[i]));
	gb_json_add(root, "nvswitches", sw);

	gb_json_add(net, "mellanox", gb_json_new_int((int)f->network.mellanox));
	gb_json_add(net, "efa", gb_json_new_int((int)f->network.efa));
	for (size_t i = 0; i < f->network.n_ib; i++) {
		const struct gb_ib_port *p = &f->network.ib[i];
		json_object *o = gb_json_new_object();
		gb_json_add(o, "device", jstr(p->device));
		gb_json_add(o, "port", gb_json_new_int((int)p->port));
		gb_json_add(o, "state", jstr(p->state));
		gb_json_add(o, "rate", jstr(p->rate));
		gb_json_add(o, "link_layer", jstr(p->link_layer));
		gb_json_append(ib, o);
	}
	gb_json_add(net, "infiniband", ib);
	gb_json_add(root, "network", net);

	gb_json_add(nv, "loaded_version", jstr(f->nvidia.loaded_version));
	gb_json_add(nv, "module_flavor", jstr(f->nvidia.module_flavor));
	gb_json_add(nv, "userspace_version", jstr(f->nvidia.userspace_version));
	for (size_t i = 0; i < f->nvidia.n_cuda; i++) {
		json_object *o = gb_json_new_object();
		gb_json_add(o, "path", jstr(f->nvidia.cuda[i].path));
		gb_json_add(o, "version", jstr(f->nvidia.cuda[i].version));
		gb_json_append(cuda, o);
	}
	gb_json_add(nv, "cuda_installs", cuda);
	gb_json_add(nv, "container_toolkit", jstr(f->nvidia.container_toolkit));
	for (size_t i = 0; i < f->nvidia.n_engines; i++)
		gb_json_append(eng, gb_json_new_string(f->nvidia.container_engines[i]));
	gb_json_add(nv, "container_engines", eng);
	gb_json_add(nv, "fabricmanager", gb_json_new_boolean(f->nvidia.fabricmanager));
	gb_json_add(nv, "persistenced", gb_json_new_boolean(f->nvidia.persistenced));
	gb_json_add(nv, "installed", installed_to_json(f));
	gb_json_add(root, "nvidia", nv);

	gb_json_add(nouveau, "loaded", gb_json_new_boolean(f->nouveau.loaded));
	gb_json_add(nouveau, "blacklisted", gb_json_new_boolean(f->nouveau.blacklisted));
	gb_json_add(root, "nouveau", nouveau);
	gb_json_add(root, "warnings", gb_json_new_int((int)f->warnings));
	return root;
}

static const char *or_dash(const char *s)
{
	return s && *s ? s : "-";
}

static void print_link(FILE *out, const struct gb_pci_link *l)
{
	if (l->current_gen < 0 && l->current_width < 0) {
		fputs("link -", out);
		return;
	}
	fprintf(out, "link Gen%d x%d (max Gen%d x%d)", l->current_gen, l->current_width, l->max_gen, l->max_width);
}

/* What is on disk: "installed: 535.261.03 (open, from module), module /lib/..., libcuda 535.261.03, 5 package(s)". */
static void print_installed(const struct gb_facts *f, FILE *out)
{
	const struct gb_kernel_install *k = f->nvidia.installed.module_kernel;

	fprintf(out, "%-12s %s (%s, from %s)", "installed:", or_dash(f->nvidia.installed.version),
	        or_dash(f->nvidia.installed.module_flavor), or_dash(f->nvidia.installed.source));
	if (k)
		fprintf(out, ", module %s%s", k->nvidia.path, k->nvidia.signer ? " (signed)" : "");
	else if (f->nvidia.loaded_version &&
	         (!f->kernel.target || !f->kernel.release || streq(f->kernel.target, f->kernel.release)))
		/* loaded in the running kernel: a module for it exists (the plan's
		 * module_for_kernel says so too), its file was not found */
		fprintf(out, ", module %s loaded (its file not found under lib/modules)", f->nvidia.loaded_version);
	else
		fputs(", no module for the target kernel", out);
	fprintf(out, ", libcuda %s, %zu package(s)\n", or_dash(f->nvidia.installed.libcuda_version),
	        f->nvidia.installed.n_packages);
}

void gb_facts_print(const struct gb_facts *f, FILE *out)
{
	fprintf(out, "%-12s %s (%s %s), %s, %s\n", "os:", or_dash(f->os.pretty_name), or_dash(f->os.id),
	        or_dash(f->os.version_id), or_dash(f->os.libc), or_dash(f->os.package_manager));
	fprintf(out, "%-12s %s (flavour %s), ", "kernel:", or_dash(f->kernel.release), or_dash(f->kernel.flavour));
	if (f->kernel.target && (!f->kernel.release || !streq(f->kernel.target, f->kernel.release)))
		fprintf(out, "target %s, ", f->kernel.target);
	fprintf(out, "headers %s\n", f->kernel.headers ? "present" : "missing");
	fprintf(out, "%-12s %s (%s)\n", "cpu:", or_dash(f->cpu.arch), or_dash(f->cpu.nvidia_platform));
	fprintf(out, "%-12s %s%s, lockdown %s, unsigned modules %s\n", "secure boot:",
	        f->secure_boot < 0 ? "not EFI / unknown"
	        : f->secure_boot   ? "on"
	                           : "off",
	        f->secure_boot_state.shim_validation_disabled == 1 ? " (shim validation disabled)" : "",
	        or_dash(f->secure_boot_state.lockdown),
	        f->secure_boot_state.enforcing < 0 ? "unknown"
	        : f->secure_boot_state.enforcing   ? "refused"
	                                           : "allowed");
	fprintf(out, "%-12s %s (hypervisor %s)\n", "cloud:", or_dash(f->cloud.provider), or_dash(f->cloud.hypervisor));
	if (f->n_gpus == 0)
		fprintf(out, "%-12s none\n", "gpus:");
	for (size_t i = 0; i < f->n_gpus; i++) {
		const struct gb_pci_fn *g = &f->gpus[i];
		fprintf(out, "%-12s %s %04x %s [%s, sm_%s], driver %s, numa %d, ", i == 0 ? "gpus:" : "", g->address,
		        g->device, g->catalog ? g->catalog->name : "unknown device",
		        g->catalog ? or_dash(gb_arch_to_string(g->catalog->arch)) : "-",
		        g->catalog ? or_dash(g->catalog->cc) : "-", or_dash(g->bound_driver), g->numa_node);
		print_link(out, &g->link);
		fputc('\n', out);
	}
	if (f->n_nvswitches)
		fprintf(out, "%-12s %zu\n", "nvswitches:", f->n_nvswitches);
	fprintf(out, "%-12s %u Mellanox function(s), %zu InfiniBand port(s), %u EFA function(s)\n",
	        "network:", f->network.mellanox, f->network.n_ib, f->network.efa);
	fprintf(out, "%-12s module %s (%s), userspace %s, toolkit %s\n", "nvidia:", or_dash(f->nvidia.loaded_version),
	        or_dash(f->nvidia.module_flavor), or_dash(f->nvidia.userspace_version),
	        or_dash(f->nvidia.container_toolkit));
	print_installed(f, out);
	for (size_t i = 0; i < f->nvidia.n_cuda; i++)
		fprintf(out, "%-12s %s %s\n", i == 0 ? "cuda:" : "", f->nvidia.cuda[i].path,
		        or_dash(f->nvidia.cuda[i].version));
	fprintf(out, "%-12s %s, %s\n", "nouveau:", f->nouveau.loaded ? "loaded" : "not loaded",
	        f->nouveau.blacklisted ? "blacklisted" : "not blacklisted");
}
