/* SPDX-License-Identifier: MIT */
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int gb_safe_atou64(const char *s, unsigned base, uint64_t *ret)
{
	const char *p = s;
	char *end = NULL;
	unsigned long long v;

	if (!s)
		return -EINVAL;
	while (isspace((unsigned char)*p))
		p++;
	if (*p == '-' || *p == '+' || *p == '\0')
		return -EINVAL;
	if (base == 16 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
		p += 2;
	if (!isxdigit((unsigned char)*p))
		return -EINVAL;
	errno = 0;
	v = strtoull(p, &end, (int)base);
	if (errno == ERANGE)
		return -ERANGE;
	if (errno != 0 || end == p)
		return -EINVAL;
	while (isspace((unsigned char)*end))
		end++;
	if (*end != '\0')
		return -EINVAL;
	*ret = (uint64_t)v;
	return 0;
}

int gb_safe_atou32(const char *s, unsigned base, uint32_t *ret)
{
	uint64_t v;
	int r = gb_safe_atou64(s, base, &v);
	if (r < 0)
		return r;
	if (v > UINT32_MAX)
		return -ERANGE;
	*ret = (uint32_t)v;
	return 0;
}

int gb_safe_atoi32(const char *s, int32_t *ret)
{
	const char *p = s;
	char *end = NULL;
	long v;

	if (!s)
		return -EINVAL;
	while (isspace((unsigned char)*p))
		p++;
	if (*p == '\0')
		return -EINVAL;
	errno = 0;
	v = strtol(p, &end, 10);
	if (errno == ERANGE || v > INT32_MAX || v < INT32_MIN)
		return -ERANGE;
	if (errno != 0 || end == p)
		return -EINVAL;
	while (isspace((unsigned char)*end))
		end++;
	if (*end != '\0')
		return -EINVAL;
	*ret = (int32_t)v;
	return 0;
}

int gb_safe_atod(const char *s, double *ret)
{
	const char *p = s;
	char *end = NULL;
	double v;

	if (!s)
		return -EINVAL;
	while (isspace((unsigned char)*p))
		p++;
	/* Decimal only: no hex floats, no inf or nan. */
	if (*p == '+' || *p == '-')
		p++;
	if (!isdigit((unsigned char)*p) && !(*p == '.' && isdigit((unsigned char)p[1])))
		return -EINVAL;
	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno == ERANGE)
		return -ERANGE;
	if (errno != 0 || end == s)
		return -EINVAL;
	while (isspace((unsigned char)*end))
		end++;
	if (*end != '\0')
		return -EINVAL;
	*ret = v;
	return 0;
}

bool gb_next_word(const char **s, const char *sep, char *buf, size_t bufsz)
{
	while (*s && **s) {
		size_t n;
		*s += strspn(*s, sep);
		n = strcspn(*s, sep);
		if (n == 0)
			break;
		*s += n;
		if (n < bufsz) {
			memcpy(buf, *s - n, n);
			buf[n] = '\0';
			return true;
		}
	}
	return false;
}

char *gb_strstrip(char *s)
{
	char *b = s, *e;

	while (isspace((unsigned char)*b))
		b++;
	e = b + strlen(b);
	while (e > b && isspace((unsigned char)e[-1]))
		e--;
	*e = '\0';
	if (b != s)
		memmove(s, b, (size_t)(e - b) + 1);
	return s;
}

const char *gb_startswith(const char *s, const char *prefix)
{
	size_t n = strlen(prefix);
	return strncmp(s, prefix, n) == 0 ? s + n : NULL;
}

const char *const gb_kmod_suffixes[] = { ".ko", ".ko.xz", ".ko.zst", ".ko.gz", NULL };

const char *gb_kmod_suffix(const char *name)
{
	size_t l = name ? strlen(name) : 0;

	for (size_t i = 0; gb_kmod_suffixes[i]; i++) {
		size_t s = strlen(gb_kmod_suffixes[i]);
		if (l > s && strcmp(name + l - s, gb_kmod_suffixes[i]) == 0)
			return name + l - s;
	}
	return NULL;
}

int gb_strscpy(char *dst, size_t dstsz, const char *src)
{
	size_t n;

	if (dstsz == 0)
		return -ENAMETOOLONG;
	n = strlen(src);
	if (n >= dstsz) {
		memcpy(dst, src, dstsz - 1);
		dst[dstsz - 1] = '\0';
		return -ENAMETOOLONG;
	}
	memcpy(dst, src, n + 1);
	return 0;
}

int gb_sysfs_attr_parse(const char *buf, size_t len, char **ret)
{
	char *v;

	/* One line: a newline is allowed only at the end. */
	while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == ' ' || buf[len - 1] == '\t'))
		len--;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)buf[i];
		if (c < 0x20 && c != '\t')
			return -EINVAL;
		if (c == 0x7f)
			return -EINVAL;
	}
	v = malloc(len + 1);
	if (!v)
		return -ENOMEM;
	memcpy(v, buf, len);
	v[len] = '\0';
	gb_strstrip(v);
	*ret = v;
	return 0;
}

int gb_version_cmp(const char *a, const char *b)
{
	while (*a || *b) {
		unsigned long long x = 0, y = 0;
		while (isdigit((unsigned char)*a))
			x = x * 10 + (unsigned long long)(*a++ - '0');
		while (isdigit((unsigned char)*b))
			y = y * 10 + (unsigned long long)(*b++ - '0');
		if (x != y)
			return x < y ? -1 : 1;
		if (*a && !isdigit((unsigned char)*a))
			a++;
		if (*b && !isdigit((unsigned char)*b))
			b++;
		if (!*a && *b)
			return -1;
		if (*a && !*b)
			return 1;
	}
	return 0;
}

int gb_date_days(const char *ymd, int64_t *ret)
{
	static const unsigned mdays[] = { 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	unsigned v[3] = { 0, 0, 0 };
	int64_t y, era, yoe, doy, doe;

	/* exactly YYYY-MM-DD: four, two and two digits */
	if (!ymd || strlen(ymd) != 10 || ymd[4] != '-' || ymd[7] != '-')
		return -EINVAL;
	for (size_t i = 0, k = 0; i < 10; i++) {
		if (i == 4 || i == 7) {
			k++;
			continue;
		}
		if (!isdigit((unsigned char)ymd[i]))
			return -EINVAL;
		v[k] = v[k] * 10 + (unsigned)(ymd[i] - '0');
	}
	if (v[1] < 1 || v[1] > 12 || v[2] < 1 || v[2] > mdays[v[1] - 1] ||
	    (v[1] == 2 && v[2] == 29 && (v[0] % 4 || (v[0] % 100 == 0 && v[0] % 400))))
		return -EINVAL;
	/* days from the civil date (the proleptic Gregorian calendar, eras of 400 years) */
	y = (int64_t)v[0] - (v[1] <= 2);
	era = y / 400;
	yoe = y - era * 400;
	doy = (153 * ((int64_t)v[1] + (v[1] > 2 ? -3 : 9)) + 2) / 5 + (int64_t)v[2] - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	*ret = era * 146097 + doe - 719468;
	return 0;
}

bool gb_version_valid(const char *s)
{
	int parts = 0, digits = 0;

	if (!s || !*s || strlen(s) > 32)
		return false;
	for (const char *p = s;; p++) {
		if (isdigit((unsigned char)*p)) {
			digits++;
		} else if (*p == '.' || *p == '\0') {
			if (digits == 0)
				return false;
			parts++;
			digits = 0;
			if (*p == '\0')
				break;
		} else {
			return false;
		}
	}
	return parts >= 2 && parts <= 3;
}

void gb_hex_encode(const void *data, size_t n, char *out, size_t outsz)
{
	static const char digits[] = "0123456789abcdef";
	const unsigned char *p = data;
	size_t i;
	if (outsz == 0)
		return;
	for (i = 0; i < n && 2 * i + 2 < outsz; i++) {
		out[2 * i] = digits[p[i] >> 4];
		out[2 * i + 1] = digits[p[i] & 15];
	}
	out[2 * i] = '\0';
}

void gb_kernel_xy(const char *release, char *out, size_t n)
{
	size_t dots = 0, i = 0;
	if (n == 0)
		return;
	for (; release[i] && i + 1 < n; i++) {
		if (release[i] == '.' && ++dots == 2)
			break;
		if (release[i] != '.' && (release[i] < '0' || release[i] > '9'))
			break;
		out[i] = release[i];
	}
	out[i] = '\0';
}
