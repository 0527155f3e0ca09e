/* SPDX-License-Identifier: MIT */
/* Reading an initramfs: does it carry nouveau, and would it load it?
 *
 * An initramfs is what the kernel's init/initramfs.c unpacks: cpio "newc"
 * archives (magic 070701 or 070702, header and name padded to 4 bytes,
 * data padded to 4 bytes, ended by a TRAILER!!! entry), any of them
 * followed by zero padding, the last one usually compressed (gzip, xz,
 * lzma, zstd, lz4, bzip2). Debian's unmkinitramfs and dracut's skipcpio
 * find the compressed part the same way: walk the uncompressed archives'
 * headers and the zero padding after them; what starts with anything else
 * is the compressed archive. libarchive reads one archive per open, so the
 * uncompressed archives are walked here and the compressed rest is opened
 * from its offset.
 *
 * Bounded: the file's size, the number of entries, every entry's declared
 * size and the bytes decompressed in all are capped (the decompressed
 * stream is counted as it is produced, so a compression bomb stops at the
 * cap), and a deadline on the operations table's clock stops a slow read.
 * Only filters that libarchive has built in are used: it never starts an
 * external decompressor. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct gb_ops;

struct gb_initramfs_limits {
	uint64_t max_size; /* the file */
	uint64_t max_unpacked; /* the decompressed bytes, all entries */
	uint64_t max_entry; /* one entry's declared size */
	unsigned max_entries;
	const struct gb_ops *ops; /* the clock; NULL: no deadline */
	uint64_t deadline_ns; /* on ops->now_monotonic_ns; 0: none */
};

/* 1 GiB file, 4 GiB decompressed, 1 GiB per entry, 500000 entries, and a
 * deadline timeout_ms from now (0: none). */
void gb_initramfs_limits_init(struct gb_initramfs_limits *l, const struct gb_ops *ops, unsigned timeout_ms);

struct gb_initramfs_scan {
	bool has_nouveau; /* a regular file nouveau.ko* */
	bool blacklisted; /* a modprobe.d file inside says "blacklist nouveau" */
	char nouveau_entry[256];
	char blacklist_entry[256];
	unsigned n_early; /* uncompressed cpio archives (microcode) */
	uint64_t main_offset; /* where the compressed archive starts; 0: none */
	char compression[16]; /* of the main archive: "none", "gzip", "xz", "zstd", "lz4", ... */
	unsigned n_entries;
	uint64_t unpacked;
	char error[200]; /* when the scan failed: what, and where */
};

/* Scan the initramfs open on fd (read with pread: the offset is not used).
 * 0, or a negative errno with ret->error saying why: -EBADMSG for a
 * malformed or truncated image or unrecognised bytes, -EFBIG when a bound
 * was reached, -ETIME past the deadline, -EPROTONOSUPPORT for a compression
 * this build cannot read. ret is filled as far as the scan went. */
int gb_initramfs_scan_fd(int fd, const struct gb_initramfs_limits *lim, struct gb_initramfs_scan *ret);

/* Does this modprobe.d text stop module from loading (a "blacklist MODULE"
 * line, or "install MODULE /bin/false" or "/bin/true")? */
bool gb_modprobe_blacklists(const char *text, size_t len, const char *module);

/* The compression named by the first bytes of a stream, or NULL. */
const char *gb_initramfs_compression(const unsigned char *p, size_t n);
