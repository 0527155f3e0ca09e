/* SPDX-License-Identifier: MIT */
/* The typed package spec's two spellings: the plan's words and the spec. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "pkg.h"
#include "shared/macro.h"
#include "shared/util.h"

#define BRANCH_LOCK "versionlock:"

int gb_pkg_spec_format(const struct gb_pkg_spec *s, char *out, size_t outsz)
{
	int n;
	switch (s->kind) {
	case GB_PKG_STREAM: n = snprintf(out, outsz, "@%s:%s", s->name, s->stream); break;
	case GB_PKG_BRANCH_LOCK: n = snprintf(out, outsz, BRANCH_LOCK "%s", s->name); break;
	default: n = snprintf(out, outsz, "%s", s->name); break;
	}
	return n < 0 || (size_t)n >= outsz ? -ENAMETOOLONG : 0;
}

int gb_pkg_spec_parse(const char *text, struct gb_pkg_spec *ret)
{
	const char *lock = gb_startswith(text, BRANCH_LOCK), *colon;
	size_t n;

	ret->stream[0] = '\0';
	if (lock) {
		ret->kind = GB_PKG_BRANCH_LOCK;
		if (!lock[0])
			return -EINVAL;
		return gb_strscpy(ret->name, sizeof(ret->name), lock) < 0 ? -ENAMETOOLONG : 0;
	}
	if (text[0] != '@') {
		ret->kind = GB_PKG_NAME;
		if (!text[0])
			return -EINVAL;
		return gb_strscpy(ret->name, sizeof(ret->name), text) < 0 ? -ENAMETOOLONG : 0;
	}
	ret->kind = GB_PKG_STREAM;
	colon = strchr(text + 1, ':');
	if (!colon || colon == text + 1 || !colon[1])
		return -EINVAL;
	n = (size_t)(colon - text - 1);
	if (n >= sizeof(ret->name))
		return -ENAMETOOLONG;
	memcpy(ret->name, text + 1, n);
	ret->name[n] = '\0';
	return gb_strscpy(ret->stream, sizeof(ret->stream), colon + 1) < 0 ? -ENAMETOOLONG : 0;
}

bool gb_pkg_stream_open(const char *stream)
{
	size_t n = strlen(stream);
	return gb_startswith(stream, "open") || (n > 5 && streq(stream + n - 5, "-open"));
}
