/* SPDX-License-Identifier: MIT */
#include "json-util.h"

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
