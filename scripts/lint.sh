#!/bin/sh
# make lint: formatting, static analysis, and no unbounded string functions.
set -eu
cd "$(dirname "$0")/.."
rc=0
files=$(find src tests -name '*.[ch]' -not -path 'src/catalog/catalog-*.c' -not -name '*-builtin.c' | sort)
echo "lint: clang-format"
# shellcheck disable=SC2086
clang-format --dry-run --Werror $files || rc=1
echo "lint: banned functions"
# shellcheck disable=SC2086
if grep -nE '\b(strcpy|strcat|sprintf|vsprintf|strtok|atoi|atol|gets)\s*\(' $files; then
	echo "lint: use gb_strscpy, snprintf, strtok_r, gb_safe_atou32 instead" >&2
	rc=1
fi
echo "lint: cppcheck"
cppcheck --quiet --error-exitcode=1 --std=c11 --enable=warning,portability --inline-suppr \
	--suppress=missingIncludeSystem -D_GNU_SOURCE -Isrc src || rc=1
exit $rc
