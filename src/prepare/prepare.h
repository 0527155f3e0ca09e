/* SPDX-License-Identifier: MIT */
/* The prepare stage: make the machine ready for the NVIDIA driver before
 * anything is installed. Here: nouveau (blacklist it, unbind and unload it
 * where nothing holds it, rebuild the initramfs of every kernel that will
 * boot only where that initramfs would still load it), the kernel that
 * GRUB boots next (modules are built for it before a reboot), and the
 * resume unit that finishes the run after a needed reboot, with the rule
 * that stops a run from rebooting in a loop.
 *
 * Every effect goes through the operations table or the root-relative
 * writers and is journaled before and after; a second run finds nothing
 * to do (the blacklist is unchanged, the initramfs no longer loads
 * nouveau). */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include "catalog/catalog.h"
#include "prepare/bootloader.h"
#include "shared/ops.h"

struct gb_ctx;
struct gb_journal;

#define GB_PREPARE_BLACKLIST_PATH GB_NOUVEAU_BLACKLIST_PATH
#define GB_PREPARE_BLACKLIST_TEXT GB_NOUVEAU_BLACKLIST_TEXT
/* dracut (RHEL family, Amazon Linux 2023, SUSE): leave the module out */
#define GB_PREPARE_DRACUT_PATH "etc/dracut.conf.d/gpuboot-omit-nouveau.conf"
#define GB_PREPARE_DRACUT_TEXT "omit_drivers+=\" nouveau \"\n"
#define GB_PREPARE_MAX_KERNELS 16
#define GB_PREPARE_MAX_GPUS 64
#define GB_PREPARE_REBOOT_NOUVEAU "nouveau-in-use"

/* The plan's nouveau action (plan.nouveau.action, parsed from its name). */
enum gb_prepare_nouveau_action {
	GB_PREPARE_NOUVEAU_NONE = 0, /* nothing to do */
	GB_PREPARE_NOUVEAU_BLACKLIST, /* not loaded: blacklist, initramfs */
	GB_PREPARE_NOUVEAU_UNLOAD, /* blacklist, initramfs, unbind and unload (reboot if held) */
	GB_PREPARE_NOUVEAU_REBOOT, /* blacklist, initramfs; the kernel reboot already planned clears it */
};

/* "none", "blacklist", "unload", "reboot" -> the action; -EINVAL otherwise. */
int gb_prepare_nouveau_action_parse(const char *s, enum gb_prepare_nouveau_action *ret);

/* The tool that rebuilds an initramfs. */
enum gb_initramfs_tool {
	GB_INITRAMFS_TOOL_AUTO = 0, /* by the image's name: initrd.img-* initramfs-tools, else dracut */
	GB_INITRAMFS_TOOL_INITRAMFS_TOOLS, /* Debian, Ubuntu: update-initramfs -u -k KVER */
	GB_INITRAMFS_TOOL_DRACUT, /* RHEL family, Amazon Linux 2023, SUSE: dracut -f --kver KVER */
};

struct gb_prepare_input {
	enum gb_prepare_nouveau_action nouveau;
	enum gb_initramfs_tool tool;
	unsigned regen_timeout_ms; /* one rebuild; 0: 15 minutes */
	unsigned read_timeout_ms; /* reading one initramfs; 0: 2 minutes */
	/* An image root (Packer, mmdebstrap): the running kernel is the build
	 * host's, not the image's; its nouveau is never unbound or unloaded
	 * (the image's is blacklisted and left out of its initramfs). */
	bool image;
};

/* What an initramfs would do about nouveau. */
enum gb_initramfs_verdict {
	GB_INITRAMFS_MISSING = 0, /* the kernel has none: nothing to rebuild */
	GB_INITRAMFS_CLEAN, /* no nouveau.ko inside */
	GB_INITRAMFS_BLACKLISTED, /* nouveau.ko inside, and a modprobe.d file inside blacklists it */
	GB_INITRAMFS_LOADS_NOUVEAU, /* nouveau.ko inside, not blacklisted: rebuild */
	GB_INITRAMFS_UNREADABLE, /* see detail */
};

const char *gb_initramfs_verdict_name(enum gb_initramfs_verdict v);

struct gb_prepare_image {
	char kver[GB_KVER_MAX];
	char path[GB_KVER_MAX + 32]; /* below the root: boot/initrd.img-KVER, ... */
	enum gb_initramfs_verdict before, after; /* after: only when rebuilt */
	bool rebuilt;
	int err; /* reading it (before, or after the rebuild) */
	char detail[200]; /* why it is unreadable, or which entry decided */
};

struct gb_prepare_result {
	enum gb_module_state state; /* nouveau's, when we came */
	unsigned n_unbound; /* GPUs unbound from nouveau */
	bool unloaded;
	bool blacklist_changed; /* the modprobe.d (or dracut) file was written, not merely unchanged */
	struct gb_prepare_image images[GB_PREPARE_MAX_KERNELS];
	size_t n_images;
	unsigned n_rebuilt;
	bool reboot_needed;
	const char *reboot_reason; /* a stable id for the journal: GB_PREPARE_REBOOT_NOUVEAU */
	char cause[320]; /* why a reboot is needed, or why the stage failed */
};

/* The nouveau part of prepare. Returns 0 (ret->reboot_needed says whether
 * a reboot must follow, ret->cause why), or a negative errno with
 * ret->cause: -EOPNOTSUPP when nouveau is built into the kernel, -EIO when
 * a rebuild failed or its result still loads nouveau, another errno when
 * the journal or a file could not be written. ret is always filled. */
int gb_prepare_nouveau(struct gb_ctx *ctx, struct gb_journal *j, const struct gb_prepare_input *in,
                       struct gb_prepare_result *ret);

/* The kernel releases that can boot under root: boot/vmlinuz-KVER, and
 * lib/modules/KVER/vmlinuz (Fedora's layout); the rescue kernel
 * (0-rescue-*) left out. Sorted, at most max. */
int gb_prepare_kernels(struct gb_root *root, char (*ret)[GB_KVER_MAX], size_t max, size_t *ret_n);

/* Read one initramfs below root: its verdict, with detail (the entry that
 * decided, or why it could not be read) and the scan's errno in *ret_err. */
enum gb_initramfs_verdict gb_prepare_initramfs_verdict(struct gb_ctx *ctx, const char *path, unsigned timeout_ms,
                                                       char *detail, size_t detailsz, int *ret_err);

/* The result for the status document. New object. */
json_object *gb_prepare_result_to_json(const struct gb_prepare_result *r);

/* ---- the kernel: Ubuntu's HWE metapackage, Debian's backports kernel (kernel.c) ---- */

struct gb_prepare_kernel_request {
	const char *package; /* the plan's kernel.package: "linux-generic-hwe-22.04", "linux-image-amd64" */
	const char *headers; /* the plan's kernel.headers ("linux-headers-amd64"), or NULL */
	const char *suite; /* apt -t SUITE ("bookworm-backports"), or NULL */
	const char
	    *minimum; /* "6.12": the installed package's version and the next kernel must reach it; NULL: not checked */
	bool image;
};

struct gb_prepare_kernel_result {
	char package[96]; /* the metapackage the plan chose */
	char installed_version[64]; /* dpkg's version of it before the run, "" = none */
	bool installed_now; /* apt installed it in this run (false: it was there) */
	char next_kernel[GB_KVER_MAX]; /* the release GRUB boots next, "" when unknown */
	char error[768];
};

/* Install package (and headers) with apt, from suite when given, unless
 * dpkg says package is installed at a version of at least minimum:
 * `apt-get update`, `apt-get install -y [-t SUITE] PACKAGE [HEADERS]`
 * (journaled as kernel:apt-get-update and kernel:apt-get-install, after the
 * dpkg/apt locks; chrooted with /proc, /sys, /dev bound for an image), then
 * read the kernel GRUB boots next. On the live machine a next kernel older
 * than minimum is -ERANGE: the reboot would not bring the new kernel up.
 * Also -EINVAL (not a package name), -EBUSY (a lock stayed held), -EIO (apt
 * failed: its output tail is in the journal). */
int gb_prepare_hwe(struct gb_ctx *ctx, struct gb_journal *j, const struct gb_prepare_kernel_request *req,
                   struct gb_prepare_kernel_result *ret);
json_object *gb_prepare_kernel_result_to_json(const struct gb_prepare_kernel_result *r);

/* ---- reboot and resume ---- */

#define GB_PREPARE_RESUME_UNIT "gpuboot-resume.service"
#define GB_PREPARE_RESUME_PATH "etc/systemd/system/gpuboot-resume.service"
#define GB_PREPARE_RESUME_WANTS "etc/systemd/system/multi-user.target.wants/gpuboot-resume.service"
#define GB_PREPARE_MAX_REBOOTS 2

/* May this run reboot (again) for reason? Decided from the journal
 * document alone: the boots it has spanned ("boots") and the reboots it
 * recorded (steps of kind "reboot": reason and the boot they were armed
 * in). Allowed: a reason not taken before, while fewer than
 * GB_PREPARE_MAX_REBOOTS reboots have been taken; the same reason armed in
 * this same boot (a rerun before the reboot). Refused (-ELOOP, why says
 * so): a reason already taken in an earlier boot (that reboot did not
 * help), or a third reboot. */
int gb_prepare_reboot_allowed(json_object *doc, const char *reason, char *why, size_t whysz);

/* Arm the resume: record the reboot (step "reboot:<reason>") after
 * gb_prepare_reboot_allowed, write GB_PREPARE_RESUME_PATH (a oneshot
 * `gpuboot run --resume` with this run's options, after
 * network-online.target) and enable it: systemctl enable on the live
 * machine, the multi-user.target.wants/ link under an image root. 0, or
 * -ELOOP (why says so), -EINVAL for an option that cannot be written into
 * a unit, another negative errno. */
int gb_prepare_arm_resume(struct gb_ctx *ctx, struct gb_journal *j, const char *reason, char *why, size_t whysz);

/* Disarm it when the run ends (done, or failed for good): disable and
 * remove the unit. 0 when there is nothing (left) to remove. */
int gb_prepare_disarm_resume(struct gb_ctx *ctx, struct gb_journal *j);

/* The unit's text for ctx's options. -EINVAL for an option value that
 * would break the unit (whitespace, quotes, '%', '$', '\', control bytes). */
int gb_prepare_resume_unit_text(const struct gb_ctx *ctx, char *buf, size_t bufsz, size_t *ret_len);

/* ---- the image's own first boot ---- */

#define GB_PREPARE_FIRSTBOOT_UNIT "gpuboot-firstboot.service"
#define GB_PREPARE_FIRSTBOOT_PATH "etc/systemd/system/gpuboot-firstboot.service"
#define GB_PREPARE_FIRSTBOOT_WANTS "etc/systemd/system/multi-user.target.wants/gpuboot-firstboot.service"
/* the image's marker: an image install wrote it, its first boot is due */
#define GB_PREPARE_IMAGE_PENDING "var/lib/gpuboot/image-pending"

/* An image install's last step: write and enable (the wants/ link) a
 * oneshot `gpuboot run --offline` with the build's profile, method and
 * config, so that the image's first boot, whatever its user-data, keeps
 * what the image holds, loads, verifies and writes the status and flags.
 * It runs while GB_PREPARE_IMAGE_PENDING (written here too) is there:
 * see gb_prepare_firstboot_done. 0, or a negative errno with why. */
int gb_prepare_arm_firstboot(struct gb_ctx *ctx, struct gb_journal *j, char *why, size_t whysz);
int gb_prepare_firstboot_unit_text(const struct gb_ctx *ctx, char *buf, size_t bufsz, size_t *ret_len);
/* A run on the booted machine ended: the image's first boot is done (the
 * marker removed), unless it needs a reboot (3) or it was the unit's own
 * run (GPUBOOT_FIRST_BOOT_UNIT=1, set by the unit) that found no GPU (11). */
int gb_prepare_firstboot_done(struct gb_ctx *ctx, int exit_code);
