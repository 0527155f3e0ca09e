/* SPDX-License-Identifier: MIT */
/* The kernel log lines one module insert produced: /dev/kmsg under the
 * root, positioned at its end before the insert and read after it. Every
 * byte is input: records are parsed defensively, bounded, and only lines
 * plausibly from the insert are kept (the module's own, NVRM:, the module
 * loader's, Lockdown:). On a real /dev/kmsg a record overwritten while we
 * read (EPIPE) is skipped; a fixture tree's dev/kmsg is a regular file
 * whose size is remembered instead. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct gb_root;

#define GB_KMSG_TEXT_MAX 512 /* a longer message is cut and marked truncated */
#define GB_KMSG_MAX_LINES 24 /* lines kept per insert; more are counted as dropped */
#define GB_KMSG_RECORD_MAX 8192 /* one /dev/kmsg read; the kernel's records are shorter */

struct gb_kmsg_line {
	int prio; /* syslog level 0-7, -1 when the line had no record header */
	uint64_t seq;
	uint64_t ts_usec;
	bool truncated;
	char text[GB_KMSG_TEXT_MAX]; /* unescaped; a multi-line record is joined with spaces */
};

struct gb_kmsg_lines {
	struct gb_kmsg_line line[GB_KMSG_MAX_LINES];
	size_t n;
	size_t dropped; /* relevant lines past GB_KMSG_MAX_LINES */
	size_t skipped; /* records that did not parse, or were overwritten before we read them */
};

/* A position in the kernel log, taken before an insert. */
struct gb_kmsg_mark {
	bool is_file; /* a regular file (a fixture), read from offset */
	bool absent; /* no dev/kmsg under the root when the mark was taken */
	int fd; /* the real /dev/kmsg, kept open at its end; -1 otherwise */
	off_t offset; /* the regular file's size at the mark */
};

/* Parse one /dev/kmsg record, "PRIO,SEQ,TIMESTAMP,FLAGS[,...];MESSAGE",
 * of len bytes (no trailing newline needed). \xNN escapes are undone; the
 * newlines of a multi-line message become spaces and a repeated "NVRM: "
 * prefix after one is dropped, so NVIDIA's multi-line messages read as one
 * sentence. -EINVAL when the header is not a record header. */
int gb_kmsg_parse_record(const char *buf, size_t len, struct gb_kmsg_line *ret);

/* Is this line plausibly from inserting module (a kernel module name,
 * '-' and '_' alike)? */
bool gb_kmsg_line_relevant(const char *text, const char *module);

/* Parse a whole buffer of records, one a line (a record's dictionary
 * lines, which begin with a space, are skipped), keeping the relevant ones
 * in ret (appended). With lenient, a line without a header (a fixture
 * written by hand, or dmesg's "[ ts] text") is kept as text. */
void gb_kmsg_parse_buffer(const char *buf, size_t len, const char *module, bool lenient, struct gb_kmsg_lines *ret);

/* Take the mark: open dev/kmsg under the root non-blocking and seek to its
 * end (or remember the regular file's size). Never fails: a root without
 * dev/kmsg gives an "absent" mark, read later from its start. */
void gb_kmsg_mark(struct gb_root *root, struct gb_kmsg_mark *ret);
/* Read what came after the mark into ret (relevant lines only), then
 * close the mark. Returns 0, or a negative errno when nothing could be
 * read (ret is then empty; the caller classifies from the errno alone). */
int gb_kmsg_read_since(struct gb_root *root, struct gb_kmsg_mark *mark, const char *module, struct gb_kmsg_lines *ret);
void gb_kmsg_mark_close(struct gb_kmsg_mark *mark);
