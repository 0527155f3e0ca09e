/* SPDX-License-Identifier: MIT */
/* The install stage's parts, shared by its files and its unit tests. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "catalog/catalog.h"
#include "effect/effect.h"
#include "effect/pkg.h"
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
/* etc/modprobe.d/gpuboot-blacklist-nouveau.conf, journaled. */
int gb_install_write_blacklist(struct gb_journal *j, char *err, size_t errsz);

/* install-distro.c: the distro method (Debian) and the packages method on
 * apt (NVIDIA's repository): one apt engine. */
int gb_install_distro(struct gb_ctx *ctx, const struct gb_install_input *in, struct gb_journal *j,
                      struct gb_install_result *ret);

/* ---- the packages method on dnf and zypper ---- */

/* install-rpm.c: the packages method on an rpm root (NVIDIA's dnf or zypper
 * repository: key checked against its pin, armored under etc/pki/rpm-gpg,
 * a repo file, rpm --import, the module stream, the exact versions, then
 * versionlock or addlock). docs/install.md, "The packages method on dnf
 * and zypper". Same contract as gb_install_distro. */
int gb_install_rpm(struct gb_ctx *ctx, const struct gb_install_input *in, struct gb_journal *j,
                   struct gb_install_result *ret);
/* The package manager of NVIDIA's rpm repository for os-release text
 * (NULL: none): the catalog's row of its ID, else of a word of its ID_LIKE,
 * when that row has an NVIDIA repository and uses dnf or zypper; else
 * GB_PKGMGR_NONE. ret_id and ret_version get ID and VERSION_ID ("" when
 * absent or not a plain word). */
enum gb_pkgmgr gb_rpm_os_parse(const char *text, char ret_id[32], char ret_version[32]);
/* The same for the root's etc/os-release (usr/lib/os-release). */
enum gb_pkgmgr gb_rpm_root_pm(struct gb_ctx *ctx);
