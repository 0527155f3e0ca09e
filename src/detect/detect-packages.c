/* SPDX-License-Identifier: MIT */
/* The package database: which NVIDIA packages are installed, at which
 * version. Debian and Ubuntu keep it as text (var/lib/dpkg/status); the RPM
 * database is binary (sqlite or Berkeley DB) and is not read. */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "context.h"
#include "detect.h"
#include "shared/log.h"
#include "shared/root.h"
#include "shared/util.h"

#define DPKG_STATUS "var/lib/dpkg/status"
#define DPKG_STATUS_MAX (64u << 20)
#define PACKAGES_MAX 64

/* Which packages are NVIDIA's driver, CUDA or toolkit, and which of them
 * carry the driver's version ("535.261.03-1") and its kernel module. A
 * name ending in '-' is a prefix that must be followed by a digit (the
 * branch: nvidia-driver-535-open, cuda-toolkit-12-2). */
static const struct {
	const char *name;
	bool driver_version; /* the package version is the driver version */
	bool kernel_module; /* it installs (or builds) nvidia.ko: "-open" in the name = open flavour */
} nvidia_packages[] = {
	/* Debian */
	{ "nvidia-driver", true, false },
	{ "nvidia-kernel-dkms", true, true },
	{ "nvidia-open-kernel-dkms", true, true },
	{ "nvidia-tesla-", true, false },
	{ "libcuda1", true, false },
	{ "libnvidia-ml1", true, false },
	{ "nvidia-smi", true, false },
	{ "firmware-nvidia-gsp", true, false },
	/* Ubuntu (and NVIDIA's repositories for Ubuntu and Debian) */
	{ "nvidia-driver-", true, true },
	{ "nvidia-dkms-", true, true },
	{ "nvidia-utils-", true, false },
	{ "libnvidia-compute-", true, false },
	{ "linux-modules-nvidia-", false, true },
	{ "nvidia-fabricmanager-", true, false },
	{ "nvidia-fabricmanager", true, false },
	{ "cuda-drivers", true, false },
	{ "cuda-drivers-", true, false },
	{ "nvidia-open", true, true },
	{ "cuda-toolkit-", false, false },
	{ "nvidia-container-toolkit", false, false },
};

static int package_kind(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(nvidia_packages); i++) {
		const char *n = nvidia_packages[i].name;
		size_t l = strlen(n);
		if (n[l - 1] == '-') {
			if (strneq(name, n, l) && isdigit((unsigned char)name[l]))
				return (int)i;
		} else if (streq(name, n)) {
			return (int)i;
		}
	}
	return -1;
}

bool gb_package_is_nvidia(const char *name)
{
	return package_kind(name) >= 0;
}

/* "1:535.261.03-1" -> "535.261.03"; NULL when the upstream part is not a
 * driver version. */
char *gb_package_driver_version(const struct gb_package *p)
{
	int k = package_kind(p->name);
	const char *v = p->version, *colon;
	char buf[64];

	if (k < 0 || !nvidia_packages[k].driver_version || !v)
		return NULL;
	colon = strchr(v, ':');
	if (colon)
		v = colon + 1;
	gb_strscpy(buf, sizeof(buf), v);
	buf[strcspn(buf, "-~+")] = '\0';
	return gb_version_valid(buf) && strchr(buf, '.') ? strdup(buf) : NULL;
}

const char *gb_package_module_flavor(const struct gb_package *p)
{
	int k = package_kind(p->name);

	if (k < 0 || !nvidia_packages[k].kernel_module)
		return NULL;
	return strstr(p->name, "open") ? "open" : "proprietary";
}

void gb_packages_free(struct gb_package *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(p[i].name);
		free(p[i].version);
	}
	free(p);
}

/* One field of a stanza, "Name: value" at the start of a line, the value
 * up to the end of that line. Continuation lines (starting with a space)
 * belong to the previous field and are never matched. */
static bool field(const char *line, size_t len, const char *name, char *buf, size_t bufsz)
{
	size_t n = strlen(name);
	const char *v;
	size_t vl;

	if (len <= n + 1 || strncasecmp(line, name, n) != 0 || line[n] != ':')
		return false;
	v = line + n + 1;
	vl = len - n - 1;
	while (vl > 0 && (*v == ' ' || *v == '\t'))
		v++, vl--;
	while (vl > 0 && (v[vl - 1] == ' ' || v[vl - 1] == '\t' || v[vl - 1] == '\r'))
		vl--;
	if (vl == 0 || vl >= bufsz)
		return false;
	for (size_t i = 0; i < vl; i++)
		if (!isgraph((unsigned char)v[i]) && v[i] != ' ')
			return false;
	memcpy(buf, v, vl);
	buf[vl] = '\0';
	return true;
}

/* Installed means the third word of Status is "installed" ("install ok
 * installed", and "hold ok installed" for a held package). */
static bool status_installed(const char *status)
{
	const char *p = strrchr(status, ' ');
	return p && streq(p + 1, "installed") && strstr(status, " ok ");
}

static bool name_valid(const char *n)
{
	/* Debian policy: lowercase letters, digits, + - . ; at least two, a letter or digit first. */
	if (strlen(n) < 2 || !isalnum((unsigned char)n[0]))
		return false;
	for (const char *p = n; *p; p++)
		if (!(islower((unsigned char)*p) || isdigit((unsigned char)*p) || strchr("+-.", *p)))
			return false;
	return true;
}

static bool version_valid(const char *v)
{
	if (!isdigit((unsigned char)v[0]))
		return false;
	for (const char *p = v; *p; p++)
		if (!(isalnum((unsigned char)*p) || strchr(".+~-:", *p)))
			return false;
	return true;
}

int gb_dpkg_status_parse(const char *text, size_t len, bool (*want)(const char *name), struct gb_package **ret,
                         size_t *ret_n, unsigned *ret_bad)
{
	struct gb_package *v = NULL;
	size_t n = 0;
	unsigned bad = 0;
	const char *p = text, *end = text + len;
	char name[128], status[64], version[128];

	if (memchr(text, '\0', len))
		return -EINVAL;
	while (p < end) {
		bool have_name = false, have_status = false, have_version = false;

		/* One stanza: lines up to an empty line or the end. */
		while (p < end && *p != '\n') {
			const char *nl = memchr(p, '\n', (size_t)(end - p));
			size_t l = nl ? (size_t)(nl - p) : (size_t)(end - p);
			if (!have_name && field(p, l, "Package", name, sizeof(name)))
				have_name = true;
			else if (!have_status && field(p, l, "Status", status, sizeof(status)))
				have_status = true;
			else if (!have_version && field(p, l, "Version", version, sizeof(version)))
				have_version = true;
			p += l + (nl ? 1 : 0);
		}
		while (p < end && *p == '\n')
			p++;
		if (!have_name && !have_status && !have_version)
			continue;
		if (!have_name || !have_status || !name_valid(name)) {
			bad++;
			continue;
		}
		if (!status_installed(status) || !want(name))
			continue;
		if (!have_version || !version_valid(version)) {
			bad++;
			continue;
		}
		if (n == PACKAGES_MAX)
			continue; /* more than any real machine has: the first ones are kept */
		{
			struct gb_package *nv = realloc(v, (n + 1) * sizeof(*v));
			if (!nv)
				goto oom;
			v = nv;
			v[n].name = strdup(name);
			v[n].version = strdup(version);
			n++;
			if (!v[n - 1].name || !v[n - 1].version)
				goto oom;
		}
	}
	*ret = v;
	*ret_n = n;
	if (ret_bad)
		*ret_bad = bad;
	return 0;
oom:
	gb_packages_free(v, n);
	return -ENOMEM;
}

int gb_detect_packages(struct gb_ctx *ctx, struct gb_facts *f)
{
	_cleanup_free_ char *text = NULL;
	size_t len;
	unsigned bad = 0;
	int r;

	r = gb_root_read_file(ctx->root, DPKG_STATUS, DPKG_STATUS_MAX, &text, &len);
	if (r == -ENOENT)
		return 0;
	if (r < 0) {
		gb_log_warning_errno(r, "Failed to read '%s': %m, installed packages unknown, ignoring", DPKG_STATUS);
		f->warnings++;
		return 0;
	}
	r = gb_dpkg_status_parse(text, len, gb_package_is_nvidia, &f->nvidia.installed.packages,
	                         &f->nvidia.installed.n_packages, &bad);
	if (r == -ENOMEM)
		return r;
	if (r < 0 || bad) {
		gb_log_warning("'%s' is not in dpkg's format (%u garbled NVIDIA stanza(s)), ignoring%s", DPKG_STATUS,
		               bad, r < 0 ? "" : " them");
		f->warnings++;
	}
	return 0;
}
