/* SPDX-License-Identifier: MIT */
/* Workload profiles, the site configuration and GPU overrides (gpus.d). */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "catalog/catalog.h"

struct gb_ctx;

/* The Container Toolkit floor is the catalog's (gb_catalog_ctk_min,
 * catalog/catalog-update.c): a site pin ([pins] toolkit) older than it is
 * refused; an installed toolkit older than it is replaced. */

enum gb_branch_policy {
	GB_POLICY_LTS,
	GB_POLICY_PRODUCTION,
	GB_POLICY_LATEST,
	GB_POLICY_BRANCH, /* "R580" / "580" */
	GB_POLICY_VERSION, /* "580.159.04" */
};

/* replace_installed: what to do with a driver, CUDA or toolkit that is
 * already there (profile [install] or site [install]). */
enum gb_replace_policy {
	GB_REPLACE_IF_UNSATISFIED = 0, /* keep what satisfies the profile, replace the rest */
	GB_REPLACE_NEVER, /* keep what is there; an unsatisfying install is a refusal (exit 12) */
	GB_REPLACE_ALWAYS, /* install the plan's choice even over a satisfying install */
};

enum gb_flavor_pref {
	GB_FLAVOR_AUTO,
	GB_FLAVOR_OPEN,
	GB_FLAVOR_PROPRIETARY,
};

enum gb_cuda_policy {
	GB_CUDA_NONE,
	GB_CUDA_NEWEST,
	GB_CUDA_PINNED,
};

enum gb_tristate {
	GB_AUTO = -1,
	GB_NO = 0,
	GB_YES = 1,
};

struct gb_profile {
	char *name; /* "training" */
	char *source; /* "built-in" or the file it came from */
	char *description;
	enum gb_branch_policy policy;
	unsigned pinned_branch;
	char pinned_version[32];
	enum gb_flavor_pref flavor;
	enum gb_cuda_policy cuda;
	char cuda_version[16];
	char **cuda_components; /* NULL-terminated */
	bool toolkit;
	enum gb_tristate fabricmanager;
	bool gpudirect;
	bool graphics; /* display/graphics userspace needed (render) */
	bool allow_unknown_gpus;
	enum gb_replace_policy replace_installed; /* [install] replace_installed */
	bool toolkit_always; /* [toolkit] install = always: even with no container engine present */
	char tier[16]; /* "passive" | "active" | "full" */
	double min_gpu_memory_gib;
	bool fp64_gate;
	bool ecc_required;
	double min_network_gbps;
	double min_disk_write_mbps;
	double min_pattern_gib; /* [verify] min_pattern_gib: the pattern test's floor (default 1) */
	bool min_pattern_set;
};

/* [imex] nodes: at most this many addresses (an NVL72 rack has 18 compute
 * trays), as text at most this long. */
#define GB_IMEX_NODES_MAX 72u
#define GB_IMEX_NODES_TEXT 1200u

struct gb_site_config {
	char *source;
	char *mirror, *proxy, *ca_file;
	char **trusted_keys;
	uint64_t min_mirror_version; /* [trust] min_mirror_version: the rollback floor a first boot sees, 0 = none */
	uint64_t min_catalog_version; /* [trust] min_catalog_version: the same for catalog updates, 0 = none */
	char pinned_driver[32], pinned_cuda[16], pinned_toolkit[16];
	enum gb_replace_policy replace_installed; /* [install] replace_installed, over the profile's */
	bool replace_installed_set;
	char method[16]; /* [install] method: packages | distro | runfile, "" = the plan's choice */
	bool no_overlap; /* [install] overlap = no: fetch CUDA before the driver's install, not beside it */
	bool prebuilt_required; /* [install] prebuilt_modules = require: the mirror's module or a refusal, no DKMS */
	char **skip_checks;
	char *signing_key, *signing_cert;
	/* the certificate as the kernel would name it (gb_inputs_load fills it) */
	char signing_cert_subject[128], signing_cert_key_id[130];
	bool allow_http_mirror; /* a plain-http mirror, trusted only through its signed manifest */
	char kernel_minimum[16]; /* [kernel] minimum: "6.12", the site's own floor over the branch's, "" = none */
	unsigned build_timeout_min; /* [kernel] build_timeout: the repair's DKMS build, minutes; 0 = the default */
	/* [imex] nodes: the IP addresses of the IMEX domain's compute trays
	 * (GB200/GB300 NVL72), each checked, one space between; "" = unset */
	char imex_nodes[GB_IMEX_NODES_TEXT];
	unsigned n_imex_nodes;
};

/* [kernel] build_timeout's bounds: a day at most. */
#define GB_BUILD_TIMEOUT_MAX_MIN 1440u

/* A site's GPU override from <root>/etc/gpuboot/gpus.d/ (*.conf). */
struct gb_gpu_override {
	uint16_t device;
	char *name;
	enum gb_arch arch;
	char cc[8];
	enum gb_open open; /* GB_OPEN_NO / GB_OPEN_LISTED (supported) */
	bool open_required;
	unsigned min_branch, last_branch, pinned_branch;
	bool vgpu;
	char *source; /* file:line */
};

struct gb_gpu_overrides {
	struct gb_gpu_override *v;
	size_t n;
};

/* Load a profile by name (search: <root>/etc/gpuboot/profiles/NAME.profile,
 * then built-in) or by file path (contains '/' or ends in .profile).
 * On a bad profile: -EINVAL, with "FILE:LINE: what" in err. */
int gb_profile_load(struct gb_ctx *ctx, const char *name_or_file, struct gb_profile *ret, char *err, size_t errsz);
int gb_profile_parse(const char *name, const char *source, const char *text, size_t len, struct gb_profile *ret,
                     char *err, size_t errsz);
void gb_profile_done(struct gb_profile *p);
const char *gb_policy_to_string(const struct gb_profile *p, char *buf, size_t bufsz);

/* The built-in profiles, generated from profiles/ by scripts/gen-profiles.py. */
struct gb_builtin_profile {
	const char *name;
	const char *text;
};
extern const struct gb_builtin_profile gb_builtin_profiles[];
extern const size_t gb_builtin_profiles_len;

/* Site configuration: --config FILE (a host path), or <root>/etc/gpuboot/gpuboot.conf
 * when present. A missing default file is an empty configuration. */
int gb_site_config_load(struct gb_ctx *ctx, const char *explicit_path, struct gb_site_config *ret, char *err,
                        size_t errsz);
int gb_site_config_parse(const char *source, const char *text, size_t len, struct gb_site_config *ret, char *err,
                         size_t errsz);
void gb_site_config_done(struct gb_site_config *c);

int gb_gpu_overrides_load(struct gb_ctx *ctx, struct gb_gpu_overrides *ret, char *err, size_t errsz);
int gb_gpu_overrides_parse(const char *source, const char *text, size_t len, struct gb_gpu_overrides *ret, char *err,
                           size_t errsz);
void gb_gpu_overrides_done(struct gb_gpu_overrides *o);
const struct gb_gpu_override *gb_gpu_override_find(const struct gb_gpu_overrides *o, uint16_t device);
