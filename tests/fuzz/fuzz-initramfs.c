/* SPDX-License-Identifier: MIT */
/* libFuzzer target: an initramfs image (uncompressed cpio archives, then a
 * compressed one, read through libarchive), with small bounds so a bomb
 * stops early. The input lives in a memfd, read with pread as on disk. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "prepare/initramfs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int fd = -1;
	struct gb_initramfs_limits lim;
	struct gb_initramfs_scan s;

	if (fd < 0 && (fd = memfd_create("fuzz-initramfs", MFD_CLOEXEC)) < 0)
		abort();
	if (ftruncate(fd, 0) < 0 || (size && pwrite(fd, data, size, 0) != (ssize_t)size))
		abort();
	gb_initramfs_limits_init(&lim, NULL, 0);
	lim.max_unpacked = 4u << 20;
	lim.max_entry = 1u << 20;
	lim.max_entries = 2000;
	(void)gb_initramfs_scan_fd(fd, &lim, &s);
	(void)gb_initramfs_compression(data, size);
	return 0;
}
