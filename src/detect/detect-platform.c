/* SPDX-License-Identifier: MIT */
/* Firmware and platform: Secure Boot (efivars), cloud and hypervisor (DMI). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "context.h"
#include "detect.h"
#include "shared/log.h"
#include "shared/root.h"
#include "shared/util.h"

#define SECUREBOOT_VAR "sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d0-aa4d-00e098032b8c"

static int detect_secure_boot(struct gb_ctx *ctx, struct gb_facts *f)
{
	_cleanup_free_ char *buf = NULL;
	size_t len;
	int r;

	if (!gb_root_lexists(ctx->root, "sys/firmware/efi"))
		return -1; /* not booted with EFI */
	r = gb_root_read_file(ctx->root, SECUREBOOT_VAR, 64, &buf, &len);
	if (r == -ENOENT)
		return 0; /* EFI without the variable: Secure Boot is not on */
	if (r < 0 || len != 5) {
		/* efivarfs: 4 bytes of attributes, then the one-byte value. */
		gb_log_warning("Failed to read '%s' (%zu bytes), Secure Boot state unknown, ignoring", SECUREBOOT_VAR,
		               r < 0 ? 0 : len);
		f->warnings++;
		return -1;
	}
	return (unsigned char)buf[4] == 1 ? 1 : 0;
}

static char *dmi(struct gb_ctx *ctx, const char *attr)
{
	char path[128];
	char *v = NULL;

	snprintf(path, sizeof(path), "sys/class/dmi/id/%s", attr);
	if (gb_root_read_attr(ctx->root, path, &v) < 0)
		return NULL;
	if (!*v) {
		free(v);
		return NULL;
	}
	return v;
}

static bool has(const char *s, const char *needle)
{
	return s && strcasestr(s, needle);
}

int gb_detect_platform(struct gb_ctx *ctx, struct gb_facts *f)
{
	_cleanup_free_ char *bios_vendor = NULL, *asset = NULL, *hv = NULL, *bios_version = NULL;

	f->secure_boot = detect_secure_boot(ctx, f);

	f->cloud.sys_vendor = dmi(ctx, "sys_vendor");
	f->cloud.product_name = dmi(ctx, "product_name");
	bios_vendor = dmi(ctx, "bios_vendor");
	bios_version = dmi(ctx, "bios_version");
	asset = dmi(ctx, "chassis_asset_tag");

	/* The markers each cloud documents for its instances. */
	if (has(f->cloud.sys_vendor, "Amazon EC2") || has(bios_vendor, "Amazon EC2") || has(bios_version, "amazon"))
		f->cloud.provider = "aws";
	else if (has(f->cloud.sys_vendor, "Google") || has(f->cloud.product_name, "Google Compute Engine"))
		f->cloud.provider = "gcp";
	else if (asset && streq(asset, "7783-7084-3265-9085-8269-3286-77"))
		f->cloud.provider = "azure";
	else if (has(asset, "OracleCloud.com"))
		f->cloud.provider = "oci";
	else if (has(f->cloud.sys_vendor, "Alibaba Cloud"))
		f->cloud.provider = "alibaba";
	else if (has(f->cloud.sys_vendor, "Tencent Cloud"))
		f->cloud.provider = "tencent";
	else if (has(f->cloud.product_name, "OpenStack Nova") || has(f->cloud.product_name, "OpenStack Compute"))
		f->cloud.provider = "openstack";

	/* Hypervisor: Xen says so in sysfs; the others in DMI. */
	if (gb_root_read_attr(ctx->root, "sys/hypervisor/type", &hv) >= 0 && streq(hv, "xen"))
		f->cloud.hypervisor = "xen";
	else if (has(f->cloud.sys_vendor, "Microsoft Corporation") && has(f->cloud.product_name, "Virtual Machine"))
		f->cloud.hypervisor = "hyperv";
	else if (has(f->cloud.sys_vendor, "VMware"))
		f->cloud.hypervisor = "vmware";
	else if (has(f->cloud.sys_vendor, "QEMU") || has(f->cloud.product_name, "KVM") || has(bios_vendor, "SeaBIOS") ||
	         has(f->cloud.sys_vendor, "Amazon EC2") || has(f->cloud.product_name, "Google Compute Engine") ||
	         has(f->cloud.product_name, "Standard PC"))
		f->cloud.hypervisor = "kvm";
	else if (has(f->cloud.product_name, "Firecracker"))
		f->cloud.hypervisor = "firecracker";
	return 0;
}
