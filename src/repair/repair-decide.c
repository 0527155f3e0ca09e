/* SPDX-License-Identifier: MIT */
/* The repair decision past the fast path: what a build needs (DKMS's
 * source at the installed version, the kernel's headers) and, when one is
 * missing, what to tell the operator: the headers package of this family,
 * or, for a kernel no package owns, to supply its headers. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog/catalog.h"
#include "context.h"
#include "detect/detect.h"
#include "repair-internal.h"
#include "shared/macro.h"
#include "shared/root.h"
#include "shared/util.h"

#define DPKG_STATUS_MAX (32u << 20)

static enum gb_repair_family family_of(const struct gb_os *os)
{
	switch (os ? os->family : GB_OS_FAMILY_NONE) {
	case GB_OS_FAMILY_DEBIAN: return GB_REPAIR_FAMILY_DEB;
	case GB_OS_FAMILY_RHEL:
	case GB_OS_FAMILY_FEDORA: return GB_REPAIR_FAMILY_RPM;
	default: return GB_REPAIR_FAMILY_UNKNOWN;
	}
}

/* The catalog's row of the root's os-release (ID, then ID_LIKE). */
static const struct gb_os *root_os(struct gb_ctx *ctx)
{
	struct gb_os_release osr;
	if (gb_os_release_read(ctx, &osr) < 0)
		return NULL;
	return gb_os_lookup(osr.id, osr.id_like);
}

enum gb_repair_family gb_repair_family(struct gb_ctx *ctx, const char *family)
{
	return family_of(family ? gb_os_find(family) : root_os(ctx));
}

/* "nvidia-current-535.261.03" -> name "nvidia-current", version "535.261.03". */
static bool split_source(const char *entry, char *name, size_t namesz, char *ver, size_t versz)
{
	const char *dash = strrchr(entry, '-');
	size_t nl;
	if (!dash || !gb_startswith(entry, "nvidia") || !gb_version_valid(dash + 1) || !strchr(dash + 1, '.'))
		return false;
	nl = (size_t)(dash - entry);
	if (nl >= namesz || gb_strscpy(ver, versz, dash + 1) < 0)
		return false;
	for (size_t i = 0; i < nl; i++)
		if (!(('a' <= entry[i] && entry[i] <= 'z') || ('0' <= entry[i] && entry[i] <= '9') ||
		      strchr("-_", entry[i])))
			return false;
	memcpy(name, entry, nl);
	name[nl] = '\0';
	return true;
}

/* Keep the candidate when it is better: the installed version wins, then the newest. */
static void consider(struct gb_repair_state *s, const char *name, const char *ver, bool added)
{
	bool have = s->dkms_source, want = s->installed_version[0] && streq(ver, s->installed_version);
	bool have_want = have && s->installed_version[0] && streq(s->dkms_version, s->installed_version);
	if (have && (have_want || (!want && gb_version_cmp(ver, s->dkms_version) <= 0)) &&
	    !(added && !s->dkms_added && streq(ver, s->dkms_version)))
		return;
	s->dkms_source = true;
	s->dkms_added = added;
	gb_strscpy(s->dkms_name, sizeof(s->dkms_name), name);
	gb_strscpy(s->dkms_version, sizeof(s->dkms_version), ver);
}

/* DKMS's source: registered (var/lib/dkms/NAME/VER/source) or ready to be
 * (usr/src/NAME-VER/dkms.conf). */
static void find_dkms(struct gb_ctx *ctx, struct gb_repair_state *s)
{
	char **names = NULL, **vers = NULL, p[512], name[GB_REPAIR_NAME_MAX], ver[GB_REPAIR_VERSION_MAX];

	if (gb_root_list_dir(ctx->root, "var/lib/dkms", &names, NULL) >= 0) {
		for (char **n = names; *n; n++) {
			if (!gb_startswith(*n, "nvidia") || strlen(*n) >= sizeof(name))
				continue;
			snprintf(p, sizeof(p), "var/lib/dkms/%s", *n);
			if (gb_root_list_dir(ctx->root, p, &vers, NULL) < 0)
				continue;
			for (char **v = vers; *v; v++) {
				char full[GB_REPAIR_NAME_MAX + GB_REPAIR_VERSION_MAX + 2];
				snprintf(full, sizeof(full), "%s-%s", *n, *v);
				snprintf(p, sizeof(p), "var/lib/dkms/%s/%s/source/dkms.conf", *n, *v);
				if (split_source(full, name, sizeof(name), ver, sizeof(ver)) &&
				    gb_root_exists(ctx->root, p))
					consider(s, name, ver, true);
			}
			gb_strv_free(vers);
		}
		gb_strv_free(names);
	}
	if (gb_root_list_dir(ctx->root, "usr/src", &names, NULL) < 0)
		return;
	for (char **n = names; *n; n++) {
		snprintf(p, sizeof(p), "usr/src/%s/dkms.conf", *n);
		if (split_source(*n, name, sizeof(name), ver, sizeof(ver)) && gb_root_exists(ctx->root, p))
			consider(s, name, ver, false);
	}
	gb_strv_free(names);
}

/* Does a distribution package own this kernel? Debian and Ubuntu: a
 * linux-image (or Ubuntu's linux-modules) package of this release in
 * dpkg's status. The RHEL family: the release carries a dist tag (.el9,
 * .amzn2023, .fc40). Unknown (no dpkg status): assume it does. */
static bool kernel_packaged(struct gb_ctx *ctx, enum gb_repair_family f, const char *kver)
{
	static const char *const forms[] = { "linux-image-%s\n", "linux-image-unsigned-%s\n",
		                             "linux-image-%s-unsigned\n", "linux-modules-%s\n" };
	_cleanup_free_ char *text = NULL;
	size_t len;

	if (f == GB_REPAIR_FAMILY_RPM)
		return strstr(kver, ".el") || strstr(kver, ".amzn") || strstr(kver, ".fc");
	if (gb_root_read_file(ctx->root, "var/lib/dpkg/status", DPKG_STATUS_MAX, &text, &len) < 0)
		return true;
	for (size_t i = 0; i < ARRAY_SIZE(forms); i++) {
		char want[GB_KVER_MAX + 48];
		snprintf(want, sizeof(want), "\nPackage: ");
		snprintf(want + strlen(want), sizeof(want) - strlen(want), forms[i], kver);
		if (strstr(text, want) || gb_startswith(text, want + 1))
			return true;
	}
	return false;
}

static void headers_package(struct gb_ctx *ctx, struct gb_repair_state *s)
{
	const struct gb_os *os = root_os(ctx);
	/* a distribution the catalog does not know: Debian's name, the likeliest */
	snprintf(s->headers_package, sizeof(s->headers_package), os && os->headers ? os->headers : "linux-headers-%s",
	         s->kver);
	s->custom_kernel = !kernel_packaged(ctx, family_of(os), s->kver);
}

static void cannot(struct gb_ctx *ctx, struct gb_repair_state *s, bool version_ok)
{
	s->verdict = GB_REPAIR_CANNOT;
	if (!s->dkms_source || !version_ok) {
		if (s->dkms_source)
			snprintf(s->reason, sizeof(s->reason),
			         "no NVIDIA module for %s, and DKMS has the source of %s, not of the installed %s",
			         s->kver, s->dkms_version, s->installed_version);
		else
			snprintf(
			    s->reason, sizeof(s->reason),
			    "no NVIDIA module for %s, and no DKMS source to build one (usr/src/nvidia-*/dkms.conf)",
			    s->kver);
		snprintf(s->hint, sizeof(s->hint),
		         "the driver was not installed with DKMS (precompiled modules or a runfile): run 'gpuboot run' "
		         "on %s to install the module for it",
		         s->kver);
		return;
	}
	headers_package(ctx, s);
	if (s->custom_kernel) {
		snprintf(s->reason, sizeof(s->reason),
		         "no NVIDIA module for %s and no headers (lib/modules/%s/build/Makefile); no package owns this "
		         "kernel: a custom kernel",
		         s->kver, s->kver);
		snprintf(
		    s->hint, sizeof(s->hint),
		    "supply the headers of this custom kernel (make lib/modules/%s/build point at its build tree), "
		    "then run 'gpuboot --repair --kernel %s'",
		    s->kver, s->kver);
		return;
	}
	snprintf(s->reason, sizeof(s->reason), "no NVIDIA module for %s and no headers to build it (%s is missing)",
	         s->kver, s->headers_package);
	snprintf(s->hint, sizeof(s->hint), "install %s, then run 'gpuboot --repair --kernel %s'", s->headers_package,
	         s->kver);
}

int gb_repair_decide(struct gb_ctx *ctx, struct gb_repair_state *s)
{
	const char *inst = s->installed_version;
	bool mod_ok = s->module_present && (!inst[0] || !s->module_version[0] || streq(s->module_version, inst));
	char p[GB_KVER_MAX + 32];

	if (!s->module_present && !inst[0]) {
		find_dkms(ctx, s);
		if (!s->dkms_source) {
			s->no_driver = true;
			s->verdict = GB_REPAIR_OK;
			snprintf(s->reason, sizeof(s->reason), "no NVIDIA driver is installed: nothing to repair");
			return 0;
		}
	}
	if (mod_ok && !s->running) {
		s->verdict = GB_REPAIR_OK;
		snprintf(s->reason, sizeof(s->reason), "%s has the NVIDIA module %s (%s): it will come up with the GPU",
		         s->kver, s->module_version[0] ? s->module_version : "of unknown version", s->module_path);
		return 0;
	}
	if (mod_ok) {
		s->verdict = GB_REPAIR_LOAD;
		if (s->loaded)
			snprintf(s->reason, sizeof(s->reason), "the loaded NVIDIA module is %s, the installed %s (%s)",
			         s->loaded_version, inst, s->module_path);
		else
			snprintf(s->reason, sizeof(s->reason), "the NVIDIA module %s for %s is there (%s), not loaded",
			         s->module_version[0] ? s->module_version : "", s->kver, s->module_path);
		snprintf(s->hint, sizeof(s->hint), "%s",
		         s->loaded ? "unload the loaded NVIDIA modules (or reboot) so the installed version loads"
		                   : "the load stage inserts it ('gpuboot --repair' loads and verifies)");
		return 0;
	}
	if (!s->dkms_source)
		find_dkms(ctx, s);
	snprintf(p, sizeof(p), "lib/modules/%s/build/Makefile", s->kver);
	s->headers = gb_root_exists(ctx->root, p);
	bool version_ok = s->dkms_source && (!inst[0] || streq(s->dkms_version, inst));
	if (version_ok && s->headers) {
		s->verdict = GB_REPAIR_BUILD;
		snprintf(s->reason, sizeof(s->reason), "no NVIDIA module%s%s for %s; DKMS can build %s/%s",
		         s->module_present ? " at the installed version " : "", s->module_present ? inst : "", s->kver,
		         s->dkms_name, s->dkms_version);
		snprintf(s->hint, sizeof(s->hint), "'gpuboot --repair --kernel %s' builds it", s->kver);
		return 0;
	}
	cannot(ctx, s, version_ok);
	return 0;
}
