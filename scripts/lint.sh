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
echo "lint: strto* only in the checked helpers (src/shared/util.c)"
# shellcheck disable=SC2086
if grep -nE '\bstrto[a-z]*\s*\(' $(echo "$files" | grep '^src/' | grep -v '^src/shared/util\.c$'); then
	echo "lint: parse numbers with gb_safe_atou64, gb_safe_atou32, gb_safe_atoi32 or gb_safe_atod (src/shared/util.h)" >&2
	rc=1
fi
echo "lint: functions of at most 120 lines"
# From the opening '{' in column 0 to the closing '}' in column 0; the
# generated catalog and profile tables are data, not functions.
long=$(for f in $(find src -name '*.c' -not -path 'src/catalog/catalog-*.c' -not -path 'src/plan/profiles-builtin.c' | sort); do
	awk -v f="$f" '
		/^[A-Za-z_]/ && !/^[A-Za-z_][A-Za-z0-9_]*:/ { sig = $0; sigline = NR }
		/^\{/ { start = NR }
		/^\}/ && start {
			n = NR - start - 1
			name = sig; sub(/\(.*/, "", name); sub(/.*[ *]/, "", name)
			if (n > 120) printf "%s:%d: %s() is %d lines (at most 120): split it\n", f, sigline, name, n
			start = 0
		}' "$f"
done)
if [ -n "$long" ]; then
	echo "$long" >&2
	rc=1
fi
echo "lint: layers (scripts/check-layers.py, docs/layers.md)"
python3 scripts/check-layers.py || rc=1
echo "lint: cppcheck"
cppcheck --quiet --error-exitcode=1 --std=c11 --enable=warning,portability --inline-suppr \
	--suppress=missingIncludeSystem -D_GNU_SOURCE -Isrc src || rc=1
exit $rc
