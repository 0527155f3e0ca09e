/* SPDX-License-Identifier: MIT */
/* Repair after a kernel upgrade (issue 12, section 4): does a kernel have
 * the NVIDIA module at the installed version, and if not, can DKMS build
 * it here? Three parts:
 *
 *  - gb_repair_check: the decision, pure and fast (a handful of reads
 *    under the root; nothing is written, nothing is run). It is on every
 *    boot's path (gpuboot-repair.service runs `gpuboot --repair
 *    --if-needed`), so the "ok" answer reads only a few files.
 *  - gb_repair: the action. A module DKMS can build is built (`dkms
 *    install NAME/VER -k KVER`, journaled, chrooted into an image root),
 *    then the check runs again and the module must be there. Loading is
 *    left to the load stage; a kernel that cannot get a module is a
 *    cause and a hint (the headers package to install, or "supply the
 *    headers of this custom kernel"). A rerun after success does nothing.
 *  - gb_repair_install_hooks: the kernel hooks (Debian/Ubuntu run-parts
 *    directories, kernel-install's install.d on the RHEL family and Amazon
 *    Linux 2023) that run `gpuboot --repair --kernel KVER --from-hook`
 *    after every kernel install, and gpuboot-repair.service. */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include "prepare/bootloader.h" /* GB_KVER_MAX */

struct gb_ctx;
struct gb_journal;

#define GB_REPAIR_GPUBOOT "/usr/local/bin/gpuboot"
#define GB_REPAIR_MARKER_DIR "var/lib/gpuboot"
#define GB_REPAIR_MARKER_PREFIX "repair-needed-"
/* The kernel update gate (boot-hold.c): one record per kernel held back,
 * and the GRUB drop-in that keeps the default on the running kernel. */
#define GB_REPAIR_HOLD_PREFIX "boot-hold-"
#define GB_REPAIR_HOLD_CFG "etc/default/grub.d/99-gpuboot-hold.cfg"
#define GB_REPAIR_HOOK_DEB_POSTINST "etc/kernel/postinst.d/gpuboot"
#define GB_REPAIR_HOOK_DEB_HEADERS "etc/kernel/header_postinst.d/gpuboot"
#define GB_REPAIR_HOOK_KERNEL_INSTALL "etc/kernel/install.d/45-gpuboot.install"
#define GB_REPAIR_UNIT "gpuboot-repair.service"
#define GB_REPAIR_UNIT_PATH "etc/systemd/system/gpuboot-repair.service"
#define GB_REPAIR_UNIT_WANTS "etc/systemd/system/multi-user.target.wants/gpuboot-repair.service"
/* A hook gives gpuboot this long (seconds) before it is killed: DKMS
 * builds the NVIDIA module in a few minutes; a hung build must not hold
 * the package manager's transaction for ever. */
#define GB_REPAIR_HOOK_TIMEOUT_S 1200
/* A DKMS build's default limit, minutes ([kernel] build_timeout sets
 * another): a few minutes on a cloud machine, far longer on a small one. */
#define GB_REPAIR_DKMS_TIMEOUT_MIN 30u

enum gb_repair_verdict {
	GB_REPAIR_OK = 0, /* nothing to do */
	GB_REPAIR_LOAD, /* the module is there for the running kernel, not loaded (or another version is) */
	GB_REPAIR_BUILD, /* no module at the installed version; DKMS's source and the headers are here */
	GB_REPAIR_CANNOT, /* no module, and it cannot be built here: see cause and hint */
};

const char *gb_repair_verdict_name(enum gb_repair_verdict v);

/* A plain kernel release: letters, digits, "._+-~", no "..", bounded. */
bool gb_repair_kver_valid(const char *k);

#define GB_REPAIR_VERSION_MAX 64
#define GB_REPAIR_NAME_MAX 64

struct gb_repair_state {
	enum gb_repair_verdict verdict;
	char kver[GB_KVER_MAX];
	bool running; /* kver is the kernel running now (the root's) */
	bool no_driver; /* nothing of an NVIDIA driver is installed: ok, nothing to repair */
	/* loaded now (running kernel only): sys/module/nvidia/version */
	bool loaded;
	char loaded_version[GB_REPAIR_VERSION_MAX];
	/* installed userspace: libnvidia-ml.so.<version>, else the packages */
	char installed_version[GB_REPAIR_VERSION_MAX];
	const char *installed_from; /* "libnvidia-ml" | "package" | NULL */
	/* the module file for kver (read only where the answer needs it) */
	bool module_checked, module_present;
	char module_path[256];
	char module_version[GB_REPAIR_VERSION_MAX]; /* "" when unreadable */
	/* what a build needs */
	bool headers; /* lib/modules/KVER/build/Makefile */
	bool dkms_source; /* usr/src/NAME-VER/dkms.conf or var/lib/dkms/NAME/VER/source */
	bool dkms_added; /* var/lib/dkms/NAME/VER/source: registered with DKMS */
	char dkms_name[GB_REPAIR_NAME_MAX], dkms_version[GB_REPAIR_VERSION_MAX];
	bool custom_kernel; /* no distribution package owns this kernel */
	char headers_package[GB_KVER_MAX + 32]; /* for cannot: "linux-headers-KVER", "kernel-devel-KVER" */
	bool marker; /* var/lib/gpuboot/repair-needed-KVER: a hook's repair failed */
	char reason[320]; /* why this verdict, one line */
	char hint[320]; /* what to do (cannot, load), one line; "" for ok */
};

/* The decision for kver (NULL: the running kernel: the root's
 * proc/sys/kernel/osrelease, else uname on the live root, else the newest
 * kernel installed under an image root). Reads only; for the running
 * kernel with the module loaded at the installed version it reads a few
 * files and stops. Returns 0 with ret filled (every verdict, "cannot"
 * included), -EINVAL for a kver that is not a plain release name,
 * -ENOENT when no kernel could be named, -ENOMEM. */
int gb_repair_check(struct gb_ctx *ctx, const char *kver, struct gb_repair_state *ret);

/* The default boot entry after the repair of a kernel that is not running. */
struct gb_repair_hold {
	bool checked; /* a kernel not running was repaired: the gate looked */
	bool held; /* the default stays on keep */
	bool changed; /* written or lifted now (update-grub ran) */
	char keep[GB_KVER_MAX];
	char entry[512]; /* GRUB_DEFAULT */
	char reason[400];
	char error[512]; /* the hold or its lift failed */
};

struct gb_repair_result {
	struct gb_repair_state before, after; /* after: the check once the build ran */
	struct gb_repair_hold hold;
	bool built; /* dkms ran and the module appeared */
	bool marker_removed;
	char error[512]; /* why the repair failed (cannot, dkms failed, no module appeared) */
	char hint[320];
	char dkms_output[600]; /* the tail of dkms's output when it failed */
	unsigned build_timeout_min; /* what dkms was given ([kernel] build_timeout, else the default) */
	int exit_code; /* the suggestion: 0, 1 (build failed), 14 (cannot: no module for the kernel) */
};

/* Repair kver (NULL: the running kernel): build with DKMS when the check
 * says build, then check again. Returns 0 when the kernel has its module
 * (ret->after.verdict is ok, or load for the running kernel: the load
 * stage inserts it; the marker for kver is removed), -ENOPKG when it
 * cannot (ret->error and ret->hint say why and what to install), -EIO when
 * dkms failed or reported success but no module appeared, another
 * negative errno when the journal could not be written. ret is always
 * filled. Idempotent: after a success a rerun runs nothing. Each dkms
 * command may run build_timeout_min minutes (0: GB_REPAIR_DKMS_TIMEOUT_MIN). */
int gb_repair(struct gb_ctx *ctx, const char *kver, unsigned build_timeout_min, struct gb_journal *j,
              struct gb_repair_result *ret);

/* --repair --check-next-boot: the kernel the machine boots next (the boot
 * loader's default entry: GRUB's grubenv and grub.cfg, BLS entries; else
 * the newest under boot/) and whether it has the NVIDIA module at the
 * installed version. Reads only. 0 with ret filled (ready or not), or a
 * negative errno with ret->error (the kernel cannot be named). */
struct gb_repair_next {
	char kver[GB_KVER_MAX];
	char source[96]; /* how kver was found */
	bool ready; /* the module is there (or no driver is installed) */
	struct gb_repair_state state;
	char error[512];
};
int gb_repair_next_boot(struct gb_ctx *ctx, struct gb_repair_next *ret);

/* The holds of the kernel update gate in force (var/lib/gpuboot/boot-hold-*):
 * their number, the kernel kept (keep) and one line saying so (ret). Reads
 * only. */
int gb_repair_holds(struct gb_ctx *ctx, char *keep, size_t keep_n, char *ret, size_t n);

/* The hooks and the unit, written through the journal (mode 0755 for the
 * hooks, 0644 for the unit), and the unit enabled (systemctl enable on the
 * live root, the multi-user.target.wants/ link under an image root).
 * family: an os-release ID, by the catalog's row (gb_os_find): the
 * Debian family (run-parts hooks), the RHEL and Fedora families (rhel,
 * rocky, almalinux, ol, centos, fedora, amzn: a kernel-install plugin);
 * NULL: from the root's etc/os-release (ID, then ID_LIKE). 0, -EOPNOTSUPP
 * for another family, another negative errno. */
int gb_repair_install_hooks(struct gb_ctx *ctx, struct gb_journal *j, const char *family);

/* The texts (exposed for tests): the run-parts hook (Debian postinst.d and
 * header_postinst.d), the kernel-install plugin, the unit. Static strings. */
const char *gb_repair_hook_runparts_text(void);
const char *gb_repair_hook_kernel_install_text(void);
const char *gb_repair_unit_text(void);

/* For the status document. New objects. */
json_object *gb_repair_state_to_json(const struct gb_repair_state *s);
json_object *gb_repair_result_to_json(const struct gb_repair_result *r);
