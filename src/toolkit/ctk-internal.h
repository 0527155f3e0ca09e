/* SPDX-License-Identifier: MIT */
/* The Container Toolkit configuration's parts, shared by ctk.c and
 * ctk-cdi.c. */
#pragma once

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "ctk.h"
#include "shared/macro.h"

#define GB_CTK_STAGE "install"

struct gb_ctk {
	struct gb_ctx *ctx;
	struct gb_journal *j;
	const struct gb_ctk_input *in;
	struct gb_ctk_result *ret;
	const char *runtime_path;
	const char *chroot_dir; /* an image: queries run chrooted here; NULL on "/" */
	char chroot_buf[PATH_MAX];
};

/* Check the input, fill s; sets ret->image. Negative errno with ret->error. */
int gb_ctk_init(struct gb_ctk *s, struct gb_ctx *ctx, struct gb_journal *j, const struct gb_ctk_input *in,
                struct gb_ctk_result *ret);
/* ret->error from fmt; returns r. */
int gb_ctk_fail(struct gb_ctk *s, int r, const char *fmt, ...) _printf_(3, 4);
/* -ELOOP (ret->error set) when path below the root is a symbolic link, else 0. */
int gb_ctk_refuse_link(struct gb_ctk *s, const char *path);
/* gb_journal_write_file, refusing a link; ret->error on failure. */
int gb_ctk_write(struct gb_ctk *s, const char *path, const char *text, size_t len, mode_t mode);
/* Did the journal's write of path change it (this run or the one it resumes)? */
bool gb_ctk_file_changed(struct gb_ctk *s, const char *path);
/* systemctl VERB UNIT through the operations table, journaled as a
 * command; ret->error on failure. */
int gb_ctk_systemctl(struct gb_ctk *s, const char *verb, const char *unit);
