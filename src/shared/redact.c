/* SPDX-License-Identifier: MIT */
#include "redact.h"

#include <stdlib.h>
#include <string.h>

static bool scheme_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '+' || c == '-' ||
	       c == '.';
}

static bool authority_end(unsigned char c)
{
	return c <= 0x20 || c == 0x7f || c == '/' || c == '?' || c == '#' || c == '"' || c == '\'' || c == '\\' ||
	       c == '<' || c == '>';
}

/* After in[i] == ':' that follows a scheme: the length of "//" or "\/\/", 0 when neither. */
static size_t slashes(const char *p)
{
	if (p[0] == '/' && p[1] == '/')
		return 2;
	if (p[0] == '\\' && p[1] == '/' && p[2] == '\\' && p[3] == '/')
		return 4;
	return 0;
}

/* Writes at most outsz-1 bytes of the result when out is set; returns its
 * full length. */
static size_t redact(const char *in, char *out, size_t outsz, bool *ret_any)
{
	size_t o = 0, i = 0;
	bool any = false;

#define PUT(c)                            \
	do {                              \
		if (out && o + 1 < outsz) \
			out[o] = (c);     \
		o++;                      \
	} while (0)
	while (in[i]) {
		size_t s = in[i] == ':' && i > 0 && scheme_char(in[i - 1]) ? slashes(in + i + 1) : 0;
		if (s) {
			size_t a = i + 1 + s, end = a, at = 0;
			while (in[end] && !authority_end((unsigned char)in[end])) {
				if (in[end] == '@')
					at = end;
				end++;
			}
			for (size_t k = i; k < a; k++)
				PUT(in[k]);
			if (at > a) {
				PUT('*');
				PUT('*');
				PUT('*');
				any = true;
				i = at;
			} else {
				i = a;
			}
			continue;
		}
		PUT(in[i]);
		i++;
	}
#undef PUT
	if (out && outsz)
		out[o < outsz ? o : outsz - 1] = '\0';
	if (ret_any)
		*ret_any = any;
	return o;
}

bool gb_redact_urls(const char *in, char *out, size_t outsz)
{
	bool any = false;
	(void)redact(in, out, outsz, &any);
	return any;
}

char *gb_redact_urls_dup(const char *in)
{
	size_t n = redact(in, NULL, 0, NULL);
	char *s = malloc(n + 1);
	if (s)
		(void)redact(in, s, n + 1, NULL);
	return s;
}
