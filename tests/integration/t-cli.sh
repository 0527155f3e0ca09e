# The command line contract: help, version, exit codes for bad usage, and
# commands that do not exist yet refuse honestly.
. tests/integration/lib.sh
expect_exit 0 "$GB" --help
for c in run detect plan fetch verify status mirror repair; do
	grep -q "^  $c " "$TMP/out" || fail "--help does not list command $c"
done
grep -q -- "--repair" "$TMP/out" || fail "--help does not list --repair"
expect_exit 0 "$GB" --version
grep -q '^gpuboot [0-9]' "$TMP/out" || fail "--version prints no version"
expect_exit 0 "$GB" --version -v
grep -q 'libcurl' "$TMP/out" || fail "--version -v names no libraries"
expect_exit 2 "$GB" --no-such-option
grep -q "unknown option '--no-such-option'" "$TMP/err" || fail "unknown option is not named"
expect_exit 2 "$GB" frobnicate
grep -q "unknown command 'frobnicate'" "$TMP/err" || fail "unknown command is not named"
expect_exit 2 "$GB" --root
expect_exit 2 "$GB" detect --root /etc/hostname
grep -q "Not a directory" "$TMP/err" || fail "a root that is not a directory is not explained"
expect_exit 2 "$GB" detect --root /nonexistent/dir
expect_exit 2 "$GB" detect extra-argument
expect_exit 2 "$GB" --repair detect
for c in run; do
	expect_exit 2 "$GB" "$c" --root "$FIX/h200-ubuntu2404"
	grep -q "not implemented yet" "$TMP/err" || fail "$c does not say it is not implemented yet"
done
expect_exit 2 "$GB" --repair --root "$FIX/h200-ubuntu2404"
# Options may come before or after the command.
expect_exit 0 "$GB" --json detect --root "$FIX/h200-ubuntu2404"
head -c1 "$TMP/out" | grep -q '{' || fail "--json before the command is ignored"
# Every option in --help is in the man page, and the other way round.
"$GB" --help | grep -oE -- '--[a-z][a-z-]+' | sort -u >"$TMP/help-opts"
grep -oE -- '\\-\\-[a-z]+(\\-[a-z]+)*' docs/gpuboot.8 | sed 's/\\//g' | sort -u >"$TMP/man-opts"
diff "$TMP/help-opts" "$TMP/man-opts" || fail "--help and docs/gpuboot.8 disagree on the options"
# Exit codes: docs/exit-codes.md lists exactly the codes of src/exit-codes.h.
grep -oE '= [0-9]+,' src/exit-codes.h | grep -oE '[0-9]+' | sort -n >"$TMP/codes-src"
grep -oE '^\| [0-9]+ \|' docs/exit-codes.md | grep -oE '[0-9]+' | sort -n >"$TMP/codes-doc"
diff "$TMP/codes-src" "$TMP/codes-doc" || fail "docs/exit-codes.md and src/exit-codes.h disagree"
echo ok
