# make lint, as a test: formatting, banned functions, cppcheck.
. tests/integration/lib.sh
command -v clang-format >/dev/null || skip "clang-format missing (make deps)"
command -v cppcheck >/dev/null || skip "cppcheck missing (make deps)"
scripts/lint.sh
