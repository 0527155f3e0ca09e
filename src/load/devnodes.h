/* SPDX-License-Identifier: MIT */
/* The NVIDIA device nodes, as nvidia-modprobe makes them: /dev/nvidiactl
 * (195:255), /dev/nvidiaN (195:N, N the GPU's "Device Minor"),
 * /dev/nvidia-modeset (195:254), /dev/nvidia-uvm and -uvm-tools (the
 * dynamic major "nvidia-uvm" registered, minors 0 and 1),
 * /dev/nvidia-caps/nvidia-capN (the dynamic major "nvidia-caps"). This
 * file works out which nodes, with which numbers and modes, from
 * proc/devices and proc/driver/nvidia under the root; src/load/nodes.c
 * makes them (docs/load.md#device-nodes). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct gb_root;

/* The major registered under name in the "Character devices:" section of
 * a proc/devices text. -ENOENT when the name is not there; lines that do
 * not parse are skipped; majors above 4095 (the kernel's 12 bits) are
 * refused as garbage. */
int gb_proc_devices_major(const char *text, size_t len, const char *name, uint32_t *ret);

/* The "Device Minor:" of a proc/driver/nvidia/gpus/<bus>/information text. */
int gb_nvidia_gpu_minor(const char *text, size_t len, uint32_t *ret);

#define GB_DEVNODES_MAX 40

struct gb_devnode {
	char path[48]; /* below the root: "dev/nvidia0" */
	uint32_t major, minor;
	unsigned perm; /* the driver's DeviceFileMode (0666), a capability's own (0400, 0444) */
	uint32_t uid, gid; /* DeviceFileUID/GID; capabilities: root's */
};

struct gb_devnodes {
	struct gb_devnode node[GB_DEVNODES_MAX];
	size_t n;
	bool modify_off; /* ModifyDeviceFiles: 0: the site manages the nodes; gpuboot leaves them */
};

/* The nodes for what is loaded now: -ENODEV when proc/devices has no
 * nvidia major (the module is not loaded). uvm and modeset nodes are
 * listed when their module registered; the MIG capability nodes
 * (dev/nvidia-caps/nvidia-capN) when the driver registered nvidia-caps,
 * with the minors and modes of proc/driver/nvidia/capabilities/mig/. The
 * permissions and owner come from proc/driver/nvidia/params, as
 * nvidia-modprobe takes them (0666 root:root when unreadable). */
int gb_load_devnodes(struct gb_root *root, struct gb_devnodes *ret);

/* "Name: value" of a proc/driver/nvidia text as a number: -ENOENT when
 * the name is not there, -EINVAL when the value is not a number. */
int gb_nvidia_proc_number(const char *text, size_t len, const char *name, uint32_t *ret);
