/* SPDX-License-Identifier: MIT */
/* The NVIDIA kernel module installed for a kernel, read from disk whether
 * loaded or not: where DKMS, the distribution's packages or the runfile put
 * it, and its version and flavour from its .modinfo section, read with
 * libkmod (which also reads .ko.xz, .ko.zst and, where built with zlib,
 * .ko.gz). */
#include <errno.h>
#include <fcntl.h>
#include <libkmod.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "catalog/catalog.h"
#include "context.h"
#include "detect.h"
#include "shared/tls.h"
#include "shared/log.h"
#include "shared/root.h"
#include "shared/util.h"

/* libkmod maps an uncompressed module and inflates a compressed one in
 * memory; the proprietary nvidia.ko is about 60 MiB, 15 MiB compressed. */
#define MODULE_MAX (512u << 20)
#define MODULE_COMPRESSED_MAX (128u << 20)
#define MODULES_DEP_MAX (16u << 20)

struct gb_kmod {
	struct kmod_ctx *ctx;
};

struct gb_kmod *gb_kmod_free(struct gb_kmod *k)
{
	if (!k)
		return NULL;
	kmod_unref(k->ctx);
	free(k);
	return NULL;
}

void gb_kmodp(struct gb_kmod **k)
{
	*k = gb_kmod_free(*k);
}

_printf_(6, 0) static void kmod_log(void *data, int priority, const char *file, int line, const char *fn,
                                    const char *format, va_list args)
{
	char buf[512];

	(void)data, (void)priority, (void)file, (void)line, (void)fn;
	vsnprintf(buf, sizeof(buf), format, args);
	buf[strcspn(buf, "\n")] = '\0';
	gb_log_debug("libkmod: %s", buf);
}

static int kmod_get(struct gb_kmod **k)
{
	/* No configuration is read (it would be the host's), and no index: only
	 * modules named by path are opened, so the directory is never used. */
	static const char *const no_config[] = { NULL };
	struct gb_kmod *n;

	const char *missing = "?";

	if (*k)
		return 0;
	/* libkmod reads a module's appended signature (its signer) with
	 * OpenSSL: initialised and checked before, not lazily inside it. An
	 * algorithm OpenSSL lacks only leaves a signer unread. */
	if (gb_tls_init(true, &missing) == -ENOMEM)
		return -ENOMEM;
	n = calloc(1, sizeof(*n));
	if (!n)
		return -ENOMEM;
	n->ctx = kmod_new("/nonexistent", no_config);
	if (!n->ctx) {
		free(n);
		return -ENOMEM;
	}
	kmod_set_log_fn(n->ctx, kmod_log, NULL);
	*k = n;
	return 0;
}

/* nvidia.ko, or Debian's renamed nvidia-current.ko, nvidia-current-open.ko,
 * nvidia-tesla-470.ko...; not their companions (-uvm, -modeset, -drm,
 * -peermem). Returns the suffix or NULL. */
static const char *module_name_match(const char *name)
{
	static const char *const companions[] = { "-uvm", "-modeset", "-drm", "-peermem" };
	char stem[128];
	const char *suffix = gb_kmod_suffix(name);
	size_t l;

	if (!suffix || gb_strscpy(stem, sizeof(stem), name) < 0)
		return NULL;
	stem[strlen(name) - strlen(suffix)] = '\0';
	if (streq(stem, "nvidia"))
		return suffix;
	if (!gb_startswith(stem, "nvidia-current") && !gb_startswith(stem, "nvidia-tesla") &&
	    !gb_startswith(stem, "nvidia-legacy"))
		return NULL;
	l = strlen(stem);
	for (size_t i = 0; i < ARRAY_SIZE(companions); i++) {
		size_t c = strlen(companions[i]);
		if (l > c && streq(stem + l - c, companions[i]))
			return NULL;
	}
	return suffix;
}

/* Read .modinfo through libkmod. The file is opened here, inside the root;
 * libkmod is handed /proc/self/fd/N, so it reads exactly that file. */
static int module_read_info(struct gb_ctx *ctx, struct gb_kmod **k, const char *path, struct gb_nvidia_module *m)
{
	_cleanup_close_ int fd = -1;
	struct kmod_module *mod = NULL;
	struct kmod_list *info = NULL, *it;
	const char *suffix = module_name_match(strrchr(path, '/') ? strrchr(path, '/') + 1 : path);
	char proc[64];
	struct stat st;
	bool oom = false;
	int r;

	r = kmod_get(k);
	if (r < 0)
		return r;
	fd = gb_root_openat(ctx->root, path, O_RDONLY | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0)
		return negative_errno();
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	if ((uint64_t)st.st_size > (suffix && streq(suffix, ".ko") ? MODULE_MAX : MODULE_COMPRESSED_MAX))
		return -EFBIG;
	if (st.st_size < 64)
		return -ENOEXEC; /* not even an ELF header: a capture that kept only the name */
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	r = kmod_module_new_from_path((*k)->ctx, proc, &mod);
	if (r < 0)
		return r;
	r = kmod_module_get_info(mod, &info);
	if (r < 0) {
		kmod_module_unref(mod);
		return r;
	}
	kmod_list_foreach(it, info)
	{
		const char *key = kmod_module_info_get_key(it), *value = kmod_module_info_get_value(it);
		if (!key || !value)
			continue;
		if (streq(key, "version") && !m->version && gb_version_valid(value) && strchr(value, '.')) {
			m->version = strdup(value);
			oom |= !m->version;
		} else if (streq(key, "license") && !m->flavor)
			/* The open modules are dual-licensed; the proprietary one says "NVIDIA". */
			m->flavor = streq(value, "Dual MIT/GPL") ? "open"
			            : streq(value, "NVIDIA")     ? "proprietary"
			                                         : NULL;
		else if (streq(key, "signer") && !m->signer && *value && strlen(value) < 256) {
			m->signer = strdup(value);
			oom |= !m->signer;
		} else if (streq(key, "vermagic") && !m->vermagic && *value && strlen(value) < 160) {
			m->vermagic = strdup(value);
			oom |= !m->vermagic;
		}
	}
	kmod_module_info_free_list(info);
	kmod_module_unref(mod);
	if (oom)
		return -ENOMEM;
	return m->version ? 0 : -EBADMSG;
}

static bool path_safe(const char *p)
{
	if (!*p || p[0] == '/' || strlen(p) > 200)
		return false;
	for (const char *c = p; *c; c++)
		if ((unsigned char)*c <= ' ' || *c == '\\' || (unsigned char)*c >= 0x7f)
			return false;
	return !strstr(p, "..");
}

/* Each module of depmod's list for release, as a path relative to
 * lib/modules/<release>/ ("updates/dkms/nvidia-current.ko: " lines; older
 * depmods write absolute paths), unsafe ones skipped, until fn returns
 * non-zero: that value, or -ENOENT (no list, or fn never stopped). */
static int modules_dep_each(struct gb_ctx *ctx, const char *release, int (*fn)(const char *rel, void *arg), void *arg)
{
	_cleanup_free_ char *text = NULL;
	char path[256], prefix[256];
	size_t len;
	int r = 0;

	snprintf(path, sizeof(path), "lib/modules/%s/modules.dep", release);
	if (gb_root_read_file(ctx->root, path, MODULES_DEP_MAX, &text, &len) < 0)
		return -ENOENT;
	snprintf(prefix, sizeof(prefix), "/lib/modules/%s/", release);
	for (char *line = text, *nl; !r && line && *line; line = nl ? nl + 1 : NULL) {
		char *colon;
		const char *rel;
		nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		colon = strchr(line, ':');
		if (!colon)
			continue;
		*colon = '\0';
		rel = gb_startswith(line, prefix) ? gb_startswith(line, prefix) : line;
		if (path_safe(rel))
			r = fn(rel, arg);
	}
	return r ? r : -ENOENT;
}

struct dep_find {
	const char *release;
	char *ret;
	size_t size;
};

static int dep_find_nvidia(const char *rel, void *arg)
{
	struct dep_find *f = arg;
	const char *name = strrchr(rel, '/');
	if (!module_name_match(name ? name + 1 : rel))
		return 0;
	snprintf(f->ret, f->size, "lib/modules/%s/%s", f->release, rel);
	return 1;
}

/* The NVIDIA module wherever depmod's list says. */
static int find_in_modules_dep(struct gb_ctx *ctx, const char *release, char *ret, size_t size)
{
	struct dep_find f = { release, ret, size };
	return modules_dep_each(ctx, release, dep_find_nvidia, &f) == 1 ? 0 : -ENOENT;
}

/* Where each kind of install puts the module (gb_module_dirs), in depmod's
 * order of precedence (updates/ first). */
static int find_in_dirs(struct gb_ctx *ctx, const char *release, char *ret, size_t size)
{
	for (const char *const *m = gb_module_dirs(GB_MODULES_ANY); *m; m++) {
		char dir[256], **names = NULL;
		bool found = false;
		snprintf(dir, sizeof(dir), "lib/modules/%s/%s", release, *m);
		if (gb_root_list_dir(ctx->root, dir, &names, NULL) < 0)
			continue;
		for (char **n = names; *n && !found; n++)
			if (module_name_match(*n)) {
				snprintf(ret, size, "%s/%s", dir, *n);
				found = true;
			}
		gb_strv_free(names);
		if (found)
			return 0;
	}
	return -ENOENT;
}

struct dep_vermagic {
	struct gb_ctx *ctx;
	struct gb_kmod **kmod;
	const char *release;
	char *out;
	size_t outsz;
};

/* The first module of the kernel's own (kernel/): its vermagic, or
 * -EBADMSG: the kernel's first module says none, do not guess from another. */
static int dep_vermagic(const char *rel, void *arg)
{
	struct dep_vermagic *v = arg;
	struct gb_nvidia_module m = { 0 };
	char path[512];
	int r;

	if (!gb_startswith(rel, "kernel/"))
		return 0;
	snprintf(path, sizeof(path), "lib/modules/%s/%s", v->release, rel);
	r = module_read_info(v->ctx, v->kmod, path, &m);
	if (m.vermagic && gb_strscpy(v->out, v->outsz, m.vermagic) >= 0)
		r = 1;
	else if (r != -ENOMEM)
		r = -EBADMSG;
	gb_nvidia_module_done(&m);
	return r;
}

int gb_kernel_vermagic(struct gb_ctx *ctx, struct gb_kmod **kmod, const char *release, char *out, size_t outsz)
{
	struct dep_vermagic v = { ctx, kmod, release, out, outsz };
	int r;

	out[0] = '\0';
	r = modules_dep_each(ctx, release, dep_vermagic, &v);
	return r == 1 ? 0 : r;
}

void gb_nvidia_module_done(struct gb_nvidia_module *m)
{
	free(m->path);
	free(m->version);
	free(m->signer);
	free(m->vermagic);
	*m = (struct gb_nvidia_module){ 0 };
}

int gb_nvidia_module_find(struct gb_ctx *ctx, struct gb_kmod **kmod, const char *release, struct gb_nvidia_module *ret,
                          unsigned *warnings)
{
	struct gb_nvidia_module m = { 0 };
	char path[512];
	int r;

	/* The directories each install method uses, then wherever depmod says. */
	if (find_in_dirs(ctx, release, path, sizeof(path)) < 0 &&
	    find_in_modules_dep(ctx, release, path, sizeof(path)) < 0)
		return -ENOENT;
	/* Its existence is recorded for --capture (which keeps it empty: tens
	 * of MiB; docs/fixtures.md says how a fixture keeps its .modinfo). */
	if (!gb_root_lexists(ctx->root, path))
		return -ENOENT;
	m.path = malloc(strlen(path) + 2);
	if (!m.path)
		return -ENOMEM;
	m.path[0] = '/';
	memcpy(m.path + 1, path, strlen(path) + 1);
	r = module_read_info(ctx, kmod, path, &m);
	if (r == -ENOMEM) {
		gb_nvidia_module_done(&m);
		return r;
	}
	if (r < 0) {
		/* The file itself is open: ENOENT is /proc/self/fd missing. */
		gb_log_warning_errno(r, "Failed to read the version from the .modinfo of '%s': %m%s, ignoring", path,
		                     r == -ENOENT ? " (is /proc mounted?)" : "");
		(*warnings)++;
	}
	*ret = m;
	return 0;
}
