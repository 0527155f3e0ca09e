/* SPDX-License-Identifier: MIT */
/* Typed reads from JSON that came from outside (the probe, a status
 * document, a manifest): a missing key or a value of another type reads as
 * absent, never as a crash. */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>

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
