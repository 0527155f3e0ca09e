/* SPDX-License-Identifier: MIT */
/* A Debian binary package written in-process with libarchive (deb(5)):
 * an ar archive (BSD member names, as dpkg-deb writes them) of
 * "debian-binary" ("2.0\n"), control.tar.xz and data.tar.xz, every member
 * owned by root. For the prebuilt module packages a mirror serves
 * (repair/modules-build.c). */
#pragma once

#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

struct gb_deb_file {
	const char *path; /* relative, no "..": "lib/modules/6.1.0-50-amd64/updates/gpuboot/nvidia-current.ko" */
	const void *data;
	size_t len;
	mode_t mode; /* 0644 */
};

struct gb_deb_spec {
	const char *control; /* DEBIAN/control's text, ending in a newline */
	const char *postinst, *postrm; /* maintainer scripts, NULL for none */
	const struct gb_deb_file *files;
	size_t n_files;
	time_t mtime; /* every member's time: the same input gives the same bytes */
};

/* The package's bytes in *ret (malloc'd). -EINVAL (a bad path), -ENOMEM,
 * -EIO (libarchive's message in err). */
int gb_deb_write(const struct gb_deb_spec *s, unsigned char **ret, size_t *ret_len, char *err, size_t errsz);
