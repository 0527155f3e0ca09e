# The command line contract: help, version, exit codes for bad usage, and
# commands that do not exist yet refuse honestly.
. tests/integration/lib.sh
expect_exit 0 "$GB" --help
for c in run detect plan fetch verify status mirror repair catalog; do
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
grep -q -- "--root needs a value DIR" "$TMP/err" || fail "a flag without its value is not named: $(cat "$TMP/err")"
expect_exit 2 "$GB" detect --profile
grep -q -- "--profile needs a value NAME|FILE" "$TMP/err" || fail "--profile without a value"
# No command: usage and exit 2, never the whole pipeline by accident.
expect_exit 2 "$GB"
grep -q "no command given" "$TMP/err" && grep -q "^Usage: gpuboot" "$TMP/err" || fail "no command: usage not printed"
expect_exit 2 "$GB" --root "$FIX/h200-ubuntu2404" --state-dir "$TMP/nocmd"
[ ! -e "$TMP/nocmd" ] || fail "no command wrote a state directory"
# A root that is not a root filesystem is named as such, not "CPU architecture unknown".
mkdir -p "$TMP/empty"
for r in "$TMP/empty" ""; do
	expect_exit 2 "$GB" detect --root "$r"
done
expect_exit 2 "$GB" plan --root "$TMP/empty"
grep -q "no os-release under '$TMP/empty': is this a root filesystem?" "$TMP/err" || fail "empty root: $(cat "$TMP/err")"
# An option that does not apply to the command is an error, not ignored.
expect_exit 2 "$GB" plan --capture "$TMP/cap" --root "$FIX/h200-ubuntu2404"
grep -q -- "--capture does not apply to 'plan'" "$TMP/err" || fail "inapplicable option: $(cat "$TMP/err")"
expect_exit 2 "$GB" status --offline
expect_exit 2 "$GB" detect --dry-run --root "$FIX/h200-ubuntu2404"
# A kernel that is no kernel release: exit 2, before anything is written.
for k in ../../etc "" "6.1 0"; do
	expect_exit 2 "$GB" --repair --kernel "$k" --root "$FIX/l4-debian12" --state-dir "$TMP/badkernel"
	grep -q -- "--kernel needs a kernel release" "$TMP/err" || fail "--kernel '$k': $(cat "$TMP/err")"
done
[ ! -e "$TMP/badkernel" ] || fail "a bad --kernel wrote the state directory"
expect_exit 2 "$GB" verify --sign-key k --root "$FIX/h200-ubuntu2404"
# User strings are cut and escaped: no raw ESC or newline reaches the terminal.
expect_exit 2 "$GB" "$(printf 'bad\033[31mred\nnext')"
grep -q 'bad\\x1b\[31mred\\x0anext' "$TMP/err" || fail "unescaped user string: $(od -c "$TMP/err" | head)"
[ "$(wc -l <"$TMP/err")" -eq 1 ] || fail "an error message spans lines"
if [ "$(id -u)" -ne 0 ]; then
	expect_exit 2 "$GB" run --root "$FIX/h200-ubuntu2404"
	grep -q "run as root or pass --state-dir" "$TMP/err" || fail "not root, no --state-dir"
else
	expect_exit 2 setpriv --reuid=65534 --regid=65534 --clear-groups "$GB" run --root "$FIX/h200-ubuntu2404"
	grep -q "run as root or pass --state-dir" "$TMP/err" || fail "not root, no --state-dir: $(cat "$TMP/err")"
fi
expect_exit 2 "$GB" detect --root /etc/hostname
grep -q "Not a directory" "$TMP/err" || fail "a root that is not a directory is not explained"
expect_exit 2 "$GB" detect --root /nonexistent/dir
expect_exit 2 "$GB" detect extra-argument
expect_exit 2 "$GB" --repair detect
export GPUBOOT_TEST_NOT_IMPLEMENTED="the install (a test stops the run here)"
expect_exit 2 "$GB" run --root "$FIX/l4-debian12" --state-dir "$TMP/st" --run-dir "$TMP/rd"
grep -q "not implemented yet" "$TMP/err" || fail "run does not say it is not implemented yet"
unset GPUBOOT_TEST_NOT_IMPLEMENTED
expect_exit 2 "$GB" repair --root "$FIX/l4-debian12" --state-dir "$TMP/st" --run-dir "$TMP/rd"
grep -q "no NVIDIA driver is installed: nothing to repair" "$TMP/err" || fail "repair with nothing installed: $(cat "$TMP/err")"
expect_exit 2 "$GB" --repair --root "$FIX/l4-debian12" --state-dir "$TMP/st" --run-dir "$TMP/rd"
grep -q '"command": "repair"' "$TMP/st/status.json" || fail "--repair not recorded"
expect_exit 11 "$GB" run --root "$FIX/nogpu-debian12" --state-dir "$TMP/st" --run-dir "$TMP/rd"
grep -q '"result": "no-gpu"' "$TMP/st/status.json" || fail "run without a GPU: status"
# status names the cause and the hint of the last run.
expect_exit 0 "$GB" status --state-dir "$TMP/st"
grep -q "^cause: *plan refused: no NVIDIA GPU" "$TMP/out" && grep -q "^hint: " "$TMP/out" || fail "status without cause and hint: $(cat "$TMP/out")"
# A document that is not a status document is exit 1, not "ok".
for doc in '{}' '{"schema_version": 99, "result": "ok", "command": "run"}' '[]' 'null'; do
	printf '%s' "$doc" >"$TMP/bad-status.json"
	mkdir -p "$TMP/bad" && cp "$TMP/bad-status.json" "$TMP/bad/status.json"
	expect_exit 1 "$GB" status --state-dir "$TMP/bad"
	grep -q "is not a gpuboot status document" "$TMP/err" || fail "status of '$doc': $(cat "$TMP/err")"
done
# Another gpuboot holds the lock: exit 16, and the status is not touched.
cp "$TMP/st/status.json" "$TMP/before.json"
flock "$TMP/st/lock" -c "'$GB' run --root '$FIX/nogpu-debian12' --state-dir '$TMP/st' --run-dir '$TMP/rd' >'$TMP/out' 2>'$TMP/err'; echo \$? >'$TMP/rc'"
[ "$(cat "$TMP/rc")" = 16 ] || fail "locked run exited $(cat "$TMP/rc")"
grep -q "Another gpuboot holds" "$TMP/err" || fail "lock not explained"
cmp -s "$TMP/before.json" "$TMP/st/status.json" || fail "a locked run wrote the status"
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
