/* SPDX-License-Identifier: MIT */
#include "deb-write.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shared/macro.h"
#include "shared/util.h"

struct membuf {
	unsigned char *p;
	size_t len, cap;
	bool oom;
};

static la_ssize_t mem_write(struct archive *a, void *arg, const void *buf, size_t n)
{
	struct membuf *m = arg;
	(void)a;
	if (m->len + n > m->cap) {
		size_t cap = (m->cap ? m->cap * 2 : 1u << 16);
		while (cap < m->len + n)
			cap *= 2;
		unsigned char *np = realloc(m->p, cap);
		if (!np) {
			m->oom = true;
			return -1;
		}
		m->p = np;
		m->cap = cap;
	}
	memcpy(m->p + m->len, buf, n);
	m->len += n;
	return (la_ssize_t)n;
}

static int entry(struct archive *a, const char *name, mode_t mode, const void *data, size_t len, time_t mtime,
                 char *err, size_t errsz)
{
	struct archive_entry *e = archive_entry_new();
	int r = 0;

	if (!e)
		return -ENOMEM;
	archive_entry_set_pathname(e, name);
	archive_entry_set_mode(e, mode);
	archive_entry_set_size(e, S_ISDIR(mode) ? 0 : (la_int64_t)len);
	archive_entry_set_uid(e, 0);
	archive_entry_set_gid(e, 0);
	archive_entry_set_uname(e, "root");
	archive_entry_set_gname(e, "root");
	archive_entry_set_mtime(e, mtime, 0);
	if (archive_write_header(a, e) != ARCHIVE_OK ||
	    (!S_ISDIR(mode) && len && archive_write_data(a, data, len) != (la_ssize_t)len)) {
		snprintf(err, errsz, "writing the package's %s: %s", name, archive_error_string(a));
		r = -EIO;
	}
	archive_entry_free(e);
	return r;
}

static bool path_ok(const char *p)
{
	if (!*p || p[0] == '/' || strlen(p) > 400 || strstr(p, "//"))
		return false;
	for (const char *s = p; *s;) {
		size_t k = strcspn(s, "/");
		if ((k == 2 && s[0] == '.' && s[1] == '.') || (k == 1 && s[0] == '.'))
			return false;
		s += k + (s[k] == '/');
	}
	for (const char *c = p; *c; c++)
		if ((unsigned char)*c <= ' ' || (unsigned char)*c >= 0x7f)
			return false;
	return true;
}

/* A GNU tar, xz-compressed, written into m. */
static int tar_open(struct membuf *m, const char *what, struct archive **ret, char *err, size_t errsz)
{
	struct archive *a = archive_write_new();

	if (!a)
		return -ENOMEM;
	/* no padding after the xz stream: the member ends where the data does */
	if (archive_write_set_format_gnutar(a) != ARCHIVE_OK || archive_write_add_filter_xz(a) != ARCHIVE_OK ||
	    archive_write_set_bytes_in_last_block(a, 1) != ARCHIVE_OK ||
	    archive_write_open2(a, m, NULL, mem_write, NULL, NULL) != ARCHIVE_OK) {
		snprintf(err, errsz, "the package's %s: %s", what, archive_error_string(a));
		archive_write_free(a);
		return -EIO;
	}
	*ret = a;
	return 0;
}

/* A tar.xz into m: the directories each file needs, once, then the file. */
static int data_tar(const struct gb_deb_spec *s, struct membuf *m, char *err, size_t errsz)
{
	struct archive *a = NULL;
	char name[512], prev[512] = "";
	int r = tar_open(m, "data.tar.xz", &a, err, errsz);

	if (r < 0)
		return r;
	r = entry(a, "./", S_IFDIR | 0755, NULL, 0, s->mtime, err, errsz);
	for (size_t i = 0; r >= 0 && i < s->n_files; i++) {
		const char *p = s->files[i].path;
		if (!path_ok(p)) {
			snprintf(err, errsz, "'%s' is not a relative path for a package", p);
			r = -EINVAL;
			break;
		}
		/* each parent directory not written yet (files come grouped by directory) */
		for (const char *sl = strchr(p, '/'); r >= 0 && sl; sl = strchr(sl + 1, '/')) {
			snprintf(name, sizeof(name), "./%.*s/", (int)(sl - p), p);
			if (strncmp(prev, name, strlen(name)) == 0)
				continue;
			r = entry(a, name, S_IFDIR | 0755, NULL, 0, s->mtime, err, errsz);
		}
		snprintf(name, sizeof(name), "./%s", p);
		if (r >= 0)
			r = entry(a, name, S_IFREG | (s->files[i].mode & 0777), s->files[i].data, s->files[i].len,
			          s->mtime, err, errsz);
		snprintf(prev, sizeof(prev), "%s", name);
	}
	if (archive_write_close(a) != ARCHIVE_OK && r >= 0) {
		snprintf(err, errsz, "the package's data.tar.xz: %s", archive_error_string(a));
		r = -EIO;
	}
	archive_write_free(a);
	return m->oom ? -ENOMEM : r;
}

static int control_tar(const struct gb_deb_spec *s, struct membuf *m, char *err, size_t errsz)
{
	struct archive *a = NULL;
	int r = tar_open(m, "control.tar.xz", &a, err, errsz);

	if (r < 0)
		return r;
	r = entry(a, "./", S_IFDIR | 0755, NULL, 0, s->mtime, err, errsz);
	if (r >= 0)
		r = entry(a, "./control", S_IFREG | 0644, s->control, strlen(s->control), s->mtime, err, errsz);
	if (r >= 0 && s->postinst)
		r = entry(a, "./postinst", S_IFREG | 0755, s->postinst, strlen(s->postinst), s->mtime, err, errsz);
	if (r >= 0 && s->postrm)
		r = entry(a, "./postrm", S_IFREG | 0755, s->postrm, strlen(s->postrm), s->mtime, err, errsz);
	if (archive_write_close(a) != ARCHIVE_OK && r >= 0) {
		snprintf(err, errsz, "the package's control.tar.xz: %s", archive_error_string(a));
		r = -EIO;
	}
	archive_write_free(a);
	return m->oom ? -ENOMEM : r;
}

int gb_deb_write(const struct gb_deb_spec *s, unsigned char **ret, size_t *ret_len, char *err, size_t errsz)
{
	struct membuf ctl = { 0 }, data = { 0 }, out = { 0 };
	struct archive *a = NULL;
	int r;

	r = control_tar(s, &ctl, err, errsz);
	if (r >= 0)
		r = data_tar(s, &data, err, errsz);
	if (r >= 0 && !(a = archive_write_new()))
		r = -ENOMEM;
	/* no block padding after the last member: apt reads zeros there as a
	 * member header ("Error reading archive member header") */
	if (r >= 0 && (archive_write_set_format_ar_bsd(a) != ARCHIVE_OK ||
	               archive_write_set_bytes_in_last_block(a, 1) != ARCHIVE_OK ||
	               archive_write_open2(a, &out, NULL, mem_write, NULL, NULL) != ARCHIVE_OK)) {
		snprintf(err, errsz, "the package's ar archive: %s", archive_error_string(a));
		r = -EIO;
	}
	if (r >= 0)
		r = entry(a, "debian-binary", S_IFREG | 0644, "2.0\n", 4, s->mtime, err, errsz);
	if (r >= 0)
		r = entry(a, "control.tar.xz", S_IFREG | 0644, ctl.p, ctl.len, s->mtime, err, errsz);
	if (r >= 0)
		r = entry(a, "data.tar.xz", S_IFREG | 0644, data.p, data.len, s->mtime, err, errsz);
	if (a && archive_write_close(a) != ARCHIVE_OK && r >= 0) {
		snprintf(err, errsz, "the package's ar archive: %s", archive_error_string(a));
		r = -EIO;
	}
	if (a)
		archive_write_free(a);
	free(ctl.p);
	free(data.p);
	if (r >= 0 && out.oom)
		r = -ENOMEM;
	if (r < 0) {
		free(out.p);
		return r;
	}
	*ret = out.p;
	*ret_len = out.len;
	return 0;
}
