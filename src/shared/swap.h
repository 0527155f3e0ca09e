/* SPDX-License-Identifier: MIT */
/* A tree swapped into place, and a tree removed: relative to a directory
 * fd, one name at a time, never following a link, never changing the
 * working directory. The one way gpuboot puts an unpacked tree where it
 * belongs (the runfile's payload, CUDA's usr/local/cuda-X.Y). */
#pragma once

#include <stdbool.h>

/* Remove name below dirfd, a tree or a file or a link (never followed);
 * 0 when absent. */
int gb_remove_tree_at(int dirfd, const char *name);

/* Put the tree staging (a name in dirfd) in place as name (in dirfd), so
 * that name is always the old tree or the new one, whole:
 *  - nothing there: renameat2 RENAME_NOREPLACE (where the filesystem has
 *    no rename flags, EINVAL, or the kernel no renameat2, ENOSYS: a plain
 *    renameat after checking the name is absent);
 *  - a tree there: renameat2 RENAME_EXCHANGE, one atomic step, then the
 *    old tree, now under staging's name, removed;
 *  - the fallback, where the filesystem cannot exchange (EINVAL, ENOSYS):
 *    the old tree renamed to aside (a name in dirfd the caller owns and
 *    removes as a leftover), the new one renamed in, the old one renamed
 *    back if that fails, then removed. A kill between the two renames
 *    leaves name absent and the old tree under aside.
 * The kill point "swap" (killpoint.h) is passed once, between the old
 * tree leaving and the new one arriving (after an exchange, which is
 * both; before the rename where there was no old tree).
 * *ret_replaced (may be NULL): a tree was there. Negative errno; on
 * failure name is as it was and staging is the caller's to remove. The
 * directory is not synced: the caller fsyncs dirfd where it must last. */
int gb_swap_into_place(int dirfd, const char *staging, const char *name, const char *aside, bool *ret_replaced);

/* The fallback alone (for its unit test: no test filesystem refuses an
 * exchange): the old tree name renamed to aside, staging renamed to
 * name, aside renamed back on failure, else removed. Negative errno. */
int gb_swap_aside(int dirfd, const char *staging, const char *name, const char *aside);
