/* SPDX-License-Identifier: MIT */
#include "json-util.h"
#include "redact.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

json_object *gb_json_get(json_object *o, const char *k)
{
	json_object *v = NULL;
	if (o && json_object_object_get_ex(o, k, &v))
		return v;
	return NULL;
}

const char *gb_json_get_str(json_object *o, const char *k)
{
	json_object *v = gb_json_get(o, k);
	return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

json_object *gb_json_get_array(json_object *o, const char *k)
{
	json_object *v = gb_json_get(o, k);
	return v && json_object_is_type(v, json_type_array) ? v : NULL;
}

bool gb_json_get_num(json_object *o, const char *k, double *ret)
{
	json_object *v = gb_json_get(o, k);
	if (!v || !(json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double)))
		return false;
	*ret = json_object_get_double(v);
	return true;
}

bool gb_json_get_bool(json_object *o, const char *k, bool def)
{
	json_object *v = gb_json_get(o, k);
	return v && json_object_is_type(v, json_type_boolean) ? json_object_get_boolean(v) : def;
}

static bool json_oom;

bool gb_json_oom(void)
{
	return __atomic_load_n(&json_oom, __ATOMIC_RELAXED);
}

void gb_json_set_oom(void)
{
	__atomic_store_n(&json_oom, true, __ATOMIC_RELAXED);
}

void gb_json_reset_oom(void)
{
	__atomic_store_n(&json_oom, false, __ATOMIC_RELAXED);
}

static json_object *made(json_object *o)
{
	if (!o)
		gb_json_set_oom();
	return o;
}

json_object *gb_json_new_object(void)
{
	return made(json_object_new_object());
}

json_object *gb_json_new_array(void)
{
	return made(json_object_new_array());
}

json_object *gb_json_new_string(const char *s)
{
	return s ? made(json_object_new_string(s)) : NULL;
}

json_object *gb_json_new_string_len(const char *s, int len)
{
	return s ? made(json_object_new_string_len(s, len)) : NULL;
}

json_object *gb_json_new_int(int32_t i)
{
	return made(json_object_new_int(i));
}

json_object *gb_json_new_int64(int64_t i)
{
	return made(json_object_new_int64(i));
}

json_object *gb_json_new_double(double d)
{
	return made(json_object_new_double(d));
}

json_object *gb_json_new_boolean(bool b)
{
	return made(json_object_new_boolean(b));
}

/* json-c 0.16 copies a new key before it grows the table, and leaks the copy
 * when the growth fails (json_object_object_add_ex): a member under a
 * constant key, never copied, makes the table grow first. 0 or -ENOMEM. */
static int make_room(json_object *o, const char *k)
{
	static const char placeholder[] = "\001gpuboot";
	struct lh_table *t = json_object_get_object(o);

	if (t->count < t->size * LH_LOAD_FACTOR || json_object_object_get_ex(o, k, NULL))
		return 0;
	if (json_object_object_add_ex(o, placeholder, NULL, JSON_C_OBJECT_ADD_CONSTANT_KEY) < 0)
		return -ENOMEM;
	json_object_object_del(o, placeholder);
	return 0;
}

int gb_json_add(json_object *o, const char *k, json_object *v)
{
	if (!o || !json_object_is_type(o, json_type_object) || make_room(o, k) < 0 ||
	    json_object_object_add(o, k, v) < 0) {
		json_object_put(v);
		gb_json_set_oom();
		return -ENOMEM;
	}
	return 0;
}

int gb_json_append(json_object *a, json_object *v)
{
	if (!a || !json_object_is_type(a, json_type_array) || json_object_array_add(a, v) < 0) {
		json_object_put(v);
		gb_json_set_oom();
		return -ENOMEM;
	}
	return 0;
}

size_t gb_json_len(json_object *a)
{
	return a && json_object_is_type(a, json_type_array) ? json_object_array_length(a) : 0;
}

json_object *gb_json_idx(json_object *a, size_t i)
{
	return i < gb_json_len(a) ? json_object_array_get_idx(a, i) : NULL;
}

int gb_json_text(json_object *doc, int flags, char **ret)
{
	size_t n = 0, n2 = 0;
	const char *s;
	char *copy;

	*ret = NULL;
	if (!doc || gb_json_oom())
		return -ENOMEM;
	s = json_object_to_json_string_length(doc, flags, &n);
	if (!s || !(copy = malloc(n + 1)))
		return -ENOMEM;
	memcpy(copy, s, n + 1);
	/* The second pass finds the buffer grown to size and allocates nothing;
	 * a first pass that lost an append to a failed growth differs from it. */
	s = json_object_to_json_string_length(doc, flags, &n2);
	if (!s || n2 != n || memcmp(s, copy, n) != 0) {
		free(copy);
		return -ENOMEM;
	}
	/* What gpuboot writes as JSON never holds a URL's credentials. */
	if (strstr(copy, "@")) {
		char *clean = gb_redact_urls_dup(copy);
		free(copy);
		if (!clean)
			return -ENOMEM;
		copy = clean;
	}
	*ret = copy;
	return 0;
}

int gb_json_parse(const char *text, size_t len, int depth, json_object **ret)
{
	json_tokener *tok;
	enum json_tokener_error e;
	json_object *o;

	*ret = NULL;
	if (len > INT_MAX)
		return -EBADMSG;
	tok = json_tokener_new_ex(depth);
	if (!tok) {
		gb_json_set_oom();
		return -ENOMEM;
	}
	o = json_tokener_parse_ex(tok, text, (int)len);
	e = json_tokener_get_error(tok);
	json_tokener_free(tok);
	if (!o && e == json_tokener_success) {
		gb_json_set_oom();
		return -ENOMEM;
	}
	if (!o || e != json_tokener_success) {
		json_object_put(o);
		return -EBADMSG;
	}
	*ret = o;
	return 0;
}

/* Line and column (from 1) of offset off in text. */
static void text_position(const char *text, size_t off, unsigned *ret_line, unsigned *ret_col)
{
	unsigned line = 1, col = 1;
	for (size_t i = 0; i < off; i++, col++)
		if (text[i] == '\n')
			line++, col = 0;
	*ret_line = line;
	*ret_col = col;
}

int gb_json_parse_strict(const char *text, size_t len, int depth, json_object **ret, char *err, size_t errsz)
{
	json_tokener *tok;
	enum json_tokener_error e;
	json_object *o;
	size_t end;
	unsigned line, col;

	*ret = NULL;
	err[0] = '\0';
	if (len > INT_MAX) {
		snprintf(err, errsz, "too large");
		return -EBADMSG;
	}
	tok = json_tokener_new_ex(depth);
	if (!tok) {
		gb_json_set_oom();
		return -ENOMEM;
	}
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	o = json_tokener_parse_ex(tok, text, (int)len);
	e = json_tokener_get_error(tok);
	end = json_tokener_get_parse_end(tok);
	json_tokener_free(tok);
	if (!o && e == json_tokener_success) {
		gb_json_set_oom();
		return -ENOMEM;
	}
	/* whitespace after the value is all there may be */
	while (o && e == json_tokener_success && end < len &&
	       (text[end] == ' ' || text[end] == '\t' || text[end] == '\r' || text[end] == '\n'))
		end++;
	if (o && e == json_tokener_success && end < len)
		e = json_tokener_error_parse_unexpected;
	if (o && e == json_tokener_success) {
		*ret = o;
		return 0;
	}
	json_object_put(o);
	text_position(text, end > len ? len : end, &line, &col);
	snprintf(err, errsz, "line %u column %u: %s", line, col,
	         e == json_tokener_continue ? "the text ends inside the value" : json_tokener_error_desc(e));
	return -EBADMSG;
}
