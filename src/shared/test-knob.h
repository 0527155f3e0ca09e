/* SPDX-License-Identifier: MIT */
/* The test knobs: environment variables that only a test build
 * (GB_TEST_HOOKS) reads, through this one accessor, from one list
 * (test-knob.c; documented in docs/journal.md, "The test knobs"). A
 * release build reads none: the accessor is NULL there and the code
 * behind it compiles away. The fake operations table's own spec is one
 * of them (GPUBOOT_FAKE_OPS). */
#pragma once

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#ifdef GB_TEST_HOOKS
/* The knob's value, NULL when it is unset. A name not in the list aborts:
 * a caller's typo is a bug, never a knob silently ignored. */
const char *gb_test_knob(const char *name);
/* The knob as a decimal uint32: 0, -ENOENT when unset, -EINVAL when not one. */
int gb_test_knob_u32(const char *name, uint32_t *ret);
#else
static inline const char *gb_test_knob(const char *name)
{
	(void)name;
	return NULL;
}
static inline int gb_test_knob_u32(const char *name, uint32_t *ret)
{
	(void)name;
	(void)ret;
	return -ENOENT;
}
#endif
