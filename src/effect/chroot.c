/* SPDX-License-Identifier: MIT */
/* The chroot of an image install: /proc, /sys and /dev bound into the
 * root for the package manager's scripts (DKMS, update-initramfs), and
 * policy-rc.d so the packages' daemons are enabled, not started, in an
 * image. Whatever enter did, leave undoes, whatever happened in between. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>

#include "context.h"
#include "effect/effect.h"
#include "effect/journal.h"
#include "shared/macro.h"
#include "effect/root-write.h"
#include "shared/root.h"
#include "shared/util.h"

#define POLICY_RC_D "usr/sbin/policy-rc.d"
/* What was there before ours, kept on disk until it is put back: a run killed
 * in between leaves ours in place and this copy for the next run. */
#define POLICY_SAVED "var/lib/gpuboot/policy-rc.d.saved"
#define POLICY_TEXT "#!/bin/sh\n# gpuboot: an image is being built; daemons are enabled, not started.\nexit 101\n"

/* The binds this run (or a killed one) made, named before each mount: a
 * mount that holds the right filesystem is gpuboot's to undo only when it
 * is named here (one a Packer chroot builder made is left alone). Removed
 * when the last one is unmounted. */
#define MOUNTS_RECORD "var/lib/gpuboot/chroot-mounts"

#define PROC_SUPER_MAGIC_ 0x9fa0
#define SYSFS_MAGIC_ 0x62656572
#define TMPFS_MAGIC_ 0x01021994 /* devtmpfs says tmpfs */

static const struct {
	const char *name;
	const char *src;
	long fs;
} binds[3] = {
	{ "proc", "/proc", PROC_SUPER_MAGIC_ },
	{ "sys", "/sys", SYSFS_MAGIC_ },
	{ "dev", "/dev", TMPFS_MAGIC_ },
};

/* Is path the root of a mount? Its device differs from its parent's: what
 * is bound here (proc, sysfs, devtmpfs) is never the root's filesystem. */
static int is_mountpoint(const char *path, const struct stat *parent)
{
	struct stat st;
	if (lstat(path, &st) < 0)
		return negative_errno();
	return st.st_dev != parent->st_dev;
}

/* Make dir/name a directory inside the root and decide: 1 mount it, 0 it
 * already holds that filesystem (use it, leave it), or -EBUSY. */
static int mountpoint_prepare(struct gb_ctx *ctx, struct gb_chroot *c, size_t i, char *dst, size_t dstsz, char *err,
                              size_t errsz)
{
	struct stat root_st, st;
	struct statfs sf;
	int r;

	r = gb_root_mkdir_p(ctx->root, binds[i].name, 0755);
	if (r < 0) {
		snprintf(err, errsz, "Failed to create the mountpoint '%s' in %s: %s", binds[i].name, c->dir,
		         strerror(-r));
		return r;
	}
	snprintf(dst, dstsz, "%s/%s", c->dir, binds[i].name);
	if (stat(c->dir, &root_st) < 0 || lstat(dst, &st) < 0)
		return negative_errno();
	if (!S_ISDIR(st.st_mode)) { /* a symlink in an image must not point a mount at the host */
		snprintf(err, errsz, "'%s' is not a directory, refusing to mount over it", dst);
		return -ENOTDIR;
	}
	r = is_mountpoint(dst, &root_st);
	if (r <= 0)
		return r < 0 ? r : 1;
	if (statfs(dst, &sf) == 0 && (long)sf.f_type == binds[i].fs)
		return 0;
	snprintf(err, errsz, "'%s' is already a mountpoint of another filesystem; unmount it, then run again", dst);
	return -EBUSY;
}

/* Which binds the record names; none when it is absent. */
static int record_read(struct gb_ctx *ctx, bool ret[3])
{
	_cleanup_free_ char *text = NULL;
	size_t len;
	int r = gb_root_read_file(ctx->root, MOUNTS_RECORD, 4096, &text, &len);

	memset(ret, 0, 3 * sizeof(bool));
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	char *save = NULL;
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		for (size_t i = 0; i < ARRAY_SIZE(binds); i++)
			if (streq(line, binds[i].name))
				ret[i] = true;
	return 0;
}

/* The record made to say exactly rec (durably), or removed when it names none. */
static int record_write(struct gb_ctx *ctx, const bool rec[3])
{
	char text[64] = "";
	size_t o = 0;
	int r;

	for (size_t i = 0; i < ARRAY_SIZE(binds); i++)
		if (rec[i])
			o += (size_t)snprintf(text + o, sizeof(text) - o, "%s\n", binds[i].name);
	if (!o)
		return gb_root_unlink(ctx->root, MOUNTS_RECORD);
	r = gb_root_mkdir_p(ctx->root, "var/lib/gpuboot", 0755);
	return r < 0 ? r : gb_root_write_file(ctx->root, MOUNTS_RECORD, text, o, 0644);
}

static int policy_write(struct gb_ctx *ctx, struct gb_journal *j, struct gb_chroot *c, char *err, size_t errsz)
{
	char hex[65];
	const char *from = POLICY_RC_D;
	bool ours = false;
	int r = gb_root_read_file(ctx->root, from, 64 * 1024, &c->policy_old, &c->policy_old_len);

	if (r == 0 && c->policy_old_len == strlen(POLICY_TEXT) &&
	    memcmp(c->policy_old, POLICY_TEXT, c->policy_old_len) == 0) {
		/* ours, left by a killed run: what it replaced is the saved copy, or nothing */
		free(c->policy_old);
		c->policy_old = NULL;
		from = POLICY_SAVED;
		ours = true;
		r = gb_root_read_file(ctx->root, from, 64 * 1024, &c->policy_old, &c->policy_old_len);
	}
	if (r == -ENOENT)
		c->policy_old = NULL;
	else if (r < 0 || gb_root_sha256(ctx->root, from, hex, &c->policy_old_mode) < 0) {
		snprintf(err, errsz, "Failed to read '%s' in %s: %s", from, c->dir, strerror(r < 0 ? -r : EIO));
		return r < 0 ? r : -EIO;
	}
	if (c->policy_old && !ours &&
	    ((r = gb_root_mkdir_p(ctx->root, "var/lib/gpuboot", 0755)) < 0 ||
	     (r = gb_root_write_file(ctx->root, POLICY_SAVED, c->policy_old, c->policy_old_len, c->policy_old_mode)) <
	         0)) {
		snprintf(err, errsz, "Failed to keep a copy of '%s' in %s: %s", POLICY_RC_D, c->dir, strerror(-r));
		return r;
	}
	r = gb_journal_write_file(j, "install", POLICY_RC_D, POLICY_TEXT, strlen(POLICY_TEXT), 0755);
	if (r == 1) /* done in the run this one resumes: make sure it is there now */
		r = gb_root_write_file(ctx->root, POLICY_RC_D, POLICY_TEXT, strlen(POLICY_TEXT), 0755);
	if (r < 0) {
		snprintf(err, errsz, "Failed to write '%s' in %s: %s", POLICY_RC_D, c->dir, strerror(-r));
		return r;
	}
	c->policy = true;
	return 0;
}

/* policy-rc.d put back where it is ours (a killed run's): the saved copy,
 * or nothing. */
static int policy_cleanup(struct gb_ctx *ctx, bool *ret_done)
{
	_cleanup_free_ char *cur = NULL, *old = NULL;
	size_t len, old_len;
	mode_t mode = 0755;
	char hex[65];
	int r = gb_root_read_file(ctx->root, POLICY_RC_D, 64 * 1024, &cur, &len);

	*ret_done = false;
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	if (len != strlen(POLICY_TEXT) || memcmp(cur, POLICY_TEXT, len) != 0)
		return 0; /* not ours */
	r = gb_root_read_file(ctx->root, POLICY_SAVED, 64 * 1024, &old, &old_len);
	if (r == 0 && (r = gb_root_sha256(ctx->root, POLICY_SAVED, hex, &mode)) == 0)
		r = gb_root_write_file(ctx->root, POLICY_RC_D, old, old_len, mode);
	else if (r == -ENOENT)
		r = gb_root_unlink(ctx->root, POLICY_RC_D);
	if (r == 0 && (r = gb_root_unlink(ctx->root, POLICY_SAVED)) == -ENOENT)
		r = 0;
	if (r == 0)
		*ret_done = true;
	return r;
}

int gb_chroot_enter(struct gb_ctx *ctx, struct gb_journal *j, struct gb_chroot *c, char *err, size_t errsz)
{
	char dst[PATH_MAX + 8];
	int r;

	memset(c, 0, sizeof(*c));
	if (!realpath(ctx->opt.root, c->dir)) {
		r = negative_errno();
		snprintf(err, errsz, "Failed to resolve the root '%s': %s", ctx->opt.root, strerror(-r));
		return r;
	}
	r = record_read(ctx, c->recorded);
	if (r < 0) {
		snprintf(err, errsz, "Failed to read '%s' in %s: %s", MOUNTS_RECORD, c->dir, strerror(-r));
		return r;
	}
	for (size_t i = 0; i < ARRAY_SIZE(binds); i++) {
		r = mountpoint_prepare(ctx, c, i, dst, sizeof(dst), err, errsz);
		if (r == 0 && c->recorded[i]) /* a killed run's: ours to undo */
			c->mounted[i] = true;
		if (r > 0 && !c->recorded[i]) {
			int k;
			c->recorded[i] = true;
			k = record_write(ctx, c->recorded);
			if (k < 0) {
				snprintf(err, errsz, "Failed to write '%s' in %s: %s", MOUNTS_RECORD, c->dir,
				         strerror(-k));
				r = k;
			}
		}
		if (r > 0) {
			r = ctx->ops->mount_bind(ctx->ops, binds[i].src, dst);
			if (r < 0)
				snprintf(err, errsz, "Failed to bind '%s' onto '%s': %s", binds[i].src, dst,
				         strerror(-r));
			else
				c->mounted[i] = true;
		}
		if (r < 0) {
			if (!err[0])
				snprintf(err, errsz, "Failed to prepare '%s': %s", dst, strerror(-r));
			(void)gb_chroot_leave(ctx, j, c, err, errsz);
			return r;
		}
	}
	r = policy_write(ctx, j, c, err, errsz);
	if (r < 0)
		(void)gb_chroot_leave(ctx, j, c, err, errsz);
	return r;
}

/* Put policy-rc.d back as it was: removed, or the old text restored. */
static int policy_restore(struct gb_ctx *ctx, struct gb_journal *j, struct gb_chroot *c)
{
	const char *id = c->policy_old ? "restore:" POLICY_RC_D : "remove:" POLICY_RC_D;
	int r, k;

	/* A cleanup runs even where a resumed journal has it done. */
	(void)gb_journal_begin(j, "install", id, "file", NULL);
	if (c->policy_old)
		r = gb_root_write_file(ctx->root, POLICY_RC_D, c->policy_old, c->policy_old_len, c->policy_old_mode);
	else
		r = gb_root_unlink(ctx->root, POLICY_RC_D);
	if (r == 0)
		gb_journal_count_effect(j);
	if (r == 0 && (r = gb_root_unlink(ctx->root, POLICY_SAVED)) == -ENOENT)
		r = 0;
	k = gb_journal_end(j, id, r, NULL);
	return r < 0 ? r : k;
}

/* Unmount what c has mounted (its own binds, or a killed run's), the last
 * first, counting them in *n (when set); the record then names what is
 * still mounted, for the next run. The first error, err set when it was
 * empty, or 0. */
static int unmount_binds(struct gb_ctx *ctx, struct gb_chroot *c, unsigned *n, char *err, size_t errsz)
{
	char dst[PATH_MAX + 8];
	int first = 0, r;

	for (size_t i = ARRAY_SIZE(binds); i-- > 0;) {
		if (!c->mounted[i])
			continue;
		snprintf(dst, sizeof(dst), "%s/%s", c->dir, binds[i].name);
		r = ctx->ops->umount(ctx->ops, dst);
		c->mounted[i] = false;
		if (r == 0) {
			c->recorded[i] = false;
			if (n)
				(*n)++;
		}
		if (r < 0 && !first) {
			first = r;
			if (!err[0])
				snprintf(err, errsz, "Failed to unmount '%s': %s", dst, strerror(-r));
		}
	}
	r = record_write(ctx, c->recorded);
	if (r < 0 && !first) {
		first = r;
		if (!err[0])
			snprintf(err, errsz, "Failed to update '%s' in %s: %s", MOUNTS_RECORD, c->dir, strerror(-r));
	}
	return first;
}

int gb_chroot_leave(struct gb_ctx *ctx, struct gb_journal *j, struct gb_chroot *c, char *err, size_t errsz)
{
	int first = 0, r;

	if (c->policy) {
		r = policy_restore(ctx, j, c);
		if (r < 0 && !first) {
			first = r;
			if (!err[0])
				snprintf(err, errsz, "Failed to remove '%s' from %s: %s", POLICY_RC_D, c->dir,
				         strerror(-r));
		}
		c->policy = false;
	}
	free(c->policy_old);
	c->policy_old = NULL;
	r = unmount_binds(ctx, c, NULL, err, errsz);
	return first ? first : r;
}

/* What a killed image install left in the root: the binds the record names
 * that are still mounts, and policy-rc.d where it is ours. */
int gb_chroot_cleanup(struct gb_ctx *ctx, unsigned *ret_unmounted, bool *ret_policy, char *err, size_t errsz)
{
	struct gb_chroot c;
	struct stat root_st;
	char dst[PATH_MAX + 8];
	int r, first = 0;

	*ret_unmounted = 0;
	*ret_policy = false;
	memset(&c, 0, sizeof(c));
	if (!realpath(ctx->opt.root, c.dir)) {
		r = negative_errno();
		snprintf(err, errsz, "Failed to resolve the root '%s': %s", ctx->opt.root, strerror(-r));
		return r;
	}
	r = record_read(ctx, c.recorded);
	if (r < 0) {
		snprintf(err, errsz, "Failed to read '%s' in %s: %s", MOUNTS_RECORD, c.dir, strerror(-r));
		return r;
	}
	if (stat(c.dir, &root_st) < 0)
		return negative_errno();
	/* what the record names and is still a mount is ours to undo */
	for (size_t i = 0; i < ARRAY_SIZE(binds); i++) {
		struct stat parent = root_st;
		if (!c.recorded[i])
			continue;
		snprintf(dst, sizeof(dst), "%s/%s", c.dir, binds[i].name);
		r = is_mountpoint(dst, &parent);
		if (r > 0)
			c.mounted[i] = true;
		else if (r == 0 || r == -ENOENT)
			c.recorded[i] = false;
		else if (!first) {
			first = r;
			snprintf(err, errsz, "Failed to read '%s': %s", dst, strerror(-r));
		}
	}
	r = unmount_binds(ctx, &c, ret_unmounted, err, errsz);
	if (r < 0 && !first)
		first = r;
	r = policy_cleanup(ctx, ret_policy);
	if (r < 0 && !first) {
		first = r;
		snprintf(err, errsz, "Failed to restore '%s' in %s: %s", POLICY_RC_D, c.dir, strerror(-r));
	}
	return first;
}
