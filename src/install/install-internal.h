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

/* ---- the package-backend interface (pkg-engine.c) ----
 *
 * One install through a package manager, whatever its family: the root's
 * distribution checked, the kernels found, the package list made, the
 * repository and what a killed run left made sure of; then either
 * everything is in place (the files gpuboot owns made sure of, no command
 * run) or the package manager runs inside the root; then the versions,
 * holds and a module for every kernel are checked. gb_pkg_engine_run walks
 * it; a backend (apt: install-distro.c; dnf and zypper: install-rpm.c) is
 * what differs. A new package manager is one backend. */
struct gb_pkg_engine {
	const struct gb_pkg_backend *be;
	struct gb_ctx *ctx;
	struct gb_journal *j;
	const struct gb_install_input *in;
	struct gb_install_result *ret;
	struct gb_cmd_result *res; /* one buffer for every command */
	const char *chroot_dir; /* NULL on the live machine */
	char kernels[GB_INSTALL_MAX_KERNELS][GB_INSTALL_KVER];
	size_t n_kernels;
	char dir[4096]; /* the image root, resolved (chroot_dir) */
};

struct gb_pkg_backend {
	const char *name; /* "apt" | "rpm" */
	size_t state_size; /* the backend's state, struct gb_pkg_engine its first member */
	/* the package manager's locks (effect/pkg-lock.c) */
	int (*lock_wait)(struct gb_ctx *ctx, unsigned timeout_ms, char *err, size_t errsz);
	unsigned query_timeout_ms;
	/* the root's distribution is this backend's (ret->distro, codename) */
	int (*os)(struct gb_pkg_engine *e);
	/* the packages: the input's or the distribution's, the kernels' headers */
	int (*list)(struct gb_pkg_engine *e);
	/* optional: what is installed before, read-only */
	int (*before)(struct gb_pkg_engine *e);
	/* the repository and its key, what a killed run left; *ret_done:
	 * every package, hold and module already in place */
	int (*prepare)(struct gb_pkg_engine *e, bool *ret_done);
	/* everything in place: the files gpuboot owns made sure of, no command */
	int (*settle)(struct gb_pkg_engine *e);
	/* inside the root (chrooted for an image): the commands */
	int (*install)(struct gb_pkg_engine *e);
	/* the versions and holds as asked (the kernels' modules are the walk's) */
	int (*after)(struct gb_pkg_engine *e);
	/* the module built for kver below the root, "" when none; and the
	 * error when there is none (-ENOENT with ret->error) */
	void (*find_module)(struct gb_pkg_engine *e, const char *kver, char *out, size_t outsz);
	int (*no_module)(struct gb_pkg_engine *e, const char *kver);
	/* optional: release what the backend's state holds, on every path */
	void (*done)(struct gb_pkg_engine *e);
};

int gb_pkg_engine_run(const struct gb_pkg_backend *be, struct gb_ctx *ctx, const struct gb_install_input *in,
                      struct gb_journal *j, struct gb_install_result *ret);
/* A journaled package-manager command after the backend's locks. */
int gb_pkg_effect(struct gb_pkg_engine *e, const char *id, const char *const *argv, unsigned timeout_ms);
/* A read-only query (chrooted in an image), not journaled; its output in
 * e->res. whole: the output must be all there (it is parsed). */
int gb_pkg_query(struct gb_pkg_engine *e, const char *const *argv, bool whole);
/* The nouveau blacklist, except for a userspace-only install. */
int gb_pkg_write_blacklist(struct gb_pkg_engine *e);

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
