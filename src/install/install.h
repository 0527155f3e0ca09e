/* SPDX-License-Identifier: MIT */
/* install: put the driver the plan chose onto the machine (ctx->root is
 * "/") or into an image root (anything else: the package manager runs
 * chrooted, modules are built for the image's kernels, daemons are enabled
 * and not started). Every effect goes through the journal: files through
 * gb_journal_write_file, commands through gb_journal_run. A rerun that
 * finds everything in place runs no command and writes no file.
 *
 * Methods in this version: "distro" on Debian (Debian's own contrib and
 * non-free packages, pinned to one driver version, held), "runfile"
 * (gb_install_runfile: NVIDIA's .run unpacked by gpuboot, nvidia-installer
 * run non-interactively), and CUDA from the redistributable components
 * (gb_install_cuda). docs/install.md has what each does to a machine. */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include "effect/pkg.h"

#define GB_INSTALL_MAX_PREBUILT 4 /* = GB_PLAN_MAX_PREBUILT (install-plan.c checks) */

struct gb_ctx;
struct gb_journal;

#define GB_INSTALL_MAX_PKGS 24
#define GB_INSTALL_MAX_KERNELS 8
#define GB_INSTALL_KVER 80

enum gb_install_method {
	GB_INSTALL_DISTRO = 1, /* the distribution's own driver packages */
	GB_INSTALL_PACKAGES, /* NVIDIA's repository, key pinned by fingerprint: apt (apt-repo.c), dnf or zypper
	                      * (install-rpm.c) by the root's os-release */
	GB_INSTALL_KERNEL, /* prepare's newer kernel from the distribution's archive (Ubuntu's HWE metapackage,
	                    * Debian's backports kernel): apt, no driver, no module, no blacklist */
};

/* What a repository's signing key signs, on dnf and zypper (apt checks
 * InRelease whatever this says). */
enum gb_repo_signing {
	GB_REPO_SIGNS_PACKAGES = 0, /* each package (CUDA's): gpgcheck=1 */
	GB_REPO_SIGNS_METADATA, /* repodata/repomd.xml only (the Container Toolkit's): repo_gpgcheck=1,
	                         * gpgcheck=0; the packages are checked by their sums in that metadata */
};

/* An apt repository of NVIDIA's (flat: "Suites: /"), or its rpm counterpart. */
struct gb_apt_repo {
	const char *id; /* "cuda-debian12-x86_64": names its keyring and sources files */
	const char *uri; /* "https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/" */
	const char *key_url; /* its signing key (downloaded on this machine, checked, then written) */
	const char *key_pin; /* the catalog's pin: "cuda-deb", "container-toolkit" (gb_repo_key_find) */
	const char *ca_file; /* CA bundle for the key's download, or NULL */
	enum gb_repo_signing signing; /* dnf and zypper: what the repo file has them check */
};

struct gb_install_input {
	enum gb_install_method method;
	const char *flavor; /* "open" | "proprietary" (the kernel module package) */
	const char *driver_version; /* "535.261.03": upstream version of every driver package */
	/* The driver packages (effect/pkg.h's typed spec); NULL: the
	 * distribution's list for flavor (see docs/install.md). Headers for
	 * the kernels are always added. */
	const struct gb_pkg_spec *packages;
	size_t n_packages;
	/* The kernels to build for; NULL: every kernel installed in the root
	 * (lib/modules/<kver> with boot/vmlinuz-<kver>). */
	const char *const *kernels;
	size_t n_kernels;
	/* packages: the repository, added first (key checked, keyring, sources). */
	const struct gb_apt_repo *repo;
	/* The version pin (etc/apt/preferences.d/gpuboot-<pin_name>.pref): the
	 * binaries named by pin_packages (apt's Package: field) stay at
	 * pin_version. NULL: the distro method's (the driver's source packages
	 * at driver_version, file gpuboot-nvidia.pref). */
	const char *pin_name, *pin_packages, *pin_version;
	bool userspace_only; /* no kernel module (the Container Toolkit): no headers, no module, no blacklist */
	/* distro: the mirror's prebuilt module package per kernel, in place of
	 * the DKMS package; no headers then (docs/mirror.md, Prebuilt modules) */
	const struct gb_install_prebuilt {
		const char *kernel, *package, *version;
		const char *file; /* the verified .deb (the fetch stage's cache path) */
	} * prebuilt;
	size_t n_prebuilt;
	/* GB_INSTALL_KERNEL: apt's target release (apt-get -t: "bookworm-backports"), NULL for none; the
	 * major.minor each package's installed version must reach ("6.12"), NULL for any version */
	const char *suite, *kernel_minimum;
	unsigned lock_timeout_ms; /* wait for the package manager's locks; 0: 5 minutes */
	unsigned apt_timeout_ms; /* one apt-get install (DKMS builds); 0: 60 minutes */
};

struct gb_install_pkg_result {
	char name[GB_INSTALL_NAME];
	char wanted[GB_INSTALL_VERSION]; /* as asked */
	char resolved[GB_INSTALL_VERSION]; /* the archive's version installed ("" when nothing was resolved) */
	char suite[64]; /* where it came from ("bookworm/non-free") */
	char before[GB_INSTALL_VERSION]; /* installed before ("" = not installed) */
	char after[GB_INSTALL_VERSION];
	bool hold, held_before, held_after;
	/* a local package (the mirror's prebuilt module): where the install
	 * puts it in the root for apt, "" for the archive's packages */
	char file[200];
	const char *source; /* its verified copy in the cache */
};

struct gb_install_kernel_result {
	char kver[GB_INSTALL_KVER];
	char module[256]; /* the built module below the root, "" when none */
};

struct gb_install_result {
	const char *method; /* "distro" | "packages" | "kernel" */
	bool image; /* installed into an image root, chrooted */
	char distro[32], codename[32];
	struct gb_install_pkg_result pkgs[GB_INSTALL_MAX_PKGS];
	size_t n_pkgs;
	struct gb_install_kernel_result kernels[GB_INSTALL_MAX_KERNELS];
	size_t n_kernels;
	bool sources_changed; /* components were enabled, or the repository added */
	bool packages_changed; /* apt ran */
	/* what the package manager needed first (a dpkg an earlier run's kill
	 * interrupted), as it was repaired, "" when nothing */
	char recovered[256];
	char error[768]; /* one line: what failed, on what, why (set on failure) */
};

/* Install per in into ctx->root. Returns 0, or a negative errno with
 * ret->error naming the cause: -ENOPKG (a package or version the archive
 * does not have; nothing was installed), -EBUSY (the package manager's
 * lock stayed held; the holder is named), -EOPNOTSUPP (a distribution or
 * method this version does not install), -EIO (a command failed; its
 * output tail is in the journal), -ENOENT (DKMS built no module for a
 * kernel), -EHOSTUNREACH (apt-get update reached no archive, so a package
 * was unknown; nothing was installed), -EKEYREJECTED (apt refused an
 * index: unsigned, another key, tampered; nothing was installed, the
 * repository this run added removed again), -ENOSPC (a filesystem filled:
 * the error names it, its free space and apt's need). Bind mounts and
 * policy-rc.d are undone on every path. */
int gb_install(struct gb_ctx *ctx, const struct gb_install_input *in, struct gb_journal *j,
               struct gb_install_result *ret);

/* Where NVIDIA's repositories are fetched from: a mirror serving NVIDIA's
 * layout below its root (the site's mirror, --upstream), NULL for NVIDIA's
 * hosts; the CA bundle for the keys' downloads, NULL for the system's. */
struct gb_install_source {
	const char *mirror;
	const char *ca_file;
	/* the runfile method: the .run the fetch stage verified (its cache
	 * path), NULL when it has none; and whether the root is an image
	 * (every kernel it holds is built for, not the plan's running one) */
	const char *runfile;
	bool image;
	/* the distro method: the mirror's prebuilt module packages the fetch
	 * stage verified (cache paths), in the plan's prebuilt order */
	const char *prebuilt[GB_INSTALL_MAX_PREBUILT];
	/* the runfile method on NVSwitches (the plan's fm_redist): NVIDIA's
	 * redistributable manifest and its fabricmanager and libnvidia_nscq
	 * archives, as the fetch stage verified them against the mirror's
	 * signed manifest (cache paths) */
	const char *fm_redist, *fm_archive, *nscq_archive;
};

/* The address of path below the mirror when it is an http(s) URL, else
 * below host ("https://developer.download.nvidia.com/"). -ENAMETOOLONG. */
int gb_repo_url(const char *mirror, const char *host, const char *path, char *out, size_t outsz);

struct gb_plan;
/* Install the plan's driver by its method (install-plan.c): the
 * distribution's or NVIDIA's packages (the input from the plan: NVIDIA's
 * repository from the catalog, the plan's typed packages; gb_install), or
 * NVIDIA's .run (src->runfile; gb_install_runfile). *ret_json: the result
 * for the status document (also on failure, when there is one). Their
 * returns, -ENOKEY (no key pinned for the plan's repository), -ENOENT (the
 * runfile method with no verified .run), -EINVAL (a plan that installs no
 * driver), with err. */
int gb_install_plan(struct gb_ctx *ctx, const struct gb_plan *p, const struct gb_install_source *src,
                    struct gb_journal *j, json_object **ret_json, char *err, size_t errsz);

/* gb_install with its result as the status document's part (*ret_json,
 * also on failure) and its error in err: the caller's one call. */
int gb_install_report(struct gb_ctx *ctx, const struct gb_install_input *in, struct gb_journal *j,
                      json_object **ret_json, char *err, size_t errsz);

/* The result for the status document: {method, image, distro, codename,
 * sources_changed, packages_changed, recovered, packages[{name, wanted, version,
 * suite, before, after, held}], modules[{kernel, path}], error}. */
json_object *gb_install_result_to_json(const struct gb_install_result *r);

/* ---- the runfile method ---- */

/* The installer's DKMS choice: present in the root (usr/sbin/dkms or
 * usr/bin/dkms) or not, or forced. */
enum gb_runfile_dkms {
	GB_RUNFILE_DKMS_AUTO = 0,
	GB_RUNFILE_DKMS_NO,
	GB_RUNFILE_DKMS_YES,
};

struct gb_runfile_input {
	const char *runfile; /* the verified .run: gb_artifact.cache_path (sha256 already checked) */
	const char *version; /* "580.95.05": the plan's driver.version (the runfile's version) */
	const char *flavor; /* "open" | "proprietary": the name of the plan's driver.flavor */
	/* The kernels to build for; NULL: the running kernel on the live
	 * machine, every kernel in an image (lib/modules/<kver> with
	 * boot/vmlinuz-<kver>). The first gets the full install, each other
	 * one its modules only. */
	const char *const *kernels;
	size_t n_kernels;
	enum gb_runfile_dkms dkms;
	unsigned timeout_ms; /* one nvidia-installer run (it compiles); 0: 30 minutes */
};

struct gb_runfile_result {
	bool image; /* chrooted into an image root */
	bool dkms; /* --dkms was passed */
	bool changed; /* nvidia-installer ran */
	char version[32], flavor[16];
	char kernels[GB_INSTALL_MAX_KERNELS][GB_INSTALL_KVER];
	char modules[GB_INSTALL_MAX_KERNELS][256]; /* nvidia.ko below the root per kernel, "" when none */
	size_t n_kernels;
	char log[4200]; /* the installer's log on the machine that ran gpuboot */
	char error[768];
};

/* Unpack the .run's makeself payload with gpuboot's own unpacker (its
 * shell header is read, never run) into a staging directory (the state
 * directory; <root>/var/lib/gpuboot for an image, where the chroot sees
 * it), then run its nvidia-installer non-interactively through
 * gb_journal_run (chrooted for an image) with the flags for the plan's
 * version, flavour, DKMS and kernels (docs/install.md). A rerun that finds
 * the same driver installed (gpuboot's record in
 * var/lib/gpuboot/runfile-driver and nvidia.ko for every kernel) runs
 * nothing. Returns 0, or a negative errno with ret->error: -EINVAL (a bad
 * version, flavour or kernel name; the open flavour before 515),
 * -EBADMSG (not a makeself runfile, a corrupt payload, no
 * nvidia-installer in it), -EIO (the installer failed: its exit status
 * and output tail are in the journal, the log is named), -ENOENT (no
 * kernel, or no nvidia.ko afterwards). */
int gb_install_runfile(struct gb_ctx *ctx, const struct gb_runfile_input *in, struct gb_journal *j,
                       struct gb_runfile_result *ret);

/* The argv for one nvidia-installer run (exposed for tests). The
 * installer reads its .manifest from the working directory, so it runs as
 * sh -c 'cd -- "$1" && shift && exec ./nvidia-installer "$@"' with dir
 * (the unpacked tree as the installer sees it) and then the flags for
 * version's installer: first: the full install, else
 * --kernel-module-only; kver NULL: no --kernel-name (the running kernel).
 * At most GB_RUNFILE_ARGV_MAX entries, NULL-terminated; the strings live
 * in buf. -EINVAL on an unknown flavour, the open flavour before 515, or
 * an unparsable version. */
#define GB_RUNFILE_ARGV_MAX 24
int gb_runfile_argv(const char *dir, const char *version, const char *flavor, bool dkms, const char *kver, bool first,
                    const char *log, const char **argv, char (*buf)[4400]);

json_object *gb_runfile_result_to_json(const struct gb_runfile_result *r);

/* ---- CUDA from the redistributable components ---- */

#define GB_CUDA_MAX_COMPONENTS 48

struct gb_cuda_component_in {
	const char *name; /* "cuda_cudart" */
	const char *version; /* "13.0.48" */
	const char *archive; /* the verified .tar.xz: gb_artifact.cache_path */
	const char *sha256; /* its sha256 (gb_artifact.sha256); NULL: the cache path's name */
};

struct gb_cuda_input {
	const char *version; /* the plan's cuda.version, "13.0.0": installs usr/local/cuda-13.0 */
	const struct gb_cuda_component_in *components;
	size_t n_components;
	unsigned threads; /* unpacking threads; 0: one per component, at most the online CPUs and 8 */
	const char *arch; /* a supported gb_cpu_arch's cuda_repo, "x86_64" (default) | "sbsa": targets/<arch>-linux */
};

struct gb_cuda_result {
	char dir[64]; /* "usr/local/cuda-13.0" */
	bool image;
	bool tree_changed; /* the tree was unpacked and renamed into place */
	bool replaced; /* an earlier tree of other content was replaced */
	bool link_changed, config_changed, ldconfig_ran;
	unsigned threads;
	unsigned long long bytes, files;
	double unpack_s; /* the parallel unpack, wall clock */
	unsigned long long needed, free_bytes; /* set on ENOSPC: what the components need, what was free */
	char error[1024];
};

/* Unpack the components in parallel into usr/local/.cuda-X.Y.staging-<random>
 * under the root (each archive's <name>-linux-<arch>-<ver>-archive/ merged:
 * lib/ and include/ into targets/<arch>-linux/, lib64 and include links to
 * them as NVIDIA's toolkit has them, top-level files under
 * share/doc/<name>/), rename it into place as usr/local/cuda-X.Y in one
 * step (an existing tree of other content is exchanged atomically and
 * removed), point usr/local/cuda at it, write
 * etc/ld.so.conf.d/gpuboot-cuda.conf and etc/profile.d/gpuboot-cuda.sh,
 * run ldconfig (chrooted for an image). Every effect is journaled; a rerun
 * with everything in place has no effect. On any failure the old tree
 * stays and the staging directory is removed. Returns 0 or a negative
 * errno with ret->error: -EINVAL (a bad version or component), -EBADMSG
 * (a corrupt archive or an entry outside <name>-...-archive/), -EPERM (a
 * refused entry), -EEXIST (two components carry the same file with other
 * content; usr/local/cuda is not a link), -ENOSPC/-EFBIG/-EDQUOT (the path
 * written and the space needed; ret->needed, ret->free_bytes). */
int gb_install_cuda(struct gb_ctx *ctx, const struct gb_cuda_input *in, struct gb_journal *j,
                    struct gb_cuda_result *ret);

json_object *gb_cuda_result_to_json(const struct gb_cuda_result *r);
