/* SPDX-License-Identifier: MIT */
/* The tree swap and tree removal of swap.h. */
#include "swap.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "killpoint.h"
#include "log.h"
#include "macro.h"
#include "util.h"

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

#define TREE_MAX_DEPTH 64

static int remove_in(int at, const char *name, unsigned depth)
{
	struct stat st;
	DIR *d;
	struct dirent *e;
	int fd, r = 0;

	if (fstatat(at, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : negative_errno();
	if (!S_ISDIR(st.st_mode))
		return unlinkat(at, name, 0) < 0 && errno != ENOENT ? negative_errno() : 0;
	if (depth > TREE_MAX_DEPTH)
		return -ELOOP;
	fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return negative_errno();
	d = fdopendir(fd);
	if (!d) {
		r = negative_errno();
		close(fd);
		return r;
	}
	while ((e = readdir(d))) {
		int k;
		if (streq(e->d_name, ".") || streq(e->d_name, ".."))
			continue;
		k = remove_in(dirfd(d), e->d_name, depth + 1);
		if (k < 0 && r == 0)
			r = k;
	}
	closedir(d);
	if (unlinkat(at, name, AT_REMOVEDIR) < 0 && errno != ENOENT && r == 0)
		r = negative_errno();
	return r;
}

int gb_remove_tree_at(int dirfd, const char *name)
{
	return remove_in(dirfd, name, 0);
}

static int rename2(int dirfd, const char *from, const char *to, unsigned flags)
{
	return syscall(SYS_renameat2, dirfd, from, dirfd, to, flags) < 0 ? negative_errno() : 0;
}

static int plain_rename(int dirfd, const char *from, const char *to)
{
	return renameat(dirfd, from, dirfd, to) < 0 ? negative_errno() : 0;
}

/* Nothing at name: staging renamed onto it, never over something that
 * appeared meanwhile. -EEXIST when name is there. */
static int swap_fresh(int dirfd, const char *staging, const char *name)
{
	struct stat st;
	int r;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
		return -EEXIST;
	if (errno != ENOENT)
		return negative_errno();
	gb_kill_point("swap");
	r = rename2(dirfd, staging, name, RENAME_NOREPLACE);
	if (r == -EINVAL || r == -ENOSYS) /* no flags here: a plain rename onto the missing name */
		r = fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT
		        ? plain_rename(dirfd, staging, name)
		        : -EEXIST;
	return r;
}

int gb_swap_aside(int dirfd, const char *staging, const char *name, const char *aside)
{
	int r = plain_rename(dirfd, name, aside);

	if (r < 0)
		return r;
	gb_kill_point("swap");
	r = plain_rename(dirfd, staging, name);
	if (r < 0) {
		if (plain_rename(dirfd, aside, name) < 0)
			gb_log_warning("Failed to move '%s' back to '%s', ignoring", aside, name);
		return r;
	}
	(void)gb_remove_tree_at(dirfd, aside);
	return 0;
}

int gb_swap_into_place(int dirfd, const char *staging, const char *name, const char *aside, bool *ret_replaced)
{
	int r;

	if (ret_replaced)
		*ret_replaced = false;
	r = swap_fresh(dirfd, staging, name);
	if (r != -EEXIST)
		return r;
	if (ret_replaced)
		*ret_replaced = true;
	r = rename2(dirfd, staging, name, RENAME_EXCHANGE);
	if (r == 0) {
		gb_kill_point("swap");
		(void)gb_remove_tree_at(dirfd, staging); /* the old tree, now under the staging name */
		return 0;
	}
	if (r != -EINVAL && r != -ENOSYS)
		return r;
	return gb_swap_aside(dirfd, staging, name, aside);
}
