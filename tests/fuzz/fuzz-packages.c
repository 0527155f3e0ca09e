/* SPDX-License-Identifier: MIT */
/* libFuzzer target: what the package managers say: var/lib/dpkg/status,
 * `apt-cache madison` and `dpkg-query -W` output, and apt's sources lists
 * (one-line and deb822) rewritten to enable non-free. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "detect/detect.h"
#include "install/install-internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool want_all(const char *name)
{
	(void)name;
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gb_apt_version av[8];
	struct gb_package *pk = NULL;
	char ver[GB_INSTALL_VERSION], *text, *out = NULL;
	size_t n = 0, olen;
	unsigned bad = 0, entries;
	bool held, changed;

	if (gb_dpkg_status_parse((const char *)data, size, want_all, &pk, &n, &bad) == 0) {
		for (size_t i = 0; i < n; i++) {
			free(gb_package_driver_version(&pk[i]));
			(void)gb_package_module_flavor(&pk[i]);
		}
		gb_packages_free(pk, n);
	}
	if (gb_apt_sources_oneline((const char *)data, size, "bookworm", &out, &olen, &entries, &changed) == 0)
		free(out);
	out = NULL;
	if (gb_apt_sources_deb822((const char *)data, size, "bookworm", &out, &olen, &entries, &changed) == 0)
		free(out);
	/* the command outputs are NUL-terminated strings */
	text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	(void)gb_apt_madison_parse(text, "nvidia-driver", av, 8);
	(void)gb_apt_madison_parse(text, "cuda-drivers", av, 8);
	if (gb_dpkg_query_parse(text, "nvidia-driver", ver, &held) == 0)
		(void)gb_deb_version_matches(ver, "535.261.03");
	(void)gb_deb_name_valid(text);
	(void)gb_deb_version_valid(text);
	free(text);
	return 0;
}
