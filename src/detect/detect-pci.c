/* SPDX-License-Identifier: MIT */
/* PCI: every function of vendor 10de (GPUs by class 0300/0302, NVSwitches
 * by 0680), with IDs, link, NUMA node and bound driver; Mellanox NICs. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "context.h"
#include "detect.h"
#include "shared/log.h"
#include "shared/root.h"
#include "shared/util.h"

#define PCI_DIR "sys/bus/pci/devices"
#define PCI_VENDOR_NVIDIA 0x10de
#define PCI_VENDOR_MELLANOX 0x15b3
#define PCI_VENDOR_AMAZON 0x1d0f
#define PCI_MAX_FUNCTIONS 4096

int gb_pci_speed_to_gen(const char *speed)
{
	static const struct {
		const char *prefix;
		int gen;
	} rates[] = {
		{ "2.5 GT/s", 1 }, { "5.0 GT/s", 2 },  { "5 GT/s", 2 },    { "8.0 GT/s", 3 },
		{ "8 GT/s", 3 },   { "16.0 GT/s", 4 }, { "32.0 GT/s", 5 }, { "64.0 GT/s", 6 },
	};
	if (!speed)
		return -1;
	for (size_t i = 0; i < ARRAY_SIZE(rates); i++)
		if (gb_startswith(speed, rates[i].prefix))
			return rates[i].gen;
	return -1;
}

/* PCI_DIR/ADDR/ATTR, its path in path (256 bytes), read as an attribute. */
static int read_attr(struct gb_ctx *ctx, const char *addr, const char *attr, char path[static 256], char **ret)
{
	snprintf(path, 256, PCI_DIR "/%s/%s", addr, attr);
	return gb_root_read_attr(ctx->root, path, ret);
}

/* Read DIR/ADDR/ATTR as a hex or decimal number; -1 with a warning on garbage,
 * quietly -1 when absent (not every kernel has every attribute). */
static int64_t attr_num(struct gb_ctx *ctx, struct gb_facts *f, const char *addr, const char *attr, unsigned base)
{
	_cleanup_free_ char *v = NULL;
	char path[256];
	uint64_t n;
	int r = read_attr(ctx, addr, attr, path, &v);

	if (r == -ENOENT)
		return -1;
	if (r < 0 || gb_safe_atou64(v, base, &n) < 0 || n > UINT32_MAX) {
		if (base == 10 && v) {
			int32_t s;
			if (gb_safe_atoi32(v, &s) == 0)
				return s;
		}
		gb_log_warning("Failed to parse '%s'%s%s%s, ignoring", path, v ? " ('" : "", v ? v : "", v ? "')" : "");
		f->warnings++;
		return -1;
	}
	return (int64_t)n;
}

/* An identifying attribute (vendor, device, class): a number, or detect
 * fails naming it (-EIO; -ENOMEM as it is). */
static int64_t attr_required(struct gb_ctx *ctx, const char *addr, const char *attr)
{
	_cleanup_free_ char *v = NULL;
	char path[256];
	uint64_t n;
	int r = read_attr(ctx, addr, attr, path, &v);

	if (r == -ENOMEM)
		return r;
	if (r < 0) {
		gb_log_error_errno(r,
		                   "Failed to read '%s': %m; a PCI function that cannot be identified may be a GPU, so "
		                   "detect stops (rerun; if it persists, check the kernel log)",
		                   path);
		return -EIO;
	}
	if (gb_safe_atou64(v, 16, &n) < 0 || n > UINT32_MAX) {
		gb_log_error(
		    "'%s' is '%s', not a hexadecimal ID: a PCI function that cannot be identified may be a GPU, "
		    "so detect stops",
		    path, v);
		return -EIO;
	}
	return (int64_t)n;
}

static char *attr_str(struct gb_ctx *ctx, const char *addr, const char *attr)
{
	char path[256];
	char *v = NULL;

	snprintf(path, sizeof(path), PCI_DIR "/%s/%s", addr, attr);
	if (gb_root_read_attr(ctx->root, path, &v) < 0)
		return NULL;
	return v;
}

static bool address_valid(const char *a)
{
	/* dddd:bb:dd.f */
	size_t n = strlen(a);
	if (n < 12 || n > 16)
		return false;
	for (const char *p = a; *p; p++)
		if (!strchr("0123456789abcdef:.", *p))
			return false;
	return true;
}

static int read_function(struct gb_ctx *ctx, struct gb_facts *f, const char *addr, uint16_t vendor,
                         struct gb_pci_fn *fn)
{
	_cleanup_free_ char *cur = NULL, *max = NULL, *link = NULL;
	char path[256];
	int64_t v;

	memset(fn, 0, sizeof(*fn));
	gb_strscpy(fn->address, sizeof(fn->address), addr);
	fn->vendor = vendor;
	v = attr_num(ctx, f, addr, "device", 16);
	fn->device = v >= 0 && v <= 0xffff ? (uint16_t)v : 0;
	v = attr_num(ctx, f, addr, "class", 16);
	fn->class_code = v >= 0 ? (uint32_t)v : 0;
	v = attr_num(ctx, f, addr, "subsystem_vendor", 16);
	fn->subsystem_vendor = v >= 0 && v <= 0xffff ? (int)v : -1;
	v = attr_num(ctx, f, addr, "subsystem_device", 16);
	fn->subsystem_device = v >= 0 && v <= 0xffff ? (int)v : -1;
	v = attr_num(ctx, f, addr, "revision", 16);
	fn->revision = v >= 0 && v <= 0xff ? (int)v : -1;
	v = attr_num(ctx, f, addr, "numa_node", 10);
	snprintf(path, sizeof(path), PCI_DIR "/%s/numa_node", addr);
	fn->has_numa = v != -1 || gb_root_lexists(ctx->root, path);
	fn->numa_node = (int)(v < -1 || v > 4096 ? -1 : v);
	if (vendor == PCI_VENDOR_NVIDIA)
		fn->catalog = gb_catalog_pci_lookup(fn->device);

	cur = attr_str(ctx, addr, "current_link_speed");
	max = attr_str(ctx, addr, "max_link_speed");
	fn->link.current_gen = gb_pci_speed_to_gen(cur);
	fn->link.max_gen = gb_pci_speed_to_gen(max);
	v = attr_num(ctx, f, addr, "current_link_width", 10);
	fn->link.current_width = v > 0 && v <= 32 ? (int)v : -1;
	v = attr_num(ctx, f, addr, "max_link_width", 10);
	fn->link.max_width = v > 0 && v <= 32 ? (int)v : -1;

	snprintf(path, sizeof(path), PCI_DIR "/%s/driver", addr);
	if (gb_root_readlink(ctx->root, path, &link) >= 0) {
		const char *base = strrchr(link, '/');
		base = base ? base + 1 : link;
		if (*base && strlen(base) < 64) {
			fn->bound_driver = strdup(base);
			f->oom |= !fn->bound_driver;
		}
	}
	return 0;
}

static int push(struct gb_pci_fn **arr, size_t *n, const struct gb_pci_fn *fn)
{
	struct gb_pci_fn *a = realloc(*arr, (*n + 1) * sizeof(**arr));
	if (!a)
		return -ENOMEM;
	a[*n] = *fn;
	*arr = a;
	(*n)++;
	return 0;
}

int gb_detect_pci(struct gb_ctx *ctx, struct gb_facts *f)
{
	char **names = NULL;
	size_t n = 0;
	int r;

	r = gb_root_list_dir(ctx->root, PCI_DIR, &names, &n);
	if (r == -ENOMEM)
		return r;
	if (r == -ENOENT && !ctx->root->is_host) {
		/* A disk image or chroot without sysfs: nothing to see, nothing wrong. */
		gb_log_debug("No '%s' under the root (a disk image?): no PCI devices seen", PCI_DIR);
		return 0;
	}
	if (r < 0) {
		gb_log_warning_errno(r, "Failed to list '%s': %m; no PCI devices seen, ignoring", PCI_DIR);
		f->warnings++;
		return 0;
	}
	for (size_t i = 0; i < n && i < PCI_MAX_FUNCTIONS; i++) {
		struct gb_pci_fn fn;
		int64_t vendor;
		uint32_t cls;

		if (!address_valid(names[i]))
			continue;
		/* A function that cannot be identified may be a GPU: never skipped. */
		vendor = attr_required(ctx, names[i], "vendor");
		if (vendor < 0) {
			gb_strv_free(names);
			return (int)vendor;
		}
		if (vendor == PCI_VENDOR_AMAZON) {
			/* EFA: the high-speed NICs of AWS's GPU instances (ENA is 0xec20) */
			int64_t d = attr_num(ctx, f, names[i], "device", 16);
			if (d >= 0 && (d & 0xfff0) == 0xefa0)
				f->network.efa++;
			continue;
		}
		if (vendor == PCI_VENDOR_MELLANOX) {
			int64_t c = attr_num(ctx, f, names[i], "class", 16);
			/* Ethernet (0200) and InfiniBand (0207) functions, not VFs' bridges. */
			if (c >= 0 && ((c >> 16) & 0xff) == 0x02)
				f->network.mellanox++;
			continue;
		}
		if (vendor != PCI_VENDOR_NVIDIA)
			continue;
		if ((r = attr_required(ctx, names[i], "device")) < 0 ||
		    (r = attr_required(ctx, names[i], "class")) < 0) {
			gb_strv_free(names);
			return r;
		}
		read_function(ctx, f, names[i], (uint16_t)vendor, &fn);
		cls = fn.class_code >> 8;
		if (cls == 0x0300 || cls == 0x0302)
			r = push(&f->gpus, &f->n_gpus, &fn);
		else if (cls == 0x0680)
			r = push(&f->nvswitches, &f->n_nvswitches, &fn);
		else {
			free(fn.bound_driver); /* audio, USB, serial functions of a GPU board */
			r = 0;
		}
		if (r < 0) {
			free(fn.bound_driver);
			gb_strv_free(names);
			return r;
		}
	}
	gb_strv_free(names);
	return 0;
}
