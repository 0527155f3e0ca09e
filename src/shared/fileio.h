/* SPDX-License-Identifier: MIT */
#pragma once

#include <stddef.h>

/* Write path durably: a temp file beside it, fsync, rename over the old
 * one, fsync the directory; on failure the temp file is removed and the old
 * file is untouched. Creates the directory (0755) if missing. A failure to
 * sync the directory after the rename is returned (the new file is in
 * place but may not survive a power cut). The temp file is
 * ".<name>.<boot tag>.XXXXXX" (the tag: the boot id's first 8 hex digits);
 * those of earlier boots in the directory, which a power cut left, are
 * removed first. */
int gb_write_file_atomic(const char *path, const void *data, size_t len, unsigned mode);

/* Bytes free to an unprivileged writer on the filesystem holding path (a
 * file or directory; its parent when path does not exist yet), 0 unknown. */
unsigned long long gb_fs_available(const char *path);

/* fsync a directory (after a rename into it); negative errno when it cannot
 * be opened or synced. */
int gb_fsync_dir(const char *dir);

/* mkdir -p with mode for the last component. */
int gb_mkdir_p(const char *path, unsigned mode);

/* Read a whole file given by the user or owned by gpuboot (not below --root),
 * at most max bytes (-EFBIG when larger). NUL-terminated; *ret_len without it. */
int gb_read_file(const char *path, size_t max, char **ret, size_t *ret_len);

/* Copy src to dst durably, streaming (temp file beside dst, fsync, rename). */
int gb_copy_file_atomic(const char *src, const char *dst, unsigned mode);

/* write(2) all of data, retrying on EINTR and short writes; negative errno. */
int gb_write_all(int fd, const void *data, size_t len);
