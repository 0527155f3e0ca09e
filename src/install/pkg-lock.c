/* SPDX-License-Identifier: MIT */
/* Package-manager etiquette: at first boot cloud-init, unattended-upgrades
 * or apt-daily may hold dpkg's locks. gpuboot waits, bounded, and says who
 * holds them; it never kills another package manager (a dpkg killed
 * half-way leaves the machine worse than a late GPU). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "context.h"
#include "install-internal.h"
#include "shared/fileio.h"
#include "shared/macro.h"
#include "shared/root.h"
#include "shared/util.h"

#define LOCK_POLL_MS 1000u

static const char *const lock_files[] = {
	"var/lib/dpkg/lock-frontend",
	"var/lib/dpkg/lock",
	"var/lib/apt/lists/lock",
	"var/cache/apt/archives/lock",
};

/* The pid holding a lock on path under the root: 0 none, -1 an OFD lock
 * or a holder in another pid namespace (pid unknown), else the pid. */
static int lock_holder(struct gb_ctx *ctx, const char *path, pid_t *ret)
{
	_cleanup_close_ int fd = gb_root_openat(ctx->root, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };

	*ret = 0;
	if (fd == -ENOENT)
		return 0;
	if (fd < 0)
		return fd;
	if (fcntl(fd, F_GETLK, &fl) < 0)
		return negative_errno();
	if (fl.l_type != F_UNLCK)
		*ret = fl.l_pid > 0 ? fl.l_pid : -1;
	return 0;
}

/* The holder's name: its comm, from the machine's /proc (an image's
 * holder runs on the build host, whose /proc is the one that knows it). */
static void holder_name(struct gb_ctx *ctx, pid_t pid, char *out, size_t outsz)
{
	char path[64];
	_cleanup_free_ char *comm = NULL;
	size_t len;
	int r;

	snprintf(out, outsz, "unknown");
	if (pid <= 0)
		return;
	if (ctx->root->is_host) {
		snprintf(path, sizeof(path), "proc/%d/comm", (int)pid);
		r = gb_root_read_attr(ctx->root, path, &comm);
	} else {
		snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
		r = gb_read_file(path, 64, &comm, &len);
		if (r >= 0)
			gb_strstrip(comm);
	}
	if (r >= 0 && comm[0])
		snprintf(out, outsz, "%s", comm);
}

int gb_pkg_lock_wait(struct gb_ctx *ctx, unsigned timeout_ms, char *err, size_t errsz)
{
	const struct gb_ops *ops = ctx->ops;
	uint64_t start = ops->now_monotonic_ns(ops), waited_ms = 0;

	for (;;) {
		const char *held = NULL;
		pid_t pid = 0;
		char comm[64];

		for (size_t i = 0; i < ARRAY_SIZE(lock_files) && !held; i++) {
			int r = lock_holder(ctx, lock_files[i], &pid);
			if (r < 0) {
				snprintf(err, errsz, "Failed to check the lock '%s' under %s: %s", lock_files[i],
				         ctx->root->path, strerror(-r));
				return r;
			}
			if (pid != 0)
				held = lock_files[i];
		}
		if (!held)
			return 0;
		waited_ms = (ops->now_monotonic_ns(ops) - start) / 1000000ull;
		if (waited_ms >= timeout_ms) {
			holder_name(ctx, pid, comm, sizeof(comm));
			if (pid > 0)
				snprintf(
				    err, errsz,
				    "The package manager's lock '%s' is held by pid %d (%s) after %llu s of waiting; "
				    "gpuboot does not stop it: let it finish (or stop it), then run again",
				    held, (int)pid, comm, (unsigned long long)(waited_ms / 1000));
			else
				snprintf(err, errsz,
				         "The package manager's lock '%s' is held by a process outside this pid "
				         "namespace after %llu s of waiting; let it finish, then run again",
				         held, (unsigned long long)(waited_ms / 1000));
			return -EBUSY;
		}
		ops->sleep_ms(ops, LOCK_POLL_MS);
	}
}
