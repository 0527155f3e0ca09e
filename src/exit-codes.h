/* SPDX-License-Identifier: MIT */
/* The exit codes: part of the contract (docs/exit-codes.md, gpuboot(8)).
 * Only main() turns results into these. The table below is the one place
 * their names and meanings are written: --help, the status document's
 * "result", the Prometheus metrics and the docs test read it. */
#pragma once

#include <stddef.h>

enum gb_exit {
	GB_EXIT_OK = 0, /* done and verified, or the answer was printed */
	GB_EXIT_FAILED = 1, /* see the status document */
	GB_EXIT_USAGE = 2, /* usage or configuration error; nothing changed */
	GB_EXIT_REBOOT = 3, /* reboot needed; the resume unit finishes the job */
	GB_EXIT_UNSUPPORTED = 10, /* musl, CPU architecture, distro or release */
	GB_EXIT_NO_GPU = 11, /* no NVIDIA GPU found */
	GB_EXIT_UNSUPPORTED_GPU = 12, /* GPU or mix unsupported for the profile or branch */
	GB_EXIT_FETCH = 13, /* download or verification of an artifact failed */
	GB_EXIT_MODULE = 14, /* a kernel module could not be loaded */
	GB_EXIT_VERIFY = 15, /* installed, but verification failed */
	GB_EXIT_LOCKED = 16, /* another gpuboot holds the lock */
};

struct gb_exit_info {
	int code;
	const char *name; /* "USAGE": the docs' name */
	const char *result; /* "usage-error": the status document's "result" */
	const char *meaning; /* one line, for --help */
};

extern const struct gb_exit_info gb_exit_table[];
extern const size_t gb_exit_table_len;

/* The entry for code; the FAILED entry for a code not in the table. */
const struct gb_exit_info *gb_exit_info(int code);
