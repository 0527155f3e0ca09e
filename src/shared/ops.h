/* SPDX-License-Identifier: MIT */
/* The operations table: every effect on the machine goes through it, so
 * tests swap in a fake without root, without a GPU and without touching
 * the host. A static binary cannot be intercepted from outside; the seam
 * must be inside. */
#pragma once

#include <stdint.h>
#include <sys/utsname.h>

struct gb_ops {
	const char *name;
	/* insert a kernel module (by name, with options); negative errno */
	int (*module_insert)(const char *module, const char *options);
	/* remove a kernel module; negative errno */
	int (*module_remove)(const char *module);
	/* reboot the machine; returns only on failure */
	int (*reboot)(void);
	/* run argv[0] with argv, wait at most timeout_ms; *ret_status is the
	 * wait status. Negative errno when it could not be run. */
	int (*run_command)(char *const argv[], int timeout_ms, int *ret_status);
	/* monotonic and wall clock, nanoseconds */
	uint64_t (*now_monotonic_ns)(void);
	uint64_t (*now_realtime_ns)(void);
	/* uname(2) of the running kernel */
	int (*uname)(struct utsname *ret);
};

extern const struct gb_ops gb_ops_real;

/* The fake: records every call to a log file and fails on cue. Configured by
 * a spec string, a comma-separated list of
 *   record=PATH          append one line per call to PATH
 *   module:NAME:ERRNO    module_insert(NAME) fails with -ERRNO
 *   remove:NAME:ERRNO    module_remove(NAME) fails with -ERRNO
 *   command:ARGV0:STATUS run_command(ARGV0) exits with STATUS
 *   clock:NS             both clocks start at NS and advance 1 ms per read
 *   uname:RELEASE:MACHINE
 * Returns -EINVAL on a bad spec. */
int gb_ops_fake_setup(const char *spec, const struct gb_ops **ret);
