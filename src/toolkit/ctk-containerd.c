/* SPDX-License-Identifier: MIT */
/* containerd: the drop-in that declares the nvidia runtime to the CRI
 * plugin, and the one imports entry the main configuration needs for
 * containerd to read it (containerd reads no drop-in directory unless a
 * loaded file imports it). The main file is scanned, never rewritten: a
 * small TOML reader finds its tables, its keys and where each value's text
 * lies, so the drop-in can carry values over byte for byte.
 *
 * Why the drop-in copies the CRI section on configuration versions 1 and
 * 2: containerd 1.x merges an imported file by replacing each plugin's
 * whole section with the imported one (mergeConfig, containerd v1.7), so a
 * drop-in with only the nvidia runtime would drop every other CRI setting
 * of config.toml. containerd 2.x merges plugin sections key by key, so on
 * version 3 the drop-in holds the runtime alone. docs/container-toolkit.md
 * has the sources. */
#include <errno.h>
#include <fnmatch.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctk.h"
#include "shared/macro.h"
#include "shared/util.h"

#define SEP '\x1f' /* ends every segment of a key path (control bytes are refused in keys) */
#define SEP_S "\x1f"
#define MAX_DEPTH 32
#define MAX_ITEMS 8192
#define RUNC_V2 "io.containerd.runc.v2"
#define DROPIN_PATH "/" GB_CTK_CONTAINERD_DROPIN

/* ---- a growable text buffer; an allocation failure is sticky ---- */

struct buf {
	char *p;
	size_t n, cap;
	bool oom;
};

static void put(struct buf *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (b->n + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 1024;
		while (cap < b->n + n + 1)
			cap *= 2;
		char *p = realloc(b->p, cap);
		if (!p) {
			b->oom = true;
			return;
		}
		b->p = p, b->cap = cap;
	}
	memcpy(b->p + b->n, s, n);
	b->n += n;
	b->p[b->n] = '\0';
}

static void puts_(struct buf *b, const char *s)
{
	put(b, s, strlen(s));
}

static void _printf_(2, 3) putf(struct buf *b, const char *fmt, ...)
{
	char tmp[1024];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(tmp))
		b->oom = true;
	else
		put(b, tmp, (size_t)n);
}

/* ---- the TOML reader ---- */

struct tentry {
	int table; /* index in tab, -1: the root table */
	char *full; /* the table's path and the key's, each segment ending in SEP */
	size_t key_off; /* where the key's own segments begin in full */
	unsigned nkey; /* segments in the key (more than one: a dotted key) */
	size_t line, end; /* the line's first byte, the byte after its newline */
	size_t v0, v1; /* the value's text */
};

struct ttable {
	char *path;
	bool array; /* [[...]] */
	size_t start, body, end; /* header line, first byte after it, next header (or the end) */
};

struct tdoc {
	const char *t;
	size_t len, p;
	struct ttable *tab;
	size_t ntab;
	struct tentry *ent;
	size_t nent;
	char err[160];
};

static void tdoc_done(struct tdoc *d)
{
	for (size_t i = 0; i < d->ntab; i++)
		free(d->tab[i].path);
	for (size_t i = 0; i < d->nent; i++)
		free(d->ent[i].full);
	free(d->tab);
	free(d->ent);
}

static int fail(struct tdoc *d, const char *what)
{
	unsigned line = 1;
	for (size_t i = 0; i < d->p && i < d->len; i++)
		line += d->t[i] == '\n';
	snprintf(d->err, sizeof(d->err), "line %u: %s", line, what);
	return -EINVAL;
}

static bool at(struct tdoc *d, const char *s)
{
	size_t n = strlen(s);
	return d->p + n <= d->len && memcmp(d->t + d->p, s, n) == 0;
}

static void skip_ws(struct tdoc *d)
{
	while (d->p < d->len && (d->t[d->p] == ' ' || d->t[d->p] == '\t'))
		d->p++;
}

/* Whitespace, newlines and comments (inside arrays and between lines). */
static void skip_blank(struct tdoc *d)
{
	for (;;) {
		skip_ws(d);
		if (d->p < d->len && d->t[d->p] == '#')
			while (d->p < d->len && d->t[d->p] != '\n')
				d->p++;
		if (d->p < d->len && (d->t[d->p] == '\n' || at(d, "\r\n")))
			d->p += d->t[d->p] == '\r' ? 2 : 1;
		else
			return;
	}
}

/* The end of a line: an optional comment, then a newline or the end. */
static int end_of_line(struct tdoc *d)
{
	skip_ws(d);
	if (d->p < d->len && d->t[d->p] == '#')
		while (d->p < d->len && d->t[d->p] != '\n')
			d->p++;
	if (d->p == d->len)
		return 0;
	if (d->t[d->p] == '\n' || at(d, "\r\n")) {
		d->p += d->t[d->p] == '\r' ? 2 : 1;
		return 0;
	}
	return fail(d, "unexpected text after a value or a table header");
}

static void put_utf8(struct buf *b, uint32_t c)
{
	char u[4];
	size_t n;
	if (c < 0x80)
		u[0] = (char)c, n = 1;
	else if (c < 0x800)
		u[0] = (char)(0xc0 | c >> 6), u[1] = (char)(0x80 | (c & 0x3f)), n = 2;
	else if (c < 0x10000)
		u[0] = (char)(0xe0 | c >> 12), u[1] = (char)(0x80 | ((c >> 6) & 0x3f)),
		u[2] = (char)(0x80 | (c & 0x3f)), n = 3;
	else
		u[0] = (char)(0xf0 | c >> 18), u[1] = (char)(0x80 | ((c >> 12) & 0x3f)),
		u[2] = (char)(0x80 | ((c >> 6) & 0x3f)), u[3] = (char)(0x80 | (c & 0x3f)), n = 4;
	put(b, u, n);
}

static int unicode_escape(struct tdoc *d, struct buf *out, size_t digits)
{
	char hex[9];
	uint32_t c;
	if (d->p + digits > d->len)
		return fail(d, "a \\u escape is cut short");
	memcpy(hex, d->t + d->p, digits);
	hex[digits] = '\0';
	if (strspn(hex, "0123456789abcdefABCDEF") != digits || gb_safe_atou32(hex, 16, &c) < 0 || c > 0x10ffff ||
	    (c >= 0xd800 && c < 0xe000))
		return fail(d, "a \\u escape is not a Unicode scalar value");
	if (c < 0x20 || c == 0x7f)
		return fail(d, "a control character in a string");
	d->p += digits;
	put_utf8(out, c);
	return 0;
}

/* A single-line string, basic ("...") or literal ('...'); out (may be NULL)
 * gets the decoded text. */
static int scan_string(struct tdoc *d, struct buf *out)
{
	char q = d->t[d->p++];
	for (;;) {
		if (d->p >= d->len || d->t[d->p] == '\n' || d->t[d->p] == '\r')
			return fail(d, "a string is not closed on its line");
		char c = d->t[d->p++];
		if (c == q)
			return 0;
		if ((unsigned char)c < 0x20 && c != '\t')
			return fail(d, "a control character in a string");
		if (c != '\\' || q == '\'') {
			if (out)
				put(out, &c, 1);
			continue;
		}
		if (d->p >= d->len)
			return fail(d, "a string is not closed");
		c = d->t[d->p++];
		const char *from = "btnfr\"\\", *to = "\b\t\n\f\r\"\\";
		const char *k = strchr(from, c);
		if (c && k) {
			if (out)
				put(out, &to[k - from], 1);
		} else if (c == 'u' || c == 'U') {
			struct buf dummy = { 0 };
			int r = unicode_escape(d, out ? out : &dummy, c == 'u' ? 4 : 8);
			free(dummy.p);
			if (r < 0)
				return r;
		} else {
			return fail(d, "an unknown escape in a string");
		}
	}
}

/* A multi-line string ("""...""" or '''...'''), not decoded. */
static int scan_multiline(struct tdoc *d)
{
	char q = d->t[d->p];
	const char *delim = q == '"' ? "\"\"\"" : "'''";
	d->p += 3;
	while (d->p < d->len) {
		if (q == '"' && d->t[d->p] == '\\') {
			d->p += 2;
			continue;
		}
		if (at(d, delim)) {
			d->p += 3;
			for (int i = 0; i < 2 && d->p < d->len && d->t[d->p] == q; i++)
				d->p++; /* up to two quotes may stand right before the delimiter */
			return 0;
		}
		d->p++;
	}
	d->p = d->len;
	return fail(d, "a multi-line string is not closed");
}

static bool is_bare(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

/* A key, dotted or not, appended to out segment by segment. */
static int scan_key(struct tdoc *d, struct buf *out, unsigned *ret_n)
{
	unsigned n = 0;
	for (;;) {
		size_t before = out->n;
		int r = 0;
		skip_ws(d);
		if (d->p < d->len && (d->t[d->p] == '"' || d->t[d->p] == '\'')) {
			if (at(d, "\"\"\"") || at(d, "'''"))
				return fail(d, "a multi-line string cannot be a key");
			r = scan_string(d, out);
		} else {
			size_t s = d->p;
			while (d->p < d->len && is_bare(d->t[d->p]))
				d->p++;
			if (d->p == s)
				return fail(d, "a key was expected");
			put(out, d->t + s, d->p - s);
		}
		if (r < 0)
			return r;
		if (out->oom)
			return -ENOMEM;
		if (out->n > before && memchr(out->p + before, SEP, out->n - before))
			return fail(d, "a control character in a key");
		put(out, SEP_S, 1);
		n++;
		skip_ws(d);
		if (d->p >= d->len || d->t[d->p] != '.')
			break;
		d->p++;
	}
	if (n > 64)
		return fail(d, "a key of more than 64 parts");
	*ret_n = n;
	return 0;
}

static int scan_value(struct tdoc *d, unsigned depth);

/* [ value, ... ] across lines, comments between; *ret_last the end of the
 * last element's text (0: none). */
static int scan_array(struct tdoc *d, unsigned depth, size_t *ret_last)
{
	size_t last = 0;
	d->p++;
	for (;;) {
		skip_blank(d);
		if (d->p < d->len && d->t[d->p] == ']') {
			d->p++;
			break;
		}
		int r = scan_value(d, depth + 1);
		if (r < 0)
			return r;
		last = d->p;
		skip_blank(d);
		if (d->p < d->len && d->t[d->p] == ',') {
			d->p++;
			continue;
		}
		if (d->p < d->len && d->t[d->p] == ']') {
			d->p++;
			break;
		}
		return fail(d, "',' or ']' was expected in an array");
	}
	if (ret_last)
		*ret_last = last;
	return 0;
}

/* { key = value, ... } (newlines allowed, as TOML 1.1 does). */
static int scan_inline_table(struct tdoc *d, unsigned depth)
{
	struct buf key = { 0 };
	unsigned n;
	int r = 0;
	d->p++;
	skip_blank(d);
	if (d->p < d->len && d->t[d->p] == '}') {
		d->p++;
		return 0;
	}
	for (;;) {
		key.n = 0;
		r = scan_key(d, &key, &n);
		if (r < 0)
			break;
		if (d->p >= d->len || d->t[d->p] != '=') {
			r = fail(d, "'=' was expected after a key");
			break;
		}
		d->p++;
		skip_ws(d);
		if ((r = scan_value(d, depth + 1)) < 0)
			break;
		skip_blank(d);
		if (d->p < d->len && d->t[d->p] == ',') {
			d->p++;
			skip_blank(d);
			continue;
		}
		if (d->p < d->len && d->t[d->p] == '}') {
			d->p++;
			break;
		}
		r = fail(d, "',' or '}' was expected in an inline table");
		break;
	}
	free(key.p);
	return key.oom ? -ENOMEM : r;
}

/* A number, boolean or date: up to a separator; a date and a time may be
 * joined by one space ("1979-05-27 07:32:00Z"). */
static int scan_scalar(struct tdoc *d)
{
	size_t s = d->p;
	for (;;) {
		while (d->p < d->len && !strchr(" \t\r\n#,]}", d->t[d->p]) && d->t[d->p])
			d->p++;
		if (d->p - s == 10 && d->p + 3 < d->len && d->t[d->p] == ' ' && d->t[s + 4] == '-' &&
		    d->t[d->p + 1] >= '0' && d->t[d->p + 1] <= '9' && d->t[d->p + 3] == ':') {
			d->p++;
			continue;
		}
		break;
	}
	if (d->p == s)
		return fail(d, "a value was expected");
	for (size_t i = s; i < d->p; i++)
		if (!is_bare(d->t[i]) && !strchr("+.:", d->t[i]) && d->t[i] != ' ')
			return fail(d, "a value that is not TOML");
	return 0;
}

static int scan_value(struct tdoc *d, unsigned depth)
{
	if (depth > MAX_DEPTH)
		return fail(d, "values nested too deeply");
	if (d->p >= d->len)
		return fail(d, "a value was expected");
	switch (d->t[d->p]) {
	case '"':
	case '\'': return at(d, "\"\"\"") || at(d, "'''") ? scan_multiline(d) : scan_string(d, NULL);
	case '[': return scan_array(d, depth, NULL);
	case '{': return scan_inline_table(d, depth);
	default: return scan_scalar(d);
	}
}

static int add_table(struct tdoc *d, char *path, bool array, size_t start)
{
	struct ttable *t;
	if (d->ntab >= MAX_ITEMS)
		return fail(d, "too many tables");
	t = realloc(d->tab, (d->ntab + 1) * sizeof(*t));
	if (!t)
		return -ENOMEM;
	d->tab = t;
	if (d->ntab > 0)
		d->tab[d->ntab - 1].end = start;
	d->tab[d->ntab++] = (struct ttable){ .path = path, .array = array, .start = start, .end = d->len };
	return 0;
}

static int scan_header(struct tdoc *d, size_t line)
{
	struct buf path = { 0 };
	bool array = at(d, "[[");
	unsigned n;
	int r;

	d->p += array ? 2 : 1;
	r = scan_key(d, &path, &n);
	if (r >= 0 && !at(d, array ? "]]" : "]"))
		r = fail(d, array ? "']]' was expected" : "']' was expected");
	if (r >= 0) {
		d->p += array ? 2 : 1;
		r = end_of_line(d);
	}
	if (r >= 0 && path.oom)
		r = -ENOMEM;
	if (r >= 0)
		r = add_table(d, path.p, array, line);
	if (r < 0) {
		free(path.p);
		return r;
	}
	d->tab[d->ntab - 1].body = d->p;
	return 0;
}

static int scan_entry(struct tdoc *d, size_t line)
{
	struct buf full = { 0 };
	struct tentry *e;
	int table = (int)d->ntab - 1, r;
	unsigned n;

	if (table >= 0)
		puts_(&full, d->tab[table].path);
	size_t key_off = full.n;
	r = scan_key(d, &full, &n);
	if (r >= 0 && (d->p >= d->len || d->t[d->p] != '='))
		r = fail(d, "'=' was expected after a key");
	if (r >= 0) {
		d->p++;
		skip_ws(d);
	}
	size_t v0 = d->p;
	if (r >= 0)
		r = scan_value(d, 0);
	size_t v1 = d->p;
	if (r >= 0)
		r = end_of_line(d);
	if (r >= 0 && full.oom)
		r = -ENOMEM;
	if (r >= 0 && d->nent >= MAX_ITEMS)
		r = fail(d, "too many keys");
	if (r >= 0 && !(e = realloc(d->ent, (d->nent + 1) * sizeof(*e))))
		r = -ENOMEM;
	if (r < 0) {
		free(full.p);
		return r;
	}
	d->ent = e;
	d->ent[d->nent++] = (struct tentry){ .table = table,
		                             .full = full.p,
		                             .key_off = key_off,
		                             .nkey = n,
		                             .line = line,
		                             .end = d->p,
		                             .v0 = v0,
		                             .v1 = v1 };
	return 0;
}

static int tdoc_parse(struct tdoc *d, const char *text, size_t len)
{
	*d = (struct tdoc){ .t = text, .len = len };
	if (memchr(text, '\0', len))
		return fail(d, "a NUL byte");
	if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0)
		d->p = 3;
	for (;;) {
		skip_blank(d);
		if (d->p >= d->len)
			return 0;
		/* the line's first byte: back over the indentation */
		size_t line = d->p;
		while (line > 0 && (d->t[line - 1] == ' ' || d->t[line - 1] == '\t'))
			line--;
		int r = d->t[d->p] == '[' ? scan_header(d, line) : scan_entry(d, line);
		if (r < 0)
			return r;
	}
}

/* ---- reading values ---- */

static const struct tentry *find_full(const struct tdoc *d, const char *full)
{
	for (size_t i = 0; i < d->nent; i++)
		if (streq(d->ent[i].full, full))
			return &d->ent[i];
	return NULL;
}

static bool has_prefix(const char *s, const char *prefix)
{
	return strneq(s, prefix, strlen(prefix));
}

/* A single-line string value, decoded into out (size outsz). */
static int value_string(const struct tdoc *d, size_t at_off, char *out, size_t outsz, size_t *ret_end)
{
	struct tdoc c = *d;
	struct buf b = { 0 };
	int r;
	c.p = at_off;
	if (c.p >= c.len || (c.t[c.p] != '"' && c.t[c.p] != '\'') || at(&c, "\"\"\"") || at(&c, "'''"))
		return -EINVAL;
	r = scan_string(&c, &b);
	if (r >= 0 && b.oom)
		r = -ENOMEM;
	if (r >= 0)
		r = gb_strscpy(out, outsz, b.p ? b.p : "") < 0 ? -EINVAL : 0;
	if (r >= 0 && ret_end)
		*ret_end = c.p;
	free(b.p);
	return r;
}

static int value_int(const struct tdoc *d, const struct tentry *e, uint32_t *ret)
{
	char num[16];
	size_t n = e->v1 - e->v0;
	if (n == 0 || n >= sizeof(num))
		return -EINVAL;
	memcpy(num, d->t + e->v0, n);
	num[n] = '\0';
	if (strspn(num, "0123456789") != n)
		return -EINVAL;
	return gb_safe_atou32(num, 10, ret);
}

/* Call fn on each string of the array value of e until it returns true;
 * 1 when one did, 0 when none, -EINVAL when e is not an array of strings
 * (of at most 1023 bytes each). *ret_last (may be NULL): the end of the
 * last element (0: an empty array). */
static int array_any(const struct tdoc *d, const struct tentry *e, bool (*fn)(const char *s), size_t *ret_last)
{
	struct tdoc c = *d;
	char s[1024];
	size_t last = 0, end;
	int r;

	c.p = e->v0;
	if (c.p >= c.len || c.t[c.p] != '[')
		return -EINVAL;
	r = scan_array(&c, 0, &last);
	if (r < 0)
		return r;
	if (ret_last)
		*ret_last = last;
	c.p = e->v0 + 1;
	for (r = 0;;) {
		skip_blank(&c);
		if (c.p >= c.len || c.t[c.p] == ']')
			return r;
		if (value_string(&c, c.p, s, sizeof(s), &end) < 0)
			return -EINVAL;
		c.p = end;
		r |= fn(s);
		skip_blank(&c);
		if (c.p < c.len && c.t[c.p] == ',')
			c.p++;
	}
}

/* Does an imports pattern cover the drop-in? Go globs; a relative one is
 * below /etc/containerd (the main file's directory). */
static bool import_covers(const char *s)
{
	char pat[1100];
	const char *rel = gb_startswith(s, "./") ? s + 2 : s;
	snprintf(pat, sizeof(pat), "%s%s", s[0] == '/' ? "" : "/etc/containerd/", s[0] == '/' ? s : rel);
	return strpbrk(pat, "*?[") ? fnmatch(pat, DROPIN_PATH, FNM_PATHNAME) == 0 : streq(pat, DROPIN_PATH);
}

/* The CRI plugin's names in disabled_plugins, by configuration version. */
static bool is_cri(const char *s)
{
	return streq(s, "cri") || streq(s, "io.containerd.grpc.v1.cri") || streq(s, "io.containerd.cri.v1.runtime");
}

/* ---- the drop-in ---- */

struct ctd {
	const struct tdoc *d;
	const char *runtime_path;
	bool set_default, copy;
	int version;
	char plugin[64]; /* plugins.<CRI> */
	char containerd[96]; /* ...containerd */
	char runtimes[112]; /* ...runtimes */
	char nvidia[128]; /* ...runtimes.nvidia */
	char dflt[144]; /* ...containerd.default_runtime_name */
	char low[256]; /* the low-level runtime whose settings nvidia takes: ...runtimes.<name> */
	struct buf out;
	char *err;
	size_t errsz;
};

static int refuse(struct ctd *c, const struct tentry *e, const char *why)
{
	unsigned line = 1;
	for (size_t i = 0; i < e->line; i++)
		line += c->d->t[i] == '\n';
	snprintf(c->err, c->errsz,
	         "%s line %u: %s; gpuboot copies the CRI plugin's tables into its drop-in "
	         "(containerd 1.x replaces a plugin's whole section with an imported file's): write them as "
	         "[plugins.\"...\"] tables, or configure the nvidia runtime by hand",
	         GB_CTK_CONTAINERD_CONFIG, line, why);
	return -EOPNOTSUPP;
}

/* A key path (segments ending in SEP) as TOML text: bare where it can be,
 * else a basic string. */
static void put_key(struct buf *b, const char *path, size_t n)
{
	const char *s = path, *end = path + n;
	bool first = true;
	while (s < end) {
		const char *e = memchr(s, SEP, (size_t)(end - s));
		size_t len = e ? (size_t)(e - s) : (size_t)(end - s);
		bool bare = len > 0;
		for (size_t i = 0; i < len; i++)
			bare &= is_bare(s[i]);
		if (!first)
			puts_(b, ".");
		if (bare) {
			put(b, s, len);
		} else {
			puts_(b, "\"");
			for (size_t i = 0; i < len; i++) {
				if (s[i] == '"' || s[i] == '\\')
					puts_(b, "\\");
				put(b, &s[i], 1);
			}
			puts_(b, "\"");
		}
		first = false;
		s += len + 1;
	}
}

static void put_header(struct buf *b, const char *path)
{
	puts_(b, "[");
	put_key(b, path, strlen(path));
	puts_(b, "]\n");
}

/* Copy mode: what in the main file gpuboot cannot carry, or would define
 * twice. */
static int copy_check(struct ctd *c)
{
	const struct tdoc *d = c->d;
	bool containerd_header = false;

	for (size_t i = 0; i < d->ntab; i++)
		containerd_header |= !d->tab[i].array && streq(d->tab[i].path, c->containerd);
	for (size_t i = 0; i < d->nent; i++) {
		const struct tentry *e = &d->ent[i];
		const char *tpath = e->table >= 0 ? d->tab[e->table].path : "";
		if (!has_prefix(e->full, c->plugin) && !has_prefix(c->plugin, e->full))
			continue;
		if (has_prefix(e->full, c->nvidia))
			continue; /* replaced by gpuboot's */
		if (has_prefix(c->nvidia, e->full))
			return refuse(c, e, "a table on the nvidia runtime's path is given as a value");
		if (!has_prefix(tpath, c->plugin))
			return refuse(c, e, "the CRI plugin is set by a dotted key outside its tables");
		if (c->set_default && !containerd_header && has_prefix(e->full, c->containerd) &&
		    !has_prefix(tpath, c->containerd))
			return refuse(c, e, "the CRI plugin's containerd table is made by dotted keys");
	}
	for (size_t i = 0; i < d->ntab; i++)
		if (d->tab[i].array && has_prefix(c->nvidia, d->tab[i].path))
			return refuse(c, &(struct tentry){ .line = d->tab[i].start }, "an array of tables on the path");
	return 0;
}

static bool dropped(struct ctd *c, const struct tentry *e)
{
	return has_prefix(e->full, c->nvidia) || (c->set_default && streq(e->full, c->dflt));
}

/* Copy mode: the CRI plugin's tables of the main file, byte for byte, less
 * the nvidia runtime's keys and (with set_default) default_runtime_name,
 * which gpuboot writes. Entries are in the document's order, so their
 * tables' indices never decrease. Returns whether the containerd table was
 * copied. */
static bool copy_tables(struct ctd *c)
{
	const struct tdoc *d = c->d;
	bool containerd = false;
	size_t k = 0;

	for (size_t i = 0; i < d->ntab; i++) {
		const struct ttable *t = &d->tab[i];
		size_t o = t->body;
		while (k < d->nent && d->ent[k].table < (int)i)
			k++;
		if (!has_prefix(t->path, c->plugin) || has_prefix(t->path, c->nvidia))
			continue;
		put(&c->out, d->t + t->start, t->body - t->start);
		if (!t->array && streq(t->path, c->containerd)) {
			containerd = true;
			if (c->set_default)
				puts_(&c->out, "  default_runtime_name = \"nvidia\"\n");
		}
		for (; k < d->nent && d->ent[k].table == (int)i; k++) {
			if (!dropped(c, &d->ent[k]))
				continue;
			put(&c->out, d->t + o, d->ent[k].line - o);
			o = d->ent[k].end;
		}
		put(&c->out, d->t + o, t->end - o);
		if (c->out.n > 0 && c->out.p[c->out.n - 1] != '\n')
			puts_(&c->out, "\n");
	}
	return containerd;
}

/* The low-level runtime whose settings the nvidia runtime takes, as
 * NVIDIA's toolkit picks it: the default runtime unless it is an nvidia
 * one, then runc, then crun. "" when the main file has none of them. */
static void pick_low(struct ctd *c)
{
	char name[128] = "", p[256];
	const struct tentry *e = find_full(c->d, c->dflt);
	const char *cand[3] = { NULL, "runc", "crun" };

	if (e && value_string(c->d, e->v0, name, sizeof(name), NULL) >= 0 && name[0] &&
	    !gb_startswith(name, "nvidia") && !strchr(name, SEP))
		cand[0] = name;
	c->low[0] = '\0';
	for (size_t k = 0; k < ARRAY_SIZE(cand) && !c->low[0]; k++) {
		if (!cand[k])
			continue;
		snprintf(p, sizeof(p), "%s%s" SEP_S, c->runtimes, cand[k]);
		for (size_t i = 0; i < c->d->nent && !c->low[0]; i++)
			if (has_prefix(c->d->ent[i].full, p))
				gb_strscpy(c->low, sizeof(c->low), p);
	}
}

/* The nvidia runtime: the low-level runtime's settings carried over (the
 * values' text as written; its options less BinaryName), runtime_type
 * io.containerd.runc.v2 where it names none, options.BinaryName the
 * NVIDIA Container Runtime. */
static int put_runtime(struct ctd *c)
{
	struct buf opts = { 0 };
	const char *o_key = "options" SEP_S;
	bool type = false;
	size_t low = strlen(c->low);

	put_header(&c->out, c->nvidia);
	for (size_t i = 0; low && i < c->d->nent; i++) {
		const struct tentry *e = &c->d->ent[i];
		if ((e->table >= 0 && c->d->tab[e->table].array) || !has_prefix(e->full, c->low))
			continue;
		const char *rel = e->full + low;
		if (streq(rel, o_key)) {
			free(opts.p);
			snprintf(c->err, c->errsz,
			         "%s: the options of the runtime gpuboot copies for nvidia are an inline table; "
			         "write them as a [...options] table",
			         GB_CTK_CONTAINERD_CONFIG);
			return -EOPNOTSUPP;
		}
		bool opt = has_prefix(rel, o_key);
		if (opt && streq(rel + strlen(o_key), "BinaryName" SEP_S))
			continue;
		type |= streq(rel, "runtime_type" SEP_S);
		struct buf *b = opt ? &opts : &c->out;
		const char *k = opt ? rel + strlen(o_key) : rel;
		puts_(b, "  ");
		put_key(b, k, strlen(k));
		puts_(b, " = ");
		put(b, c->d->t + e->v0, e->v1 - e->v0);
		puts_(b, "\n");
	}
	if (!type)
		puts_(&c->out, "  runtime_type = \"" RUNC_V2 "\"\n");
	puts_(&c->out, "\n");
	char options[160];
	snprintf(options, sizeof(options), "%s%s", c->nvidia, o_key);
	put_header(&c->out, options);
	putf(&c->out, "  BinaryName = \"%s\"\n", c->runtime_path);
	if (opts.p)
		puts_(&c->out, opts.p);
	c->out.oom |= opts.oom;
	free(opts.p);
	return 0;
}

/* The configuration version: the main file's, 1 for a main file without
 * one (what containerd reads it as), else from the binary (1.x: 2, 2.x:
 * 3), else 2, which both majors read (NVIDIA's toolkit's default too). */
static int pick_version(const struct tdoc *d, int bin_major, struct gb_ctk_containerd *ret, char *err, size_t errsz)
{
	const struct tentry *e = find_full(d, "version" SEP_S);
	uint32_t v;

	if (e) {
		if (value_int(d, e, &v) < 0 || v < 1) {
			snprintf(err, errsz, "%s: 'version' is not a configuration version (1, 2, 3 ...)",
			         GB_CTK_CONTAINERD_CONFIG);
			return -EINVAL;
		}
		if (v > 4) {
			snprintf(err, errsz,
			         "%s: configuration version %u is newer than gpuboot knows (1 to 4); configure the "
			         "nvidia runtime by hand",
			         GB_CTK_CONTAINERD_CONFIG, v);
			return -EOPNOTSUPP;
		}
		ret->version = (int)v, ret->version_from = "config";
	} else if (d->nent > 0 || d->ntab > 0) {
		ret->version = 1, ret->version_from = "config";
	} else if (bin_major > 0) {
		ret->version = bin_major >= 2 ? 3 : 2, ret->version_from = "binary";
	} else {
		ret->version = 2, ret->version_from = "default";
	}
	return 0;
}

static int build_dropin(struct ctd *c)
{
	bool containerd = false;
	int r;

	puts_(&c->out, "# Written by gpuboot: the NVIDIA Container Runtime for containerd's CRI plugin,\n"
	               "# read through the imports entry of /etc/containerd/config.toml. To undo: remove\n"
	               "# this file, then systemctl restart containerd (docs/container-toolkit.md).\n");
	if (c->copy)
		puts_(&c->out, "# containerd 1.x replaces a plugin's whole section with an imported file's, so\n"
		               "# the CRI plugin's tables of config.toml are copied here: change them there and\n"
		               "# run gpuboot again, which copies them anew.\n");
	if (c->version >= 2)
		putf(&c->out, "version = %d\n", c->version);
	puts_(&c->out, "\n");
	if (c->copy) {
		r = copy_check(c);
		if (r < 0)
			return r;
		containerd = copy_tables(c);
		if (c->out.n < 2 || c->out.p[c->out.n - 2] != '\n')
			puts_(&c->out, "\n"); /* one blank line before gpuboot's tables */
	}
	if (c->set_default && !containerd) {
		put_header(&c->out, c->containerd);
		puts_(&c->out, "  default_runtime_name = \"nvidia\"\n\n");
	}
	pick_low(c);
	return put_runtime(c);
}

#define IMPORT_ENTRY "\"" GB_CTK_CONTAINERD_IMPORT "\""

/* The main file: its text with the imports entry added (only that), or
 * NULL when it imports the drop-in already; a minimal one where there is
 * none. */
static int build_main(const struct tdoc *d, const char *main, size_t len, struct gb_ctk_containerd *ret, char *err,
                      size_t errsz)
{
	const struct tentry *e = find_full(d, "imports" SEP_S);
	struct buf b = { 0 };
	size_t at_off, last = 0;

	if (!main) {
		putf(&b,
		     "# Written by gpuboot: containerd's defaults, and the drop-ins of /etc/containerd/conf.d\n"
		     "# (docs/container-toolkit.md).\n"
		     "version = %d\n"
		     "imports = [" IMPORT_ENTRY "]\n",
		     ret->version);
	} else if (!e) {
		at_off = len >= 3 && memcmp(main, "\xef\xbb\xbf", 3) == 0 ? 3 : 0;
		put(&b, main, at_off);
		puts_(&b, "imports = [" IMPORT_ENTRY "]\n");
		put(&b, main + at_off, len - at_off);
	} else {
		int r = array_any(d, e, import_covers, &last);
		if (r < 0) {
			snprintf(err, errsz, "%s: 'imports' is not an array of strings", GB_CTK_CONTAINERD_CONFIG);
			return -EINVAL;
		}
		if (r > 0)
			return 0;
		at_off = last ? last : e->v0 + 1;
		put(&b, main, at_off);
		puts_(&b, last ? ", " IMPORT_ENTRY : IMPORT_ENTRY);
		put(&b, main + at_off, len - at_off);
	}
	if (b.oom) {
		free(b.p);
		return -ENOMEM;
	}
	ret->main = b.p;
	ret->main_len = b.n;
	return 0;
}

int gb_ctk_containerd_build(const char *main, size_t len, int bin_major, const char *runtime_path, bool set_default,
                            struct gb_ctk_containerd *ret, char *err, size_t errsz)
{
	struct tdoc d;
	struct ctd c = {
		.d = &d, .runtime_path = runtime_path, .set_default = set_default, .err = err, .errsz = errsz
	};
	const char *cri;
	int r;

	memset(ret, 0, sizeof(*ret));
	err[0] = '\0';
	r = tdoc_parse(&d, main ? main : "", main ? len : 0);
	if (r == -EINVAL)
		snprintf(err, errsz, "%s is not TOML gpuboot can read (%s); containerd cannot read it either: fix it",
		         GB_CTK_CONTAINERD_CONFIG, d.err);
	if (r >= 0)
		r = pick_version(&d, bin_major, ret, err, errsz);
	if (r < 0)
		goto out;
	const struct tentry *dis = find_full(&d, "disabled_plugins" SEP_S);
	if (dis && array_any(&d, dis, is_cri, NULL) > 0) {
		ret->cri_disabled = true; /* nothing reads a runtime declared to it */
		goto out;
	}
	c.version = ret->version;
	c.copy = ret->version <= 2;
	cri = ret->version == 1   ? "cri"
	      : ret->version == 2 ? "io.containerd.grpc.v1.cri"
	                          : "io.containerd.cri.v1.runtime";
	snprintf(c.plugin, sizeof(c.plugin), "plugins" SEP_S "%s" SEP_S, cri);
	snprintf(c.containerd, sizeof(c.containerd), "%scontainerd" SEP_S, c.plugin);
	snprintf(c.runtimes, sizeof(c.runtimes), "%sruntimes" SEP_S, c.containerd);
	snprintf(c.nvidia, sizeof(c.nvidia), "%snvidia" SEP_S, c.runtimes);
	snprintf(c.dflt, sizeof(c.dflt), "%sdefault_runtime_name" SEP_S, c.containerd);
	r = build_dropin(&c);
	if (r >= 0 && c.out.oom)
		r = -ENOMEM;
	if (r >= 0)
		r = build_main(&d, main, len, ret, err, errsz);
	if (r >= 0) {
		ret->dropin = TAKE_PTR(c.out.p);
		ret->dropin_len = c.out.n;
	}
out:
	free(c.out.p);
	tdoc_done(&d);
	if (r < 0)
		gb_ctk_containerd_done(ret);
	return r;
}

void gb_ctk_containerd_done(struct gb_ctk_containerd *c)
{
	free(c->main);
	free(c->dropin);
	c->main = c->dropin = NULL;
	c->main_len = c->dropin_len = 0;
}

int gb_ctk_containerd_major(const char *out)
{
	char tok[64];
	uint32_t major;

	for (const char *s = out; gb_next_word(&s, " \t\r\n", tok, sizeof(tok));) {
		char *v = tok + (tok[0] == 'v');
		size_t digits = strspn(v, "0123456789");
		if (digits > 0 && digits < 6 && v[digits] == '.' && v[digits + 1] >= '0' && v[digits + 1] <= '9') {
			v[digits] = '\0';
			if (gb_safe_atou32(v, 10, &major) == 0)
				return (int)major;
		}
	}
	return 0;
}
