/* SPDX-License-Identifier: MIT */
#include "ops.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <libkmod.h>

#ifndef AT_EMPTY_PATH
#define AT_EMPTY_PATH 0x1000
#endif

#include "log.h"
#include "macro.h"
#include "root.h"
#include "util.h"

/* ---- modules, through libkmod ---- */

static void kmod_log_to_gb(void *data, int priority, const char *file, int line, const char *fn, const char *format,
                           va_list args)
{
	char msg[512];
	(void)data;
	(void)file;
	(void)line;
	(void)fn;
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
	vsnprintf(msg, sizeof(msg), format, args);
#pragma GCC diagnostic pop
	msg[strcspn(msg, "\n")] = '\0';
	if (priority <= 3)
		gb_log_warning("libkmod: %s", msg);
	else
		gb_log_debug("libkmod: %s", msg);
}

static struct kmod_ctx *kmod_open(void)
{
	struct kmod_ctx *k = kmod_new(NULL, NULL);
	if (!k)
		return NULL;
	kmod_set_log_fn(k, kmod_log_to_gb, NULL);
	if (kmod_load_resources(k) < 0)
		gb_log_debug("libkmod: the module indexes could not be loaded, reading the files instead");
	return k;
}

static int real_module_load(const struct gb_ops *ops, const char *module, const char *params)
{
	struct kmod_ctx *k;
	struct kmod_list *list = NULL, *it;
	int r;
	(void)ops;

	k = kmod_open();
	if (!k)
		return -ENOMEM;
	r = kmod_module_new_from_lookup(k, module, &list);
	if (r >= 0 && !list)
		r = -ENOENT;
	kmod_list_foreach(it, list)
	{
		struct kmod_module *m = kmod_module_get_module(it);
		/* Dependencies and the configuration's options and install rules
		 * apply; a module already there is not an error. */
		r = kmod_module_probe_insert_module(m, KMOD_PROBE_IGNORE_LOADED, params, NULL, NULL, NULL);
		kmod_module_unref(m);
		if (r != 0)
			break;
	}
	kmod_module_unref_list(list);
	kmod_unref(k);
	if (r > 0) /* a blacklist or an install rule stopped it */
		r = -EPERM;
	return r;
}

static int real_module_unload(const struct gb_ops *ops, const char *module)
{
	struct kmod_ctx *k;
	struct kmod_module *m = NULL;
	int r;
	(void)ops;

	k = kmod_open();
	if (!k)
		return -ENOMEM;
	r = kmod_module_new_from_name(k, module, &m);
	if (r >= 0)
		r = kmod_module_remove_module(m, 0);
	kmod_module_unref(m);
	kmod_unref(k);
	return r;
}

static int real_module_state(const struct gb_ops *ops, const char *module, enum gb_module_state *ret)
{
	struct kmod_ctx *k;
	struct kmod_module *m = NULL;
	int r;
	(void)ops;

	k = kmod_new(NULL, NULL);
	if (!k)
		return -ENOMEM;
	r = kmod_module_new_from_name(k, module, &m);
	if (r >= 0) {
		r = kmod_module_get_initstate(m);
		switch (r) {
		case KMOD_MODULE_BUILTIN: *ret = GB_MODULE_BUILTIN; break;
		case KMOD_MODULE_LIVE: *ret = GB_MODULE_LIVE; break;
		case KMOD_MODULE_COMING: *ret = GB_MODULE_COMING; break;
		case KMOD_MODULE_GOING: *ret = GB_MODULE_GOING; break;
		default: *ret = GB_MODULE_ABSENT; break;
		}
		if (r == -ENOENT)
			*ret = GB_MODULE_ABSENT;
		r = r < 0 && r != -ENOENT ? r : 0;
	}
	kmod_module_unref(m);
	kmod_unref(k);
	return r;
}

/* ---- commands ---- */

static const char *const fixed_path[] = {
	"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"
};

/* Find argv0 in the fixed PATH, inside chroot_dir when given. */
static int resolve_command(const char *argv0, const char *chroot_dir, char *out, size_t outsz)
{
	char probe[4096];
	if (strchr(argv0, '/'))
		return gb_strscpy(out, outsz, argv0) < 0 ? -ENAMETOOLONG : 0;
	for (size_t i = 0; i < ARRAY_SIZE(fixed_path); i++) {
		snprintf(out, outsz, "%s/%s", fixed_path[i], argv0);
		snprintf(probe, sizeof(probe), "%s%s", chroot_dir ? chroot_dir : "", out);
		if (access(probe, X_OK) == 0)
			return 0;
	}
	return -ENOENT;
}

static void capture_append(struct gb_cmd_result *res, const char *buf, size_t n)
{
	const size_t cap = sizeof(res->output) - 1;
	if (n >= cap) {
		memcpy(res->output, buf + n - cap, cap);
		res->output_len = cap;
	} else {
		if (res->output_len + n > cap) {
			size_t drop = res->output_len + n - cap;
			memmove(res->output, res->output + drop, res->output_len - drop);
			res->output_len -= drop;
		}
		memcpy(res->output + res->output_len, buf, n);
		res->output_len += n;
	}
	res->output[res->output_len] = '\0';
}

static uint64_t ts_ns(clockid_t c)
{
	struct timespec t;
	if (clock_gettime(c, &t) < 0)
		return 0;
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* In the child, after fork: only async-signal-safe calls. */
_Noreturn static void child_exec(const char *path, const struct gb_cmd_spec *spec, char *const envp[], int out_fd)
{
	int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
	setpgid(0, 0);
	if (null < 0 || dup2(null, STDIN_FILENO) < 0 || dup2(out_fd, STDOUT_FILENO) < 0 ||
	    dup2(out_fd, STDERR_FILENO) < 0)
		_exit(127);
	if (spec->chroot_dir && (chroot(spec->chroot_dir) < 0 || chdir("/") < 0))
		_exit(127);
	execve(path, (char *const *)spec->argv, envp);
	_exit(errno == ENOENT ? 127 : 126);
}

static int wait_capture(pid_t pid, int fd, const struct gb_cmd_spec *spec, struct gb_cmd_result *ret)
{
	uint64_t deadline = ts_ns(CLOCK_MONOTONIC) + (uint64_t)spec->timeout_ms * 1000000ull;
	bool eof = false;
	char buf[4096];

	while (!eof) {
		uint64_t now = ts_ns(CLOCK_MONOTONIC);
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int n;
		if (now >= deadline) {
			kill(-pid, SIGKILL);
			ret->timed_out = true;
			break;
		}
		n = poll(&p, 1, (int)((deadline - now) / 1000000ull) + 1);
		if (n < 0 && errno != EINTR)
			break;
		if (n > 0) {
			ssize_t k = read(fd, buf, sizeof(buf));
			if (k > 0)
				capture_append(ret, buf, (size_t)k);
			else if (k == 0 || errno != EINTR)
				eof = true;
		}
	}
	/* The process group may outlive the leader's output: the leader is reaped,
	 * and on a timeout every member was killed above. */
	while (waitpid(pid, &ret->status, 0) < 0)
		if (errno != EINTR)
			return negative_errno();
	return 0;
}

static int real_run_command(const struct gb_ops *ops, const struct gb_cmd_spec *spec, struct gb_cmd_result *ret)
{
	char path[4096];
	char *envp[GB_CMD_MAX_ENV + 4];
	size_t ne = 0;
	int pipefd[2], r;
	pid_t pid;
	(void)ops;

	memset(ret, 0, sizeof(*ret));
	if (!spec->argv || !spec->argv[0])
		return -EINVAL;
	r = resolve_command(spec->argv[0], spec->chroot_dir, path, sizeof(path));
	if (r < 0)
		return r;
	envp[ne++] = (char *)"LC_ALL=C";
	envp[ne++] = (char *)"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
	envp[ne++] = (char *)"DEBIAN_FRONTEND=noninteractive";
	for (size_t i = 0; spec->env && spec->env[i]; i++) {
		if (i >= GB_CMD_MAX_ENV)
			return -E2BIG;
		envp[ne++] = (char *)spec->env[i];
	}
	envp[ne] = NULL;
	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return negative_errno();
	pid = fork();
	if (pid < 0) {
		r = negative_errno();
		close(pipefd[0]);
		close(pipefd[1]);
		return r;
	}
	if (pid == 0)
		child_exec(path, spec, envp, pipefd[1]);
	close(pipefd[1]);
	setpgid(pid, pid); /* both sides, so the kill below finds the group */
	r = wait_capture(pid, pipefd[0], spec, ret);
	close(pipefd[0]);
	if (r == 0 && ret->timed_out)
		return -ETIMEDOUT;
	return r;
}

/* ---- a program from an executable fd (the GPU probe) ---- */

/* In the child: its own process group, stdin from /dev/null, stdout and
 * stderr to the pipes, then exec the fd. On failure the errno goes back
 * through exec_err (closed on a successful exec). Never returns. */
_Noreturn static void exec_child(const struct gb_exec_spec *spec, int out, int errp, int exec_err)
{
	int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC), e;

	setpgid(0, 0);
	if (devnull >= 0)
		dup2(devnull, STDIN_FILENO);
	dup2(out, STDOUT_FILENO);
	dup2(errp, STDERR_FILENO);
	syscall(SYS_execveat, spec->fd, "", spec->argv, spec->envp, AT_EMPTY_PATH);
	if (errno == ENOSYS)
		fexecve(spec->fd, spec->argv, spec->envp);
	e = errno;
	if (write(exec_err, &e, sizeof(e)) < 0)
		_exit(127);
	_exit(127);
}

/* Start it; ret->exec_errno is 0 when the kernel ran it, else why not. */
static int exec_spawn(const struct gb_exec_spec *spec, int out[2], int errp[2], pid_t *ret_pid,
                      struct gb_exec_result *ret)
{
	int ex[2], e = 0, r;
	pid_t pid;
	ssize_t n;

	if (pipe2(out, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0 || pipe2(ex, O_CLOEXEC) < 0) {
		ret->failed = "pipe";
		return negative_errno();
	}
	pid = fork();
	if (pid < 0) {
		r = negative_errno();
		ret->failed = "fork";
		close(ex[0]);
		close(ex[1]);
		return r;
	}
	if (pid == 0)
		exec_child(spec, out[1], errp[1], ex[1]);
	setpgid(pid, pid);
	close(out[1]);
	close(errp[1]);
	close(ex[1]);
	out[1] = errp[1] = -1;
	do
		n = read(ex[0], &e, sizeof(e));
	while (n < 0 && errno == EINTR);
	close(ex[0]);
	*ret_pid = pid;
	ret->exec_errno = n == (ssize_t)sizeof(e) ? e : 0;
	return 0;
}

static void exec_kill(pid_t pid, int *status)
{
	kill(-pid, SIGKILL);
	kill(pid, SIGKILL);
	waitpid(pid, status, 0);
}

/* Read stdout and stderr until both close, under the deadline. */
static int exec_collect(const struct gb_ops *ops, const struct gb_exec_spec *spec, pid_t pid, int out[2], int errp[2],
                        uint64_t deadline, struct gb_exec_result *ret)
{
	for (;;) {
		struct pollfd p[2] = { { .fd = out[0], .events = POLLIN }, { .fd = errp[0], .events = POLLIN } };
		uint64_t now = ops->now_monotonic_ns(ops);
		int left, pr;
		if (out[0] < 0 && errp[0] < 0)
			return 0;
		if (now >= deadline) {
			exec_kill(pid, &ret->status);
			return -ETIMEDOUT;
		}
		left = (int)((deadline - now) / 1000000ull) + 1;
		pr = poll(p, 2, left > 200 ? 200 : left);
		if (pr < 0 && errno != EINTR)
			return negative_errno();
		if (pr <= 0)
			continue;
		if (p[0].revents) {
			ssize_t n = read(out[0], spec->out + ret->out_len, spec->out_max - ret->out_len);
			if (n > 0)
				ret->out_len += (size_t)n;
			if (n <= 0 || ret->out_len >= spec->out_max) {
				close(out[0]);
				out[0] = -1;
			}
		}
		if (p[1].revents) {
			ssize_t n = read(errp[0], spec->err + ret->err_len, spec->err_max - ret->err_len);
			if (n > 0)
				ret->err_len += (size_t)n;
			if (n <= 0 || (out[0] < 0 && ret->err_len >= spec->err_max)) {
				close(errp[0]);
				errp[0] = -1;
			}
		}
	}
}

/* Output closed: wait for the exit, still under the deadline. */
static int exec_wait(const struct gb_ops *ops, pid_t pid, uint64_t deadline, struct gb_exec_result *ret)
{
	for (;;) {
		pid_t w = waitpid(pid, &ret->status, WNOHANG);
		if (w == pid)
			return 0;
		if (w < 0 && errno != EINTR)
			return negative_errno();
		if (ops->now_monotonic_ns(ops) >= deadline) {
			exec_kill(pid, &ret->status);
			ret->output_closed = true;
			return -ETIMEDOUT;
		}
		usleep(200); /* it is exiting: its output is closed */
	}
}

static int real_run_exec(const struct gb_ops *ops, const struct gb_exec_spec *spec, struct gb_exec_result *ret)
{
	int out[2] = { -1, -1 }, errp[2] = { -1, -1 }, r;
	uint64_t deadline;
	pid_t pid = -1;

	memset(ret, 0, sizeof(*ret));
	if (spec->fd < 0 || !spec->argv || !spec->argv[0] || !spec->out || !spec->err)
		return -EINVAL;
	r = exec_spawn(spec, out, errp, &pid, ret);
	deadline = ops->now_monotonic_ns(ops) + (uint64_t)spec->timeout_ms * 1000000ull;
	if (r >= 0)
		r = exec_collect(ops, spec, pid, out, errp, deadline, ret);
	if (r >= 0)
		r = exec_wait(ops, pid, deadline, ret);
	else if (r != -ETIMEDOUT && pid > 0)
		exec_kill(pid, &ret->status);
	for (size_t i = 0; i < 2; i++) {
		if (out[i] >= 0)
			close(out[i]);
		if (errp[i] >= 0)
			close(errp[i]);
	}
	return r;
}

/* ---- sysfs attributes ---- */

static int real_write_attr(const struct gb_ops *ops, struct gb_root *root, const char *path, const char *data)
{
	/* A sysfs attribute, not a file to replace: one write(2) is the
	 * request. O_APPEND changes nothing for sysfs, and in a fixture tree it
	 * keeps every write. */
	int fd = gb_root_openat(root, path, O_WRONLY | O_APPEND | O_NOCTTY), r;
	ssize_t w;
	(void)ops;

	if (fd < 0)
		return fd;
	w = write(fd, data, strlen(data));
	r = w == (ssize_t)strlen(data) ? 0 : w < 0 ? negative_errno() : -EIO;
	close(fd);
	return r;
}

static int real_systemctl(const struct gb_ops *ops, const char *verb, const char *unit)
{
	const char *argv[] = { "systemctl", verb, unit, NULL };
	struct gb_cmd_spec spec = { .argv = argv, .timeout_ms = 120000 };
	_cleanup_free_ struct gb_cmd_result *res = calloc(1, sizeof(*res));
	int r;

	if (!res)
		return -ENOMEM;
	r = ops->run_command(ops, &spec, res);
	if (r < 0)
		return r;
	if (!WIFEXITED(res->status) || WEXITSTATUS(res->status) != 0) {
		gb_log_debug("systemctl %s %s: %s", verb, unit ? unit : "", res->output);
		return -EIO;
	}
	return 0;
}

/* ---- time, randomness ---- */

static int real_random(const struct gb_ops *ops, void *buf, size_t n)
{
	uint8_t *p = buf;
	(void)ops;
	while (n > 0) {
		ssize_t k = getrandom(p, n, 0);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			return negative_errno();
		}
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

static void real_sleep_ms(const struct gb_ops *ops, unsigned ms)
{
	struct timespec t = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };
	(void)ops;
	while (nanosleep(&t, &t) < 0 && errno == EINTR)
		;
}

static uint64_t real_now_monotonic_ns(const struct gb_ops *ops)
{
	(void)ops;
	return ts_ns(CLOCK_MONOTONIC);
}

static uint64_t real_now_realtime_ns(const struct gb_ops *ops)
{
	(void)ops;
	return ts_ns(CLOCK_REALTIME);
}

static int real_uname(const struct gb_ops *ops, struct utsname *ret)
{
	(void)ops;
	return uname(ret) < 0 ? negative_errno() : 0;
}

/* ---- mounts (image builds: /proc, /sys, /dev inside the chroot) ---- */

static int real_mount_bind(const struct gb_ops *ops, const char *src, const char *dst)
{
	(void)ops;
	if (mount(src, dst, NULL, MS_BIND | MS_REC, NULL) < 0)
		return negative_errno();
	/* A shared bind would send the unmounts below it back to the host. */
	if (mount(NULL, dst, NULL, MS_SLAVE | MS_REC, NULL) < 0) {
		int r = negative_errno();
		(void)umount2(dst, MNT_DETACH);
		return r;
	}
	return 0;
}

static int real_umount(const struct gb_ops *ops, const char *dst)
{
	(void)ops;
	if (umount2(dst, UMOUNT_NOFOLLOW) == 0)
		return 0;
	/* A recursive bind holds submounts (dev/pts, sys/fs/cgroup): detach
	 * the whole tree lazily. */
	if ((errno == EBUSY || errno == EINVAL) && umount2(dst, MNT_DETACH | UMOUNT_NOFOLLOW) == 0)
		return 0;
	return negative_errno();
}

/* The node is made under a temporary name and renamed over the old one:
 * a CUDA process never finds it missing, and two makers at once (the
 * load stage and the udev rule's gpuboot --repair --nodes) both end with
 * the right node. */
static int real_mknod(const struct gb_ops *ops, int dirfd, const char *name, const struct gb_node_spec *spec)
{
	dev_t dev = makedev(spec->major, spec->minor);
	char tmp[300];
	struct stat st;

	(void)ops;
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (S_ISCHR(st.st_mode) && st.st_rdev == dev && (st.st_mode & 07777) == spec->perm &&
		    st.st_uid == spec->uid && st.st_gid == spec->gid)
			return 1;
		if (S_ISDIR(st.st_mode))
			return -EISDIR;
	} else if (errno != ENOENT) {
		return negative_errno();
	}
	if ((size_t)snprintf(tmp, sizeof(tmp), ".%s.gpuboot-%ld", name, (long)getpid()) >= sizeof(tmp))
		return -ENAMETOOLONG;
	(void)unlinkat(dirfd, tmp, 0);
	if (mknodat(dirfd, tmp, S_IFCHR | (spec->perm & 07777), dev) < 0)
		return negative_errno();
	/* mknod honours the umask; the driver's DeviceFileMode does not */
	if (fchownat(dirfd, tmp, spec->uid, spec->gid, AT_SYMLINK_NOFOLLOW) < 0 ||
	    fchmodat(dirfd, tmp, spec->perm & 07777, 0) < 0 || renameat(dirfd, tmp, dirfd, name) < 0) {
		int r = negative_errno();
		(void)unlinkat(dirfd, tmp, 0);
		return r;
	}
	return 0;
}

const struct gb_ops gb_ops_real = {
	.name = "real",
	.module_load = real_module_load,
	.module_unload = real_module_unload,
	.module_state = real_module_state,
	.run_command = real_run_command,
	.run_exec = real_run_exec,
	.systemctl = real_systemctl,
	.random = real_random,
	.sleep_ms = real_sleep_ms,
	.now_monotonic_ns = real_now_monotonic_ns,
	.now_realtime_ns = real_now_realtime_ns,
	.uname = real_uname,
	.mount_bind = real_mount_bind,
	.umount = real_umount,
	.mknod = real_mknod,
	.write_attr = real_write_attr,
};

uint64_t gb_ops_random_below(const struct gb_ops *ops, uint64_t bound)
{
	uint64_t v, limit;
	if (bound <= 1)
		return 0;
	/* Rejection sampling: no modulo bias. */
	limit = UINT64_MAX - UINT64_MAX % bound;
	for (int i = 0; i < 16; i++) {
		if (ops->random(ops, &v, sizeof(v)) < 0)
			return 0;
		if (v < limit)
			return v % bound;
	}
	return v % bound;
}
