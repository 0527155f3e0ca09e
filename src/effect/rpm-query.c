/* SPDX-License-Identifier: MIT */
/* What rpm, dnf and zypper print and keep, read: rpm's version
 * comparison, `rpm -q --qf` lines, `dnf list` columns (wrapped or not),
 * zypper's not-found messages, the imported gpg-pubkey entries, dnf's
 * versionlock.list and module state files, zypp's locks file. Pure
 * functions over bytes that came from the machine: every field is bounded
 * and checked before it is used in an argv. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "pkg.h"
#include "context.h"
#include "shared/macro.h"
#include "shared/util.h"

static bool is_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

bool gb_rpm_name_valid(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	if (n == 0 || n >= GB_INSTALL_NAME || !is_alnum(s[0]))
		return false;
	for (const char *p = s; *p; p++)
		if (!is_alnum(*p) && !strchr("._+-", *p))
			return false;
	return true;
}

/* [epoch:]version[-release]: the epoch digits, the rest rpm's version
 * bytes (letters, digits, . _ + ~ ^), one '-' at most after the epoch. */
bool gb_rpm_evr_valid(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	const char *v = s, *c;
	unsigned dashes = 0;
	if (n == 0 || n >= GB_INSTALL_VERSION)
		return false;
	if ((c = strchr(s, ':'))) {
		if (c == s || c - s > 9)
			return false;
		for (const char *p = s; p < c; p++)
			if (!is_digit(*p))
				return false;
		v = c + 1;
	}
	if (!is_alnum(v[0]))
		return false;
	for (const char *p = v; *p; p++) {
		if (*p == '-')
			dashes++;
		else if (!is_alnum(*p) && !strchr("._+~^", *p))
			return false;
	}
	return dashes <= 1 && v[strlen(v) - 1] != '-';
}

/* Split a valid evr: the epoch (0 when none), version and release ("" when none). */
static void evr_split(const char *evr, unsigned *epoch, char v[GB_INSTALL_VERSION], char r[GB_INSTALL_VERSION])
{
	const char *c = strchr(evr, ':'), *d;
	uint32_t e = 0;
	*epoch = 0;
	if (c) {
		char num[12] = "";
		memcpy(num, evr, (size_t)(c - evr) < sizeof(num) ? (size_t)(c - evr) : sizeof(num) - 1);
		if (gb_safe_atou32(num, 10, &e) == 0)
			*epoch = e;
		evr = c + 1;
	}
	gb_strscpy(v, GB_INSTALL_VERSION, evr);
	r[0] = '\0';
	if ((d = strrchr(v, '-'))) {
		gb_strscpy(r, GB_INSTALL_VERSION, d + 1);
		v[d - v] = '\0';
	}
}

int gb_rpm_evr_cmp(const char *a, const char *b)
{
	char va[GB_INSTALL_VERSION], ra[GB_INSTALL_VERSION], vb[GB_INSTALL_VERSION], rb[GB_INSTALL_VERSION];
	unsigned ea, eb;
	int c;
	evr_split(a, &ea, va, ra);
	evr_split(b, &eb, vb, rb);
	if (ea != eb)
		return ea < eb ? -1 : 1;
	c = gb_rpmvercmp(va, vb);
	if (c || !ra[0] || !rb[0])
		return c;
	return gb_rpmvercmp(ra, rb);
}

bool gb_rpm_version_matches(const char *evr, const char *wanted)
{
	char v[GB_INSTALL_VERSION], r[GB_INSTALL_VERSION], wv[GB_INSTALL_VERSION], wr[GB_INSTALL_VERSION];
	unsigned e, we;
	if (!evr || !gb_rpm_evr_valid(evr))
		return false;
	if (!wanted || !wanted[0])
		return true;
	if (!gb_rpm_evr_valid(wanted))
		return false;
	evr_split(evr, &e, v, r);
	evr_split(wanted, &we, wv, wr);
	if (strchr(wanted, ':') && e != we)
		return false;
	return streq(v, wv) && (!wr[0] || streq(r, wr));
}

/* The next line of *p (NUL-terminated, without its '\n') into buf;
 * false at the end. A line longer than buf is cut (and will not parse). */
static bool next_line(const char **p, char *buf, size_t bufsz)
{
	const char *s = *p, *e;
	size_t n;
	if (!*s)
		return false;
	e = strchr(s, '\n');
	n = e ? (size_t)(e - s) : strlen(s);
	memcpy(buf, s, n < bufsz ? n : bufsz - 1);
	buf[n < bufsz ? n : bufsz - 1] = '\0';
	*p = e ? e + 1 : s + n;
	return true;
}

static bool arch_valid(const char *s, size_t n)
{
	if (n == 0 || n >= sizeof(((struct gb_rpm_pkg *)0)->arch))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!is_alnum(s[i]) && s[i] != '_')
			return false;
	return true;
}

int gb_rpm_qf_parse(const char *out, struct gb_rpm_pkg *ret, size_t max)
{
	char line[512];
	size_t n = 0;

	for (const char *p = out; next_line(&p, line, sizeof(line));) {
		char *name = line, *evr, *arch;
		if (!strchr(line, '\t'))
			continue; /* "package x is not installed", warnings */
		evr = strchr(name, '\t');
		*evr++ = '\0';
		arch = strchr(evr, '\t');
		if (!arch)
			return -EINVAL;
		*arch++ = '\0';
		if (!gb_rpm_name_valid(name) || !gb_rpm_evr_valid(evr) || !arch_valid(arch, strlen(arch)))
			return -EINVAL;
		if (n >= max)
			return -E2BIG;
		ret[n] = (struct gb_rpm_pkg){ 0 };
		gb_strscpy(ret[n].name, sizeof(ret[n].name), name);
		gb_strscpy(ret[n].evr, sizeof(ret[n].evr), evr);
		gb_strscpy(ret[n].arch, sizeof(ret[n].arch), arch);
		n++;
	}
	return (int)n;
}

const struct gb_rpm_pkg *gb_rpm_pkg_find(const struct gb_rpm_pkg *pkgs, size_t n, const char *name, const char *wanted)
{
	const struct gb_rpm_pkg *any = NULL;
	for (size_t i = 0; i < n; i++) {
		if (!streq(pkgs[i].name, name))
			continue;
		if (gb_rpm_version_matches(pkgs[i].evr, wanted))
			return &pkgs[i];
		if (!any)
			any = &pkgs[i];
	}
	return any;
}

/* dnf list prints NAME.ARCH, EVR and REPO as columns, and moves the EVR to
 * the next line when NAME.ARCH is wide: read it as a stream of
 * whitespace-separated words. */
static const char *next_word(const char **p, size_t *n)
{
	const char *s = *p;
	while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
		s++;
	*n = strcspn(s, " \t\n\r");
	*p = s + *n;
	return *n ? s : NULL;
}

static bool repo_word_valid(const char *s, size_t n)
{
	if (n == 0 || n >= sizeof(((struct gb_rpm_pkg *)0)->repo))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!is_alnum(s[i]) && !strchr("._:@+-", s[i]))
			return false;
	return true;
}

int gb_dnf_list_parse(const char *out, const char *name, struct gb_rpm_pkg *ret, size_t max)
{
	size_t nl = strlen(name), n = 0, wn;
	const char *p = out, *w;

	if (!gb_rpm_name_valid(name))
		return -EINVAL;
	while ((w = next_word(&p, &wn))) {
		const char *q = p, *v, *repo;
		size_t vn, rn;
		char evr[GB_INSTALL_VERSION];
		if (wn <= nl + 1 || !strneq(w, name, nl) || w[nl] != '.' || !arch_valid(w + nl + 1, wn - nl - 1))
			continue;
		v = next_word(&q, &vn);
		repo = v ? next_word(&q, &rn) : NULL;
		if (!repo || vn >= sizeof(evr) || !repo_word_valid(repo, rn))
			continue;
		memcpy(evr, v, vn);
		evr[vn] = '\0';
		if (!gb_rpm_evr_valid(evr))
			continue;
		if (n >= max)
			return -E2BIG;
		ret[n] = (struct gb_rpm_pkg){ 0 };
		gb_strscpy(ret[n].name, sizeof(ret[n].name), name);
		gb_strscpy(ret[n].evr, sizeof(ret[n].evr), evr);
		memcpy(ret[n].arch, w + nl + 1, wn - nl - 1);
		memcpy(ret[n].repo, repo, rn);
		n++;
		p = q;
	}
	return (int)n;
}

/* zypper's words for a request it cannot satisfy: "Package 'NAME' not
 * found." and "No provider of 'NAME = VERSION' found." */
bool gb_zypper_missing(const char *out, const char *name)
{
	static const char *const prefixes[] = { "Package '", "No provider of '" };
	size_t nl = strlen(name);
	char line[512];

	for (const char *p = out; next_line(&p, line, sizeof(line));)
		for (size_t i = 0; i < ARRAY_SIZE(prefixes); i++) {
			const char *s = strstr(line, prefixes[i]);
			if (!s || !strstr(line, "found"))
				continue;
			s += strlen(prefixes[i]);
			if (strneq(s, name, nl) && strchr("' =<>", s[nl]) && s[nl])
				return true;
		}
	return false;
}

/* `rpm -q gpg-pubkey --qf '%{VERSION}-%{RELEASE}\n'`: rpm names an
 * imported key by its key ID's last 8 hex digits (rpm 6: the whole
 * fingerprint); fpr is the key's 40. */
bool gb_rpm_pubkey_present(const char *out, const char *fpr)
{
	char line[256];
	size_t nf = fpr ? strlen(fpr) : 0;

	if (nf != 40)
		return false;
	for (const char *p = out; next_line(&p, line, sizeof(line));) {
		size_t n = strcspn(line, "-");
		if (n == 8 || n == 16 || n == 40) {
			if (line[n] == '-' && strncasecmp(line, fpr + 40 - n, n) == 0)
				return true;
		}
	}
	return false;
}

/* dnf 4's versionlock.list holds one NAME-[EPOCH:]VERSION-RELEASE.* per
 * lock (comments '#', excludes '!'); epoch 0 may be written or not. */
bool gb_dnf_versionlock_has(const char *text, const char *name, const char *evr)
{
	char line[512], v[GB_INSTALL_VERSION], r[GB_INSTALL_VERSION],
	    with[GB_INSTALL_NAME + 2 * GB_INSTALL_VERSION + 16], without[sizeof(with)];
	unsigned e;

	if (!text || !gb_rpm_name_valid(name) || !gb_rpm_evr_valid(evr))
		return false;
	evr_split(evr, &e, v, r);
	snprintf(with, sizeof(with), "%s-%u:%s-%s.*", name, e, v, r);
	snprintf(without, sizeof(without), "%s-%s-%s.*", name, v, r);
	for (const char *p = text; next_line(&p, line, sizeof(line));) {
		gb_strstrip(line);
		if (streq(line, with) || (e == 0 && streq(line, without)))
			return true;
	}
	return false;
}

/* Any lock line for name at all (to lift before changing the package). */
bool gb_dnf_versionlock_names(const char *text, const char *name)
{
	char line[512];
	size_t nl = strlen(name);
	if (!text)
		return false;
	for (const char *p = text; next_line(&p, line, sizeof(line));) {
		gb_strstrip(line);
		/* NAME-[E:]V-R.*: NAME, a dash, then a digit (a version starts with one) */
		if (strneq(line, name, nl) && line[nl] == '-' && is_digit(line[nl + 1]))
			return true;
	}
	return false;
}

/* zypp's locks file: blocks of "attribute: value" separated by empty
 * lines; a lock of name is a block with solvable_name NAME and no
 * version restriction (what `zypper addlock NAME` writes). */
bool gb_zypp_locks_has(const char *text, const char *name)
{
	char line[512];
	bool named = false, versioned = false;
	const char *p = text;

	if (!text)
		return false;
	for (;;) {
		bool more = next_line(&p, line, sizeof(line));
		const char *v;
		gb_strstrip(line);
		if (!more || !line[0]) {
			if (named && !versioned)
				return true;
			named = versioned = false;
			if (!more)
				return false;
			continue;
		}
		if ((v = gb_startswith(line, "solvable_name:")))
			named = streq(v + strspn(v, " \t"), name);
		else if (gb_startswith(line, "version:"))
			versioned = true;
	}
}

/* /etc/dnf/modules.d/MODULE.module: [MODULE] with stream= and state=. */
int gb_dnf_module_parse(const char *text, const char *module, char ret_stream[64], bool *ret_enabled)
{
	char line[512], head[80];
	bool in = false;

	ret_stream[0] = '\0';
	*ret_enabled = false;
	snprintf(head, sizeof(head), "[%s]", module);
	for (const char *p = text; next_line(&p, line, sizeof(line));) {
		const char *v;
		gb_strstrip(line);
		if (line[0] == '[')
			in = streq(line, head);
		else if (in && (v = gb_startswith(line, "stream=")))
			gb_strscpy(ret_stream, 64, v);
		else if (in && (v = gb_startswith(line, "state=")))
			*ret_enabled = streq(v, "enabled");
	}
	for (const char *s = ret_stream; *s; s++)
		if (!is_alnum(*s) && !strchr("._+-", *s))
			return ret_stream[0] = '\0', -EINVAL;
	return 0;
}

int gb_rpmvercmp(const char *a, const char *b)
{
	while (*a || *b) {
		while (*a && !isalnum((unsigned char)*a))
			a++;
		while (*b && !isalnum((unsigned char)*b))
			b++;
		if (!*a || !*b)
			break;
		bool num = isdigit((unsigned char)*a);
		const char *sa = a, *sb = b;
		if (num != (bool)isdigit((unsigned char)*b))
			return num ? 1 : -1; /* a number is newer than letters */
		if (num) {
			while (*sa == '0')
				sa++;
			while (*sb == '0')
				sb++;
		}
		for (a = sa; *a && (num ? isdigit((unsigned char)*a) : isalpha((unsigned char)*a)); a++)
			;
		for (b = sb; *b && (num ? isdigit((unsigned char)*b) : isalpha((unsigned char)*b)); b++)
			;
		size_t la = (size_t)(a - sa), lb = (size_t)(b - sb);
		if (num && la != lb)
			return la < lb ? -1 : 1;
		int c = strncmp(sa, sb, la < lb ? la : lb);
		if (c)
			return c < 0 ? -1 : 1;
		if (la != lb)
			return la < lb ? -1 : 1;
	}
	return (*a ? 1 : 0) - (*b ? 1 : 0);
}
