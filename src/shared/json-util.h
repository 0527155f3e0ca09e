/* SPDX-License-Identifier: MIT */
/* Typed reads from JSON that came from outside (the probe, a status
 * document, a manifest): a missing key or a value of another type reads as
 * absent, never as a crash. */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The value at key k of object o (NULL when o is NULL or has no k). */
json_object *gb_json_get(json_object *o, const char *k);
/* The string at k, or NULL when absent or not a string. */
const char *gb_json_get_str(json_object *o, const char *k);
/* The array at k, or NULL when absent or not an array (json-c asserts on
 * an array call made on anything else). */
json_object *gb_json_get_array(json_object *o, const char *k);
/* The number (int or double) at k into *ret; false when absent or not a number. */
bool gb_json_get_num(json_object *o, const char *k, double *ret);
/* The boolean at k, or def. */
bool gb_json_get_bool(json_object *o, const char *k, bool def);

/* Building documents that survive running out of memory. json-c's
 * constructors return NULL and its adders return -1 (leaving the value to
 * the caller) when an allocation fails; a NULL child is also how a
 * deliberate JSON null is written. So every value is made through the
 * gb_json_new_* family, which records a failure in one sticky,
 * process-wide flag, and added through gb_json_add / gb_json_append, which
 * take a NULL container or a failed insert (dropping the value, recording
 * the failure) instead of asserting or leaking. Nothing is checked where a
 * document is built: gb_json_text, where it is turned into the text that is
 * written or printed, fails with -ENOMEM once the flag is set, so a
 * document missing a field lost to memory is never written as if whole. */
bool gb_json_oom(void);
void gb_json_set_oom(void);
void gb_json_reset_oom(void); /* tests only */

json_object *gb_json_new_object(void);
json_object *gb_json_new_array(void);
/* s NULL: a JSON null (deliberate, not a failure). */
json_object *gb_json_new_string(const char *s);
json_object *gb_json_new_string_len(const char *s, int len);
json_object *gb_json_new_int(int32_t i);
json_object *gb_json_new_int64(int64_t i);
json_object *gb_json_new_double(double d);
json_object *gb_json_new_boolean(bool b);
/* Adds v (NULL: JSON null) at k of o, taking v's reference in every case.
 * o NULL (a container that could not be made) or a failed insert: v is
 * released and the flag set. Returns 0 or -ENOMEM. */
int gb_json_add(json_object *o, const char *k, json_object *v);
/* The same for the end of array a. */
int gb_json_append(json_object *a, json_object *v);
/* The length of array a, 0 when a is NULL or not an array; the element at i,
 * NULL when out of range (json-c asserts on a non-array). */
size_t gb_json_len(json_object *a);
json_object *gb_json_idx(json_object *a, size_t i);

/* The text of doc (json-c's serialization flags), a copy the caller frees,
 * into *ret. -ENOMEM when any allocation of a document was lost (the
 * flag), when doc is NULL, or when json-c's serializer lost part of the
 * text (it ignores most of its own buffer's growth failures: the text is
 * made twice and must come out the same). */
int gb_json_text(json_object *doc, int flags, char **ret);

/* Parses the len bytes at text (json-c's tokener, nesting at most depth)
 * into *ret. -EBADMSG when it is not one JSON value; -ENOMEM, and the
 * sticky flag set, when json-c ran out of memory: its tokener then stops
 * with no error and no value (json-c 0.16), which read as "not JSON" would
 * drop a journal or a status document as corrupt. */
int gb_json_parse(const char *text, size_t len, int depth, json_object **ret);

/* The same for a file a person wrote, that gpuboot will rewrite: strict
 * JSON (json-c's JSON_TOKENER_STRICT: no comments, no trailing commas or
 * characters after the value), err set to "line L column C: what" when it
 * is not. -EBADMSG, or -ENOMEM as gb_json_parse. */
int gb_json_parse_strict(const char *text, size_t len, int depth, json_object **ret, char *err, size_t errsz);
