/* SPDX-License-Identifier: MIT */
/* The install stage's parts, shared by its files and its unit tests. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "install.h"

struct gb_ctx;
struct gb_journal;

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
	bool mounted[3]; /* proc, sys, dev: mounted by us (unmount on leave) */
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

/* install-distro.c: the distro method (Debian) and the packages method on
 * apt (NVIDIA's repository): one apt engine. */
int gb_install_distro(struct gb_ctx *ctx, const struct gb_install_input *in, struct gb_journal *j,
                      struct gb_install_result *ret);
