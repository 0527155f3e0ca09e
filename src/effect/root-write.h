/* SPDX-License-Identifier: MIT */
/* Writes under the root: the one way gpuboot changes files of the machine
 * (or of an image root, or of a copied fixture tree, which is the fake for
 * writes). Every path is resolved inside the root with openat2
 * RESOLVE_IN_ROOT, the final component is never followed, and a file is
 * replaced durably: temp file beside it, fsync, rename, fsync the
 * directory. For a root other than "/" a kernel without openat2 is a
 * refusal (-EOPNOTSUPP): a symlink in an image must not reach the host. On
 * "/" nothing can resolve outside the root, so plain openat is used where
 * openat2 is missing (RHEL 8's 4.18, Ubuntu 20.04's 5.4). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct gb_root;

/* Open the directory that holds path's last component (created with mode
 * 0755 when create is set). Returns an fd or a negative errno; *ret_name
 * points into path at the last component. */
int gb_root_open_parent(struct gb_root *root, const char *path, bool create, const char **ret_name);

/* mkdir -p below the root. */
int gb_root_mkdir_p(struct gb_root *root, const char *path, mode_t mode);

/* mkdir -p below the root, then the directory's host path (the root's
 * own path and what path resolves to inside it) in ret: where a plain-path
 * writer (the state directory's journal, status, cache) can work without a
 * link in the image sending it to the host. Below it, the subdirectories
 * names in entries (NULL-terminated: the files and directories the writer
 * makes there itself) must not be symbolic links: -ELOOP, the offending
 * one's name in *ret_bad. */
int gb_root_resolve_dir(struct gb_root *root, const char *path, const char *const *entries, char *ret, size_t n,
                        const char **ret_bad);

/* Replace path below the root with data, durably. */
int gb_root_write_file(struct gb_root *root, const char *path, const void *data, size_t len, mode_t mode);

/* Make path below the root a symbolic link to target (replacing what was
 * there), durably. */
int gb_root_symlink(struct gb_root *root, const char *path, const char *target);

/* Remove path below the root (a file or a symlink); 0 when already absent. */
int gb_root_unlink(struct gb_root *root, const char *path);

/* sha256 (hex) of a file below the root; -ENOENT when absent. */
int gb_root_sha256(struct gb_root *root, const char *path, char ret_hex[65], mode_t *ret_mode);
