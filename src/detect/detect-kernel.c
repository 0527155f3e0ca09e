/* SPDX-License-Identifier: MIT */
/* The running kernel: release, flavour, headers, command line, CPU arch. */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "catalog/catalog.h"
#include "context.h"
#include "detect.h"
#include "shared/log.h"
#include "shared/root.h"
#include "shared/util.h"

static bool release_valid(const char *r)
{
	if (!r || !isdigit((unsigned char)r[0]) || strlen(r) > 64)
		return false;
	for (const char *p = r; *p; p++)
		if (!(isalnum((unsigned char)*p) || strchr("._+-~", *p)))
			return false;
	return true;
}

/* The flavour's text in release (or "default"), NULL when there is none. */
static const char *flavour_of(const char *release)
{
	const char *p = release;
	int dots = 0;

	if (!release_valid(release))
		return NULL;
	/* Debian and Ubuntu: X.Y.Z-ABI-FLAVOUR ("6.8.0-1015-aws", "6.1.0-18-cloud-amd64"). */
	while (isdigit((unsigned char)*p) || *p == '.') {
		dots += *p == '.';
		p++;
	}
	if (dots >= 1 && *p == '-' && isdigit((unsigned char)p[1])) {
		const char *q = p + 1;
		while (isdigit((unsigned char)*q))
			q++;
		if (*q == '-' && isalpha((unsigned char)q[1]))
			return q + 1;
	}
	/* RPM kernels: X.Y.Z-REL.distro.arch[+variant] ("5.14.0-362.8.1.el9_3.x86_64+64k"). */
	{
		const char *plus = strrchr(release, '+');
		if (strstr(release, ".el") || strstr(release, ".amzn") || strstr(release, ".fc") ||
		    strstr(release, ".azl"))
			return plus ? plus + 1 : "default";
	}
	return NULL;
}

int gb_kernel_flavour(const char *release, char **ret)
{
	const char *f = flavour_of(release);

	*ret = NULL;
	if (f && !(*ret = strdup(f)))
		return -ENOMEM;
	return 0;
}

static bool arch_valid(const char *a)
{
	if (!a || !*a || strlen(a) > 32)
		return false;
	for (const char *p = a; *p; p++)
		if (!(isalnum((unsigned char)*p) || *p == '_'))
			return false;
	return true;
}

/* A copy; NULL with f->oom set (gb_detect then fails with -ENOMEM). */
static char *dup_fact(struct gb_facts *f, const char *s)
{
	char *d = strdup(s);
	f->oom |= !d;
	return d;
}

static char *detect_arch(struct gb_ctx *ctx, struct gb_facts *f)
{
	_cleanup_free_ char *a = NULL;
	const char *path;
	int r;

	/* Linux 6.0 and later say it in procfs. */
	r = gb_root_read_attr(ctx->root, "proc/sys/kernel/arch", &a);
	if (r >= 0 && arch_valid(a))
		return TAKE_PTR(a);
	if (r >= 0) {
		gb_log_warning("'proc/sys/kernel/arch' holds garbage, ignoring");
		f->warnings++;
	}
	/* Older kernels: the name of the root's dynamic loader is fixed by the ABI. */
	if (gb_detect_loader(ctx, &path))
		for (size_t i = 0; i < gb_loaders_len; i++)
			if (streq(gb_loaders[i].path, path))
				return dup_fact(f, gb_loaders[i].arch);
	/* Last, and only for the live machine: ask the kernel. */
	if (ctx->root->is_host) {
		struct utsname u;
		if (ctx->ops->uname(ctx->ops, &u) >= 0 && arch_valid(u.machine))
			return dup_fact(f, u.machine);
	}
	return NULL;
}

int gb_path_join_in_root(const char *dir, const char *path, char *ret, size_t size)
{
	char buf[1024];
	size_t n = 0;
	int r;

	/* An absolute link target is relative to the root; a relative one to
	 * the link's directory. ".." stops at the root, as openat2's
	 * RESOLVE_IN_ROOT does. */
	r = path[0] == '/' ? snprintf(buf, sizeof(buf), "%s", path) : snprintf(buf, sizeof(buf), "%s/%s", dir, path);
	if (r < 0 || (size_t)r >= sizeof(buf))
		return -ENAMETOOLONG;
	ret[0] = '\0';
	for (char *save = NULL, *c = strtok_r(buf, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		if (streq(c, "."))
			continue;
		if (streq(c, "..")) {
			char *slash = strrchr(ret, '/');
			n = slash ? (size_t)(slash - ret) : 0;
			ret[n] = '\0';
			continue;
		}
		r = snprintf(ret + n, size - n, "%s%s", n ? "/" : "", c);
		if (r < 0 || (size_t)r >= size - n)
			return -ENAMETOOLONG;
		n += (size_t)r;
	}
	if (n == 0)
		return -EINVAL; /* the root itself */
	return 0;
}

/* Are the headers of a kernel there, enough to build a module? The build
 * link names their directory (resolved here, inside the root, so that a
 * capture keeps the link and the directory apart); it dangles once the
 * headers package is gone, so look for the Makefile it must lead to.
 * Debian splits the headers in two packages: the flavour's Makefile is one
 * line, "include /usr/src/linux-headers-<abi>-common/Makefile", and the
 * common part must be there too. */
static bool headers_present(struct gb_ctx *ctx, const char *release)
{
	_cleanup_free_ char *target = NULL, *mk = NULL;
	char build[256], dir[512], path[600];
	size_t len;
	int r;

	snprintf(build, sizeof(build), "lib/modules/%s/build", release);
	if (gb_root_readlink(ctx->root, build, &target) >= 0) {
		snprintf(path, sizeof(path), "lib/modules/%s", release);
		if (gb_path_join_in_root(path, target, dir, sizeof(dir)) < 0)
			return false;
	} else {
		gb_strscpy(dir, sizeof(dir), build); /* a directory, or nothing */
	}
	snprintf(path, sizeof(path), "%s/Makefile", dir);
	r = gb_root_read_file(ctx->root, path, 4096, &mk, &len);
	if (r == -EFBIG)
		return gb_root_lexists(ctx->root, path); /* the kernel's own Makefile: tens of KiB */
	if (r < 0)
		return false;
	for (char *line = mk, *nl; line && *line; line = nl ? nl + 1 : NULL) {
		const char *inc;
		char want[600];
		nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		inc = gb_startswith(line, "include ");
		if (!inc)
			continue;
		while (*inc == ' ' || *inc == '\t')
			inc++;
		if (!*inc || strpbrk(inc, " \t$(") || strlen(inc) > 400)
			continue; /* a make expression, not a plain path */
		if (gb_path_join_in_root(dir, inc, want, sizeof(want)) < 0 || !gb_root_lexists(ctx->root, want))
			return false;
	}
	return true;
}

/* Is a kernel installed under the root (not only a leftover directory of
 * DKMS builds)? Its image in boot/ (or lib/modules/<release>/ on Fedora and
 * RHEL), else the module index depmod wrote. */
static bool kernel_installed(struct gb_ctx *ctx, const char *release)
{
	char path[256];

	snprintf(path, sizeof(path), "boot/vmlinuz-%s", release);
	if (gb_root_lexists(ctx->root, path))
		return true;
	snprintf(path, sizeof(path), "lib/modules/%s/vmlinuz", release);
	if (gb_root_lexists(ctx->root, path))
		return true;
	snprintf(path, sizeof(path), "lib/modules/%s/modules.dep", release);
	return gb_root_lexists(ctx->root, path);
}

static int cmp_release_desc(const void *a, const void *b)
{
	return -strverscmp(((const struct gb_kernel_install *)a)->release,
	                   ((const struct gb_kernel_install *)b)->release);
}

#define KERNELS_MAX 16

/* The kernels installed under the root, newest first, and the one modules
 * are for: the running kernel when its lib/modules directory is here (or
 * nothing is installed at all), else the newest installed: a disk image, a
 * chroot whose proc is the host's, a machine whose running kernel was
 * removed by an upgrade that waits for a reboot. Only what is under the
 * root decides, so a capture detects as the machine did. */
static int detect_installed_kernels(struct gb_ctx *ctx, struct gb_facts *f)
{
	char **names = NULL;
	const char *running = f->kernel.release, *target = NULL;
	bool running_here = false;
	char path[256];

	if (running) {
		snprintf(path, sizeof(path), "lib/modules/%s", running);
		running_here = gb_root_lexists(ctx->root, path);
	}
	if (gb_root_list_dir(ctx->root, "lib/modules", &names, NULL) >= 0) {
		for (char **n = names; *n; n++) {
			struct gb_kernel_install *a;
			bool is_running = running && streq(*n, running);
			if (!release_valid(*n))
				continue;
			if (!is_running && !kernel_installed(ctx, *n))
				continue;
			if (f->kernel.n_installed == KERNELS_MAX) {
				gb_log_warning("More than %d kernels under 'lib/modules', ignoring '%s'", KERNELS_MAX,
				               *n);
				f->warnings++;
				break;
			}
			a = realloc(f->kernel.installed, (f->kernel.n_installed + 1) * sizeof(*a));
			if (!a)
				goto oom;
			f->kernel.installed = a;
			a += f->kernel.n_installed;
			*a = (struct gb_kernel_install){ .release = strdup(*n), .running = is_running };
			if (!a->release)
				goto oom;
			f->kernel.n_installed++;
		}
		gb_strv_free(TAKE_PTR(names));
	}
	if (f->kernel.n_installed > 1)
		qsort(f->kernel.installed, f->kernel.n_installed, sizeof(*f->kernel.installed), cmp_release_desc);
	for (size_t i = 0; i < f->kernel.n_installed; i++)
		f->kernel.installed[i].headers = headers_present(ctx, f->kernel.installed[i].release);

	if (running && (running_here || f->kernel.n_installed == 0))
		target = running;
	else if (f->kernel.n_installed > 0)
		target = f->kernel.installed[0].release;
	if (!target)
		return 0;
	f->kernel.target = strdup(target);
	if (!f->kernel.target)
		return -ENOMEM;
	f->kernel.headers = false;
	for (size_t i = 0; i < f->kernel.n_installed; i++)
		if (streq(f->kernel.installed[i].release, target))
			f->kernel.headers = f->kernel.installed[i].headers;
	if (f->kernel.n_installed == 0)
		f->kernel.headers = headers_present(ctx, target);
	return 0;
oom:
	gb_strv_free(names);
	return -ENOMEM;
}

int gb_detect_kernel(struct gb_ctx *ctx, struct gb_facts *f)
{
	_cleanup_free_ char *rel = NULL, *cmdline = NULL;
	size_t len;
	int r;

	r = gb_root_read_attr(ctx->root, "proc/sys/kernel/osrelease", &rel);
	if (r < 0 && ctx->root->is_host) {
		struct utsname u;
		if (ctx->ops->uname(ctx->ops, &u) >= 0 && !(rel = strdup(u.release)))
			return -ENOMEM;
	}
	if (rel && release_valid(rel)) {
		f->kernel.release = TAKE_PTR(rel);
		if (gb_kernel_flavour(f->kernel.release, &f->kernel.flavour) < 0)
			return -ENOMEM;
	} else if (r != -ENOENT || ctx->root->is_host) {
		gb_log_warning("Failed to read the kernel release from 'proc/sys/kernel/osrelease', ignoring");
		f->warnings++;
	}
	r = detect_installed_kernels(ctx, f);
	if (r < 0)
		return r;
	/* A disk image runs nothing: its flavour is the target kernel's. */
	if (!f->kernel.release && f->kernel.target && gb_kernel_flavour(f->kernel.target, &f->kernel.flavour) < 0)
		return -ENOMEM;

	r = gb_root_read_file(ctx->root, "proc/cmdline", 64 * 1024, &cmdline, &len);
	if (r >= 0) {
		char *v = NULL;
		r = gb_sysfs_attr_parse(cmdline, len, &v);
		if (r == -ENOMEM)
			return r;
		if (r >= 0)
			f->kernel.cmdline = v;
		else
			f->warnings++;
	}

	f->cpu.arch = detect_arch(ctx, f);
	{
		const struct gb_cpu_arch *a = gb_cpu_arch_find(f->cpu.arch);
		f->cpu.nvidia_platform = a ? a->platform : NULL;
	}
	return 0;
}
