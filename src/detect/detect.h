/* SPDX-License-Identifier: MIT */
/* detect: the facts about the machine, read under the root. Nothing here
 * changes the machine. A field that cannot be read is left NULL (or -1)
 * with one warning; only a failure to allocate fails the stage. */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "catalog/catalog.h"

struct gb_ctx;

struct gb_pci_link {
	int current_gen, max_gen; /* -1 = unknown */
	int current_width, max_width; /* -1 = unknown */
};

struct gb_pci_fn {
	char address[32]; /* "0000:00:06.0" */
	uint16_t vendor, device;
	int subsystem_vendor, subsystem_device; /* -1 = unknown */
	uint32_t class_code; /* 0x030200 */
	int revision; /* -1 = unknown */
	const struct gb_pci_name *catalog; /* NULL: pci.ids does not know it */
	char *bound_driver; /* NULL = none */
	int numa_node; /* -1 = none or unknown */
	bool has_numa;
	struct gb_pci_link link;
};

struct gb_ib_port {
	char *device; /* "mlx5_0" */
	unsigned port;
	char *state; /* "ACTIVE" */
	char *rate; /* "400 Gb/sec (4X NDR)" */
	char *link_layer; /* "InfiniBand" | "Ethernet" */
};

struct gb_cuda_install {
	char *path; /* "/usr/local/cuda-13.0" */
	char *version; /* "13.0.88" or NULL */
};

/* An NVIDIA kernel module file installed for one kernel. */
struct gb_nvidia_module {
	char *path; /* "/lib/modules/<release>/updates/dkms/nvidia-current-open.ko"; NULL = none found */
	char *version; /* modinfo "version", NULL when unreadable */
	const char *flavor; /* from modinfo "license": "open" | "proprietary" | NULL */
	char *signer; /* modinfo "signer" of an appended signature; NULL = unsigned or unknown */
	char *vermagic; /* modinfo "vermagic": the kernel it was built for, NULL when unreadable */
};

/* One asymmetric key of /proc/keys: the kernel describes an X.509
 * certificate as "<subject name>: <hex of its subjectKeyIdentifier, or of
 * its serial number when it has none>". */
struct gb_kernel_key {
	char *name;
	char *key_id; /* lowercase hex */
};

#define GB_KERNEL_KEYS_MAX 256

/* Parse /proc/keys: the asymmetric keys, at most GB_KERNEL_KEYS_MAX; lines
 * of other types are skipped, a malformed asymmetric line is -EBADMSG. */
int gb_proc_keys_parse(const char *text, size_t len, struct gb_kernel_key **ret, size_t *ret_n);
void gb_kernel_keys_free(struct gb_kernel_key *k, size_t n);

struct gb_kernel_install {
	char *release;
	bool running; /* the kernel this root runs now */
	bool headers;
	struct gb_nvidia_module nvidia;
};

/* An installed package (dpkg). */
struct gb_package {
	char *name, *version;
};

struct gb_facts {
	struct {
		char *id, *version_id, *id_like, *pretty_name, *version_codename;
		const char *libc; /* "glibc" | "musl" | NULL */
		const char *package_manager; /* "apt" | ... | NULL */
	} os;
	struct {
		char *release, *flavour, *cmdline; /* the running kernel; NULL in a disk image */
		char *target; /* the kernel modules are for: running, else the newest installed */
		bool headers; /* of the target kernel */
		struct gb_kernel_install *installed; /* newest first */
		size_t n_installed;
	} kernel;
	struct {
		char *arch; /* "x86_64" */
		const char *nvidia_platform; /* "linux-x86_64" | "linux-sbsa" | NULL */
	} cpu;
	int secure_boot; /* the SecureBoot variable: 1, 0, -1 = not booted with EFI / unknown */
	struct {
		int shim_validation_disabled; /* MokSBStateRT: 1, 0, -1 = not EFI / unknown */
		char *lockdown; /* "none" | "integrity" | "confidentiality" | NULL = unknown */
		int enforcing; /* unsigned modules refused: 1, 0, -1 = unknown */
		/* The asymmetric keys the kernel holds (/proc/keys): the builtin,
		 * secondary, platform (firmware db) and machine (MOK) keyrings'
		 * certificates, as "<subject>: <key id>"; NULL when unreadable. */
		struct gb_kernel_key *keys;
		size_t n_keys;
		bool keys_known;
	} secure_boot_state;
	struct {
		const char *provider; /* "aws" | ... | NULL */
		char *sys_vendor, *product_name;
		const char *hypervisor; /* "kvm" | "xen" | ... | NULL */
	} cloud;
	struct gb_pci_fn *gpus;
	size_t n_gpus;
	struct gb_pci_fn *nvswitches;
	size_t n_nvswitches;
	struct {
		unsigned mellanox;
		unsigned efa; /* AWS Elastic Fabric Adapter functions (1d0f:efa0-efaf): p4d, p5 */
		struct gb_ib_port *ib;
		size_t n_ib;
	} network;
	struct {
		char *loaded_version;
		const char *module_flavor; /* "open" | "proprietary" | NULL */
		char *userspace_version;
		char *userspace_path;
		struct gb_cuda_install *cuda;
		size_t n_cuda;
		char *container_toolkit;
		char **container_engines; /* NULL-terminated */
		size_t n_engines;
		bool fabricmanager;
		/* the fabric manager the runfile method placed (GB_FM_MARKER), its version; "" = none */
		char fabricmanager_runfile[32];
		bool persistenced;
		/* What is installed on disk, loaded or not. */
		struct {
			char *version; /* from the target kernel's module, else the packages, else userspace */
			const char *source; /* "module" | "package" | "userspace" | NULL */
			const char *module_flavor; /* from the module, else a kernel-module package's name */
			const struct gb_kernel_install *module_kernel; /* the target's entry when it has a module */
			struct gb_package *packages;
			size_t n_packages;
			char *libcuda_version;
			char *libcuda_path;
		} installed;
	} nvidia;
	struct {
		bool loaded;
		bool blacklisted;
	} nouveau;
	unsigned warnings; /* inputs that were unreadable or garbled */
	bool oom; /* a fact was lost to memory: gb_detect fails with -ENOMEM */
};

/* Read every fact under ctx->root. Returns 0 or -ENOMEM. */
int gb_detect(struct gb_ctx *ctx, struct gb_facts *ret);
void gb_facts_done(struct gb_facts *f);

json_object *gb_facts_to_json(const struct gb_facts *f);
void gb_facts_print(const struct gb_facts *f, FILE *out);

/* --- the parts, one per file; each fills its part of the facts --- */
int gb_detect_os(struct gb_ctx *ctx, struct gb_facts *f);
int gb_detect_kernel(struct gb_ctx *ctx, struct gb_facts *f);
int gb_detect_platform(struct gb_ctx *ctx, struct gb_facts *f);
int gb_detect_kernel_keys(struct gb_ctx *ctx, struct gb_facts *f);
int gb_detect_pci(struct gb_ctx *ctx, struct gb_facts *f);
int gb_detect_net(struct gb_ctx *ctx, struct gb_facts *f);
int gb_detect_nvidia(struct gb_ctx *ctx, struct gb_facts *f);
int gb_detect_packages(struct gb_ctx *ctx, struct gb_facts *f);

/* Find the NVIDIA kernel module installed for a kernel under the root and
 * read its .modinfo (libkmod; compressed modules too). Returns 0 (path set;
 * version NULL when unreadable, with one warning), -ENOENT (none), -ENOMEM. */
struct gb_kmod;
int gb_nvidia_module_find(struct gb_ctx *ctx, struct gb_kmod **kmod, const char *release, struct gb_nvidia_module *ret,
                          unsigned *warnings);
void gb_nvidia_module_done(struct gb_nvidia_module *m);
/* The vermagic of the kernel's own modules (the first under kernel/ in its
 * modules.dep: the string a module built for it must carry): 0 with out
 * set, -ENOENT (no modules.dep or no module of its own), -EBADMSG
 * (unreadable), -ENOMEM. */
int gb_kernel_vermagic(struct gb_ctx *ctx, struct gb_kmod **kmod, const char *release, char *out, size_t outsz);
struct gb_kmod *gb_kmod_free(struct gb_kmod *k);
void gb_kmodp(struct gb_kmod **k);

/* --- parsers, exposed for unit tests and fuzzers --- */

struct gb_kv {
	char *key, *value;
};

/* Parse os-release(5) text: KEY=VALUE lines, values optionally quoted.
 * Bad lines are skipped and counted in *ret_bad. *ret is a malloc'd array
 * of n pairs. Returns 0 or -ENOMEM / -EINVAL (not text). */
int gb_osrelease_parse(const char *text, size_t len, struct gb_kv **ret, size_t *ret_n, unsigned *ret_bad);
void gb_kv_free(struct gb_kv *kv, size_t n);
const char *gb_kv_get(const struct gb_kv *kv, size_t n, const char *key);

/* The os-release words the stages decide from, each "" when absent or not
 * a plain word (lowercase, digits, '.', '_', '-'; ID_LIKE also spaces):
 * detect's parser, for the stages that read a root's os-release again
 * (install, repair). */
struct gb_os_release {
	char id[32], version_id[32], id_like[64], version_codename[32];
};
/* From os-release text (NULL: none). 0, -EINVAL (not text), -ENOMEM. */
int gb_os_release_words(const char *text, size_t len, struct gb_os_release *ret);
/* From the root's etc/os-release, else usr/lib/os-release. 0 or the
 * read's negative errno (*ret all "" then). */
int gb_os_release_read(struct gb_ctx *ctx, struct gb_os_release *ret);

/* "32.0 GT/s PCIe" -> 5; -1 when not a known rate. */
int gb_pci_speed_to_gen(const char *speed);

/* Kernel release -> flavour ("6.8.0-1015-aws" -> "aws"), a copy the caller
 * frees, into *ret: NULL when the release has no recognisable flavour.
 * 0, or -ENOMEM. */
int gb_kernel_flavour(const char *release, char **ret);

/* "none [integrity] confidentiality" -> "integrity" (the bracketed word). */
int gb_lockdown_parse(const char *text, char **ret_mode);

/* Parse var/lib/dpkg/status: the installed packages (Status "... ok
 * installed") whose name want() accepts, with their version, in file
 * order (at most 64). Stanzas without Package or Status, or a wanted one
 * without a plausible Version, are counted in *ret_bad. -EINVAL: not text. */
int gb_dpkg_status_parse(const char *text, size_t len, bool (*want)(const char *name), struct gb_package **ret,
                         size_t *ret_n, unsigned *ret_bad);
void gb_packages_free(struct gb_package *p, size_t n);
bool gb_package_is_nvidia(const char *name);
/* The driver version a package's version carries ("1:535.261.03-1" -> "535.261.03"), or NULL. */
char *gb_package_driver_version(const struct gb_package *p);
/* "open" | "proprietary" for a package that installs the kernel module, else NULL. */
const char *gb_package_module_flavor(const struct gb_package *p);

/* Join a symlink target (absolute = from the root) to the link's directory,
 * both relative to the root, folding "." and ".." (which stops at the root). */
int gb_path_join_in_root(const char *dir, const char *path, char *ret, size_t size);

/* "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04 ..." */
int gb_nvrm_version_parse(const char *text, char **ret_version, const char **ret_flavor);

/* Where the runfile method records the fabric manager it placed from
 * NVIDIA's archives: its version and the sha256 of usr/bin/nv-fabricmanager
 * ("580.95.05 <hex>\n"), believed only while the binary still hashes so. */
#define GB_FM_MARKER "var/lib/gpuboot/runfile-fabricmanager"

/* The version the marker records, when usr/bin/nv-fabricmanager still has
 * the recorded sha256: 0, -ENOENT (no marker), -ESTALE (the binary
 * changed since, or is gone), -EINVAL (a marker not well formed). */
int gb_fm_marker_version(struct gb_ctx *ctx, char *buf, size_t n);
