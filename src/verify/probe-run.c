/* SPDX-License-Identifier: MIT */
/* Run the embedded gpuboot-probe: write it to a memfd, have the
 * operations table execute that (ops->run_exec: a child, execveat
 * AT_EMPTY_PATH, its JSON read under a deadline, its whole process group
 * killed if it hangs). A crash or hang in NVIDIA's libraries becomes a
 * failed check, never a crash of gpuboot. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "context.h"
#include "shared/fileio.h"
#include "shared/log.h"
#include "shared/macro.h"
#include "shared/ops.h"
#include "shared/test-knob.h"
#include "verify.h"
#include "shared/json-util.h"

extern const unsigned char gb_probe_blob[];
extern const unsigned long long gb_probe_blob_size;
extern char **environ;

#ifndef MFD_CLOEXEC
#define MFD_CLOEXEC 0x0001U
#endif
#ifndef MFD_EXEC
#define MFD_EXEC 0x0010U
#endif
#define PROBE_OUTPUT_MAX (4u << 20)

/* No memfd (or a test build asked for none): a file in a private 0700
 * directory of the state directory. The write fd is closed before anything
 * runs it (an fd open for writing makes exec fail with ETXTBSY); what is
 * returned is a read-only fd, and the file and directory are unlinked at
 * once, so nothing is left behind whatever happens next. */
static int probe_file_fd(struct gb_ctx *ctx)
{
	char dir[512], file[600];
	int fd, r;

	if (snprintf(dir, sizeof(dir), "%s/probe.XXXXXX", ctx->opt.state_dir) >= (int)sizeof(dir))
		return -ENAMETOOLONG;
	if (mkdir(ctx->opt.state_dir, 0755) < 0 && errno != EEXIST)
		return negative_errno();
	if (!mkdtemp(dir))
		return negative_errno();
	snprintf(file, sizeof(file), "%s/gpuboot-probe", dir);
	fd = open(file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0700);
	if (fd < 0) {
		r = negative_errno();
		rmdir(dir);
		return r;
	}
	r = gb_write_all(fd, gb_probe_blob, (size_t)gb_probe_blob_size);
	if (close(fd) < 0 && r >= 0)
		r = negative_errno();
	fd = r < 0 ? -1 : open(file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (r >= 0 && fd < 0)
		r = negative_errno();
	unlink(file);
	rmdir(dir);
	return r < 0 ? r : fd;
}

static bool memfd_allowed(void)
{
	/* Test builds: GPUBOOT_NO_MEMFD=1 takes the path of a kernel without memfd. */
	const char *e = gb_test_knob("GPUBOOT_NO_MEMFD");
	return !(e && streq(e, "1"));
}

/* The probe as an executable, read-only fd: a memfd, else a file. */
static int probe_fd(struct gb_ctx *ctx)
{
	int fd = -1;

	if (memfd_allowed()) {
		fd = (int)syscall(SYS_memfd_create, "gpuboot-probe", MFD_CLOEXEC | MFD_EXEC);
		if (fd < 0 && errno == EINVAL)
			fd = (int)syscall(SYS_memfd_create, "gpuboot-probe", MFD_CLOEXEC); /* kernels before 6.3 */
	}
	if (fd >= 0) {
		if (gb_write_all(fd, gb_probe_blob, (size_t)gb_probe_blob_size) >= 0)
			return fd;
		close(fd);
	}
	return probe_file_fd(ctx);
}

/* What the caller's environment may set that would make the verdict the
 * caller's and not the machine's: CUDA_VISIBLE_DEVICES and
 * CUDA_DEVICE_ORDER hide or reorder GPUs, CUDA_MPS_* route the probe through
 * an MPS server, CUDA_LAUNCH_BLOCKING and the rest change how CUDA runs; an
 * LD_PRELOAD library can intercept the driver API (GPU-sharing shims do).
 * Every CUDA_* variable and LD_PRELOAD are removed. */
static bool env_cleaned_var(const char *kv)
{
	return strncmp(kv, "CUDA_", 5) == 0 || strncmp(kv, "LD_PRELOAD=", 11) == 0;
}

size_t gb_probe_env_cleaned(char *buf, size_t n)
{
	size_t count = 0, o = 0;

	if (n)
		buf[0] = '\0';
	for (char **e = environ; e && *e; e++) {
		if (!env_cleaned_var(*e))
			continue;
		count++;
		if (o < n)
			o += (size_t)snprintf(buf + o, n - o, "%s%.60s", o ? ", " : "", *e);
	}
	return count;
}

/* environ without the variables above: pointers into environ, freed by the caller. */
static char **probe_env(void)
{
	size_t n = 0, k = 0;
	char **envp;

	for (char **e = environ; e && *e; e++)
		n++;
	envp = calloc(n + 1, sizeof(*envp));
	if (!envp)
		return NULL;
	for (char **e = environ; e && *e; e++)
		if (!env_cleaned_var(*e))
			envp[k++] = *e;
	envp[k] = NULL;
	return envp;
}

struct probe_io {
	char *buf; /* stdout, PROBE_OUTPUT_MAX + 1 */
	size_t len;
	char ebuf[2048]; /* the start of stderr */
	size_t elen;
};

/* The verdict from the exit status and the output. */
static int probe_result(int status, int exec_errno, struct probe_io *io, json_object **ret, int *ret_exit, char *err,
                        size_t errsz)
{
	json_object *o;
	int r;

	if (exec_errno == ENOENT) {
		snprintf(
		    err, errsz,
		    "the probe could not start: NVIDIA drivers need glibc and this system has no glibc dynamic loader");
		return -ENOENT;
	}
	if (exec_errno) {
		snprintf(err, errsz, "the probe could not be executed: %s", strerror(exec_errno));
		return -exec_errno;
	}
	if (WIFSIGNALED(status)) {
		snprintf(err, errsz, "the probe crashed with signal %d (%s) inside NVIDIA's libraries",
		         WTERMSIG(status), strsignal(WTERMSIG(status)));
		return -ECHILD;
	}
	*ret_exit = WEXITSTATUS(status);
	if (*ret_exit == 127 && io->len == 0) {
		snprintf(err, errsz, "the probe could not start: the glibc loader failed (%.200s)",
		         io->elen ? io->ebuf : "no message");
		return -ENOENT;
	}
	r = gb_json_parse(io->buf, io->len, 32, &o);
	if (r == -ENOMEM) {
		snprintf(err, errsz, "reading the probe's output: out of memory");
		return r;
	}
	if (r < 0 || !json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		snprintf(err, errsz, "the probe's output is not JSON (exit %d)%s%.200s", *ret_exit,
		         io->elen ? ": " : "", io->ebuf);
		return -EBADMSG;
	}
	*ret = o;
	return 0;
}

/* The probe run through the operations table (ops->run_exec: the fake
 * records it and may refuse it), its failures in words. */
static int probe_exec(struct gb_ctx *ctx, int fd, char *const argv[], char *const envp[], int timeout_ms,
                      struct probe_io *io, int *status, int *exec_errno, char *err, size_t errsz)
{
	struct gb_exec_spec spec = { .fd = fd,
		                     .argv = argv,
		                     .envp = envp,
		                     .timeout_ms = timeout_ms,
		                     .out = io->buf,
		                     .out_max = PROBE_OUTPUT_MAX,
		                     .err = io->ebuf,
		                     .err_max = sizeof(io->ebuf) - 1 };
	struct gb_exec_result res;
	int r = ctx->ops->run_exec(ctx->ops, &spec, &res);

	io->len = res.out_len;
	io->elen = res.err_len;
	*status = res.status;
	*exec_errno = res.exec_errno;
	if (r == -ETIMEDOUT && res.output_closed)
		snprintf(err, errsz, "the probe hung after its output (killed after %d ms)", timeout_ms);
	else if (r == -ETIMEDOUT)
		snprintf(err, errsz, "the probe hung: no answer from NVIDIA's libraries within %d ms (killed)",
		         timeout_ms);
	else if (r < 0 && res.failed)
		snprintf(err, errsz, "%s: %s", res.failed, strerror(-r));
	return r;
}

int gb_probe_run(struct gb_ctx *ctx, char *const args[], int timeout_ms, json_object **ret, int *ret_exit, char *err,
                 size_t errsz)
{
	struct probe_io io = { 0 };
	char *argv[16], **envp;
	int fd, status = 0, exec_errno = 0, r;
	size_t argc = 0;

	argv[argc++] = (char *)"gpuboot-probe";
	for (size_t i = 0; args && args[i] && argc < ARRAY_SIZE(argv) - 1; i++)
		argv[argc++] = args[i];
	argv[argc] = NULL;

	fd = probe_fd(ctx);
	if (fd < 0) {
		snprintf(err, errsz, "cannot stage the probe: %s", strerror(-fd));
		return fd;
	}
	io.buf = malloc(PROBE_OUTPUT_MAX + 1);
	envp = probe_env();
	if (!io.buf || !envp) {
		free(io.buf);
		free(envp);
		close(fd);
		snprintf(err, errsz, "out of memory");
		return -ENOMEM;
	}
	r = probe_exec(ctx, fd, argv, envp, timeout_ms, &io, &status, &exec_errno, err, errsz);
	close(fd);
	free(envp);
	if (r >= 0) {
		io.ebuf[io.elen] = '\0';
		io.buf[io.len] = '\0';
		r = probe_result(status, exec_errno, &io, ret, ret_exit, err, errsz);
	}
	free(io.buf);
	if (r < 0)
		gb_log_debug("probe: %s", err);
	return r;
}
