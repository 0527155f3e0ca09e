/* SPDX-License-Identifier: MIT */
/* Firmware and platform: Secure Boot (efivars, shim, lockdown), cloud and
 * hypervisor (DMI). */
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "context.h"
#include "detect.h"
#include "shared/log.h"
#include "shared/root.h"
#include "shared/util.h"

/* efivarfs names a variable NAME-GUID. SecureBoot lives under the UEFI
 * spec's EFI_GLOBAL_VARIABLE GUID; MokSBStateRT under shim's SHIM_LOCK_GUID
 * (docs/fixtures.md cites both). */
#define EFI_GLOBAL_GUID "8be4df61-93ca-11d2-aa0d-00e098032b8c"
#define SHIM_LOCK_GUID "605dab50-e046-4300-abb6-3dd810dd8b23"
#define EFIVARS "sys/firmware/efi/efivars/"
#define SECUREBOOT_VAR EFIVARS "SecureBoot-" EFI_GLOBAL_GUID
#define MOKSBSTATE_VAR EFIVARS "MokSBStateRT-" SHIM_LOCK_GUID
#define LOCKDOWN_FILE "sys/kernel/security/lockdown"

#define EFI_VARIABLE_NON_VOLATILE 0x1u

/* A one-byte EFI variable through efivarfs: 4 bytes of attributes (host
 * endian), then the data. Returns 0 with the byte and attributes, -ENOENT
 * when absent, another negative errno (with one warning) when unreadable or
 * not exactly 5 bytes. */
static int efivar_read_u8(struct gb_ctx *ctx, struct gb_facts *f, const char *path, uint32_t *ret_attr,
                          uint8_t *ret_value)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	int r;

	r = gb_root_read_file(ctx->root, path, 64, &buf, &len);
	if (r == -ENOENT)
		return r;
	if (r >= 0 && len != 5)
		r = -EBADMSG;
	if (r < 0) {
		gb_log_warning_errno(
		    r, "Failed to read '%s' (%zu bytes, want 4 of attributes and 1 of data): %m, ignoring", path, len);
		f->warnings++;
		return r;
	}
	memcpy(ret_attr, buf, sizeof(*ret_attr));
	*ret_value = (uint8_t)buf[4];
	return 0;
}

static int detect_secure_boot(struct gb_ctx *ctx, struct gb_facts *f)
{
	uint32_t attr;
	uint8_t v;
	int r;

	if (!gb_root_lexists(ctx->root, "sys/firmware/efi"))
		return -1; /* not booted with EFI */
	r = efivar_read_u8(ctx, f, SECUREBOOT_VAR, &attr, &v);
	if (r == -ENOENT)
		return 0; /* EFI without the variable: Secure Boot is not on */
	if (r < 0)
		return -1;
	return v == 1 ? 1 : 0;
}

/* shim's MokSBStateRT: 1 when `mokutil --disable-validation` was confirmed
 * at boot. The kernel's EFI stub honours it only when the variable is not
 * non-volatile (a runtime copy shim made, not one an OS could have planted);
 * so do we. Absent on EFI: shim validates (or there is no shim). */
static int detect_shim_validation_disabled(struct gb_ctx *ctx, struct gb_facts *f)
{
	uint32_t attr;
	uint8_t v;
	int r;

	if (f->secure_boot < 0 && !gb_root_lexists(ctx->root, "sys/firmware/efi"))
		return -1;
	r = efivar_read_u8(ctx, f, MOKSBSTATE_VAR, &attr, &v);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return -1;
	return v == 1 && !(attr & EFI_VARIABLE_NON_VOLATILE) ? 1 : 0;
}

int gb_lockdown_parse(const char *text, char **ret_mode)
{
	const char *found = NULL, *p = text;
	size_t found_len = 0;

	/* "none [integrity] confidentiality": the bracketed word is the active
	 * mode. Kernels that lock features separately may bracket more than
	 * one; the last one is the strongest. */
	while ((p = strchr(p, '['))) {
		const char *end = strchr(p, ']');
		size_t n;
		if (!end)
			return -EINVAL;
		n = (size_t)(end - p - 1);
		if (n == 0 || n > 32)
			return -EINVAL;
		for (size_t i = 1; i <= n; i++)
			if (!islower((unsigned char)p[i]))
				return -EINVAL;
		found = p + 1;
		found_len = n;
		p = end + 1;
	}
	if (!found)
		return -EINVAL;
	*ret_mode = strndup(found, found_len);
	return *ret_mode ? 0 : -ENOMEM;
}

static int detect_lockdown(struct gb_ctx *ctx, struct gb_facts *f)
{
	_cleanup_free_ char *text = NULL;
	int r;

	r = gb_root_read_attr(ctx->root, LOCKDOWN_FILE, &text);
	if (r == -ENOENT)
		return 0; /* no lockdown LSM, or securityfs not mounted: unknown */
	if (r >= 0)
		r = gb_lockdown_parse(text, &f->secure_boot_state.lockdown);
	if (r == -ENOMEM)
		return r;
	if (r < 0) {
		gb_log_warning_errno(r, "Failed to read the lockdown mode from '%s': %m, ignoring", LOCKDOWN_FILE);
		f->warnings++;
	}
	return 0;
}

/* Is word (as "key=value") one of the words of the kernel command line? */
static bool cmdline_has(const char *cmdline, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = cmdline; p && (p = strstr(p, word)); p += n)
		if ((p == cmdline || isspace((unsigned char)p[-1])) && (p[n] == '\0' || isspace((unsigned char)p[n])))
			return true;
	return false;
}

/* Will the kernel refuse an unsigned module? Secure Boot on and shim not
 * told to stop validating, or the kernel locked down (lockdown=integrity
 * on the command line, or forced by its configuration), or signatures
 * enforced on the command line. */
static int secure_boot_enforcing(const struct gb_facts *f)
{
	const char *l = f->secure_boot_state.lockdown, *c = f->kernel.cmdline;

	if (l && (streq(l, "integrity") || streq(l, "confidentiality")))
		return 1;
	if (!l && (cmdline_has(c, "lockdown=integrity") || cmdline_has(c, "lockdown=confidentiality")))
		return 1;
	if (cmdline_has(c, "module.sig_enforce=1"))
		return 1;
	if (f->secure_boot == 1)
		return f->secure_boot_state.shim_validation_disabled == 1 ? 0 : 1;
	if (f->secure_boot < 0 && !l)
		return -1;
	return 0;
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

/* word is one of the blank-separated words of s */
static bool has_word(const char *s, const char *word)
{
	size_t n = strlen(word);
	for (const char *p = s; p && (p = strstr(p, word)); p += n)
		if ((p == s || p[-1] == ' ' || p[-1] == '\t') && (!p[n] || strchr(" \t\n", p[n])))
			return true;
	return false;
}

int gb_detect_platform(struct gb_ctx *ctx, struct gb_facts *f)
{
	_cleanup_free_ char *bios_vendor = NULL, *asset = NULL, *hv = NULL, *bios_version = NULL, *cs = NULL;
	int r;

	f->secure_boot = detect_secure_boot(ctx, f);
	f->secure_boot_state.shim_validation_disabled = detect_shim_validation_disabled(ctx, f);
	r = detect_lockdown(ctx, f);
	if (r >= 0)
		r = gb_detect_kernel_keys(ctx, f);
	if (r < 0)
		return r;
	f->secure_boot_state.enforcing = secure_boot_enforcing(f);

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
	/* No DMI (microVMs: Firecracker, Cloud Hypervisor) or DMI that names no
	 * hypervisor: the paravirtual clock the guest kernel found says whose
	 * guest it is. */
	if (!f->cloud.hypervisor &&
	    gb_root_read_attr(ctx->root, "sys/devices/system/clocksource/clocksource0/available_clocksource", &cs) >=
	        0) {
		if (has_word(cs, "kvm-clock"))
			f->cloud.hypervisor = "kvm";
		else if (has_word(cs, "hyperv_clocksource_tsc_page") || has_word(cs, "hyperv_clocksource_msr"))
			f->cloud.hypervisor = "hyperv";
		else if (has_word(cs, "xen"))
			f->cloud.hypervisor = "xen";
	}
	return 0;
}
