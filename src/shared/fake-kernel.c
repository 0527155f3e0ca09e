/* SPDX-License-Identifier: MIT */
/* The fake kernel's NVIDIA driver: what an insert of the real nvidia
 * module leaves under the root, so the stages after the load (and verify's
 * second reading of the facts) see what they would see on a machine.
 *
 * Modelled on an H200 with 580.159.04 (tests/load/h200-580-nodes/ and
 * ../shared/data/machines/h200-ubuntu2404/) and a Debian 12 guest with 535
 * (../shared/data/machines/qemu-debian12-nvidia535/):
 * - the module file libkmod would insert, under lib/modules/<release>/: its
 *   .modinfo gives the version and the flavour ("Dual MIT/GPL" is the open
 *   module); a file that is no module fails with ENOEXEC, as init_module
 *   fails on it;
 * - each GPU (vendor 10de, class 03xx) not bound to another driver is bound
 *   to nvidia (the function's driver link) and gets
 *   proc/driver/nvidia/gpus/<bdf>/information; one bound to nouveau is
 *   refused with NVRM's line, and with no GPU left the insert fails with
 *   ENODEV and "NVRM: No NVIDIA GPU found.";
 * - proc/driver/nvidia/version in NVRM's format, sys/module/nvidia/version.
 * Unloading a module unbinds its functions and removes what it made. */
#include "fake-kernel.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libkmod.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "fileio.h"
#include "macro.h"
#include "util.h"

#define PCI_DEVICES "sys/bus/pci/devices"

static void kmsg_line(const char *root, const char *line)
{
	char path[1200];
	FILE *out;
	snprintf(path, sizeof(path), "%s/dev", root);
	(void)gb_mkdir_p(path, 0755);
	snprintf(path, sizeof(path), "%s/dev/kmsg", root);
	out = fopen(path, "ae");
	if (!out)
		return;
	fprintf(out, "3,900,1000000,-;%s\n", line);
	fclose(out);
}

/* The kernel release whose modules an insert uses: the root's running
 * kernel, else the fake's uname. */
static void release_of(const char *root, const char *fallback, char *buf, size_t n)
{
	_cleanup_free_ char *text = NULL;
	char path[1200];
	size_t len;
	struct utsname u;

	snprintf(path, sizeof(path), "%s/proc/sys/kernel/osrelease", root);
	if (gb_read_file(path, 256, &text, &len) == 0) {
		gb_strstrip(text);
		if (*text && !strchr(text, '/')) {
			gb_strscpy(buf, n, text);
			return;
		}
	}
	if (fallback && *fallback) {
		gb_strscpy(buf, n, fallback);
		return;
	}
	buf[0] = '\0';
	if (uname(&u) == 0)
		gb_strscpy(buf, n, u.release);
}

/* nvidia.ko[.xz|.zst|.gz], or Debian's nvidia-current.ko and
 * nvidia-current-open.ko (the package's install rule loads them as nvidia). */
static bool is_nvidia_file(const char *name)
{
	static const char *const stems[] = { "nvidia", "nvidia-current", "nvidia-current-open" };
	const char *suffix = gb_kmod_suffix(name);
	for (size_t i = 0; suffix && i < ARRAY_SIZE(stems); i++)
		if ((size_t)(suffix - name) == strlen(stems[i]) && strneq(name, stems[i], strlen(stems[i])))
			return true;
	return false;
}

static int find_module(const char *dir, unsigned depth, char *ret, size_t n)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int r = -ENOENT;
	if (!d)
		return -ENOENT;
	while (r < 0 && (e = readdir(d))) {
		char path[1400];
		struct stat st;
		if (e->d_name[0] == '.' ||
		    (size_t)snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) >= sizeof(path))
			continue;
		if (lstat(path, &st) < 0)
			continue;
		if (S_ISREG(st.st_mode) && is_nvidia_file(e->d_name))
			r = gb_strscpy(ret, n, path) < 0 ? -ENAMETOOLONG : 0;
		else if (S_ISDIR(st.st_mode) && depth < 8)
			r = find_module(path, depth + 1, ret, n);
	}
	closedir(d);
	return r;
}

/* The module's version and flavour from its .modinfo, as the kernel reads
 * them: -ENOEXEC when the file is no module. */
static int module_info(const char *path, char *version, size_t vn, bool *open)
{
	static const char *const no_config[] = { NULL };
	struct kmod_ctx *k = kmod_new("/nonexistent", no_config);
	struct kmod_module *m = NULL;
	struct kmod_list *info = NULL, *it;
	int r;

	if (!k)
		return -ENOMEM;
	version[0] = '\0';
	*open = false;
	r = kmod_module_new_from_path(k, path, &m);
	if (r >= 0)
		r = kmod_module_get_info(m, &info);
	if (r >= 0) {
		kmod_list_foreach(it, info)
		{
			const char *key = kmod_module_info_get_key(it), *value = kmod_module_info_get_value(it);
			if (key && value && streq(key, "version") && !version[0])
				gb_strscpy(version, vn, value);
			else if (key && value && streq(key, "license"))
				*open = streq(value, "Dual MIT/GPL");
		}
		kmod_module_info_free_list(info);
	}
	kmod_module_unref(m);
	kmod_unref(k);
	return version[0] ? 0 : -ENOEXEC;
}

static bool is_nvidia_gpu(const char *root, const char *bdf)
{
	_cleanup_free_ char *vendor = NULL, *class = NULL;
	char path[1200];
	size_t len;
	snprintf(path, sizeof(path), "%s/" PCI_DEVICES "/%s/vendor", root, bdf);
	if (gb_read_file(path, 64, &vendor, &len) < 0)
		return false;
	snprintf(path, sizeof(path), "%s/" PCI_DEVICES "/%s/class", root, bdf);
	if (gb_read_file(path, 64, &class, &len) < 0)
		return false;
	return gb_startswith(vendor, "0x10de") && gb_startswith(class, "0x03");
}

/* The driver a function is bound to ("" when none). */
static void bound_to(const char *root, const char *bdf, char *buf, size_t n)
{
	char path[1200], link[512];
	ssize_t l;
	snprintf(path, sizeof(path), "%s/" PCI_DEVICES "/%s/driver", root, bdf);
	l = readlink(path, link, sizeof(link) - 1);
	buf[0] = '\0';
	if (l <= 0)
		return;
	link[l] = '\0';
	gb_strscpy(buf, n, strrchr(link, '/') ? strrchr(link, '/') + 1 : link);
}

static int write_at(const char *root, const char *rel, const char *text, mode_t mode)
{
	char path[1400];
	int r;
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	*strrchr(path, '/') = '\0';
	r = gb_mkdir_p(path, 0755);
	if (r < 0)
		return r;
	path[strlen(path)] = '/';
	return gb_write_file_atomic(path, text, strlen(text), mode);
}

/* Bind the GPUs nobody else holds; returns how many were bound. */
static int bind_gpus(const char *root, const char *version, unsigned *ret)
{
	char dir[1200];
	DIR *d;
	struct dirent *e;
	unsigned minor = 0;
	int r = 0;

	*ret = 0;
	snprintf(dir, sizeof(dir), "%s/" PCI_DEVICES, root);
	d = opendir(dir);
	if (!d)
		return 0;
	while (r >= 0 && (e = readdir(d))) {
		char drv[64], path[1400], rel[512], info[1024], line[256];
		if (e->d_name[0] == '.' || !is_nvidia_gpu(root, e->d_name))
			continue;
		bound_to(root, e->d_name, drv, sizeof(drv));
		if (drv[0] && !streq(drv, "nvidia")) {
			snprintf(line, sizeof(line), "NVRM: GPU %s is already bound to %s.", e->d_name, drv);
			kmsg_line(root, line);
			continue;
		}
		snprintf(path, sizeof(path), "%s/%s/driver", dir, e->d_name);
		if (!drv[0] && symlink("../../../../bus/pci/drivers/nvidia", path) < 0)
			r = negative_errno();
		snprintf(rel, sizeof(rel), "proc/driver/nvidia/gpus/%s/information", e->d_name);
		snprintf(info, sizeof(info),
		         "Model: \t\t NVIDIA GPU\nIRQ:   \t\t 41\nBus Type: \t PCIe\nBus Location: \t %s\n"
		         "Device Minor: \t %u\nGPU Firmware: \t %s\nGPU Excluded:\t No\n",
		         e->d_name, minor, version);
		if (r >= 0)
			r = write_at(root, rel, info, 0444);
		minor++;
	}
	closedir(d);
	*ret = minor;
	return r;
}

int gb_fake_kernel_insert(const char *root, const char *release, const char *module)
{
	char rel[128], dir[1200], path[1400], version[64], text[512];
	unsigned bound;
	bool open;
	int r;

	if (!root[0] || !streq(module, "nvidia"))
		return 0;
	release_of(root, release, rel, sizeof(rel));
	snprintf(dir, sizeof(dir), "%s/lib/modules/%s", root, rel);
	if (find_module(dir, 0, path, sizeof(path)) < 0)
		return 0; /* no module file in the fixture: only proc/modules (the older tests) */
	r = module_info(path, version, sizeof(version), &open);
	if (r < 0)
		return r;
	r = bind_gpus(root, version, &bound);
	if (r < 0)
		return r;
	if (!bound) {
		kmsg_line(root, "NVRM: No NVIDIA GPU found.");
		return -ENODEV;
	}
	if (open)
		snprintf(text, sizeof(text),
		         "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  %s  Release Build  (fake@)  \n"
		         "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14) \n",
		         version);
	else
		snprintf(text, sizeof(text),
		         "NVRM version: NVIDIA UNIX x86_64 Kernel Module  %s  Release Build  (fake@)  "
		         "Tue Jun  4 01:05:44 UTC 2024\nGCC version:  gcc version 12.2.0 (Debian 12.2.0-14) \n",
		         version);
	r = write_at(root, "proc/driver/nvidia/version", text, 0444);
	if (r >= 0) {
		snprintf(text, sizeof(text), "%s\n", version);
		r = write_at(root, "sys/module/nvidia/version", text, 0444);
	}
	return r;
}

static void rm_tree(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	if (d) {
		while ((e = readdir(d))) {
			char p[1400];
			if (streq(e->d_name, ".") || streq(e->d_name, ".."))
				continue;
			snprintf(p, sizeof(p), "%s/%s", path, e->d_name);
			rm_tree(p);
		}
		closedir(d);
		rmdir(path);
	} else
		unlink(path);
}

void gb_fake_kernel_remove(const char *root, const char *module)
{
	char dir[1200], path[1400], drv[64];
	DIR *d;
	struct dirent *e;

	if (!root[0])
		return;
	snprintf(dir, sizeof(dir), "%s/" PCI_DEVICES, root);
	d = opendir(dir);
	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		bound_to(root, e->d_name, drv, sizeof(drv));
		if (drv[0] && streq(drv, module)) {
			snprintf(path, sizeof(path), "%s/%s/driver", dir, e->d_name);
			unlink(path);
		}
	}
	if (d)
		closedir(d);
	if (streq(module, "nvidia")) {
		snprintf(path, sizeof(path), "%s/proc/driver/nvidia", root);
		rm_tree(path);
		snprintf(path, sizeof(path), "%s/sys/module/nvidia/version", root);
		unlink(path);
	}
}

int gb_fake_copy_tree(const char *src, const char *dst)
{
	DIR *d = opendir(src);
	struct dirent *e;
	int r;

	if (!d)
		return negative_errno();
	r = gb_mkdir_p(dst, 0755);
	while (r >= 0 && (e = readdir(d))) {
		char s[1400], t[1400], link[1024];
		struct stat st;
		ssize_t l;
		if (streq(e->d_name, ".") || streq(e->d_name, ".."))
			continue;
		snprintf(s, sizeof(s), "%s/%s", src, e->d_name);
		snprintf(t, sizeof(t), "%s/%s", dst, e->d_name);
		if (lstat(s, &st) < 0) {
			r = negative_errno();
		} else if (S_ISDIR(st.st_mode)) {
			r = gb_fake_copy_tree(s, t);
		} else if (S_ISLNK(st.st_mode)) {
			l = readlink(s, link, sizeof(link) - 1);
			if (l < 0)
				r = negative_errno();
			else {
				link[l] = '\0';
				unlink(t);
				r = symlink(link, t) < 0 ? negative_errno() : 0;
			}
		} else if (S_ISREG(st.st_mode)) {
			r = gb_copy_file_atomic(s, t, st.st_mode & 07777);
		}
	}
	closedir(d);
	return r;
}
