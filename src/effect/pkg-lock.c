/* SPDX-License-Identifier: MIT */
/* Package-manager etiquette: at first boot cloud-init, unattended-upgrades
 * or apt-daily may hold dpkg's locks (dnf-automatic, packagekitd or a
 * cloud agent rpm's, dnf's or zypp's). gpuboot waits, bounded, and says
 * who holds them; it never kills another package manager (one killed
 * half-way leaves the machine worse than a late GPU). */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "context.h"
#include "effect/effect.h"
#include "shared/fileio.h"
#include "shared/log.h"
#include "shared/macro.h"
#include "shared/root.h"
#include "shared/util.h"

#define LOCK_POLL_MS 1000u
#define LOCK_SAY_EVERY_MS 30000u

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

/* A pid file that names a live process other than us: the convention of
 * dnf 4 (dnf/lock.py: /proc/PID/stat exists) and libzypp
 * (ZYppFactory.cc: /proc/PID is there). The machine's /proc for the live
 * root; the host's for an image, where a chrooted package manager runs. */
static int pidfile_holder(struct gb_ctx *ctx, const char *path, pid_t *ret)
{
	_cleanup_free_ char *text = NULL;
	char proc[64];
	size_t len;
	uint32_t pid;
	int r = gb_root_read_file(ctx->root, path, 64, &text, &len);

	*ret = 0;
	if (r == -ENOENT || r == -EFBIG)
		return 0;
	if (r < 0)
		return r;
	gb_strstrip(text);
	if (gb_safe_atou32(text, 10, &pid) < 0 || pid == 0 || pid > INT32_MAX || (pid_t)pid == getpid())
		return 0; /* empty (zypp truncates on release), malformed, or ours */
	if (ctx->root->is_host) {
		snprintf(proc, sizeof(proc), "proc/%u", pid);
		if (!gb_root_exists(ctx->root, proc))
			return 0;
	} else {
		snprintf(proc, sizeof(proc), "/proc/%u", pid);
		if (access(proc, F_OK) < 0)
			return 0;
	}
	*ret = (pid_t)pid;
	return 0;
}

struct lock_file {
	const char *path;
	bool pidfile;
};

static const struct lock_file dpkg_locks[] = {
	{ "var/lib/dpkg/lock-frontend", false },
	{ "var/lib/dpkg/lock", false },
	{ "var/lib/apt/lists/lock", false },
	{ "var/cache/apt/archives/lock", false },
};

static const struct lock_file rpm_locks[] = {
	{ "var/lib/rpm/.rpm.lock", false },
	{ "usr/lib/sysimage/rpm/.rpm.lock", false },
	{ "var/lib/dnf/rpmdb_lock.pid", true },
	{ "var/cache/dnf/metadata_lock.pid", true },
	{ "var/cache/dnf/download_lock.pid", true },
	{ "var/log/log_lock.pid", true },
	{ "run/zypp.pid", true },
	{ "var/run/zypp.pid", true },
};

static int lock_wait(struct gb_ctx *ctx, const struct lock_file *locks, size_t n, unsigned timeout_ms, char *err,
                     size_t errsz)
{
	const struct gb_ops *ops = ctx->ops;
	uint64_t start = ops->now_monotonic_ns(ops), waited_ms = 0, said_ms = 0;
	bool said = false;

	for (;;) {
		const char *held = NULL;
		pid_t pid = 0;
		char comm[64];

		for (size_t i = 0; i < n && !held; i++) {
			int r = locks[i].pidfile ? pidfile_holder(ctx, locks[i].path, &pid)
			                         : lock_holder(ctx, locks[i].path, &pid);
			if (r < 0) {
				snprintf(err, errsz, "Failed to check the lock '%s' under %s: %s", locks[i].path,
				         ctx->root->path, strerror(-r));
				return r;
			}
			if (pid != 0)
				held = locks[i].path;
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
		/* Who holds it, once, then every 30 s: a first boot that waits says why. */
		if (!said || waited_ms - said_ms >= LOCK_SAY_EVERY_MS) {
			holder_name(ctx, pid, comm, sizeof(comm));
			if (pid > 0)
				gb_log_warning(
				    "The package manager's lock '%s' is held by pid %d (%s); %s (%llu of %u s)", held,
				    (int)pid, comm, said ? "still waiting" : "waiting for it",
				    (unsigned long long)(waited_ms / 1000), timeout_ms / 1000);
			else
				gb_log_warning("The package manager's lock '%s' is held by a process outside this pid "
				               "namespace; %s (%llu of %u s)",
				               held, said ? "still waiting" : "waiting for it",
				               (unsigned long long)(waited_ms / 1000), timeout_ms / 1000);
			said = true;
			said_ms = waited_ms;
		}
		ops->sleep_ms(ops, LOCK_POLL_MS);
	}
}

int gb_pkg_lock_wait(struct gb_ctx *ctx, unsigned timeout_ms, char *err, size_t errsz)
{
	return lock_wait(ctx, dpkg_locks, ARRAY_SIZE(dpkg_locks), timeout_ms, err, errsz);
}

int gb_rpm_lock_wait(struct gb_ctx *ctx, unsigned timeout_ms, char *err, size_t errsz)
{
	return lock_wait(ctx, rpm_locks, ARRAY_SIZE(rpm_locks), timeout_ms, err, errsz);
}
