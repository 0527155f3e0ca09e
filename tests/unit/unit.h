/* SPDX-License-Identifier: MIT */
/* A tiny unit-test harness: CHECK records a failure and goes on; main()
 * returns non-zero when any check failed.
 *
 * TEST(name) { ... } defines a test and registers it (a constructor adds it
 * to the file's table, so no test can be defined and forgotten); main()
 * calls unit_run_tests() after its setup, which runs them in the order they
 * are written. A test that ran no check fails; so does a file in which no
 * check ran at all, one whose registered tests main never ran, and a
 * UNIT_TEST=name that matches no test ("no matching tests"). */
#pragma once

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int unit_failures;
static int unit_checks;

struct unit_test {
	const char *name;
	void (*fn)(void);
	int line;
};
#define UNIT_MAX_TESTS 128
static struct unit_test unit_tests[UNIT_MAX_TESTS];
static int unit_n_tests, unit_tests_overflow, unit_tests_ran;

static inline void unit_register(const char *name, void (*fn)(void), int line)
{
	if (unit_n_tests >= UNIT_MAX_TESTS) {
		unit_tests_overflow = 1;
		return;
	}
	unit_tests[unit_n_tests++] = (struct unit_test){ name, fn, line };
}

#define TEST(n)                                                          \
	static void test_##n(void);                                      \
	__attribute__((constructor)) static void unit_register_##n(void) \
	{                                                                \
		unit_register(#n, test_##n, __LINE__);                   \
	}                                                                \
	static void test_##n(void)

static inline int unit_test_cmp(const void *a, const void *b)
{
	return ((const struct unit_test *)a)->line - ((const struct unit_test *)b)->line;
}

/* Run every registered test, in the file's order (or only UNIT_TEST's). */
static inline void unit_run_tests(void)
{
	const char *only = getenv("UNIT_TEST");
	int matched = 0;

	unit_tests_ran = 1;
	if (unit_tests_overflow) {
		fprintf(stderr, "%s: more than %d tests: raise UNIT_MAX_TESTS\n", __FILE__, UNIT_MAX_TESTS);
		unit_failures++;
	}
	qsort(unit_tests, (size_t)unit_n_tests, sizeof(unit_tests[0]), unit_test_cmp);
	for (int i = 0; i < unit_n_tests; i++) {
		int before = unit_checks;
		if (only && only[0] && strcmp(only, unit_tests[i].name) != 0)
			continue;
		matched++;
		unit_tests[i].fn();
		if (unit_checks == before) {
			fprintf(stderr, "test %s ran no check\n", unit_tests[i].name);
			unit_failures++;
		}
	}
	if (only && only[0] && !matched) {
		fprintf(stderr, "UNIT_TEST=%s: no matching tests\n", only);
		unit_failures++;
	}
}

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

#define UNIT_DONE()                                                                                        \
	do {                                                                                               \
		if (unit_n_tests && !unit_tests_ran) {                                                     \
			fprintf(stderr, "%s: %d tests registered, never run (unit_run_tests)\n", __FILE__, \
			        unit_n_tests);                                                             \
			unit_failures++;                                                                   \
		}                                                                                          \
		if (unit_checks == 0) {                                                                    \
			fprintf(stderr, "%s: no check ran\n", __FILE__);                                   \
			unit_failures++;                                                                   \
		}                                                                                          \
		printf("%s: %d checks, %d failed\n", __FILE__, unit_checks, unit_failures);                \
		return unit_failures ? 1 : 0;                                                              \
	} while (0)
