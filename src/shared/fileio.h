/* SPDX-License-Identifier: MIT */
#pragma once

#include <stddef.h>

/* Write path durably: a temp file beside it, fsync, rename over the old
 * one, fsync the directory; on failure the temp file is removed and the old
 * file is untouched. Creates the directory (0755) if missing. */
int gb_write_file_atomic(const char *path, const void *data, size_t len, unsigned mode);

/* mkdir -p with mode for the last component. */
int gb_mkdir_p(const char *path, unsigned mode);
