/* SPDX-License-Identifier: MIT */
/* For targets whose parser reads a file, not a buffer: one scratch
 * directory per process, made once (on /dev/shm where it exists, so the
 * writes and fsyncs of each input cost no disk), and a helper that puts
 * the input in a file there. Removed at exit. */
#pragma once

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char fuzz_dir[64];

static void fuzz_dir_rm(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fuzz_dir);
	if (system(cmd) != 0)
		fprintf(stderr, "fuzz: could not remove %s\n", fuzz_dir);
}

/* The scratch directory (made on the first call); aborts when it cannot be
 * made: a target without one would test nothing. */
static const char *fuzz_scratch(void)
{
	if (fuzz_dir[0])
		return fuzz_dir;
	snprintf(fuzz_dir, sizeof(fuzz_dir), "%s/gpuboot-fuzz.XXXXXX",
	         access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
	if (!mkdtemp(fuzz_dir))
		abort();
	atexit(fuzz_dir_rm);
	return fuzz_dir;
}

/* Write data to dir/name (replacing it). */
static void fuzz_put(const char *dir, const char *name, const void *data, size_t size)
{
	char path[256];
	int fd;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || (size && write(fd, data, size) != (ssize_t)size))
		abort();
	close(fd);
}
