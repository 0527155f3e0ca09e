/* SPDX-License-Identifier: MIT */
/* Run the embedded gpuboot-probe: write it to a memfd, execute that in a
 * child with execveat(AT_EMPTY_PATH), read its JSON under a deadline, and
 * kill its whole process group if it hangs. A crash or hang in NVIDIA's
 * libraries becomes a failed check, never a crash of gpuboot. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "context.h"
#include "shared/log.h"
#include "shared/macro.h"
#include "verify.h"

extern const unsigned char gb_probe_blob[];
extern const unsigned long long gb_probe_blob_size;
extern char **environ;

#ifndef MFD_CLOEXEC
#define MFD_CLOEXEC 0x0001U
#endif
#ifndef MFD_EXEC
#define MFD_EXEC 0x0010U
#endif
#ifndef AT_EMPTY_PATH
#define AT_EMPTY_PATH 0x1000
#endif
#define PROBE_OUTPUT_MAX (4u << 20)

static int write_all(int fd, const unsigned char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return negative_errno();
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* The probe as an executable fd: a memfd, or a file in a 0700 directory. */
static int probe_fd(struct gb_ctx *ctx, char *tmpdir, size_t tmpdirsz, char *tmpfile, size_t tmpfilesz)
{
	size_t n = (size_t)gb_probe_blob_size;
	int fd, r;

	tmpdir[0] = tmpfile[0] = '\0';
	fd = (int)syscall(SYS_memfd_create, "gpuboot-probe", MFD_CLOEXEC | MFD_EXEC);
	if (fd < 0 && errno == EINVAL)
		fd = (int)syscall(SYS_memfd_create, "gpuboot-probe", MFD_CLOEXEC); /* kernels before 6.3 */
	if (fd >= 0) {
		r = write_all(fd, gb_probe_blob, n);
		if (r >= 0)
			return fd;
		close(fd);
	}
	/* No memfd: a private directory in the state directory. */
	snprintf(tmpdir, tmpdirsz, "%s/probe.XXXXXX", ctx->opt.state_dir);
	if (mkdir(ctx->opt.state_dir, 0755) < 0 && errno != EEXIST)
		return negative_errno();
	if (!mkdtemp(tmpdir))
		return negative_errno();
	snprintf(tmpfile, tmpfilesz, "%s/gpuboot-probe", tmpdir);
	fd = open(tmpfile, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0700);
	if (fd < 0)
		return negative_errno();
	r = write_all(fd, gb_probe_blob, n);
	if (r < 0) {
		close(fd);
		return r;
	}
	return fd;
}

static void cleanup_tmp(const char *dir, const char *file)
{
	if (file[0])
		unlink(file);
	if (dir[0])
		rmdir(dir);
}

int gb_probe_run(struct gb_ctx *ctx, char *const args[], int timeout_ms, json_object **ret, int *ret_exit, char *err,
                 size_t errsz)
{
	char tmpdir[512], tmpfile[600];
	char *argv[16];
	int out[2] = { -1, -1 }, errp[2] = { -1, -1 }, fd, status = 0, r = 0;
	char *buf = NULL, ebuf[2048] = "";
	size_t len = 0, elen = 0;
	uint64_t deadline;
	pid_t pid;
	size_t argc = 0;

	argv[argc++] = (char *)"gpuboot-probe";
	for (size_t i = 0; args && args[i] && argc < ARRAY_SIZE(argv) - 1; i++)
		argv[argc++] = args[i];
	argv[argc] = NULL;

	fd = probe_fd(ctx, tmpdir, sizeof(tmpdir), tmpfile, sizeof(tmpfile));
	if (fd < 0) {
		snprintf(err, errsz, "cannot stage the probe: %s", strerror(-fd));
		return fd;
	}
	if (pipe2(out, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0) {
		r = negative_errno();
		snprintf(err, errsz, "pipe: %s", strerror(-r));
		goto out;
	}
	buf = malloc(PROBE_OUTPUT_MAX + 1);
	if (!buf) {
		r = -ENOMEM;
		goto out;
	}
	pid = fork();
	if (pid < 0) {
		r = negative_errno();
		snprintf(err, errsz, "fork: %s", strerror(-r));
		goto out;
	}
	if (pid == 0) {
		int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
		setpgid(0, 0);
		if (devnull >= 0)
			dup2(devnull, STDIN_FILENO);
		dup2(out[1], STDOUT_FILENO);
		dup2(errp[1], STDERR_FILENO);
		syscall(SYS_execveat, fd, "", argv, environ, AT_EMPTY_PATH);
		if (errno == ENOSYS)
			fexecve(fd, argv, environ);
		/* The kernel could not start it: most often no glibc loader. */
		_exit(errno == ENOENT ? 126 : 127);
	}
	setpgid(pid, pid);
	close(out[1]);
	close(errp[1]);
	out[1] = errp[1] = -1;
	deadline = ctx->ops->now_monotonic_ns(ctx->ops) + (uint64_t)timeout_ms * 1000000ull;
	for (;;) {
		struct pollfd p[2] = { { .fd = out[0], .events = POLLIN }, { .fd = errp[0], .events = POLLIN } };
		uint64_t now = ctx->ops->now_monotonic_ns(ctx->ops);
		int left, pr;
		if (p[0].fd < 0 && p[1].fd < 0)
			break;
		if (now >= deadline) {
			kill(-pid, SIGKILL);
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			snprintf(err, errsz, "the probe hung: no answer from NVIDIA's libraries within %d ms (killed)",
			         timeout_ms);
			r = -ETIMEDOUT;
			goto out;
		}
		left = (int)((deadline - now) / 1000000ull) + 1;
		pr = poll(p, 2, left > 200 ? 200 : left);
		if (pr < 0 && errno != EINTR) {
			r = negative_errno();
			goto out;
		}
		if (pr <= 0)
			continue;
		if (p[0].revents) {
			ssize_t n = read(out[0], buf + len, PROBE_OUTPUT_MAX - len);
			if (n <= 0 || len + (size_t)n >= PROBE_OUTPUT_MAX) {
				if (n > 0)
					len += (size_t)n;
				close(out[0]);
				out[0] = -1;
			} else
				len += (size_t)n;
		}
		if (p[1].revents) {
			ssize_t n = read(errp[0], ebuf + elen, sizeof(ebuf) - 1 - elen);
			if (n <= 0) {
				close(errp[0]);
				errp[0] = -1;
			} else
				elen += (size_t)n;
		}
		if (out[0] < 0 && errp[0] < 0)
			break;
		if (out[0] < 0 && elen >= sizeof(ebuf) - 1) {
			close(errp[0]);
			errp[0] = -1;
		}
	}
	/* Output closed: wait for the exit, still under the deadline. */
	for (;;) {
		pid_t w = waitpid(pid, &status, WNOHANG);
		if (w == pid)
			break;
		if (ctx->ops->now_monotonic_ns(ctx->ops) >= deadline) {
			kill(-pid, SIGKILL);
			waitpid(pid, &status, 0);
			snprintf(err, errsz, "the probe hung after its output (killed after %d ms)", timeout_ms);
			r = -ETIMEDOUT;
			goto out;
		}
		usleep(2000);
	}
	ebuf[elen] = '\0';
	buf[len] = '\0';
	if (WIFSIGNALED(status)) {
		snprintf(err, errsz, "the probe crashed with signal %d (%s) inside NVIDIA's libraries",
		         WTERMSIG(status), strsignal(WTERMSIG(status)));
		r = -ECHILD;
		goto out;
	}
	*ret_exit = WEXITSTATUS(status);
	if (*ret_exit == 126 || (*ret_exit == 127 && len == 0)) {
		snprintf(
		    err, errsz,
		    "the probe could not start: NVIDIA drivers need glibc and this system has no glibc dynamic loader");
		r = -ENOENT;
		goto out;
	}
	{
		json_tokener *tok = json_tokener_new_ex(32);
		json_object *o = tok ? json_tokener_parse_ex(tok, buf, (int)len) : NULL;
		if (tok)
			json_tokener_free(tok);
		if (!o || !json_object_is_type(o, json_type_object)) {
			json_object_put(o);
			snprintf(err, errsz, "the probe's output is not JSON (exit %d)%s%.200s", *ret_exit,
			         elen ? ": " : "", ebuf);
			r = -EBADMSG;
			goto out;
		}
		*ret = o;
	}
out:
	free(buf);
	if (out[0] >= 0)
		close(out[0]);
	if (out[1] >= 0)
		close(out[1]);
	if (errp[0] >= 0)
		close(errp[0]);
	if (errp[1] >= 0)
		close(errp[1]);
	close(fd);
	cleanup_tmp(tmpdir, tmpfile);
	if (r < 0)
		gb_log_debug("probe: %s", err);
	return r;
}
