/* SPDX-License-Identifier: MIT */
/* The NVIDIA state already on the machine: the loaded kernel module and its
 * flavour, the userspace driver, CUDA installs, the Container Toolkit,
 * container engines, daemons; nouveau. */
#include <ctype.h>
#include <stdio.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "catalog/catalog.h"
#include "context.h"
#include "detect.h"
#include "effect/root-write.h"
#include "shared/digest.h"
#include "shared/log.h"
#include "shared/macro.h"
#include "shared/root.h"
#include "shared/util.h"
#include "shared/json-util.h"

int gb_nvrm_version_parse(const char *text, char **ret_version, const char **ret_flavor)
{
	const char *line = gb_startswith(text, "NVRM version:");
	const char *flavor;
	char tok[64];

	if (!line)
		return -EINVAL;
	/* Only the first line speaks of the kernel module. */
	{
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		_cleanup_free_ char *l = strndup(line, len);
		char *p;
		if (!l)
			return -ENOMEM;
		flavor = strstr(l, "Open Kernel Module") ? "open" : strstr(l, "Kernel Module") ? "proprietary" : NULL;
		for (p = l; *p;) {
			size_t n;
			while (*p && isspace((unsigned char)*p))
				p++;
			n = strcspn(p, " \t");
			if (n > 0 && n < sizeof(tok)) {
				memcpy(tok, p, n);
				tok[n] = '\0';
				if (gb_version_valid(tok) && strchr(tok, '.')) {
					char *v = strdup(tok);
					if (!v)
						return -ENOMEM;
					*ret_version = v;
					*ret_flavor = flavor;
					return 0;
				}
			}
			p += n;
		}
	}
	return -EINVAL;
}

/* A driver library by its versioned name, <prefix><version> in a library
 * directory ("libnvidia-ml.so.535.261.03"): the version is in the name. */
static int find_versioned_lib(struct gb_ctx *ctx, const char *prefix, char **ret_version, char **ret_path)
{
	for (size_t i = 0; gb_nvidia_lib_dirs[i]; i++) {
		char **names = NULL;
		int r = -ENOENT;
		if (gb_root_list_dir(ctx->root, gb_nvidia_lib_dirs[i], &names, NULL) < 0)
			continue;
		for (char **n = names; *n; n++) {
			const char *v = gb_startswith(*n, prefix);
			char path[512];
			if (!v || !gb_version_valid(v) || !strchr(v, '.'))
				continue;
			snprintf(path, sizeof(path), "%s/%s", gb_nvidia_lib_dirs[i], *n);
			/* Recorded for capture as a file whose existence was read. */
			if (!gb_root_lexists(ctx->root, path))
				continue;
			*ret_version = strdup(v);
			*ret_path = strdup(path);
			r = *ret_version && *ret_path ? 0 : -ENOMEM;
			break;
		}
		gb_strv_free(names);
		if (r != -ENOENT)
			return r;
	}
	return -ENOENT;
}

/* The userspace driver: libnvidia-ml.so.<version> (NVML, what verify uses)
 * and libcuda.so.<version>. */
static int detect_userspace(struct gb_ctx *ctx, struct gb_facts *f)
{
	int r = find_versioned_lib(ctx, "libnvidia-ml.so.", &f->nvidia.userspace_version, &f->nvidia.userspace_path);
	if (r == -ENOMEM)
		return r;
	r = find_versioned_lib(ctx, "libcuda.so.", &f->nvidia.installed.libcuda_version,
	                       &f->nvidia.installed.libcuda_path);
	return r == -ENOMEM ? r : 0;
}

static char *json_version(struct gb_facts *f, const char *text)
{
	json_object *o, *cuda, *ver;
	char *r = NULL;

	if (gb_json_parse(text, strlen(text), 8, &o) < 0)
		return NULL; /* out of memory: the flag fails the command */
	if (json_object_object_get_ex(o, "cuda", &cuda) && json_object_object_get_ex(cuda, "version", &ver) &&
	    json_object_is_type(ver, json_type_string) && gb_version_valid(json_object_get_string(ver))) {
		r = strdup(json_object_get_string(ver));
		f->oom |= !r; /* not "no version" */
	}
	json_object_put(o);
	return r;
}

/* "#define CUDA_VERSION 13000" near the top of include/cuda.h -> "13.0". */
static char *cuda_h_version(struct gb_ctx *ctx, const char *dir)
{
	_cleanup_free_ char *text = NULL;
	char path[256], buf[32];
	const char *p;
	uint32_t v;

	snprintf(path, sizeof(path), "usr/local/%s/include/cuda.h", dir);
	if (gb_root_read_head(ctx->root, path, 16 * 1024, &text, NULL) < 0)
		return NULL;
	p = strstr(text, "\n#define CUDA_VERSION ");
	if (!p)
		return NULL;
	p += strlen("\n#define CUDA_VERSION ");
	gb_strscpy(buf, sizeof(buf), p);
	buf[strspn(buf, "0123456789")] = '\0';
	if (gb_safe_atou32(buf, 10, &v) < 0 || v < 1000 || v > 99990)
		return NULL;
	snprintf(buf, sizeof(buf), "%u.%u", v / 1000, (v % 1000) / 10);
	return strdup(buf);
}

static void detect_cuda(struct gb_ctx *ctx, struct gb_facts *f)
{
	char **names = NULL;

	if (gb_root_list_dir(ctx->root, "usr/local", &names, NULL) < 0)
		return;
	for (char **n = names; *n; n++) {
		_cleanup_free_ char *text = NULL, *link = NULL;
		struct gb_cuda_install *a;
		char path[256];
		char *version = NULL;

		if (!streq(*n, "cuda") && !gb_startswith(*n, "cuda-"))
			continue;
		/* /usr/local/cuda is usually a link to one of the others. */
		snprintf(path, sizeof(path), "usr/local/%s", *n);
		if (gb_root_readlink(ctx->root, path, &link) >= 0)
			continue;
		snprintf(path, sizeof(path), "usr/local/%s/version.json", *n);
		if (gb_root_read_file(ctx->root, path, 256 * 1024, &text, NULL) >= 0) {
			version = json_version(f, text);
			if (!version) {
				gb_log_warning("'%s' holds no valid cuda.version, ignoring", path);
				f->warnings++;
			}
		} else {
			/* CUDA 10 and older: "CUDA Version 10.2.89" */
			snprintf(path, sizeof(path), "usr/local/%s/version.txt", *n);
			if (gb_root_read_file(ctx->root, path, 4096, &text, NULL) >= 0) {
				const char *v = gb_startswith(text, "CUDA Version ");
				char *s = v ? strndup(v, strcspn(v, " \n")) : NULL;
				if (s && gb_version_valid(s))
					version = s;
				else
					free(s);
			} else {
				/* No version file (pip-style installs): CUDA_VERSION in cuda.h, then nvcc. */
				version = cuda_h_version(ctx, *n);
				snprintf(path, sizeof(path), "usr/local/%s/bin/nvcc", *n);
				if (!version && !gb_root_lexists(ctx->root, path))
					continue;
			}
		}
		a = realloc(f->nvidia.cuda, (f->nvidia.n_cuda + 1) * sizeof(*a));
		if (!a) {
			free(version);
			f->oom = true;
			break;
		}
		f->nvidia.cuda = a;
		snprintf(path, sizeof(path), "/usr/local/%s", *n);
		a[f->nvidia.n_cuda].path = strdup(path);
		f->oom |= !a[f->nvidia.n_cuda].path;
		a[f->nvidia.n_cuda].version = version;
		f->nvidia.n_cuda++;
	}
	gb_strv_free(names);
}

/* Is there a "blacklist nouveau" line in a modprobe.d configuration? */
static bool nouveau_blacklisted(struct gb_ctx *ctx)
{
	static const char *const dirs[] = { "etc/modprobe.d", "usr/lib/modprobe.d", "lib/modprobe.d" };

	for (size_t i = 0; i < ARRAY_SIZE(dirs); i++) {
		char **names = NULL;
		bool found = false;
		if (gb_root_list_dir(ctx->root, dirs[i], &names, NULL) < 0)
			continue;
		for (char **n = names; *n && !found; n++) {
			_cleanup_free_ char *text = NULL;
			char path[512];
			size_t l = strlen(*n);
			if (l < 6 || !streq(*n + l - 5, ".conf"))
				continue;
			snprintf(path, sizeof(path), "%s/%s", dirs[i], *n);
			if (gb_root_read_file(ctx->root, path, 256 * 1024, &text, NULL) < 0)
				continue;
			for (char *line = text; line && *line && !found;) {
				char *nl = strchr(line, '\n');
				const char *w;
				if (nl)
					*nl = '\0';
				w = line;
				while (isspace((unsigned char)*w))
					w++;
				if ((w = gb_startswith(w, "blacklist"))) {
					char word[32];
					while (isspace((unsigned char)*w))
						w++;
					gb_strscpy(word, sizeof(word), w);
					found = streq(gb_strstrip(word), "nouveau");
				}
				line = nl ? nl + 1 : NULL;
			}
		}
		gb_strv_free(names);
		if (found)
			return true;
	}
	return false;
}

/* The driver installed on disk, loaded or not: the module of every
 * installed kernel; then one version for the whole, from the target
 * kernel's module (what would load), else the packages, else the userspace
 * library. */
static int detect_installed(struct gb_ctx *ctx, struct gb_facts *f)
{
	_cleanup_(gb_kmodp) struct gb_kmod *kmod = NULL;
	const struct gb_kernel_install *target = NULL;
	typeof(f->nvidia.installed) *in = &f->nvidia.installed;
	int r;

	for (size_t i = 0; i < f->kernel.n_installed; i++) {
		struct gb_kernel_install *k = &f->kernel.installed[i];
		r = gb_nvidia_module_find(ctx, &kmod, k->release, &k->nvidia, &f->warnings);
		if (r == -ENOMEM)
			return r;
		if (f->kernel.target && streq(k->release, f->kernel.target) && k->nvidia.path)
			target = k;
	}
	if (target) {
		in->module_kernel = target;
		in->module_flavor = target->nvidia.flavor;
		if (target->nvidia.version) {
			in->version = strdup(target->nvidia.version);
			if (!in->version)
				return -ENOMEM;
			in->source = "module";
		}
	}
	for (size_t i = 0; i < in->n_packages; i++) {
		const struct gb_package *p = &in->packages[i];
		if (!in->module_flavor)
			in->module_flavor = gb_package_module_flavor(p);
		if (!in->version) {
			in->version = gb_package_driver_version(p);
			if (in->version)
				in->source = "package";
		}
	}
	if (!in->version && f->nvidia.userspace_version) {
		in->version = strdup(f->nvidia.userspace_version);
		if (!in->version)
			return -ENOMEM;
		in->source = "userspace";
	}
	return 0;
}

static const struct {
	const char *path;
	const char *name;
} engines[] = {
	{ "usr/bin/docker", "docker" },
	{ "usr/bin/podman", "podman" },
	{ "usr/bin/containerd", "containerd" },
	{ "usr/local/bin/containerd", "containerd" },
	{ "usr/bin/crio", "cri-o" },
	{ "usr/bin/nerdctl", "nerdctl" },
};

int gb_detect_nvidia(struct gb_ctx *ctx, struct gb_facts *f)
{
	_cleanup_free_ char *text = NULL;
	int r;

	r = gb_root_read_file(ctx->root, "proc/driver/nvidia/version", 4096, &text, NULL);
	if (r >= 0) {
		r = gb_nvrm_version_parse(text, &f->nvidia.loaded_version, &f->nvidia.module_flavor);
		if (r == -ENOMEM)
			return r;
		if (r < 0) {
			gb_log_warning("'proc/driver/nvidia/version' is not in the format the driver writes, ignoring");
			f->warnings++;
		}
	}
	if (!f->nvidia.loaded_version) {
		char *v = NULL;
		if (gb_root_read_attr(ctx->root, "sys/module/nvidia/version", &v) >= 0 && gb_version_valid(v))
			f->nvidia.loaded_version = v;
		else
			free(v);
	}

	r = detect_userspace(ctx, f);
	if (r < 0)
		return r;
	detect_cuda(ctx, f);
	r = gb_detect_packages(ctx, f);
	if (r < 0)
		return r;
	r = detect_installed(ctx, f);
	if (r < 0)
		return r;

	if (gb_root_lexists(ctx->root, "usr/bin/nvidia-ctk")) {
		const char *v = NULL;
		for (size_t i = 0; i < f->nvidia.installed.n_packages; i++)
			if (streq(f->nvidia.installed.packages[i].name, "nvidia-container-toolkit")) {
				v = f->nvidia.installed.packages[i].version;
				break;
			}
		if (v) {
			f->nvidia.container_toolkit = strdup(v);
		} else {
			/* No dpkg database names it (rpm roots: detect reads no rpm
			 * database): the toolkit's library carries the release in
			 * its name, libnvidia-container.so.<version> of
			 * libnvidia-container1, which NVIDIA releases at the
			 * toolkit's version. Neither: the binary without its package. */
			char *path = NULL;
			r = find_versioned_lib(ctx, "libnvidia-container.so.", &f->nvidia.container_toolkit, &path);
			free(path);
			if (r == -ENOMEM)
				return r;
			if (r < 0)
				f->nvidia.container_toolkit = strdup("unknown");
		}
		if (!f->nvidia.container_toolkit)
			return -ENOMEM;
	}
	for (size_t i = 0; i < ARRAY_SIZE(engines); i++) {
		char **a;
		bool dup = false;
		if (!gb_root_lexists(ctx->root, engines[i].path))
			continue;
		for (size_t j = 0; j < f->nvidia.n_engines; j++)
			dup |= streq(f->nvidia.container_engines[j], engines[i].name);
		if (dup)
			continue;
		a = realloc(f->nvidia.container_engines, (f->nvidia.n_engines + 2) * sizeof(*a));
		if (!a)
			return -ENOMEM;
		f->nvidia.container_engines = a;
		a[f->nvidia.n_engines] = strdup(engines[i].name);
		if (!a[f->nvidia.n_engines])
			return -ENOMEM;
		a[++f->nvidia.n_engines] = NULL;
	}
	f->nvidia.fabricmanager = gb_root_lexists(ctx->root, "usr/bin/nv-fabricmanager");
	if (f->nvidia.fabricmanager &&
	    gb_fm_marker_version(ctx, f->nvidia.fabricmanager_runfile, sizeof(f->nvidia.fabricmanager_runfile)) < 0)
		f->nvidia.fabricmanager_runfile[0] = '\0';
	f->nvidia.persistenced = gb_root_lexists(ctx->root, "usr/bin/nvidia-persistenced");

	f->nouveau.blacklisted = nouveau_blacklisted(ctx);
	{
		_cleanup_free_ char *st = NULL;
		f->nouveau.loaded =
		    gb_root_read_attr(ctx->root, "sys/module/nouveau/initstate", &st) >= 0 && streq(st, "live");
	}
	return 0;
}

int gb_fm_marker_version(struct gb_ctx *ctx, char *buf, size_t n)
{
	_cleanup_free_ char *text = NULL;
	char ver[40], want[65], hex[65];
	size_t len = 0;
	int r = gb_root_read_file(ctx->root, GB_FM_MARKER, 256, &text, &len);

	if (r < 0)
		return r;
	if (sscanf(text, "%39s %64s", ver, want) != 2 || !gb_version_valid(ver) || !gb_sha256_valid(want))
		return -EINVAL;
	r = gb_root_sha256(ctx->root, "usr/bin/nv-fabricmanager", hex, NULL);
	if (r < 0)
		return r == -ENOENT ? -ESTALE : r;
	if (!streq(hex, want))
		return -ESTALE;
	return gb_strscpy(buf, n, ver) < 0 ? -EINVAL : 0;
}
