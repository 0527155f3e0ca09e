/* SPDX-License-Identifier: MIT */
/* Reading what apt and dpkg say: the output of apt-cache madison and
 * dpkg-query, parsed line by line with bounds (it is input like any
 * other: a mirror names the versions). */
#include <ctype.h>
#include <errno.h>
#include <string.h>

#include "pkg.h"
#include "shared/macro.h"
#include "shared/util.h"

bool gb_deb_name_valid(const char *s)
{
	size_t n = strlen(s);
	if (n < 2 || n >= GB_INSTALL_NAME || !isalnum((unsigned char)s[0]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!islower((unsigned char)s[i]) && !isdigit((unsigned char)s[i]) && !strchr("+-.", s[i]))
			return false;
	return true;
}

bool gb_deb_version_valid(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n >= GB_INSTALL_VERSION || !isdigit((unsigned char)s[0]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && !strchr(".+~:-", s[i]))
			return false;
	return true;
}

/* The upstream part: without "EPOCH:" and without "-REVISION". */
static void upstream_of(const char *v, char *out, size_t outsz)
{
	const char *colon = strchr(v, ':'), *dash;
	size_t n;
	if (colon) {
		bool digits = colon > v;
		for (const char *p = v; p < colon; p++)
			digits = digits && isdigit((unsigned char)*p);
		if (digits)
			v = colon + 1;
	}
	dash = strrchr(v, '-');
	n = dash ? (size_t)(dash - v) : strlen(v);
	if (n >= outsz)
		n = outsz - 1;
	memcpy(out, v, n);
	out[n] = '\0';
}

bool gb_deb_version_matches(const char *v, const char *wanted)
{
	char up[GB_INSTALL_VERSION];
	if (!v[0])
		return false;
	if (!wanted[0] || streq(v, wanted))
		return true;
	upstream_of(v, up, sizeof(up));
	return streq(up, wanted);
}

/* Copy the trimmed field [s, e) into out; false when it does not fit. */
static bool field_copy(const char *s, const char *e, char *out, size_t outsz)
{
	while (s < e && isspace((unsigned char)*s))
		s++;
	while (e > s && isspace((unsigned char)e[-1]))
		e--;
	if ((size_t)(e - s) >= outsz)
		return false;
	memcpy(out, s, (size_t)(e - s));
	out[e - s] = '\0';
	return true;
}

/* "nvidia-smi | 535.261.03-1 | http://deb.debian.org/debian bookworm/non-free amd64 Packages", or
 * "cuda-drivers | 580.95.05-1 | https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64  Packages" */
static bool madison_line(const char *line, size_t n, const char *name, struct gb_apt_version *v)
{
	const char *end = line + n, *b1 = memchr(line, '|', n), *b2;
	char pkg[GB_INSTALL_NAME], src[512], *tok[5], *save = NULL;
	size_t nt = 0;

	if (!b1 || !(b2 = memchr(b1 + 1, '|', (size_t)(end - b1 - 1))))
		return false;
	if (!field_copy(line, b1, pkg, sizeof(pkg)) || !streq(pkg, name) ||
	    !field_copy(b1 + 1, b2, v->version, sizeof(v->version)) || !gb_deb_version_valid(v->version) ||
	    !field_copy(b2 + 1, end, src, sizeof(src)))
		return false;
	for (char *t = strtok_r(src, " \t", &save); t && nt < ARRAY_SIZE(tok); t = strtok_r(NULL, " \t", &save))
		tok[nt++] = t;
	/* Binary packages only: a deb-src entry ends in "Sources". A flat
	 * repository (NVIDIA's: "Suites: /") has no suite: "URI  Packages". */
	if (nt == 2 && streq(tok[1], "Packages"))
		return gb_strscpy(v->suite, sizeof(v->suite), "/") == 0;
	if (nt < 4 || !streq(tok[nt - 1], "Packages"))
		return false;
	return gb_strscpy(v->suite, sizeof(v->suite), tok[1]) == 0;
}

int gb_apt_madison_parse(const char *out, const char *name, struct gb_apt_version *ret, size_t max)
{
	size_t n = 0;
	for (const char *line = out; *line && n < max;) {
		size_t k = strcspn(line, "\n");
		struct gb_apt_version v = { 0 };
		if (k < 1024 && madison_line(line, k, name, &v)) {
			bool dup = false;
			for (size_t i = 0; i < n; i++)
				dup = dup || streq(ret[i].version, v.version);
			if (!dup)
				ret[n++] = v;
		}
		line += k + (line[k] ? 1 : 0);
	}
	return (int)n;
}

/* "nvidia-smi\t535.261.03-1\thold ok installed" */
int gb_dpkg_query_parse(const char *out, const char *name, char ret_version[GB_INSTALL_VERSION], bool *ret_held)
{
	ret_version[0] = '\0';
	*ret_held = false;
	for (const char *line = out; *line;) {
		size_t k = strcspn(line, "\n");
		const char *t1 = memchr(line, '\t', k), *t2;
		char pkg[GB_INSTALL_NAME], ver[GB_INSTALL_VERSION], status[64];
		if (t1 && (t2 = memchr(t1 + 1, '\t', k - (size_t)(t1 + 1 - line))) &&
		    field_copy(line, t1, pkg, sizeof(pkg)) && streq(pkg, name) &&
		    field_copy(t1 + 1, t2, ver, sizeof(ver)) && field_copy(t2 + 1, line + k, status, sizeof(status))) {
			/* Status: want ok state; only "installed" counts. */
			const char *state = strrchr(status, ' ');
			if (state && streq(state + 1, "installed")) {
				if (!gb_deb_version_valid(ver))
					return -EINVAL;
				memcpy(ret_version, ver, sizeof(ver));
			}
			*ret_held = gb_startswith(status, "hold ") != NULL;
			return 0;
		}
		line += k + (line[k] ? 1 : 0);
	}
	return 0;
}
