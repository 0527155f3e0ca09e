/* SPDX-License-Identifier: MIT */
#include "conf.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shared/macro.h"
#include "shared/root.h"
#include "shared/util.h"

void gb_conf_done(struct gb_conf *c)
{
	for (size_t i = 0; i < c->n; i++) {
		free(c->entries[i].section);
		free(c->entries[i].key);
		free(c->entries[i].value);
	}
	free(c->entries);
	free(c->path);
	memset(c, 0, sizeof(*c));
}

static bool ident_char(char c, bool section)
{
	return islower((unsigned char)c) || isdigit((unsigned char)c) || c == '_' || c == '-' ||
	       (section && (c == ' ' || c == '.'));
}

/* Trim a line's whitespace and its trailing comment ('#' at the start or
 * after whitespace). */
static void trim_line(const char **b, const char **e)
{
	while (*b < *e && isspace((unsigned char)**b))
		(*b)++;
	for (const char *q = *b; q < *e; q++)
		if (*q == '#' && (q == *b || isspace((unsigned char)q[-1]))) {
			*e = q;
			break;
		}
	while (*e > *b && isspace((unsigned char)(*e)[-1]))
		(*e)--;
}

/* Append an entry, taking key and value (freed on failure). */
static int conf_push(struct gb_conf *c, size_t *cap, const char *section, char *key, char *value, unsigned line)
{
	char *sec = key && value ? strdup(section) : NULL;

	if (sec && c->n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 16;
		struct gb_conf_entry *ne = realloc(c->entries, ncap * sizeof(*ne));
		if (ne) {
			c->entries = ne;
			*cap = ncap;
		} else {
			free(TAKE_PTR(sec));
		}
	}
	if (!sec) {
		free(key);
		free(value);
		return -ENOMEM;
	}
	c->entries[c->n].section = sec;
	c->entries[c->n].key = key;
	c->entries[c->n].value = value;
	c->entries[c->n].line = line;
	c->n++;
	return 0;
}

int gb_conf_parse(const char *path, const char *text, size_t len, struct gb_conf *ret, char *err, size_t errsz)
{
	struct gb_conf c = { 0 };
	_cleanup_free_ char *section = NULL;
	const char *p = text, *end = text + len;
	unsigned line = 0;
	size_t cap = 0;

#define FAIL(...)                                                            \
	do {                                                                 \
		int _o = snprintf(err, errsz, "%s:%u: ", path, line);        \
		if (_o > 0 && (size_t)_o < errsz)                            \
			snprintf(err + _o, errsz - (size_t)_o, __VA_ARGS__); \
		gb_conf_done(&c);                                            \
		return -EINVAL;                                              \
	} while (0)

	if (len > GB_CONF_MAX_BYTES) {
		snprintf(err, errsz, "%s: larger than %u KiB", path, GB_CONF_MAX_BYTES / 1024);
		return -EINVAL;
	}
	if (memchr(text, '\0', len)) {
		snprintf(err, errsz, "%s: not a text file (NUL byte)", path);
		return -EINVAL;
	}
	c.path = strdup(path);
	if (!c.path)
		return -ENOMEM;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *b = p, *e = nl ? nl : end, *eq;
		char *key, *value;

		p = nl ? nl + 1 : end;
		line++;
		trim_line(&b, &e);
		if (b == e)
			continue;
		for (const char *q = b; q < e; q++)
			if ((unsigned char)*q < 0x20 && *q != '\t')
				FAIL("control character in the line");
		if (*b == '[') {
			if (e[-1] != ']' || e - b < 3)
				FAIL("a section header is [name]");
			for (const char *q = b + 1; q < e - 1; q++)
				if (!ident_char(*q, true))
					FAIL("section name '%.*s' may hold only a-z, 0-9, '_', '-', '.', ' '",
					     (int)(e - b - 2), b + 1);
			free(section);
			section = strndup(b + 1, (size_t)(e - b - 2));
			if (!section)
				goto oom;
			continue;
		}
		eq = memchr(b, '=', (size_t)(e - b));
		if (!eq)
			FAIL("expected 'key = value', got '%.*s'", (int)(e - b > 60 ? 60 : e - b), b);
		if (!section) {
			const char *ke = eq;
			while (ke > b && isspace((unsigned char)ke[-1]))
				ke--;
			FAIL("'%.*s' comes before any [section]", (int)(ke - b), b);
		}
		{
			const char *ke = eq, *vb = eq + 1;
			while (ke > b && isspace((unsigned char)ke[-1]))
				ke--;
			while (vb < e && isspace((unsigned char)*vb))
				vb++;
			if (ke == b)
				FAIL("missing key before '='");
			for (const char *q = b; q < ke; q++)
				if (!ident_char(*q, false))
					FAIL("key '%.*s' may hold only a-z, 0-9, '_', '-'", (int)(ke - b), b);
			if (e - vb > GB_CONF_MAX_VALUE)
				FAIL("value longer than %d bytes", GB_CONF_MAX_VALUE);
			if (c.n >= GB_CONF_MAX_ENTRIES)
				FAIL("more than %d entries", GB_CONF_MAX_ENTRIES);
			key = strndup(b, (size_t)(ke - b));
			value = strndup(vb, (size_t)(e - vb));
		}
		if (conf_push(&c, &cap, section, key, value, line) < 0)
			goto oom;
	}
#undef FAIL
	*ret = c;
	return 0;
oom:
	gb_conf_done(&c);
	return -ENOMEM;
}

int gb_conf_split_list(const char *value, char ***ret)
{
	char *copy = strdup(value);
	char **v = NULL, *save = NULL;
	size_t n = 0;

	if (!copy)
		return -ENOMEM;
	v = calloc(1, sizeof(*v));
	if (!v)
		goto oom;
	for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		char **nv;
		gb_strstrip(t);
		if (!*t)
			continue;
		nv = realloc(v, (n + 2) * sizeof(*v));
		if (!nv)
			goto oom;
		v = nv;
		v[n] = strdup(t);
		if (!v[n])
			goto oom;
		v[++n] = NULL;
	}
	free(copy);
	*ret = v;
	return 0;
oom:
	free(copy);
	gb_strv_free(v);
	return -ENOMEM;
}

int gb_conf_parse_bool(const char *v, int *ret)
{
	if (streq(v, "yes") || streq(v, "true") || streq(v, "on")) {
		*ret = 1;
		return 0;
	}
	if (streq(v, "no") || streq(v, "false") || streq(v, "off")) {
		*ret = 0;
		return 0;
	}
	return -EINVAL;
}

int gb_conf_parse_number(const char *v, double *ret)
{
	double d;

	if (!v || !isdigit((unsigned char)v[0]) || isspace((unsigned char)v[strlen(v) - 1]))
		return -EINVAL;
	if (gb_safe_atod(v, &d) < 0 || d < 0 || d > 1e12)
		return -EINVAL;
	*ret = d;
	return 0;
}

static bool repeatable_key(const struct gb_conf_key *rep, const struct gb_conf_entry *e)
{
	for (; rep && rep->section; rep++)
		if (streq(rep->section, e->section) && streq(rep->key, e->key))
			return true;
	return false;
}

/* Quadratic, but a file holds at most GB_CONF_MAX_ENTRIES short entries. */
int gb_conf_check_unique(const struct gb_conf *c, const struct gb_conf_key *repeatable, char *err, size_t errsz)
{
	for (size_t i = 1; i < c->n; i++) {
		const struct gb_conf_entry *e = &c->entries[i];
		if (repeatable_key(repeatable, e))
			continue;
		for (size_t j = 0; j < i; j++)
			if (streq(c->entries[j].key, e->key) && streq(c->entries[j].section, e->section)) {
				snprintf(err, errsz, "%s:%u: duplicate key '%s' in [%s], first at line %u", c->path,
				         e->line, e->key, e->section, c->entries[j].line);
				return -EINVAL;
			}
	}
	return 0;
}

unsigned gb_conf_distance(const char *a, const char *b)
{
	unsigned row[64];
	size_t la = strlen(a), lb = strlen(b);

	if (la >= ARRAY_SIZE(row) || lb >= ARRAY_SIZE(row))
		return UINT32_MAX / 2;
	for (size_t j = 0; j <= lb; j++)
		row[j] = (unsigned)j;
	for (size_t i = 1; i <= la; i++) {
		unsigned diag = row[0];
		row[0] = (unsigned)i;
		for (size_t j = 1; j <= lb; j++) {
			unsigned up = row[j];
			unsigned best = diag + (a[i - 1] != b[j - 1]);
			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diag = up;
		}
	}
	return row[lb];
}

void gb_conf_append(char *buf, size_t n, const char *fmt, ...)
{
	size_t o = strnlen(buf, n);
	va_list ap;

	if (o + 1 >= n)
		return;
	va_start(ap, fmt);
	vsnprintf(buf + o, n - o, fmt, ap);
	va_end(ap);
}
