/* SPDX-License-Identifier: MIT */
/* The Container Toolkit's packages from NVIDIA's repository: its four
 * packages at the plan's one version, pinned and held (apt) or locked (dnf
 * versionlock, zypper addlock), userspace only. NVIDIA's rpm repository
 * (one for every rpm distribution, stable/rpm/<arch>/) signs its
 * repomd.xml, not each package; its apt repository signs its index. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog/catalog.h"
#include "ctk.h"
#include "effect/journal.h"
#include "install/install.h"
#include "shared/macro.h"
#include "shared/util.h"

int gb_toolkit_install(struct gb_ctx *ctx, struct gb_journal *j, const struct gb_toolkit_input *tin,
                       json_object **ret_json, char *err, size_t errsz)
{
	struct gb_pkg_spec pkgs[ARRAY_SIZE(gb_ctk_packages)];
	char uri[600], key[700], pin[256], path[96];
	const struct gb_cpu_arch *arch = gb_cpu_arch_target(tin->arch);
	struct gb_apt_repo repo = { .id = "nvidia-container-toolkit",
		                    .uri = uri,
		                    .key_url = key,
		                    .key_pin = "container-toolkit",
		                    .ca_file = tin->src.ca_file,
		                    .signing = tin->rpm ? GB_REPO_SIGNS_METADATA : GB_REPO_SIGNS_PACKAGES };
	struct gb_install_input in = { .method = GB_INSTALL_PACKAGES,
		                       .repo = &repo,
		                       .packages = pkgs,
		                       .n_packages = ARRAY_SIZE(pkgs),
		                       .userspace_only = true,
		                       .pin_name = "nvidia-container-toolkit",
		                       .pin_packages = pin,
		                       .pin_version = tin->version };
	int k;

	*ret_json = NULL;
	snprintf(path, sizeof(path), GB_NVIDIA_CTK_REPO "stable/%s/%s/", tin->rpm ? "rpm" : "deb",
	         tin->rpm ? arch->rpm : arch->deb);
	k = gb_repo_url(tin->src.mirror, GB_NVIDIA_CTK_HOST, GB_NVIDIA_CTK_REPO "gpgkey", key, sizeof(key));
	if (k >= 0)
		k = gb_repo_url(tin->src.mirror, GB_NVIDIA_CTK_HOST, path, uri, sizeof(uri));
	if (k < 0) {
		snprintf(err, errsz, "the mirror's address is too long: %s", tin->src.mirror);
		return k;
	}
	snprintf(pin, sizeof(pin), "%s %s %s %s", gb_ctk_packages[0], gb_ctk_packages[1], gb_ctk_packages[2],
	         gb_ctk_packages[3]);
	for (size_t i = 0; i < ARRAY_SIZE(pkgs); i++) {
		pkgs[i] = (struct gb_pkg_spec){ .hold = true };
		gb_strscpy(pkgs[i].name, sizeof(pkgs[i].name), gb_ctk_packages[i]);
		gb_strscpy(pkgs[i].version, sizeof(pkgs[i].version), tin->version);
	}
	gb_journal_set_scope(j, "toolkit");
	k = gb_install_report(ctx, &in, j, ret_json, err, errsz);
	gb_journal_set_scope(j, NULL);
	return k;
}
