/* SPDX-License-Identifier: MIT */
/* Device node numbers from proc/devices, bounded and defensive: the file
 * is "Character devices:\n%3d %s\n...\n\nBlock devices:\n..." and every
 * line is input. The numbers and names are NVIDIA's (nvidia-modprobe's
 * modprobe-utils/nvidia-modprobe-utils.{c,h}; the open module's
 * kernel-open/nvidia/nv-frontend.c and nvidia-uvm/uvm.c): see
 * docs/load.md#device-nodes. */
#include "devnodes.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shared/macro.h"
#include "shared/root.h"
#include "shared/util.h"

#define PROC_DEVICES_MAX (64u << 10)
#define LINE_MAX_LEN 256
#define NV_MAJOR 195 /* fixed: kernel-open/common/inc/nv.h NV_MAJOR_DEVICE_NUMBER */
#define NV_CTL_MINOR 255
#define NV_MODESET_MINOR 254

/* Copy line [s, s+n) into buf, NUL-terminated; false when too long. */
static bool take_line(const char *s, size_t n, char *buf, size_t bufsz)
{
	if (n >= bufsz)
		return false;
	memcpy(buf, s, n);
	buf[n] = '\0';
	return true;
}

int gb_proc_devices_major(const char *text, size_t len, const char *name, uint32_t *ret)
{
	bool chr = false;
	size_t i = 0;

	while (i < len) {
		const char *s = text + i, *nl = memchr(s, '\n', len - i);
		size_t n = nl ? (size_t)(nl - s) : len - i;
		char line[LINE_MAX_LEN], *sp;
		uint32_t major;

		i += n + 1;
		if (!take_line(s, n, line, sizeof(line)))
			continue;
		gb_strstrip(line);
		if (streq(line, "Character devices:")) {
			chr = true;
			continue;
		}
		if (gb_startswith(line, "Block devices:"))
			chr = false;
		if (!chr || !(sp = strchr(line, ' ')))
			continue;
		*sp = '\0';
		if (gb_safe_atou32(line, 10, &major) < 0 || major == 0 || major > 4095)
			continue;
		if (streq(gb_strstrip(sp + 1), name)) {
			*ret = major;
			return 0;
		}
	}
	return -ENOENT;
}

int gb_nvidia_proc_number(const char *text, size_t len, const char *name, uint32_t *ret)
{
	size_t i = 0, nl_len = strlen(name);

	while (i < len) {
		const char *s = text + i, *nl = memchr(s, '\n', len - i);
		size_t n = nl ? (size_t)(nl - s) : len - i;
		char line[LINE_MAX_LEN];

		i += n + 1;
		if (!take_line(s, n, line, sizeof(line)) || !strneq(line, name, nl_len) || line[nl_len] != ':')
			continue;
		return gb_safe_atou32(gb_strstrip(line + nl_len + 1), 10, ret) < 0 ? -EINVAL : 0;
	}
	return -ENOENT;
}

int gb_nvidia_gpu_minor(const char *text, size_t len, uint32_t *ret)
{
	uint32_t minor;
	int r = gb_nvidia_proc_number(text, len, "Device Minor", &minor);

	if (r < 0)
		return r;
	if (minor >= NV_MODESET_MINOR)
		return -EINVAL;
	*ret = minor;
	return 0;
}

/* The driver's node settings (proc/driver/nvidia/params), as
 * nvidia-modprobe reads them. */
struct node_params {
	unsigned perm;
	uint32_t uid, gid;
	bool modify_off;
};

static void read_params(struct gb_root *root, struct node_params *p)
{
	_cleanup_free_ char *text = NULL;
	size_t len;
	uint32_t v;

	*p = (struct node_params){ .perm = 0666 };
	if (gb_root_read_head(root, "proc/driver/nvidia/params", 16384, &text, &len) < 0)
		return;
	if (gb_nvidia_proc_number(text, len, "DeviceFileMode", &v) == 0 && v <= 0777)
		p->perm = v;
	if (gb_nvidia_proc_number(text, len, "DeviceFileUID", &v) == 0)
		p->uid = v;
	if (gb_nvidia_proc_number(text, len, "DeviceFileGID", &v) == 0)
		p->gid = v;
	p->modify_off = gb_nvidia_proc_number(text, len, "ModifyDeviceFiles", &v) == 0 && v == 0;
}

static int add(struct gb_devnodes *ret, const char *path, uint32_t major, uint32_t minor, const struct node_params *p)
{
	struct gb_devnode *d;
	if (ret->n >= GB_DEVNODES_MAX)
		return -E2BIG;
	d = &ret->node[ret->n++];
	snprintf(d->path, sizeof(d->path), "%s", path);
	d->major = major;
	d->minor = minor;
	d->perm = p->perm;
	d->uid = p->uid;
	d->gid = p->gid;
	return 0;
}

/* dev/nvidia-caps/nvidia-capN for the MIG capabilities the driver lists
 * (config, monitor), each with its own minor and mode, owned by root;
 * one whose DeviceFileModify is 0 is left to the site. */
static int add_caps(struct gb_root *root, uint32_t major, struct gb_devnodes *ret)
{
	static const char *const caps[] = { "config", "monitor" };
	int r = 0;

	for (size_t i = 0; i < ARRAY_SIZE(caps) && r >= 0; i++) {
		_cleanup_free_ char *text = NULL;
		char p[80], node[48];
		struct node_params np = { 0 };
		uint32_t minor, mode, modify;
		size_t len;

		snprintf(p, sizeof(p), "proc/driver/nvidia/capabilities/mig/%s", caps[i]);
		if (gb_root_read_head(root, p, 4096, &text, &len) < 0 ||
		    gb_nvidia_proc_number(text, len, "DeviceFileMinor", &minor) < 0 || minor > 0xfffff ||
		    gb_nvidia_proc_number(text, len, "DeviceFileMode", &mode) < 0 || mode > 0777)
			continue; /* not listed, or garbled: no node, ignoring */
		if (gb_nvidia_proc_number(text, len, "DeviceFileModify", &modify) == 0 && modify == 0)
			continue;
		np.perm = mode;
		snprintf(node, sizeof(node), "dev/nvidia-caps/nvidia-cap%u", minor);
		r = add(ret, node, major, minor, &np);
	}
	return r < 0 ? r : 0;
}

/* dev/nvidiaN for every GPU the driver lists in proc/driver/nvidia/gpus. */
static int add_gpus(struct gb_root *root, const struct node_params *np, struct gb_devnodes *ret)
{
	char **names = NULL;
	size_t n = 0;
	int r = gb_root_list_dir(root, "proc/driver/nvidia/gpus", &names, &n);

	if (r < 0)
		return r == -ENOENT ? 0 : r;
	for (size_t i = 0; i < n && r >= 0; i++) {
		_cleanup_free_ char *text = NULL;
		char p[300], node[48];
		size_t len;
		uint32_t minor;

		snprintf(p, sizeof(p), "proc/driver/nvidia/gpus/%s/information", names[i]);
		if (gb_root_read_head(root, p, 8192, &text, &len) < 0 || gb_nvidia_gpu_minor(text, len, &minor) < 0)
			continue; /* a GPU whose minor cannot be read gets no node, ignoring */
		snprintf(node, sizeof(node), "dev/nvidia%u", minor);
		r = add(ret, node, NV_MAJOR, minor, np);
	}
	gb_strv_free(names);
	return r < 0 ? r : 0;
}

int gb_load_devnodes(struct gb_root *root, struct gb_devnodes *ret)
{
	struct node_params np;
	_cleanup_free_ char *text = NULL;
	size_t len;
	uint32_t major;
	int r;

	memset(ret, 0, sizeof(*ret));
	r = gb_root_read_head(root, "proc/devices", PROC_DEVICES_MAX, &text, &len);
	if (r < 0)
		return r;
	/* The open module registers "nvidia-frontend"; some releases "nvidia". */
	if (gb_proc_devices_major(text, len, "nvidia-frontend", &major) < 0 &&
	    gb_proc_devices_major(text, len, "nvidia", &major) < 0)
		return -ENODEV;
	if (major != NV_MAJOR)
		return -EPROTO; /* nvidia-modprobe and the driver assume 195 */
	read_params(root, &np);
	ret->modify_off = np.modify_off;
	r = add(ret, "dev/nvidiactl", major, NV_CTL_MINOR, &np);
	if (r >= 0)
		r = add_gpus(root, &np, ret);
	if (r >= 0 && gb_root_exists(root, "sys/module/nvidia_modeset"))
		r = add(ret, "dev/nvidia-modeset", major, NV_MODESET_MINOR, &np);
	if (r >= 0 && gb_proc_devices_major(text, len, "nvidia-uvm", &major) == 0) {
		r = add(ret, "dev/nvidia-uvm", major, 0, &np);
		if (r >= 0)
			r = add(ret, "dev/nvidia-uvm-tools", major, 1, &np);
	}
	if (r >= 0 && gb_proc_devices_major(text, len, "nvidia-caps", &major) == 0)
		r = add_caps(root, major, ret);
	return r < 0 ? r : 0;
}
