/* SPDX-License-Identifier: MIT */
/* Bounded parsers and string helpers. Every byte they see is input. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Parse an unsigned decimal (or, with base 16, hex with optional 0x) number
 * that fills the whole string, after trimming surrounding whitespace.
 * Returns 0 or -EINVAL/-ERANGE; *ret untouched on failure. */
int gb_safe_atou64(const char *s, unsigned base, uint64_t *ret);
int gb_safe_atou32(const char *s, unsigned base, uint32_t *ret);
int gb_safe_atoi32(const char *s, int32_t *ret);
/* A decimal floating-point number ("12", "-0.5", "1e3") filling the whole
 * string after trimming whitespace; no hex floats, inf or nan. -EINVAL or
 * -ERANGE (overflow or underflow); *ret untouched on failure. */
int gb_safe_atod(const char *s, double *ret);

/* Strip leading and trailing whitespace in place; returns s. */
char *gb_strstrip(char *s);
/* The next word of *s (words separated by any byte of sep) copied into
 * buf, *s moved past it; false at the end. A word longer than buf holds is
 * skipped, never cut. */
bool gb_next_word(const char **s, const char *sep, char *buf, size_t bufsz);

/* Does s start with prefix? Returns the rest or NULL. */
const char *gb_startswith(const char *s, const char *prefix);

/* Every suffix a kernel module's file can have (".ko", ".ko.xz", ".ko.zst",
 * ".ko.gz": kmod reads each), uncompressed first; NULL-terminated. */
extern const char *const gb_kmod_suffixes[];
/* The suffix of a module file's name ("nvidia.ko.xz": ".ko.xz"), NULL when
 * it has none of them. */
const char *gb_kmod_suffix(const char *name);

/* Lowercase hex of n bytes into out (2n+1 bytes at most outsz; cut to fit,
 * always NUL-terminated). */
void gb_hex_encode(const void *data, size_t n, char *out, size_t outsz);

/* Copy with truncation; always NUL-terminates; returns -ENAMETOOLONG when cut. */
int gb_strscpy(char *dst, size_t dstsz, const char *src);

/* Parse a sysfs attribute: one line, optionally newline-terminated, printable.
 * Copies the trimmed value into ret (malloc'd). -EINVAL on control bytes. */
int gb_sysfs_attr_parse(const char *buf, size_t len, char **ret);

/* Compare two dotted version strings numerically ("580.65.06" < "580.159.04"). */
int gb_version_cmp(const char *a, const char *b);

/* Days since 1970-01-01 of a date "YYYY-MM-DD" (the catalog's, the plan's
 * today): -EINVAL when it is not one; *ret untouched on failure. */
int gb_date_days(const char *ymd, int64_t *ret);

/* True when s is a plausible NVIDIA driver version (digits and dots, 2-3 parts). */
bool gb_version_valid(const char *s);
/* "6.12" of a kernel release or version ("6.12.48+deb12-amd64", "6.12.48-1~bpo12+1"): the
 * leading digits up to the second dot; "" when it starts with no digit. */
void gb_kernel_xy(const char *release, char *out, size_t n);
