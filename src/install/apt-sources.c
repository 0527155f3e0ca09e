/* SPDX-License-Identifier: MIT */
/* Enabling contrib, non-free and non-free-firmware the distribution's way:
 * only the component lists of the existing Debian archive entries change;
 * comments, options, other fields, other entries and the order of what is
 * there stay byte for byte. A second pass changes nothing. */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "install-internal.h"
#include "shared/macro.h"
#include "shared/util.h"

#define LINE_MAX_BYTES 4096
#define MAX_TOKENS 32

static const char *const wanted_components[] = { "main", "contrib", "non-free", "non-free-firmware" };

struct buf {
	char *p;
	size_t len, cap;
};

static int buf_add(struct buf *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		size_t cap = (b->len + n + 1) * 2;
		char *p = realloc(b->p, cap);
		if (!p)
			return -ENOMEM;
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
	return 0;
}

/* Split s (n bytes) at blanks into at most max tokens (pointers into copy). */
static size_t tokens(char *s, char **tok, size_t max)
{
	size_t n = 0;
	char *save = NULL;
	for (char *t = strtok_r(s, " \t", &save); t && n < max; t = strtok_r(NULL, " \t", &save))
		tok[n++] = t;
	return n;
}

static bool has_token(char *const *tok, size_t n, const char *w)
{
	for (size_t i = 0; i < n; i++)
		if (streq(tok[i], w))
			return true;
	return false;
}

/* "bookworm", "bookworm-updates", "bookworm-security", "bookworm-backports". */
static bool suite_matches(const char *suite, const char *codename)
{
	size_t n = strlen(codename);
	return n && strneq(suite, codename, n) && (suite[n] == '\0' || suite[n] == '-' || suite[n] == '/');
}

/* Append the missing wanted components, as " contrib non-free ...", to b. */
static int add_missing(struct buf *b, char *const *comp, size_t n, bool *changed)
{
	for (size_t i = 0; i < ARRAY_SIZE(wanted_components); i++) {
		if (has_token(comp, n, wanted_components[i]))
			continue;
		if (buf_add(b, " ", 1) < 0 || buf_add(b, wanted_components[i], strlen(wanted_components[i])) < 0)
			return -ENOMEM;
		*changed = true;
	}
	return 0;
}

/* ---- one-line: deb [ options ] URI SUITE COMPONENT... [# comment] ---- */

static int oneline_line(struct buf *b, const char *line, size_t n, const char *codename, unsigned *entries,
                        bool *changed)
{
	char copy[LINE_MAX_BYTES], *tok[MAX_TOKENS], *rest;
	size_t body = n, nt, end;
	const char *hash = memchr(line, '#', n);

	if (n >= sizeof(copy))
		return -EINVAL;
	if (hash)
		body = (size_t)(hash - line);
	memcpy(copy, line, body);
	copy[body] = '\0';
	rest = copy + strspn(copy, " \t");
	if (!gb_startswith(rest, "deb ") && !gb_startswith(rest, "deb\t") && !gb_startswith(rest, "deb-src"))
		return buf_add(b, line, n);
	rest += strcspn(rest, " \t");
	rest += strspn(rest, " \t");
	if (*rest == '[') { /* options: everything to the closing bracket */
		char *close = strchr(rest, ']');
		if (!close)
			return -EINVAL;
		rest = close + 1;
	}
	nt = tokens(rest, tok, MAX_TOKENS);
	if (nt < 2)
		return -EINVAL;
	if (nt < 3 || !suite_matches(tok[1], codename) || !has_token(tok + 2, nt - 2, "main"))
		return buf_add(b, line, n);
	(*entries)++;
	/* The components end where the body's trailing blanks start. */
	end = body;
	while (end > 0 && (line[end - 1] == ' ' || line[end - 1] == '\t'))
		end--;
	if (buf_add(b, line, end) < 0 || add_missing(b, tok + 2, nt - 2, changed) < 0 ||
	    buf_add(b, line + end, n - end) < 0)
		return -ENOMEM;
	return 0;
}

int gb_apt_sources_oneline(const char *in, size_t len, const char *codename, char **ret, size_t *ret_len,
                           unsigned *ret_entries, bool *ret_changed)
{
	struct buf b = { 0 };
	unsigned entries = 0;
	bool changed = false;
	int r = 0;

	if (len > GB_APT_SOURCES_MAX)
		return -EFBIG;
	if (buf_add(&b, "", 0) < 0)
		return -ENOMEM;
	for (size_t o = 0; o < len && r == 0;) {
		const char *nl = memchr(in + o, '\n', len - o);
		size_t n = nl ? (size_t)(nl - (in + o)) : len - o;
		r = oneline_line(&b, in + o, n, codename, &entries, &changed);
		if (r == 0 && nl)
			r = buf_add(&b, "\n", 1);
		o += n + (nl ? 1 : 0);
	}
	if (r < 0) {
		free(b.p);
		return r;
	}
	*ret = b.p;
	*ret_len = b.len;
	*ret_entries = entries;
	*ret_changed = changed;
	return 0;
}

/* ---- deb822: stanzas of "Field: value" separated by blank lines ---- */

struct line {
	const char *s;
	size_t n;
};

static bool field_is(const struct line *l, const char *name)
{
	size_t k = strlen(name);
	return l->n > k && strncasecmp(l->s, name, k) == 0 && l->s[k] == ':';
}

static bool is_continuation(const struct line *l)
{
	return l->n > 0 && (l->s[0] == ' ' || l->s[0] == '\t');
}

/* The value of a one-line field, copied into out. */
static int field_value(const struct line *l, char *out, size_t outsz)
{
	const char *v = memchr(l->s, ':', l->n);
	size_t n;
	if (!v)
		return -EINVAL;
	v++;
	n = l->n - (size_t)(v - l->s);
	if (n >= outsz)
		return -EINVAL;
	memcpy(out, v, n);
	out[n] = '\0';
	return 0;
}

/* Is the stanza lines[a, b) an enabled Debian archive entry for codename
 * whose components hold main? *comp_line is its Components line. */
static int stanza_is_debian(const struct line *lines, size_t a, size_t b, const char *codename, size_t *comp_line)
{
	char suites[LINE_MAX_BYTES], comps[LINE_MAX_BYTES], *tok[MAX_TOKENS];
	bool have_suites = false, have_comps = false, enabled = true, match = false;
	size_t nt;

	for (size_t i = a; i < b; i++) {
		if (field_is(&lines[i], "Suites"))
			have_suites = field_value(&lines[i], suites, sizeof(suites)) == 0;
		else if (field_is(&lines[i], "Components")) {
			have_comps = field_value(&lines[i], comps, sizeof(comps)) == 0;
			*comp_line = i;
		} else if (field_is(&lines[i], "Enabled")) {
			char v[16];
			enabled = field_value(&lines[i], v, sizeof(v)) != 0 || strcasecmp(gb_strstrip(v), "no") != 0;
		}
	}
	if (!have_suites || !have_comps || !enabled)
		return 0;
	nt = tokens(suites, tok, MAX_TOKENS);
	for (size_t i = 0; i < nt; i++)
		match = match || suite_matches(tok[i], codename);
	nt = tokens(comps, tok, MAX_TOKENS);
	return match && has_token(tok, nt, "main");
}

/* Rewrite the Components field at lines[c] (with its continuation lines,
 * folded into one) with the missing components added. */
static int rewrite_components(struct buf *b, const struct line *lines, size_t c, size_t end, size_t *ret_next,
                              bool *changed)
{
	char all[LINE_MAX_BYTES], *tok[MAX_TOKENS];
	size_t o = 0, nt, next = c + 1, name = (size_t)((const char *)memchr(lines[c].s, ':', lines[c].n) - lines[c].s);

	if (field_value(&lines[c], all, sizeof(all)) < 0)
		return -EINVAL;
	o = strlen(all);
	for (; next < end && is_continuation(&lines[next]); next++) {
		if (o + 1 + lines[next].n >= sizeof(all))
			return -EINVAL;
		all[o++] = ' ';
		memcpy(all + o, lines[next].s, lines[next].n);
		o += lines[next].n;
		all[o] = '\0';
		*changed = true; /* folded */
	}
	*ret_next = next;
	nt = tokens(all, tok, MAX_TOKENS);
	if (buf_add(b, lines[c].s, name + 1) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < nt; i++)
		if (buf_add(b, " ", 1) < 0 || buf_add(b, tok[i], strlen(tok[i])) < 0)
			return -ENOMEM;
	return add_missing(b, tok, nt, changed);
}

static int split_lines(const char *in, size_t len, struct line **ret, size_t *ret_n)
{
	size_t n = 0, cap = 64;
	struct line *l = malloc(cap * sizeof(*l));
	if (!l)
		return -ENOMEM;
	for (size_t o = 0; o < len;) {
		const char *nl = memchr(in + o, '\n', len - o);
		size_t k = nl ? (size_t)(nl - (in + o)) : len - o;
		if (k >= LINE_MAX_BYTES) {
			free(l);
			return -EINVAL;
		}
		if (n == cap) {
			struct line *m = realloc(l, (cap *= 2) * sizeof(*l));
			if (!m) {
				free(l);
				return -ENOMEM;
			}
			l = m;
		}
		l[n++] = (struct line){ in + o, k };
		o += k + (nl ? 1 : 0);
	}
	*ret = l;
	*ret_n = n;
	return 0;
}

static bool blank(const struct line *l)
{
	for (size_t i = 0; i < l->n; i++)
		if (!isspace((unsigned char)l->s[i]))
			return false;
	return true;
}

static int deb822_emit(struct buf *b, const struct line *lines, size_t n, bool final_nl, const char *codename,
                       unsigned *entries, bool *changed)
{
	for (size_t a = 0; a < n;) {
		size_t end = a, comp = SIZE_MAX, i;
		while (end < n && !blank(&lines[end]))
			end++;
		if (end > a && stanza_is_debian(lines, a, end, codename, &comp) > 0)
			(*entries)++;
		else
			comp = SIZE_MAX;
		for (i = a; i < end;) {
			if (i == comp) {
				if (rewrite_components(b, lines, i, end, &i, changed) < 0)
					return -EINVAL;
			} else if (buf_add(b, lines[i].s, lines[i].n) < 0) {
				return -ENOMEM;
			} else {
				i++;
			}
			if ((i < n || final_nl) && buf_add(b, "\n", 1) < 0)
				return -ENOMEM;
		}
		for (a = end; a < n && blank(&lines[a]); a++)
			if (buf_add(b, lines[a].s, lines[a].n) < 0 ||
			    ((a + 1 < n || final_nl) && buf_add(b, "\n", 1) < 0))
				return -ENOMEM;
	}
	return 0;
}

int gb_apt_sources_deb822(const char *in, size_t len, const char *codename, char **ret, size_t *ret_len,
                          unsigned *ret_entries, bool *ret_changed)
{
	struct line *lines = NULL;
	struct buf b = { 0 };
	unsigned entries = 0;
	bool changed = false;
	size_t n = 0;
	int r;

	if (len > GB_APT_SOURCES_MAX)
		return -EFBIG;
	r = split_lines(in, len, &lines, &n);
	if (r < 0)
		return r;
	r = buf_add(&b, "", 0);
	if (r == 0)
		r = deb822_emit(&b, lines, n, len > 0 && in[len - 1] == '\n', codename, &entries, &changed);
	free(lines);
	if (r < 0) {
		free(b.p);
		return r;
	}
	*ret = b.p;
	*ret_len = b.len;
	*ret_entries = entries;
	*ret_changed = changed;
	return 0;
}
