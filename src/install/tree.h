/* SPDX-License-Identifier: MIT */
/* Trees under a directory fd: the parallel unpacker of CUDA's
 * redistributable components and the removal of a tree. Everything is
 * relative to a directory fd and walked one name at a time with
 * O_NOFOLLOW, so no symlink (of the image or of an archive) is ever
 * followed, and no thread changes the working directory. A tree is
 * removed with shared/swap.h's gb_remove_tree_at. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

struct gb_unpack_opts;

/* One component archive to unpack. */
struct gb_cuda_part {
	const char *name; /* "cuda_cudart" */
	const char *version; /* "13.0.48" */
	const char *archive; /* the .tar.xz */
	/* results */
	unsigned long long bytes, files;
	int r; /* 0 or a negative errno */
	char err[700];
};

/* Unpack every part into the directory dirfd (label names it in
 * messages), threads at once (1: one after another). Each archive's
 * entries must lie below <name>-linux-<arch>-<version>-archive/; that
 * directory is merged: lib/ and include/ go to targets/<target>/lib and
 * targets/<target>/include, top-level files to share/doc/<name>/, the
 * rest as it is. Limits per archive from o. On the first failure the
 * other threads stop; the first failure is returned, its message in err.
 * Nothing is cleaned up here (the caller removes dirfd's tree). */
int gb_cuda_unpack_parts(int dirfd, const char *label, const char *target, struct gb_cuda_part *p, size_t n,
                         unsigned threads, const struct gb_unpack_opts *o, char *err, size_t errsz);

/* The bytes the parts declare (headers only, nothing written): what the
 * tree needs on disk, for an ENOSPC message. */
int gb_cuda_parts_size(const struct gb_cuda_part *p, size_t n, unsigned long long *ret);

/* Open (creating with 0755 where missing) the directory path below dirfd,
 * one name at a time, refusing symlinks. An fd or a negative errno. */
int gb_tree_mkdir_open(int dirfd, const char *path);
