/* SPDX-License-Identifier: MIT */
/* A tiny unit-test harness: CHECK records a failure and goes on; main()
 * returns non-zero when any check failed. */
#pragma once

#include <stdio.h>
#include <string.h>

static int unit_failures;
static int unit_checks;

#define CHECK(cond)                                                                              \
	do {                                                                                     \
		unit_checks++;                                                                   \
		if (!(cond)) {                                                                   \
			fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
			unit_failures++;                                                         \
		}                                                                                \
	} while (0)

#define CHECK_STREQ(a, b)                                                                                \
	do {                                                                                             \
		const char *_a = (a), *_b = (b);                                                         \
		unit_checks++;                                                                           \
		if (!_a || !_b || strcmp(_a, _b) != 0) {                                                 \
			fprintf(stderr, "%s:%d: CHECK_STREQ failed: '%s' != '%s'\n", __FILE__, __LINE__, \
			        _a ? _a : "(null)", _b ? _b : "(null)");                                 \
			unit_failures++;                                                                 \
		}                                                                                        \
	} while (0)

#define CHECK_INT(a, b)                                                                                                \
	do {                                                                                                           \
		long long _a = (long long)(a), _b = (long long)(b);                                                    \
		unit_checks++;                                                                                         \
		if (_a != _b) {                                                                                        \
			fprintf(stderr, "%s:%d: CHECK_INT failed: %s = %lld, expected %lld\n", __FILE__, __LINE__, #a, \
			        _a, _b);                                                                               \
			unit_failures++;                                                                               \
		}                                                                                                      \
	} while (0)

#define UNIT_DONE()                                                                         \
	do {                                                                                \
		printf("%s: %d checks, %d failed\n", __FILE__, unit_checks, unit_failures); \
		return unit_failures ? 1 : 0;                                               \
	} while (0)
