/* SPDX-License-Identifier: MIT */
/* The install stage's parts, shared by its files and its unit tests. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "install.h"

struct gb_ctx;
struct gb_journal;
struct gb_cmd_result;
struct gb_pgp_key;

#define GB_APT_SOURCES_MAX (256u * 1024u)

/* apt-sources.c: enable contrib, non-free and non-free-firmware in the
 * entries of the Debian archive for codename (suites "codename" and
 * "codename-*" whose components hold "main"), changing nothing but their
 * component lists. deb822 (debian.sources) or one-line (sources.list).
 * *ret is the new text (malloc'd, NUL-terminated), *ret_entries how many
 * Debian entries were found (0: nothing to enable), *ret_changed whether
 * the text differs. -EINVAL on a line over 4 KiB or a malformed entry. */
int gb_apt_sources_deb822(const char *in, size_t len, const char *codename, char **ret, size_t *ret_len,
                          unsigned *ret_entries, bool *ret_changed);
int gb_apt_sources_oneline(const char *in, size_t len, const char *codename, char **ret, size_t *ret_len,
                           unsigned *ret_entries, bool *ret_changed);

/* apt-query.c */
struct gb_apt_version {
	char version[GB_INSTALL_VERSION];
	char suite[64]; /* "bookworm/non-free" */
};
/* `apt-cache madison NAME` output: the versions of NAME, in apt's order
 * (newest first). Lines that are not NAME's binary versions are ignored.
 * Returns how many were stored (at most max), or -EINVAL. */
int gb_apt_madison_parse(const char *out, const char *name, struct gb_apt_version *ret, size_t max);
/* Does the distribution version v satisfy wanted (exact, upstream, or "")? */
bool gb_deb_version_matches(const char *v, const char *wanted);
/* `dpkg-query -W -f '${Package}\t${Version}\t${Status}\n'` output: the
 * installed version of name ("" when not installed) and its hold. 0 or
 * -EINVAL for a version with bytes a version cannot hold. */
int gb_dpkg_query_parse(const char *out, const char *name, char ret_version[GB_INSTALL_VERSION], bool *ret_held);
/* A plausible package name or version (bounded, no spaces or shell bytes). */
bool gb_deb_name_valid(const char *s);
bool gb_deb_version_valid(const char *s);

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

/* apt-repo.c: add repo (key fetched and checked against its pin unless
 * the keyring below the root already holds the pinned key; keyring
 * usr/share/keyrings/gpuboot-<id>.gpg; etc/apt/sources.list.d/
 * gpuboot-<id>.sources). -EKEYREJECTED: the key is not the pinned one
 * (nothing was written); -ENOKEY: no key is pinned for it; -EREMOTEIO: the key could not be downloaded;
 * -EEXIST: another sources entry names the same
 * URI; -EINVAL: a bad id or URI. */
int gb_apt_repo_setup(struct gb_ctx *ctx, struct gb_journal *j, const struct gb_apt_repo *r, bool *changed, char *err,
                      size_t errsz);
bool gb_apt_repo_id_valid(const char *s);
void gb_apt_repo_paths(const char *id, char *keyring, size_t ksz, char *sources, size_t ssz);
/* The repository's key, shared by the apt and rpm engines: downloaded from
 * r->key_url (gb_fetch_small, at most 64 KiB) and read; 0 only when its
 * fingerprint is the one pinned for r->key_pin (*k filled: release it with
 * gb_pgp_key_free; *ret_raw, when ret_raw is not NULL: the bytes as
 * downloaded, malloc'd). -EREMOTEIO (not downloaded), -EBADMSG (not one
 * public key), -EKEYREJECTED (another key); err says which. Nothing is
 * written. */
int gb_repo_key_fetch(const struct gb_apt_repo *r, struct gb_pgp_key *k, char **ret_raw, size_t *ret_raw_len, char *err,
                      size_t errsz);
/* Is fpr the key pinned as pin_name (or, in the test build, the tests' key)? */
bool gb_repo_key_pinned(const char *pin_name, const char *fpr);
/* Does the key file under the root (binary or armored) hold the pinned key? */
bool gb_repo_key_file_ok(struct gb_ctx *ctx, const char *path, const char *pin);
/* An https:// (or http://) URI ending in '/' with no quoting bytes. */
bool gb_repo_uri_valid(const char *s);

/* pkg-common.c: what both package engines share. */
/* The kernels to build for: in->kernels (each a plain release name), or
 * every lib/modules/<kver> with boot/vmlinuz-<kver>; none when
 * in->userspace_only. -ENOENT when there is none, -EINVAL for a bad name. */
int gb_install_kernels(struct gb_ctx *ctx, const struct gb_install_input *in, char (*out)[GB_INSTALL_KVER],
                       size_t *n_out, char *err, size_t errsz);
/* A read-only query (chrooted in an image): not an effect, not journaled.
 * whole: its output is parsed, so it must all be there (-E2BIG). */
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
/* etc/modprobe.d/gpuboot-blacklist-nouveau.conf, journaled. */
int gb_install_write_blacklist(struct gb_journal *j, char *err, size_t errsz);

/* install-distro.c: the distro method (Debian) and the packages method on
 * apt (NVIDIA's repository): one apt engine. */
int gb_install_distro(struct gb_ctx *ctx, const struct gb_install_input *in, struct gb_journal *j,
                      struct gb_install_result *ret);

/* ---- the packages method on dnf and zypper ---- */

enum gb_rpm_pm {
	GB_RPM_NONE = 0,
	GB_RPM_DNF, /* RHEL, Rocky, AlmaLinux, Oracle, CentOS 8/9/10; Amazon Linux 2023 */
	GB_RPM_ZYPPER, /* SLES 15, openSUSE Leap 15 */
};
/* os-release text: its ID and VERSION_ID (each cut to 31 bytes, "" when
 * absent or unusable) and which package manager the family uses (ID, or a
 * word of ID_LIKE). */
enum gb_rpm_pm gb_rpm_os_parse(const char *text, char ret_id[32], char ret_version[32]);
/* The same for the root's etc/os-release (usr/lib/os-release). */
enum gb_rpm_pm gb_rpm_root_pm(struct gb_ctx *ctx);

/* install-rpm.c: the packages method on an rpm root (NVIDIA's dnf or zypper
 * repository: key checked against its pin, armored under etc/pki/rpm-gpg,
 * a repo file, rpm --import, the module stream, the exact versions, then
 * versionlock or addlock). docs/install.md, "The packages method on dnf
 * and zypper". Same contract as gb_install_distro. */
int gb_install_rpm(struct gb_ctx *ctx, const struct gb_install_input *in, struct gb_journal *j,
                   struct gb_install_result *ret);

/* rpm-query.c: what rpm, dnf and zypper print and keep. */
struct gb_rpm_pkg {
	char name[GB_INSTALL_NAME];
	char evr[GB_INSTALL_VERSION]; /* [epoch:]version-release as printed */
	char arch[16];
	char repo[64]; /* dnf list's repository column ("" from rpm -q) */
};
bool gb_rpm_name_valid(const char *s);
bool gb_rpm_evr_valid(const char *s);
/* [epoch:]version[-release] order (<0, 0, >0): the epochs as numbers, then
 * version and release with rpm's comparison (gb_rpmvercmp,
 * prepare/bootloader.h); a release missing on either side is not compared. */
int gb_rpm_evr_cmp(const char *a, const char *b);
/* Does evr satisfy wanted: "" (anything), a version ("580.95.05": any
 * release, any epoch), version-release, or with an epoch (then equal)? */
bool gb_rpm_version_matches(const char *evr, const char *wanted);
/* `rpm -q[a] --qf '%{NAME}\t%{EPOCHNUM}:%{VERSION}-%{RELEASE}\t%{ARCH}\n'`:
 * the packages (lines without a tab, "package x is not installed", are
 * skipped). Count, -EINVAL on a malformed line, -E2BIG past max. */
int gb_rpm_qf_parse(const char *out, struct gb_rpm_pkg *ret, size_t max);
/* name's entry satisfying wanted, else name's first entry, else NULL. */
const struct gb_rpm_pkg *gb_rpm_pkg_find(const struct gb_rpm_pkg *pkgs, size_t n, const char *name, const char *wanted);
/* `dnf -q list --showduplicates SPEC`: name's rows (NAME.ARCH EVR REPO,
 * wrapped or not). Count, -EINVAL for a bad name, -E2BIG past max. */
int gb_dnf_list_parse(const char *out, const char *name, struct gb_rpm_pkg *ret, size_t max);
/* Does zypper's output say that name (or name = version) was not found? */
bool gb_zypper_missing(const char *out, const char *name);
/* Does `rpm -q gpg-pubkey --qf '%{VERSION}-%{RELEASE}\n'` list the key of
 * fingerprint fpr (40 hex digits)? */
bool gb_rpm_pubkey_present(const char *out, const char *fpr);
/* dnf 4's etc/dnf/plugins/versionlock.list: a lock of name at exactly evr;
 * any lock of name. */
bool gb_dnf_versionlock_has(const char *text, const char *name, const char *evr);
bool gb_dnf_versionlock_names(const char *text, const char *name);
/* zypp's etc/zypp/locks: a lock of name (no version restriction). */
bool gb_zypp_locks_has(const char *text, const char *name);
/* etc/dnf/modules.d/MODULE.module: the stream named ("" when none) and
 * whether it is enabled; -EINVAL for a stream with bytes a stream cannot hold. */
int gb_dnf_module_parse(const char *text, const char *module, char ret_stream[64], bool *ret_enabled);

/* pkg-lock.c: the rpm side of gb_pkg_lock_wait: rpm's transaction lock
 * (var/lib/rpm/.rpm.lock, usr/lib/sysimage/rpm/.rpm.lock: fcntl locks),
 * dnf 4's pid files (var/cache/dnf/{metadata,download}_lock.pid,
 * var/lib/dnf/rpmdb_lock.pid, var/log/log_lock.pid) and zypp's
 * (run/zypp.pid, var/run/zypp.pid): a pid file holds the lock while its
 * pid lives, as dnf and libzypp read it. Bounded wait through
 * ops->sleep_ms; -EBUSY with err naming the lock, the holder's pid and
 * comm; the holder is never killed. */
int gb_rpm_lock_wait(struct gb_ctx *ctx, unsigned timeout_ms, char *err, size_t errsz);
