/* SPDX-License-Identifier: MIT */
/* The running kernel: release, flavour, headers, command line, CPU arch. */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

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

char *gb_kernel_flavour(const char *release)
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
			return strdup(q + 1);
	}
	/* RPM kernels: X.Y.Z-REL.distro.arch[+variant] ("5.14.0-362.8.1.el9_3.x86_64+64k"). */
	{
		const char *plus = strrchr(release, '+');
		if (strstr(release, ".el") || strstr(release, ".amzn") || strstr(release, ".fc") ||
		    strstr(release, ".azl"))
			return strdup(plus ? plus + 1 : "default");
	}
	return NULL;
}

static const struct {
	const char *loader;
	const char *arch;
} loader_arch[] = {
	{ "lib64/ld-linux-x86-64.so.2", "x86_64" }, { "lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", "x86_64" },
	{ "lib/ld-linux-aarch64.so.1", "aarch64" }, { "lib/aarch64-linux-gnu/ld-linux-aarch64.so.1", "aarch64" },
	{ "lib64/ld64.so.2", "ppc64le" },           { "lib/ld-musl-x86_64.so.1", "x86_64" },
	{ "lib/ld-musl-aarch64.so.1", "aarch64" },
};

static bool arch_valid(const char *a)
{
	if (!a || !*a || strlen(a) > 32)
		return false;
	for (const char *p = a; *p; p++)
		if (!(isalnum((unsigned char)*p) || *p == '_'))
			return false;
	return true;
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
		for (size_t i = 0; i < ARRAY_SIZE(loader_arch); i++)
			if (streq(loader_arch[i].loader, path))
				return strdup(loader_arch[i].arch);
	/* Last, and only for the live machine: ask the kernel. */
	if (ctx->root->is_host) {
		struct utsname u;
		if (ctx->ops->uname(ctx->ops, &u) >= 0 && arch_valid(u.machine))
			return strdup(u.machine);
	}
	return NULL;
}

int gb_detect_kernel(struct gb_ctx *ctx, struct gb_facts *f)
{
	_cleanup_free_ char *rel = NULL, *cmdline = NULL;
	size_t len;
	int r;

	r = gb_root_read_attr(ctx->root, "proc/sys/kernel/osrelease", &rel);
	if (r < 0 && ctx->root->is_host) {
		struct utsname u;
		if (ctx->ops->uname(ctx->ops, &u) >= 0)
			rel = strdup(u.release);
	}
	if (rel && release_valid(rel)) {
		char path[256];
		f->kernel.release = TAKE_PTR(rel);
		f->kernel.flavour = gb_kernel_flavour(f->kernel.release);
		/* The build link dangles once the headers package is gone: look
		 * for the Makefile it must lead to. */
		snprintf(path, sizeof(path), "lib/modules/%s/build/Makefile", f->kernel.release);
		f->kernel.headers = gb_root_lexists(ctx->root, path);
	} else {
		gb_log_warning("Failed to read the kernel release from 'proc/sys/kernel/osrelease', ignoring");
		f->warnings++;
	}

	r = gb_root_read_file(ctx->root, "proc/cmdline", 64 * 1024, &cmdline, &len);
	if (r >= 0) {
		char *v = NULL;
		if (gb_sysfs_attr_parse(cmdline, len, &v) >= 0)
			f->kernel.cmdline = v;
		else
			f->warnings++;
	}

	f->cpu.arch = detect_arch(ctx, f);
	if (f->cpu.arch) {
		if (streq(f->cpu.arch, "x86_64"))
			f->cpu.nvidia_platform = "linux-x86_64";
		else if (streq(f->cpu.arch, "aarch64"))
			f->cpu.nvidia_platform = "linux-sbsa";
		else if (streq(f->cpu.arch, "ppc64le"))
			f->cpu.nvidia_platform = "linux-ppc64le";
	}
	return 0;
}
