/* SPDX-License-Identifier: MIT */
/* Reading the kernel log around one module insert. The record format is
 * the kernel's /dev/kmsg one (Documentation/ABI/testing/dev-kmsg):
 * "PRIO,SEQ,TIMESTAMP,FLAGS[,...];MESSAGE\n", optionally followed by
 * dictionary lines that begin with a space; bytes outside printable ASCII
 * (the newlines of a multi-line message included) come escaped as \xNN.
 * One read() of the device returns one record; EPIPE means records were
 * overwritten before we read them, and the next read goes on. */
#include "kmsg.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shared/macro.h"
#include "shared/root.h"
#include "shared/util.h"

#define KMSG_HEADER_MAX 128
#define KMSG_FILE_MAX (1u << 20) /* the most of a fixture's dev/kmsg read after the mark */
#define KMSG_READS_MAX 4096 /* records read from the device per insert */

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Undo the kernel's \xNN escapes into ret->text: printable ASCII is kept,
 * a newline becomes a space (and drops the "NVRM: " that repeats after
 * it), anything else becomes '?'. Cut at GB_KMSG_TEXT_MAX. */
static void unescape(const char *s, size_t len, struct gb_kmsg_line *ret)
{
	size_t o = 0, i = 0;

	while (i < len) {
		unsigned char c = (unsigned char)s[i];
		if (c == '\\' && i + 3 < len && s[i + 1] == 'x' && hexval(s[i + 2]) >= 0 && hexval(s[i + 3]) >= 0) {
			c = (unsigned char)(hexval(s[i + 2]) * 16 + hexval(s[i + 3]));
			i += 4;
		} else
			i++;
		if (c == '\n') {
			c = ' ';
			if (len - i >= 6 && strneq(s + i, "NVRM: ", 6))
				i += 6;
		} else if (c < 0x20 || c >= 0x7f)
			c = '?';
		if (o + 1 >= sizeof(ret->text)) {
			ret->truncated = true;
			break;
		}
		if (c == ' ' && (o == 0 || ret->text[o - 1] == ' '))
			continue; /* no leading or doubled spaces from joined lines */
		ret->text[o++] = (char)c;
	}
	while (o > 0 && ret->text[o - 1] == ' ')
		o--;
	ret->text[o] = '\0';
}

int gb_kmsg_parse_record(const char *buf, size_t len, struct gb_kmsg_line *ret)
{
	const char *semi = memchr(buf, ';', len < KMSG_HEADER_MAX ? len : KMSG_HEADER_MAX);
	char hdr[KMSG_HEADER_MAX], *save = NULL, *field[4];
	uint32_t prio;
	uint64_t seq, ts;
	size_t n = 0;

	if (!semi)
		return -EINVAL;
	memcpy(hdr, buf, (size_t)(semi - buf));
	hdr[semi - buf] = '\0';
	for (char *f = strtok_r(hdr, ",", &save); f && n < ARRAY_SIZE(field); f = strtok_r(NULL, ",", &save))
		field[n++] = f;
	if (n < 4 || gb_safe_atou32(field[0], 10, &prio) < 0 || gb_safe_atou64(field[1], 10, &seq) < 0 ||
	    gb_safe_atou64(field[2], 10, &ts) < 0 || strlen(field[3]) > 2)
		return -EINVAL;
	memset(ret, 0, sizeof(*ret));
	ret->prio = (int)(prio & 7); /* the facility is in the bits above */
	ret->seq = seq;
	ret->ts_usec = ts;
	unescape(semi + 1, len - (size_t)(semi - buf) - 1, ret);
	return 0;
}

/* a and b name the same module for n bytes ('-' and '_' alike). */
static bool modname_eq(const char *a, const char *b, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char x = a[i] == '-' ? '_' : a[i], y = b[i] == '-' ? '_' : b[i];
		if (x != y || !x)
			return false;
	}
	return true;
}

bool gb_kmsg_line_relevant(const char *text, const char *module)
{
	static const char *const loader[] = {
		"NVRM",
		"nvidia", /* every NVIDIA module, and Debian's nvidia-current-open, which logs as "nvidia:" */
		"Loading of ", /* module signature checks */
		"module verification failed",
		"Lockdown:",
		"Unknown symbol",
		"disagrees about version of symbol",
		"version magic",
		"GPL-only symbol",
	};
	size_t n = module ? strlen(module) : 0;

	if (n && modname_eq(text, module, n) && (text[n] == ':' || text[n] == ' '))
		return true;
	for (size_t i = 0; i < ARRAY_SIZE(loader); i++)
		if (strstr(text, loader[i]))
			return true;
	return false;
}

static void keep(struct gb_kmsg_lines *ret, const struct gb_kmsg_line *l)
{
	if (ret->n < GB_KMSG_MAX_LINES)
		ret->line[ret->n++] = *l;
	else
		ret->dropped++;
}

/* A line without a record header: dmesg's "[    9.346415] text", or bare text. */
static void parse_plain(const char *s, size_t len, struct gb_kmsg_line *ret)
{
	memset(ret, 0, sizeof(*ret));
	ret->prio = -1;
	if (len > 0 && s[0] == '[') {
		const char *end = memchr(s, ']', len < 32 ? len : 32);
		if (end) {
			len -= (size_t)(end + 1 - s);
			s = end + 1;
		}
	}
	unescape(s, len, ret);
}

void gb_kmsg_parse_buffer(const char *buf, size_t len, const char *module, bool lenient, struct gb_kmsg_lines *ret)
{
	struct gb_kmsg_line l;
	size_t i = 0;

	while (i < len) {
		const char *s = buf + i, *nl = memchr(s, '\n', len - i);
		size_t n = nl ? (size_t)(nl - s) : len - i;
		i += n + 1;
		if (n == 0 || s[0] == ' ')
			continue; /* an empty line, or a record's dictionary line */
		if (gb_kmsg_parse_record(s, n, &l) < 0) {
			if (!lenient) {
				ret->skipped++;
				continue;
			}
			parse_plain(s, n, &l);
		}
		if (l.text[0] && gb_kmsg_line_relevant(l.text, module))
			keep(ret, &l);
	}
}

void gb_kmsg_mark(struct gb_root *root, struct gb_kmsg_mark *ret)
{
	struct stat st;
	int fd;

	*ret = (struct gb_kmsg_mark){ .fd = -1 };
	fd = gb_root_openat(root, "dev/kmsg", O_RDONLY | O_NONBLOCK | O_NOCTTY);
	if (fd < 0) {
		ret->absent = true;
		return;
	}
	if (fstat(fd, &st) < 0) {
		close(fd);
		ret->absent = true;
		return;
	}
	if (S_ISREG(st.st_mode)) {
		ret->is_file = true;
		ret->offset = st.st_size;
		close(fd);
		return;
	}
	/* The device: everything before the insert is history (an earlier boot
	 * service's try, say), never this insert's cause. */
	if (!S_ISCHR(st.st_mode) || lseek(fd, 0, SEEK_END) < 0) {
		close(fd);
		return; /* neither absent nor readable: read_since says so */
	}
	ret->fd = fd;
}

void gb_kmsg_mark_close(struct gb_kmsg_mark *mark)
{
	if (mark->fd >= 0)
		close(mark->fd);
	mark->fd = -1;
}

static int read_file_since(struct gb_root *root, off_t offset, const char *module, struct gb_kmsg_lines *ret)
{
	_cleanup_close_ int fd = -1;
	_cleanup_free_ char *buf = NULL;
	struct stat st;
	size_t len = 0;

	fd = gb_root_openat(root, "dev/kmsg", O_RDONLY | O_NONBLOCK | O_NOCTTY);
	if (fd == -ENOENT)
		return 0; /* nothing was logged */
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0)
		return negative_errno();
	if (!S_ISREG(st.st_mode))
		return -ESPIPE;
	if (st.st_size < offset)
		offset = 0; /* replaced by a shorter file: read it all */
	buf = malloc(KMSG_FILE_MAX);
	if (!buf)
		return -ENOMEM;
	while (len < KMSG_FILE_MAX) {
		ssize_t k = pread(fd, buf + len, KMSG_FILE_MAX - len, offset + (off_t)len);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return negative_errno();
		if (k == 0)
			break;
		len += (size_t)k;
	}
	gb_kmsg_parse_buffer(buf, len, module, true, ret);
	return 0;
}

static int read_device_since(int fd, const char *module, struct gb_kmsg_lines *ret)
{
	_cleanup_free_ char *buf = malloc(GB_KMSG_RECORD_MAX);
	struct gb_kmsg_line l;

	if (!buf)
		return -ENOMEM;
	for (unsigned i = 0; i < KMSG_READS_MAX; i++) {
		ssize_t k = read(fd, buf, GB_KMSG_RECORD_MAX);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EPIPE) { /* overwritten before we read it: skip */
				ret->skipped++;
				continue;
			}
			if (errno == EAGAIN)
				return 0; /* nothing more */
			return ret->n ? 0 : negative_errno();
		}
		if (k == 0)
			return 0;
		/* One record; its dictionary follows the first newline. */
		const char *nl = memchr(buf, '\n', (size_t)k);
		size_t n = nl ? (size_t)(nl - buf) : (size_t)k;
		if (gb_kmsg_parse_record(buf, n, &l) < 0) {
			ret->skipped++;
			continue;
		}
		if (l.text[0] && gb_kmsg_line_relevant(l.text, module))
			keep(ret, &l);
	}
	return 0;
}

int gb_kmsg_read_since(struct gb_root *root, struct gb_kmsg_mark *mark, const char *module, struct gb_kmsg_lines *ret)
{
	int r;

	memset(ret, 0, sizeof(*ret));
	if (mark->fd >= 0)
		r = read_device_since(mark->fd, module, ret);
	else if (mark->is_file || mark->absent)
		r = read_file_since(root, mark->is_file ? mark->offset : 0, module, ret);
	else
		r = -ESPIPE; /* dev/kmsg was there but could not be positioned */
	gb_kmsg_mark_close(mark);
	return r;
}
