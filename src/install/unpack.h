/* SPDX-License-Identifier: MIT */
/* Unpacking for later stages: libarchive, streaming, into a staging
 * directory that is renamed into place only when complete. Refuses what an
 * archive has no business doing on a root-run provisioner. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

struct gb_unpack_opts {
	unsigned long long max_bytes; /* total unpacked bytes (decompression bombs) */
	unsigned long long max_entries;
	bool allow_setid; /* keep setuid/setgid bits */
	unsigned long long offset; /* start of the archive inside the file (makeself payload) */
};

void gb_unpack_opts_default(struct gb_unpack_opts *o);

/* Unpack the archive in FILE (from opts->offset) into DEST, atomically:
 * into DEST.staging.XXXXXX next to it, then swapped into place as DEST
 * (shared/swap.h: an existing DEST is exchanged with it, or moved aside
 * to DEST.old.PID where the filesystem cannot exchange, then removed).
 * The process's working directory is not changed (a thread of its own
 * writes the entries). On any refusal nothing is left but the old DEST.
 * err gets one line naming the entry and the reason. */
int gb_unpack(const char *file, const char *dest, const struct gb_unpack_opts *o, char *err, size_t errsz);

/* The byte offset of a makeself payload (NVIDIA's .run): the header names
 * the line it starts at ("skip=N", or offset=`head -n N "$0" | wc -c`).
 * The header is read, never run. */
int gb_makeself_offset(const char *file, unsigned long long *ret, char *err, size_t errsz);
