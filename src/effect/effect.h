/* SPDX-License-Identifier: MIT */
/* The effects layer under the stages: what changes a machine, through the
 * operations table and the journal, for every stage alike (install,
 * prepare, repair, the toolkit): commands under a chroot, the package
 * managers' locks, read-only queries and journaled commands. The journal
 * (journal.h) and the root-relative writes (root-write.h) live beside it.
 * Nothing here knows a distribution or a method. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct gb_ctx;
struct gb_journal;
struct gb_cmd_result;

/* pkg-lock.c: wait (bounded, through ops->sleep_ms) until no process
 * holds the dpkg/apt locks under the root. -EBUSY with err naming the
 * lock, the holder's pid and its comm; the holder is never killed. */
int gb_pkg_lock_wait(struct gb_ctx *ctx, unsigned timeout_ms, char *err, size_t errsz);

/* chroot.c: the chroot of an image install. */
struct gb_chroot {
	char dir[4096]; /* the root, canonical */
	bool mounted[3]; /* proc, sys, dev: mounted by us, or by a killed run (unmount on leave) */
	bool recorded[3]; /* named in var/lib/gpuboot/chroot-mounts */
	bool policy; /* usr/sbin/policy-rc.d written by us */
	char *policy_old; /* what was there before (restored on leave), or NULL */
	size_t policy_old_len;
	mode_t policy_old_mode;
};
/* Bind /proc, /sys, /dev into the root (mountpoints created inside it; a
 * mountpoint already holding the right filesystem is used as it is, one of
 * another filesystem is refused with -EBUSY) and write policy-rc.d so no
 * daemon starts. On failure everything done is undone. */
int gb_chroot_enter(struct gb_ctx *ctx, struct gb_journal *j, struct gb_chroot *c, char *err, size_t errsz);
/* Undo what enter did, in reverse; always runs to the end. Returns the
 * first error (negative errno, err set when err[0] was empty) or 0. */
int gb_chroot_leave(struct gb_ctx *ctx, struct gb_journal *j, struct gb_chroot *c, char *err, size_t errsz);

/* pkg-lock.c: the rpm side of gb_pkg_lock_wait: rpm's transaction lock
 * (var/lib/rpm/.rpm.lock, usr/lib/sysimage/rpm/.rpm.lock: fcntl locks),
 * dnf 4's pid files (var/cache/dnf/{metadata,download}_lock.pid,
 * var/lib/dnf/rpmdb_lock.pid, var/log/log_lock.pid) and zypp's
 * (run/zypp.pid, var/run/zypp.pid): a pid file holds the lock while its
 * pid lives, as dnf and libzypp read it. Bounded wait through
 * ops->sleep_ms; -EBUSY with err naming the lock, the holder's pid and
 * comm; the holder is never killed. */
int gb_rpm_lock_wait(struct gb_ctx *ctx, unsigned timeout_ms, char *err, size_t errsz);

/* command.c: a read-only query (chrooted in an image): not an effect,
 * not journaled. whole: its output is parsed, so it must all be there (-E2BIG). */
int gb_install_query(struct gb_ctx *ctx, const char *chroot_dir, const char *const *argv, unsigned timeout_ms,
                     bool whole, struct gb_cmd_result *res, char *err, size_t errsz);
/* A journaled package-manager command after lock_wait; -EIO when it exits
 * non-zero (its tail in the journal and in err). */
struct gb_install_effect {
	struct gb_ctx *ctx;
	struct gb_journal *j;
	const char *chroot_dir;
	int (*lock_wait)(struct gb_ctx *ctx, unsigned timeout_ms, char *err, size_t errsz);
	unsigned lock_ms;
	struct gb_cmd_result *res;
};
int gb_install_effect(const struct gb_install_effect *e, const char *id, const char *const *argv, unsigned timeout_ms,
                      char *err, size_t errsz);
/* fn(arg) on the live machine, or inside gb_chroot_enter/leave for an
 * image (chroot_dir set): left on every path; fn's error first. */
int gb_install_in_root(struct gb_ctx *ctx, struct gb_journal *j, const char *chroot_dir, int (*fn)(void *), void *arg,
                       char *err, size_t errsz);

/* chroot.c: what a killed image install left in an image root (a run after it, and
 * `gpuboot cleanup`): the bind mounts it named in
 * var/lib/gpuboot/chroot-mounts that are still mounted are unmounted (a
 * mount gpuboot did not make is never touched), and usr/sbin/policy-rc.d,
 * where it is gpuboot's, put back as it was. *ret_unmounted counts the
 * mounts undone, *ret_policy whether policy-rc.d was. 0, or a negative
 * errno with err set. */
int gb_chroot_cleanup(struct gb_ctx *ctx, unsigned *ret_unmounted, bool *ret_policy, char *err, size_t errsz);
