/* SPDX-License-Identifier: MIT */
/* plan: every decision with its reason, or a refusal with its exit code.
 * Reads the facts (or a target), the profile, the site configuration and
 * the catalog; changes nothing. */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stdio.h>

#include "catalog/catalog.h"
#include "detect/detect.h"
#include "effect/pkg.h"
#include "profile.h"

#define GB_PLAN_MAX_GPUS 16
#define GB_REASON 640
#define GB_PLAN_MAX_KERNEL_KEYS 64
#define GB_PLAN_MAX_WARNINGS 8
/* Warned ahead: a branch this many days or fewer from its end of life, a
 * catalog more than this many days old (docs/plan.md, Warnings). */
#define GB_WARN_EOL_DAYS 90
#define GB_WARN_CATALOG_DAYS 120

struct gb_plan_gpu {
	uint16_t device;
	char name[96];
	enum gb_arch arch;
	char cc[8];
	unsigned count;
	enum gb_open open;
	bool open_required, held_back, vgpu, unknown;
	unsigned min_branch, last_branch, pinned_branch;
	unsigned open_from; /* the first branch whose open module lists it, where later than R515 (catalog), 0 */
	char source[160];
};

#define GB_PLAN_MAX_PREBUILT 4

/* A prebuilt module package the site's mirror offers (its signed
 * manifest's modules list, docs/mirror.md), as run/inputs.c hands it in. */
struct gb_plan_module_offer {
	char distro[48], arch[16], kernel[80], kernel_package_version[64], vermagic[160], driver[32], flavor[16];
	char package[128], package_version[96], signer[128], path[512], sha256[65];
	unsigned long long size;
};

/* A driver redistributable manifest the site's mirror lists in its signed
 * manifest (compute/nvidia-driver/redist/redistrib_<version>.json), as
 * run/inputs.c hands it in: the runfile method's fabric manager comes
 * from it (docs/mirror.md). */
#define GB_PLAN_MAX_REDIST 8
struct gb_plan_redist_offer {
	char version[32], path[200], sha256[65];
	unsigned long long size;
};

/* A kernel the install builds the module for, as the node has it. */
struct gb_plan_node_kernel {
	char release[80], package_version[64], vermagic[160]; /* "" when not known */
};

/* What the decisions read: the detected facts, or a target (--target-os,
 * --target-gpu) standing in for them. */
struct gb_plan_input {
	char os_id[32], os_version[32], os_id_like[64], libc[8], pkgmgr[8], arch[16], platform[16];
	char kernel_release[80], kernel_flavour[40];
	bool kernel_known, headers;
	int secure_boot;
	bool nouveau_loaded, nouveau_blacklisted, nouveau_bound;
	unsigned n_nvswitches, mellanox, efa;
	bool nvswitches_assumed; /* no PCI function shows them: the board's, from the catalog */
	bool target_os, target_gpu;
	bool arch_explicit; /* --target-os named the arch */
	char method[16]; /* an install method asked for (--method, [install] method), "" = the plan's choice */
	char method_by[32]; /* who asked: "--method" or "gpuboot.conf" */
	bool repair; /* --repair: rebuild what is installed for the new kernel, never switch */
	bool offline; /* --offline: nothing can be downloaded, so nothing newer installed */
	bool custom_kernel; /* a kernel no distribution package can exist for */
	struct {
		uint16_t device;
		unsigned count;
	} devices[GB_PLAN_MAX_GPUS];
	size_t n_devices;
	/* What is installed, loaded or on disk (detect), whoever installed it. */
	struct {
		char version[32]; /* "" = no NVIDIA driver */
		char flavor[16]; /* "open" | "proprietary" | "" = unknown */
		char source[16]; /* "loaded" | "module" | "package" | "userspace" */
		bool loaded; /* this version's module is loaded now */
		bool module; /* a module of it exists for the target kernel (or is loaded) */
		char signer[128]; /* that module's signer (modinfo "signer"), "" = unsigned or unknown */
	} installed;
	char cuda_installed[4][16]; /* "13.0": major.minor of each CUDA under /usr/local */
	size_t n_cuda_installed;
	char toolkit_installed[32];
	char fabricmanager_installed[32]; /* the fabric manager package's upstream version, "" = none */
	unsigned n_engines;
	bool engines_unknown; /* planning for another OS: its container engines are not known */
	/* The kernel's asymmetric keys (/proc/keys), to check a site signing
	 * certificate against before anything changes. */
	bool kernel_keys_known;
	struct {
		char name[96];
		char key_id[130];
	} kernel_keys[GB_PLAN_MAX_KERNEL_KEYS];
	size_t n_kernel_keys;
	/* The site mirror's prebuilt modules (run/inputs.c, the distro method
	 * on apt): offers_note says why there are none to choose from ("" when
	 * the mirror was read); the node's kernels and its Debian architecture
	 * are what an offer must match. */
	const struct gb_plan_module_offer *offers;
	size_t n_offers;
	char offers_note[200];
	bool offers_unread; /* this command does not read them (plan, verify): decided by run and fetch */
	/* The mirror's driver redistributable manifests (run/inputs.c, an
	 * NVSwitch machine with a mirror): the runfile method's fabric
	 * manager; redist_note says why there are none ("" when read). */
	struct gb_plan_redist_offer redist[GB_PLAN_MAX_REDIST];
	size_t n_redist;
	char redist_note[200];
	struct gb_plan_node_kernel node_kernels[GB_PLAN_MAX_PREBUILT];
	size_t n_node_kernels;
	char deb_arch[16];
};

struct gb_plan_named {
	char name[48];
	char value[160];
	char reason[GB_REASON];
};

/* What ages while the plan stands: a fleet alerts on these (the status's
 * warnings). code: "branch-eol", "branch-eol-soon", "catalog-stale",
 * "catalog-refused", "toolkit-below-floor", "imex-not-configured". */
struct gb_plan_warning {
	const char *code;
	char text[GB_REASON];
	char fix[GB_REASON];
};

/* The plan's decisions, each an enum; gb_*_name() gives the word its JSON
 * and text print (plan-names.c). UNSET (0) is a decision not made, as on a
 * refusal: its name is NULL, printed as JSON null. */
enum gb_driver_flavor {
	GB_DRIVER_FLAVOR_UNSET = 0,
	GB_DRIVER_OPEN, /* "open" */
	GB_DRIVER_PROPRIETARY, /* "proprietary" */
};

enum gb_driver_method {
	GB_METHOD_UNSET = 0,
	GB_METHOD_PACKAGES, /* "packages": NVIDIA's repository */
	GB_METHOD_RUNFILE, /* "runfile": NVIDIA's .run */
	GB_METHOD_DISTRO, /* "distro": the distribution's own packages */
	GB_METHOD_NONE, /* "none": the installed driver is kept */
};

/* What happens to the driver, CUDA and the Container Toolkit. */
enum gb_action {
	GB_ACTION_UNSET = 0,
	GB_ACTION_NONE, /* "none" (CUDA, toolkit) */
	GB_ACTION_KEEP, /* "keep" */
	GB_ACTION_INSTALL, /* "install" */
	GB_ACTION_REPLACE, /* "replace" (driver, toolkit) */
	GB_ACTION_REBUILD, /* "rebuild" (driver, --repair) */
};

enum gb_kernel_action {
	GB_KERNEL_ACTION_UNSET = 0,
	GB_KERNEL_ACTION_NONE, /* "none" */
	GB_KERNEL_ACTION_INSTALL_HWE, /* "install-hwe" */
	GB_KERNEL_ACTION_INSTALL_HEADERS, /* "install-headers" */
};

enum gb_nouveau_action {
	GB_NOUVEAU_ACTION_UNSET = 0,
	GB_NOUVEAU_ACTION_NONE, /* "none" */
	GB_NOUVEAU_ACTION_BLACKLIST, /* "blacklist" */
	GB_NOUVEAU_ACTION_UNLOAD, /* "unload" */
	GB_NOUVEAU_ACTION_REBOOT, /* "reboot" */
};

enum gb_sb_strategy {
	GB_SB_UNSET = 0,
	GB_SB_NOT_NEEDED, /* "not-needed" */
	GB_SB_UBUNTU_SIGNED, /* "ubuntu-signed-modules" */
	GB_SB_SIGN_WITH_KEY, /* "sign-with-key" */
	GB_SB_MODULES_SIGNED, /* "modules-signed": signed at the site (the mirror's prebuilt modules); no key on the node */
};

const char *gb_driver_flavor_name(enum gb_driver_flavor f);
const char *gb_driver_method_name(enum gb_driver_method m);
const char *gb_action_name(enum gb_action a);
const char *gb_kernel_action_name(enum gb_kernel_action a);
const char *gb_nouveau_action_name(enum gb_nouveau_action a);
const char *gb_sb_strategy_name(enum gb_sb_strategy s);
/* The action of its name (a journal's plan), UNSET for NULL or another word. */
enum gb_action gb_action_parse(const char *s);

struct gb_plan {
	int refusal_code; /* 0 = none; else a GB_EXIT_* code */
	char refusal[GB_REASON];
	char today[16];
	struct gb_plan_input in;
	char profile[64], profile_source[256];

	struct gb_plan_gpu gpus[GB_PLAN_MAX_GPUS];
	size_t n_gpus;

	struct {
		char version[32];
		unsigned branch;
		const char *branch_type, *eol;
		enum gb_driver_flavor flavor;
		enum gb_driver_method method; /* none: kept */
		enum gb_action action; /* keep, install, replace or rebuild */
		char action_reason[GB_REASON];
		const struct gb_runfile *runfile;
		char repo[32], repo_arch[16];
		char repo_key[32]; /* the pin its key is checked against (gb_repo_keys), with repo */
		struct gb_pkg_spec packages[8]; /* typed (effect/pkg.h): the install reads them as they are */
		size_t n_packages;
		char reason[GB_REASON], flavor_reason[GB_REASON], method_reason[GB_REASON];
		/* The newest branch alive today of the lts kind (else production)
		 * that every GPU supports, with a runfile here: what the plan moves
		 * to from an ageing branch; 0 = none. */
		unsigned supported;
		/* Why the plan's branch is one past its end of life (kept or
		 * installed), and what to do: the branch-eol warning's words. */
		char eol_why[GB_REASON], eol_fix[GB_REASON];
		bool eol_replace; /* replaced only because the installed branch ended (lts) */
		bool eol_keep; /* replacing it was refused: keep it (gb_plan_make's second pass) */
		bool gsp_off; /* the hold-back decided the flavour: its stack turns the GSP firmware off */
		/* A kept driver whose fabric manager is missing (install) or of
		 * another version (replace): the fabric manager alone, from
		 * NVIDIA's repository (packages, repo), no driver package; UNSET
		 * otherwise. */
		enum gb_action fm_only;
		/* The runfile method on NVSwitches: the fabric manager from the
		 * driver's redistributable manifest the site's signed mirror
		 * lists (its path, sha256, size there); path "" = none. */
		struct gb_plan_redist_offer fm_redist;
		/* The distro method: the module from the mirror's prebuilt
		 * packages (one per kernel, in place of DKMS and the headers), or
		 * built by DKMS; module_source_reason says which and why. */
		const char *module_source; /* "mirror" | "dkms" | NULL (not the distro method) */
		char module_source_reason[GB_REASON];
		struct gb_plan_prebuilt {
			char kernel[80], package[128], version[96], path[512], sha256[65], signer[128];
			unsigned long long size;
		} prebuilt[GB_PLAN_MAX_PREBUILT];
		size_t n_prebuilt;
	} driver;
	struct {
		char version[16];
		const struct gb_cuda_release *release;
		char **components; /* "cuda_cudart 13.0.48" */
		char reason[GB_REASON];
		enum gb_action action; /* none, keep or install */
		char installed[16]; /* the matching install kept, or "" */
		char action_reason[GB_REASON];
	} cuda;
	struct {
		const char *version;
		char reason[GB_REASON];
		enum gb_action action; /* none, keep, install or replace */
		char action_reason[GB_REASON];
	} toolkit;
	struct {
		enum gb_kernel_action action;
		char package[96];
		char headers[96]; /* install-hwe on Debian: the headers metapackage beside the image's */
		char suite[32]; /* install-hwe from this suite (apt -t): "bookworm-backports", "" = default */
		char minimum[16];
		bool reboot_required;
		char reason[GB_REASON];
	} kernel;
	struct {
		enum gb_nouveau_action action;
		char reason[GB_REASON];
	} nouveau;
	struct {
		enum gb_sb_strategy strategy;
		char package[96];
		char reason[GB_REASON];
	} secure_boot;
	/* Why the machine needs the fabric manager (NVSwitches present or
	 * assumed, or the profile), NULL when it does not; the package the
	 * plan's method installs it with, at the driver's version ("" = the
	 * method installs none). */
	const char *fm_need;
	char fm_package[48];
	/* NVIDIA's NVLink Subnet Manager beside the fabric manager: boards
	 * whose NVLink5 switches sit behind the ConnectX bridge (B200, B300) */
	bool nvlsm;
	/* A GB200/GB300 compute tray (NVL72): NVIDIA's IMEX service shares GPU
	 * memory across the trays of the NVLink domain; the package the
	 * method installs it with, at the driver's version ("" = none); the
	 * site's [imex] nodes (space-separated, "" = not configured). */
	bool imex;
	char imex_package[48];
	char imex_nodes[1200];
	unsigned n_imex_nodes;
	struct gb_plan_named daemons[5];
	size_t n_daemons;
	struct gb_plan_named modules[7];
	size_t n_modules;
	struct gb_plan_named params[2];
	size_t n_params;
	struct {
		char tier[16];
		double min_gpu_memory_gib, min_network_gbps, min_disk_write_mbps;
		bool fp64_gate, ecc_required;
		char **skip;
		char reason[GB_REASON];
		bool network_gate_applies; /* Mellanox/InfiniBand present: a multi-node node */
		char gates_reason[GB_REASON];
	} verify;
	struct gb_plan_warning warnings[GB_PLAN_MAX_WARNINGS];
	size_t n_warnings;
};

struct gb_ctx;

/* Fill in from detected facts, and/or targets ("ubuntu:22.04[:aarch64]",
 * "H100x8"). -EINVAL with a message in err for a bad target; from facts,
 * 0 or -ENOMEM. */
int gb_plan_input_from_facts(const struct gb_facts *f, struct gb_plan_input *ret);
int gb_plan_input_target_os(const char *spec, struct gb_plan_input *in, char *err, size_t errsz);
int gb_plan_input_target_gpu(const char *spec, struct gb_plan_input *in, char *err, size_t errsz);

/* Decide. Returns 0 (a refusal is a decision too: see plan->refusal_code),
 * or -EINVAL with err for a configuration error (exit 2), or -ENOMEM. */
int gb_plan_make(const struct gb_plan_input *in, const struct gb_profile *profile, const struct gb_site_config *site,
                 const struct gb_gpu_overrides *ov, const char *today, struct gb_plan *ret, char *err, size_t errsz);
void gb_plan_done(struct gb_plan *p);

/* Does the plan change nothing (every component kept or not wanted, no
 * kernel or nouveau action)? Then run skips to verification. */
bool gb_plan_changes_nothing(const struct gb_plan *p);

json_object *gb_plan_to_json(const struct gb_plan *p);
void gb_plan_print(const struct gb_plan *p, FILE *out);
