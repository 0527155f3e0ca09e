/* SPDX-License-Identifier: MIT */
/* The operations table: every effect on the machine goes through it, so
 * tests swap in a fake without root, without a GPU and without touching
 * the host. A static binary cannot be intercepted from outside; the seam
 * must be inside.
 *
 * Every operation takes the table itself first: an implementation keeps its
 * state behind ops->data (the fake's scripted world), never in globals. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/utsname.h>

struct gb_root;

/* A kernel module's state, as libkmod's kmod_module_get_initstate sees it. */
enum gb_module_state {
	GB_MODULE_ABSENT = 0, /* not loaded */
	GB_MODULE_LIVE,
	GB_MODULE_COMING,
	GB_MODULE_GOING,
	GB_MODULE_BUILTIN,
};

#define GB_CMD_MAX_ENV 8
#define GB_CMD_CAPTURE_MAX 4096 /* the tail of stdout+stderr that is kept */

/* One command to run. The environment is always LC_ALL=C,
 * PATH=/usr/sbin:/usr/bin:/sbin:/bin and DEBIAN_FRONTEND=noninteractive,
 * plus env[] (NAME=VALUE); stdin is /dev/null. */
struct gb_cmd_spec {
	const char *const *argv; /* NULL-terminated; argv[0] looked up in the fixed PATH */
	const char *const *env; /* NULL-terminated extra NAME=VALUE, or NULL */
	const char *chroot_dir; /* run chrooted into this directory (image builds), or NULL */
	int timeout_ms; /* the whole process group is killed after this */
};

struct gb_cmd_result {
	int status; /* wait status; valid when the call returned 0 */
	bool timed_out;
	char output[GB_CMD_CAPTURE_MAX]; /* the last bytes of stdout and stderr, interleaved */
	size_t output_len;
};

/* A program run from an open executable fd (ops->run_exec: the embedded
 * GPU probe, from its memfd or its file): its own process group, stdin
 * /dev/null, stdout and stderr read apart, the whole group killed at the
 * deadline (measured with ops->now_monotonic_ns). */
struct gb_exec_spec {
	int fd; /* the executable: execveat(fd, "", AT_EMPTY_PATH), fexecve where that is missing */
	char *const *argv; /* NULL-terminated; argv[0] names it in the fake's record */
	char *const *envp; /* the whole environment */
	int timeout_ms;
	char *out; /* stdout: at most out_max bytes kept (then its pipe is closed) */
	size_t out_max;
	char *err; /* stderr: its first err_max bytes */
	size_t err_max;
};

struct gb_exec_result {
	int status; /* wait status; valid when the call returned 0 */
	int exec_errno; /* 0 when the kernel ran it, else why not (its exit status is then 127) */
	size_t out_len, err_len;
	bool output_closed; /* on -ETIMEDOUT: it hung after closing its output, not before */
	const char *failed; /* what could not be done when it was not started: "pipe", "fork" */
};

/* A character device node to make (ops->mknod). */
struct gb_node_spec {
	const char *path; /* below the root, for messages and the fake's record: "dev/nvidiactl" */
	unsigned perm; /* permission bits: 0666 */
	uint32_t uid, gid, major, minor;
};

struct gb_ops {
	const char *name;
	void *data; /* the implementation's state */

	/* Load a module and what it depends on (libkmod), with parameters
	 * "a=1 b=2" (may be NULL). Negative errno of the insert that failed. */
	int (*module_load)(const struct gb_ops *ops, const char *module, const char *params);
	/* Unload a module (not its dependencies). Negative errno. */
	int (*module_unload)(const struct gb_ops *ops, const char *module);
	/* The module's state; negative errno when it cannot be read. */
	int (*module_state)(const struct gb_ops *ops, const char *module, enum gb_module_state *ret);

	/* Run a command; 0 with *ret filled (whatever its exit status), or a
	 * negative errno when it could not be started. */
	int (*run_command)(const struct gb_ops *ops, const struct gb_cmd_spec *spec, struct gb_cmd_result *ret);
	/* Run a program from an executable fd: 0 when it exited (ret's status,
	 * exec_errno and output), -ETIMEDOUT when it was killed at the deadline,
	 * another negative errno when it could not be started or watched (it is
	 * killed then). */
	int (*run_exec)(const struct gb_ops *ops, const struct gb_exec_spec *spec, struct gb_exec_result *ret);
	/* systemctl VERB UNIT... (UNIT may be NULL for verbs like reboot or
	 * daemon-reload); 0 when systemctl exited 0, else a negative errno. */
	int (*systemctl)(const struct gb_ops *ops, const char *verb, const char *unit);

	/* n random bytes (getrandom); negative errno. */
	int (*random)(const struct gb_ops *ops, void *buf, size_t n);
	/* sleep (a retry's backoff, a lock wait) */
	void (*sleep_ms)(const struct gb_ops *ops, unsigned ms);
	/* monotonic and wall clock, nanoseconds */
	uint64_t (*now_monotonic_ns)(const struct gb_ops *ops);
	uint64_t (*now_realtime_ns)(const struct gb_ops *ops);
	/* uname(2) of the running kernel */
	int (*uname)(const struct gb_ops *ops, struct utsname *ret);

	/* Bind src onto the directory dst, recursively (MS_BIND|MS_REC), then
	 * make the new mount a slave so nothing unmounted below it propagates
	 * back to src (an image's chroot must never take /dev/pts away from
	 * the host). Negative errno. */
	int (*mount_bind)(const struct gb_ops *ops, const char *src, const char *dst);
	/* Unmount dst (and what is mounted below it): umount2, and a lazy
	 * detach (MNT_DETACH) when it is busy. Negative errno. */
	int (*umount)(const struct gb_ops *ops, const char *dst);

	/* Make name in the directory dirfd the character device node spec:
	 * 1 when it is one already (numbers, permissions, owner), 0 when it was
	 * made (whatever was there, not a directory, removed first), negative
	 * errno. */
	int (*mknod)(const struct gb_ops *ops, int dirfd, const char *name, const struct gb_node_spec *spec);

	/* Write data to the attribute path below root (a sysfs file: unbind)
	 * with one write(2), opened O_WRONLY|O_APPEND (in a fixture tree every
	 * write is kept). 0, or a negative errno (-EIO on a short write). */
	int (*write_attr)(const struct gb_ops *ops, struct gb_root *root, const char *path, const char *data);
};

extern const struct gb_ops gb_ops_real;

/* A uniformly distributed integer in [0, bound) from ops->random; 0 when
 * randomness is unavailable (the caller's base delay still applies). */
uint64_t gb_ops_random_below(const struct gb_ops *ops, uint64_t bound);

/* The fake: records every call to a log file, fails on cue, and keeps the
 * fixture's world in step (module state in sys/module and proc/modules,
 * kernel log lines in dev/kmsg), so later stages read what the fake did.
 * Configured by a spec string, a comma-separated list of
 *   record=PATH             append one line per call to PATH
 *   root=DIR                the fixture tree the fake updates (else none)
 *   apt=DIR                 apt and dpkg answer from the archive in DIR and
 *                           the root's var/lib/dpkg/status (fake-apt.c)
 *   module:NAME:ERRNO       module_load(NAME) fails with -ERRNO
 *   kmsg:NAME:FILE          on that failure, append FILE's lines to dev/kmsg
 *   remove:NAME:ERRNO       module_unload(NAME) fails with -ERRNO
 *   command:PREFIX:STATUS[:FILE]
 *                           a command whose argv, joined by spaces, starts
 *                           with PREFIX exits STATUS, printing FILE's bytes
 *   creates:WORD:0:PATH     a command with WORD among its arguments creates
 *                           PATH below root= (its directories too), as the
 *                           installer it stands for would (one rule a file)
 *   installs:WORD:0:DIR     a command with WORD (or a path ending in /WORD)
 *                           among its arguments that succeeds copies the
 *                           host directory DIR's tree over root= (files,
 *                           links, modes): the packages or the runfile it
 *                           stands for, userspace and module
 *   systemctl:VERB:ERRNO    systemctl VERB fails with -ERRNO
 *   clock:NS                both clocks start at NS and advance 1 ms per read
 *   random:BYTE             random() fills with BYTE (default: real getrandom)
 *   uname:RELEASE:MACHINE
 *   mount:DST:ERRNO         mount_bind onto DST fails with -ERRNO
 *   umount:DST:ERRNO        umount of DST fails with -ERRNO
 *   mknod:PATH:ERRNO        mknod of PATH ("dev/nvidiactl") fails with -ERRNO;
 *                           else the fake makes a regular file holding
 *                           "c MAJ:MIN PERM UID:GID" (the node's stand-in)
 *   exec:NAME:ERRNO         run_exec of argv[0] NAME ("gpuboot-probe") is
 *                           refused by the kernel with ERRNO (exec_errno,
 *                           exit 127); else the program really runs (the
 *                           probe against the fake NVIDIA libraries)
 *   write:PATH:ERRNO        write_attr of PATH fails with -ERRNO; else the
 *                           write is done below the caller's root
 * The fake kernel (fake-kernel.c): inserting nvidia reads the module file
 * under lib/modules/<release>/ (the root's proc/sys/kernel/osrelease) and
 * leaves what the real module leaves: proc/driver/nvidia/version and
 * gpus/<bdf>/information, sys/module/nvidia/version, the GPUs' driver
 * links; a GPU bound to nouveau is refused, no GPU is ENODEV, a file that
 * is no module ENOEXEC. Unloading a module unbinds its functions.
 * mount_bind and umount are recorded ("mount_bind SRC DST", "umount DST")
 * and change nothing on disk; write_attr as "write PATH DATA"; run_exec
 * (a program run to measure, the probe: it changes nothing) as "exec
 * ARGV..." only where exec:NAME scripts it, so a run with no effect
 * records nothing.
 * Anything not scripted succeeds. Returns -EINVAL on a bad spec. The table
 * is freed with gb_ops_fake_free. */
int gb_ops_fake_new(const char *spec, const struct gb_ops **ret);
void gb_ops_fake_free(const struct gb_ops *ops);
