/* SPDX-License-Identifier: MIT */
#include "unpack.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shared/log.h"
#include "shared/macro.h"
#include "shared/util.h"

void gb_unpack_opts_default(struct gb_unpack_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->max_bytes = 16ull << 30;
	o->max_entries = 200000;
}

#define MAKESELF_HEADER_MAX (64 * 1024)

int gb_makeself_offset(const char *file, unsigned long long *ret, char *err, size_t errsz)
{
	char buf[MAKESELF_HEADER_MAX + 1];
	const char *p;
	uint32_t lines = 0;
	ssize_t n;
	int fd = open(file, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		snprintf(err, errsz, "%s: %s", file, strerror(errno));
		return negative_errno();
	}
	n = read(fd, buf, MAKESELF_HEADER_MAX);
	close(fd);
	if (n <= 0) {
		snprintf(err, errsz, "%s: empty", file);
		return -EBADMSG;
	}
	buf[n] = '\0';
	if (strncmp(buf, "#!/bin/sh", 9) != 0) {
		snprintf(err, errsz, "%s: not a makeself archive (no #!/bin/sh header)", file);
		return -EBADMSG;
	}
	/* NVIDIA's header: skip=N (the line after which the payload starts), or
	 * makeself 2.x: offset=`head -n N "$0" | wc -c | tr -d " "`. */
	bool tail_form = false; /* skip=N: `tail -n +N`, the payload starts on line N */
	if ((p = strstr(buf, "\nskip="))) {
		p += 6;
		tail_form = true;
	} else if ((p = strstr(buf, "offset=`head -n "))) {
		p += 16;
	}
	if (!p) {
		snprintf(err, errsz, "%s: makeself header names no payload offset (skip= or offset=`head -n N`)", file);
		return -EBADMSG;
	}
	{
		char num[12];
		size_t k = strspn(p, "0123456789");
		if (k == 0 || k >= sizeof(num)) {
			snprintf(err, errsz, "%s: unreadable payload offset in the makeself header", file);
			return -EBADMSG;
		}
		memcpy(num, p, k);
		num[k] = '\0';
		if (gb_safe_atou32(num, 10, &lines) < 0 || lines == 0 || lines > 100000) {
			snprintf(err, errsz, "%s: payload offset %s out of range", file, num);
			return -EBADMSG;
		}
		if (tail_form)
			lines--;
	}
	/* The payload begins after that many lines of the header. */
	{
		unsigned long long off = 0;
		uint32_t seen = 0;
		if (lines == 0) {
			*ret = 0;
			return 0;
		}
		for (ssize_t i = 0; i < n && seen < lines; i++)
			if (buf[i] == '\n') {
				seen++;
				off = (unsigned long long)i + 1;
			}
		if (seen < lines) {
			snprintf(err, errsz, "%s: the header is shorter than its %u-line offset", file, lines);
			return -EBADMSG;
		}
		*ret = off;
	}
	return 0;
}

static int rm_rf(const char *path)
{
	char cmd_path[PATH_MAX];
	struct stat st;
	if (lstat(path, &st) < 0)
		return 0;
	if (!S_ISDIR(st.st_mode))
		return unlink(path) < 0 ? negative_errno() : 0;
	{
		DIR *d = opendir(path);
		struct dirent *e;
		if (!d)
			return negative_errno();
		while ((e = readdir(d))) {
			if (streq(e->d_name, ".") || streq(e->d_name, ".."))
				continue;
			snprintf(cmd_path, sizeof(cmd_path), "%s/%s", path, e->d_name);
			rm_rf(cmd_path);
		}
		closedir(d);
	}
	return rmdir(path) < 0 ? negative_errno() : 0;
}

static bool path_ok(const char *p)
{
	/* Relative, no "..", no empty names: checked here as well as by libarchive. */
	if (!p || !*p || p[0] == '/')
		return false;
	for (const char *s = p; *s;) {
		const char *e = strchr(s, '/');
		size_t n = e ? (size_t)(e - s) : strlen(s);
		if (n == 2 && s[0] == '.' && s[1] == '.')
			return false;
		s += n;
		while (*s == '/')
			s++;
	}
	return true;
}

int gb_unpack(const char *file, const char *dest, const struct gb_unpack_opts *o, char *err, size_t errsz)
{
	struct archive *a = NULL, *w = NULL;
	struct archive_entry *e;
	char staging[PATH_MAX], old[PATH_MAX];
	unsigned long long total = 0, entries = 0;
	int fd = -1, cwd = -1, r = 0;
	const int flags = ARCHIVE_EXTRACT_SECURE_SYMLINKS | ARCHIVE_EXTRACT_SECURE_NODOTDOT |
	                  ARCHIVE_EXTRACT_SECURE_NOABSOLUTEPATHS | ARCHIVE_EXTRACT_PERM | ARCHIVE_EXTRACT_TIME;

	if (snprintf(staging, sizeof(staging), "%s.staging.XXXXXX", dest) >= (int)sizeof(staging) ||
	    !mkdtemp(staging)) {
		snprintf(err, errsz, "cannot create a staging directory next to %s: %s", dest, strerror(errno));
		return -EIO;
	}
	fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || (o->offset && lseek(fd, (off_t)o->offset, SEEK_SET) < 0)) {
		snprintf(err, errsz, "%s: %s", file, strerror(errno));
		r = -EIO;
		goto out;
	}
	a = archive_read_new();
	w = archive_write_disk_new();
	if (!a || !w) {
		r = -ENOMEM;
		goto out;
	}
	archive_read_support_filter_gzip(a);
	archive_read_support_filter_xz(a);
	archive_read_support_filter_zstd(a);
	archive_read_support_format_tar(a);
	/* Entries are written relative to the staging directory, so libarchive's
	 * refusal of absolute paths and ".." holds for every name. */
	cwd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cwd < 0 || chdir(staging) < 0) {
		snprintf(err, errsz, "cannot enter %s: %s", staging, strerror(errno));
		r = -EIO;
		goto out;
	}
	archive_write_disk_set_options(w, flags);
	archive_write_disk_set_standard_lookup(w);
	if (archive_read_open_fd(a, fd, 1 << 16) != ARCHIVE_OK) {
		snprintf(err, errsz, "%s: not a gzip/xz/zstd tar archive: %s", file, archive_error_string(a));
		r = -EBADMSG;
		goto out;
	}
	for (;;) {
		const char *name, *link;
		mode_t type, mode;
		int rr = archive_read_next_header(a, &e);
		if (rr == ARCHIVE_EOF)
			break;
		if (rr != ARCHIVE_OK) {
			snprintf(err, errsz, "%s: corrupt archive: %s", file, archive_error_string(a));
			r = -EBADMSG;
			goto out;
		}
		name = archive_entry_pathname(e);
		type = archive_entry_filetype(e);
		mode = archive_entry_perm(e);
		if (++entries > o->max_entries) {
			snprintf(err, errsz, "%s: more than %llu entries", file, o->max_entries);
			r = -EFBIG;
			goto out;
		}
		if (!path_ok(name)) {
			snprintf(err, errsz, "%s: entry '%s' is absolute or climbs out with '..': refused", file,
			         name ? name : "");
			r = -EPERM;
			goto out;
		}
		link = archive_entry_hardlink(e);
		if (link && !path_ok(link)) {
			snprintf(err, errsz, "%s: hard link '%s' -> '%s' points outside the tree: refused", file, name,
			         link);
			r = -EPERM;
			goto out;
		}
		if (!link && type != AE_IFREG && type != AE_IFDIR && type != AE_IFLNK) {
			snprintf(err, errsz, "%s: entry '%s' is a device, FIFO or socket: refused", file, name);
			r = -EPERM;
			goto out;
		}
		if ((mode & 06000) && !o->allow_setid) {
			/* setuid/setgid bits only where the caller allows them. */
			archive_entry_set_perm(e, mode & ~(mode_t)06000);
		}
		if (type == AE_IFLNK) {
			link = archive_entry_symlink(e);
			if (!link || link[0] == '/' || !path_ok(link)) {
				snprintf(err, errsz, "%s: symlink '%s' -> '%s' points outside the tree: refused", file,
				         name, link ? link : "");
				r = -EPERM;
				goto out;
			}
		}
		total += (unsigned long long)(archive_entry_size(e) > 0 ? archive_entry_size(e) : 0);
		if (total > o->max_bytes) {
			snprintf(err, errsz, "%s: unpacks to more than %llu bytes (a decompression bomb?): refused",
			         file, o->max_bytes);
			r = -EFBIG;
			goto out;
		}
		if (archive_write_header(w, e) != ARCHIVE_OK) {
			snprintf(err, errsz, "%s: cannot write '%s': %s", file, name, archive_error_string(w));
			r = -EPERM;
			goto out;
		}
		if (type == AE_IFREG && archive_entry_size(e) > 0) {
			const void *buf;
			size_t len;
			la_int64_t off;
			unsigned long long written = 0;
			while ((rr = archive_read_data_block(a, &buf, &len, &off)) == ARCHIVE_OK) {
				written += len;
				if (written > (unsigned long long)archive_entry_size(e)) {
					snprintf(err, errsz, "%s: '%s' holds more data than its header says", file,
					         name);
					r = -EBADMSG;
					goto out;
				}
				if (archive_write_data_block(w, buf, len, off) != ARCHIVE_OK) {
					snprintf(err, errsz, "%s: cannot write '%s': %s", file, name,
					         archive_error_string(w));
					r = -EIO;
					goto out;
				}
			}
			if (rr != ARCHIVE_EOF) {
				snprintf(err, errsz, "%s: corrupt data in '%s': %s", file, name,
				         archive_error_string(a));
				r = -EBADMSG;
				goto out;
			}
		}
		if (archive_write_finish_entry(w) != ARCHIVE_OK) {
			snprintf(err, errsz, "%s: cannot finish '%s': %s", file, name, archive_error_string(w));
			r = -EIO;
			goto out;
		}
	}
	if (archive_write_close(w) != ARCHIVE_OK) {
		snprintf(err, errsz, "%s: %s", file, archive_error_string(w));
		r = -EIO;
		goto out;
	}
	if (fchdir(cwd) < 0) {
		r = negative_errno();
		goto out;
	}
	close(cwd);
	cwd = -1;
	/* Complete: swap it into place. */
	snprintf(old, sizeof(old), "%s.old.%ld", dest, (long)getpid());
	if (rename(dest, old) < 0 && errno != ENOENT) {
		snprintf(err, errsz, "cannot move the old %s aside: %s", dest, strerror(errno));
		r = -EIO;
		goto out;
	}
	if (rename(staging, dest) < 0) {
		snprintf(err, errsz, "cannot move the unpacked tree to %s: %s", dest, strerror(errno));
		rename(old, dest);
		r = -EIO;
		goto out;
	}
	staging[0] = '\0';
	rm_rf(old);
out:
	if (cwd >= 0) {
		if (fchdir(cwd) < 0)
			gb_log_warning("Failed to return to the working directory after unpacking, ignoring");
		close(cwd);
	}
	if (a)
		archive_read_free(a);
	if (w)
		archive_write_free(w);
	if (fd >= 0)
		close(fd);
	if (staging[0])
		rm_rf(staging);
	return r;
}
