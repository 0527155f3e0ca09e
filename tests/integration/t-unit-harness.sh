# The unit harness itself (tests/unit/unit.h): a test that runs no check
# fails, a file in which no check ran fails, tests registered but never run
# fail, UNIT_TEST=NAME that matches nothing fails ("no matching tests"), and
# the tests run in the order they are written.
. tests/integration/lib.sh
CC=${CC:-cc}
build() { # NAME: compile $TMP/NAME.c against the harness
	$CC -std=gnu11 -Wall -Werror -Itests/unit -o "$TMP/$1" "$TMP/$1.c" || fail "$1 does not build"
}
cat >"$TMP/good.c" <<'C'
#include "unit.h"
TEST(first) { printf("ran first\n"); CHECK(1); }
TEST(second) { printf("ran second\n"); CHECK_INT(2, 2); }
int main(void) { unit_run_tests(); UNIT_DONE(); }
C
cat >"$TMP/empty-test.c" <<'C'
#include "unit.h"
TEST(checks) { CHECK(1); }
TEST(forgot) { }
int main(void) { unit_run_tests(); UNIT_DONE(); }
C
cat >"$TMP/no-checks.c" <<'C'
#include "unit.h"
int main(void) { UNIT_DONE(); }
C
cat >"$TMP/never-run.c" <<'C'
#include "unit.h"
TEST(lost) { CHECK(1); }
int main(void) { CHECK(1); UNIT_DONE(); }
C
for p in good empty-test no-checks never-run; do build "$p"; done
expect_exit 0 "$TMP/good"
[ "$(grep '^ran' "$TMP/out" | tr '\n' ,)" = "ran first,ran second," ] || fail "not in the written order: $(cat "$TMP/out")"
UNIT_TEST=second expect_exit 0 "$TMP/good"
[ "$(grep -c '^ran' "$TMP/out")" = 1 ] && grep -q '^ran second' "$TMP/out" || fail "UNIT_TEST=second: $(cat "$TMP/out")"
UNIT_TEST=nope expect_exit 1 "$TMP/good"
grep -q "UNIT_TEST=nope: no matching tests" "$TMP/err" || fail "no matching tests: $(cat "$TMP/err")"
expect_exit 1 "$TMP/empty-test"
grep -q "test forgot ran no check" "$TMP/err" || fail "empty test: $(cat "$TMP/err")"
expect_exit 1 "$TMP/no-checks"
grep -q "no check ran" "$TMP/err" || fail "no checks: $(cat "$TMP/err")"
expect_exit 1 "$TMP/never-run"
grep -q "1 tests registered, never run" "$TMP/err" || fail "never run: $(cat "$TMP/err")"
echo ok
