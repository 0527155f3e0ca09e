/* SPDX-License-Identifier: MIT */
/* gb_verify_add: a check that cannot be stored (the allocation fails) is
 * never silently lost: it counts as failed and in dropped. The huge
 * capacity below makes the next growth fail for real; ASan returns NULL
 * for it instead of aborting (allocator_may_return_null). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unit.h"
#include "verify/verify.h"

const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "allocator_may_return_null=1";
}

int main(void)
{
	struct gb_verify_result r;
	struct gb_check *c;
	size_t n, cap;
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	memset(&r, 0, sizeof(r));
	c = gb_verify_add(&r, "a.pass", "system");
	CHECK(c != NULL);
	if (c)
		c->state = GB_CHECK_PASS;
	CHECK_INT(r.n, 1);
	CHECK_INT(r.failed, 0);
	CHECK_INT(r.dropped, 0);

	/* The next growth cannot be satisfied (about 2^46 bytes). */
	n = r.n;
	cap = r.cap;
	r.n = r.cap = (size_t)1 << 36;
	c = gb_verify_add(&r, "b.maybe_fail", "system");
	CHECK(c == NULL);
	CHECK_INT(r.dropped, 1);
	CHECK_INT(r.failed, 1);
	/* Growth that would overflow size_t is refused, not wrapped. */
	r.n = r.cap = SIZE_MAX / 2 + 1;
	CHECK(gb_verify_add(&r, "c.overflow", "system") == NULL);
	CHECK_INT(r.dropped, 2);
	CHECK_INT(r.failed, 2);
	r.n = n;
	r.cap = cap;

	/* The printed summary says so. */
	f = open_memstream(&text, &len);
	if (f) {
		gb_verify_print(&r, f);
		fclose(f);
	}
	CHECK(text && strstr(text, "2 failed of 3 checks"));
	CHECK(text && strstr(text, "2 check(s) lost to an allocation failure, counted as failed"));
	free(text);
	gb_verify_result_done(&r);
	UNIT_DONE();
}
