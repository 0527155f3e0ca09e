# The layering lint (scripts/check-layers.py, docs/layers.md): the tree
# passes it, and it catches what it must: a lower layer including a higher
# one (shared/ including run/), a folder with no place in the order, and
# the probe including gpuboot's headers.
. tests/integration/lib.sh
python3 scripts/check-layers.py || fail "src/ breaks its layering"
T=$TMP/tree
mkdir -p "$T/src/shared" "$T/src/run" "$T/src/effect" "$T/src/probe" "$T/src/newdir"
printf '#pragma once\n' >"$T/src/run/run.h"
printf '#pragma once\n' >"$T/src/effect/journal.h"
printf '#include "shared/ok.h"\n' >"$T/src/effect/ok.c"
printf '#pragma once\n' >"$T/src/shared/ok.h"
printf '#include "effect/journal.h"\n#include "run/run.h"\n' >"$T/src/run/fine.c"
python3 scripts/check-layers.py "$T" >"$TMP/out" || fail "a well-layered tree refused: $(cat "$TMP/out")"
printf '#include "ok.h"\n#include "run/run.h"\n' >"$T/src/shared/bad.c"
printf '#include "shared/ok.h"\n' >"$T/src/newdir/x.c"
printf '#include "shared/ok.h"\n' >"$T/src/probe/p.c"
expect_exit 1 python3 scripts/check-layers.py "$T"
grep -q 'src/shared/bad.c:2: shared (layer 0) includes "run/run.h" of run' "$TMP/out" || fail "upward include: $(cat "$TMP/out")"
grep -q "src/newdir/x.c: folder 'newdir' has no place" "$TMP/out" || fail "unknown folder: $(cat "$TMP/out")"
grep -q 'src/probe/p.c:1: the probe includes "shared/ok.h"' "$TMP/out" || fail "probe: $(cat "$TMP/out")"
[ "$(wc -l <"$TMP/out")" -eq 3 ] || fail "more than the three: $(cat "$TMP/out")"
echo ok
