/* SPDX-License-Identifier: MIT */
/* The syntax profiles, gpuboot.conf and gpus.d share: sections, key = value,
 * comments. Errors name the file, the line and what is wrong. */
#pragma once

#include <stddef.h>

struct gb_conf_entry {
	char *section; /* "driver", or "gpu 2bb5" */
	char *key;
	char *value;
	unsigned line;
};

struct gb_conf {
	char *path;
	struct gb_conf_entry *entries;
	size_t n;
};

#define GB_CONF_MAX_BYTES (256u * 1024u)
#define GB_CONF_MAX_ENTRIES 4096
#define GB_CONF_MAX_VALUE 1024
/* Room for what is wrong with one setting, its known values included. */
#define GB_CONF_WHY 900

/* Parse text (not NUL-terminated, len bytes). On a syntax error returns
 * -EINVAL and writes "PATH:LINE: what" into err. */
int gb_conf_parse(const char *path, const char *text, size_t len, struct gb_conf *ret, char *err, size_t errsz);
void gb_conf_done(struct gb_conf *c);

/* A key that may be given more than once in a section ("[trust] key"). */
struct gb_conf_key {
	const char *section, *key;
};

/* Every key at most once per section, except those in repeatable (ended by
 * { NULL, NULL }; NULL for none). On a second one: -EINVAL and
 * "PATH:LINE: duplicate key 'k' in [s], first at line N" in err. */
int gb_conf_check_unique(const struct gb_conf *c, const struct gb_conf_key *repeatable, char *err, size_t errsz);

/* The edit (Levenshtein) distance of two short names, for "did you mean";
 * names longer than 63 bytes count as far from everything. */
unsigned gb_conf_distance(const char *a, const char *b);

/* Append text to a message buffer, truncating; for lists in error messages. */
void gb_conf_append(char *buf, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Split a comma-separated value into trimmed, non-empty items (NULL-terminated). */
int gb_conf_split_list(const char *value, char ***ret);

/* Parse "yes"/"no"/"true"/"false"/"on"/"off"; -EINVAL otherwise. */
int gb_conf_parse_bool(const char *v, int *ret);
/* Parse a non-negative decimal ("16", "0.5"); -EINVAL otherwise. */
int gb_conf_parse_number(const char *v, double *ret);
