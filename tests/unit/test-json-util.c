/* SPDX-License-Identifier: MIT */
/* gb_json_add grows an object's table before json-c copies a new key
 * (json-c 0.16 leaks the copy when the growth fails): the members come out
 * the same, in order, whatever the size, and the placeholder that makes the
 * table grow never shows. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shared/json-util.h"
#include "unit.h"

int main(void)
{
	json_object *o = gb_json_new_object();
	char key[32], *text = NULL;
	int n = 0;

	CHECK(o != NULL);
	for (int i = 0; i < 200; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		CHECK_INT(gb_json_add(o, key, gb_json_new_int(i)), 0);
		/* an existing key at every size: replaced, not added */
		CHECK_INT(gb_json_add(o, "k0", gb_json_new_int(0)), 0);
		CHECK_INT(json_object_object_length(o), i + 1);
	}
	json_object_object_foreach(o, k, v)
	{
		snprintf(key, sizeof(key), "k%d", n);
		CHECK_STREQ(k, key);
		CHECK_INT(json_object_get_int(v), n);
		n++;
	}
	CHECK_INT(n, 200);
	CHECK(!gb_json_oom());
	CHECK_INT(gb_json_text(o, 0, &text), 0);
	CHECK(text && !strstr(text, "gpuboot"));
	free(text);
	json_object_put(o);
	UNIT_DONE();
}
