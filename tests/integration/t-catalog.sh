# The compiled-in catalog and built-in profiles are exactly what the
# generators make from data/ and profiles/ (make catalog regenerates them).
. tests/integration/lib.sh
command -v python3 >/dev/null || skip "python3 missing"
python3 scripts/gen-catalog.py --out "$TMP/catalog-pci.c" --out-data "$TMP/catalog-data.c"
diff -q "$TMP/catalog-pci.c" src/catalog/catalog-pci.c || fail "src/catalog/catalog-pci.c is stale: run make catalog"
diff -q "$TMP/catalog-data.c" src/catalog/catalog-data.c || fail "src/catalog/catalog-data.c is stale: run make catalog"
python3 scripts/gen-profiles.py --out "$TMP/profiles-builtin.c"
diff -q "$TMP/profiles-builtin.c" src/plan/profiles-builtin.c || fail "src/plan/profiles-builtin.c is stale: run make catalog"
# Spot checks against the data, so a generator bug cannot hide behind regeneration.
grep -q '{ 0x2335, "GH100", "H200 SXM 141GB", GB_ARCH_HOPPER, "9.0", GB_OPEN_LISTED, 0 }' src/catalog/catalog-pci.c || fail "H200 row"
grep -q '{ 0x102d, "GK210", "Tesla K80", GB_ARCH_KEPLER, "3.7", GB_OPEN_NO, 470 }' src/catalog/catalog-pci.c || fail "K80 row"
grep -q '"580.159.04", "x86_64", "TESLA", "[0-9a-f]\{64\}"' src/catalog/catalog-data.c || fail "580.159.04 runfile"
grep -q 'vulkan-beta' src/catalog/catalog-data.c && fail "Vulkan betas leaked into the runfile catalog"
# the later releases, data/nvidia/driver-runfiles-update.tsv (its header names its commit)
grep -q '"580.178.04", "x86_64", "PRODUCTION", "5975a86e[0-9a-f]\{56\}", 397214534ull' src/catalog/catalog-data.c || fail "580.178.04 runfile"
grep -q '"595.91.07", "aarch64", "PRODUCTION", "7ea90dec[0-9a-f]\{56\}", 317767285ull' src/catalog/catalog-data.c || fail "595.91.07 runfile"
# facts checked against NVIDIA's own pages (data/SOURCES.md, 2026-12-04)
grep -q '{ 0x2e12, "GB20B", "GB10", GB_ARCH_BLACKWELL, "12.1",' src/catalog/catalog-pci.c || fail "GB10 is compute capability 12.1"
grep -q '{ 580, GB_BRANCH_LTSB, "2028-06-30", "4.15" }' src/catalog/catalog-data.c || fail "R580 ends June 2028"
grep -q '{ 620, GB_BRANCH_LTSB, "2029-09-30", "4.15" }' src/catalog/catalog-data.c || fail "R620 ends September 2029"
grep -q '{ 610, GB_BRANCH_NEW_FEATURE, "2026-08-31", "4.15" }' src/catalog/catalog-data.c || fail "R610 ends August 2026"
grep -q '^const unsigned gb_proprietary_removed_from = 620;' src/catalog/catalog-data.c || fail "R620 has no proprietary module"
grep -q "^const unsigned gb_open_module_from = 515;" src/catalog/catalog-data.c || fail "the open module begins with R515"
# per device, NVIDIA's open-module README at each tag (data/catalog.json gpu_traits)
grep -q '{ 0x2bb5, "RTX PRO 6000|RTX-PRO-6000", .*, 575, 0 },' src/catalog/catalog-data.c || fail "2BB5 from R575"
grep -q '{ 0x2348, "GH200-144G", .*, 565, 0 },' src/catalog/catalog-data.c || fail "2348 from R565"
grep -q '{ 0x2335, "H200", .*, 0, 550 },' src/catalog/catalog-data.c || fail "H200's open module from R550"
grep -q '{ 0x233b, "H200-NVL", .*, 0, 565 },' src/catalog/catalog-data.c || fail "H200 NVL's open module from R565"
grep -q '{ 0x26ba, "L20", ' src/catalog/catalog-data.c || fail "L20 is 26BA"
# The catalog's date is data/SOURCES.md's "Catalog date", the day its newest
# source was read: the script refuses a SOURCES.md that cites a newer day,
# and one without the line (the plan's catalog-stale warning measures it).
grep -q '^const char gb_catalog_date\[\] = "2026-12-04";$' src/catalog/catalog-data.c || fail "catalog date"
grep -q '^const char gb_catalog_version\[\] = "2026.12.04";$' src/catalog/catalog-data.c || fail "catalog version"
cp -a data "$TMP/data"
printf -- '- a fact read on 2026-12-09\n' >>"$TMP/data/SOURCES.md"
python3 scripts/gen-catalog.py --data "$TMP/data" --out - --out-data - >/dev/null 2>"$TMP/err" && fail "a source newer than the catalog date passed"
grep -q "cites 2026-12-09, newer than its Catalog date 2026-12-04: raise the date" "$TMP/err" || fail "newer source: $(cat "$TMP/err")"
sed -i 's/^Catalog date: 2026-12-04/Catalog date: 2026-12-09/' "$TMP/data/SOURCES.md"
python3 scripts/gen-catalog.py --data "$TMP/data" --out "$TMP/p.c" --out-data "$TMP/d.c" || fail "raised catalog date refused"
grep -q '^const char gb_catalog_date\[\] = "2026-12-09";$' "$TMP/d.c" || fail "raised catalog date not built in"
# a runfile table's header is what it rests on: a later day there is refused too,
# and so is a release in both tables
rm -rf "$TMP/data" && cp -a data "$TMP/data"
sed -i '1s/read 2026-12-04/read 2026-12-09/' "$TMP/data/nvidia/driver-runfiles-update.tsv"
python3 scripts/gen-catalog.py --data "$TMP/data" --out - --out-data - >/dev/null 2>"$TMP/err" && fail "a runfile table read after the catalog date passed"
grep -q "driver-runfiles-update.tsv cites 2026-12-09, newer than its Catalog date 2026-12-04" "$TMP/err" || fail "later runfile table: $(cat "$TMP/err")"
rm -rf "$TMP/data" && cp -a data "$TMP/data"
grep '^580\.173\.02	x86_64' data/nvidia/driver-runfiles.tsv >>"$TMP/data/nvidia/driver-runfiles-update.tsv"
python3 scripts/gen-catalog.py --data "$TMP/data" --out - --out-data - >/dev/null 2>"$TMP/err" && fail "a runfile in both tables passed"
grep -q "runfile 580.173.02 x86_64 in both nvidia/driver-runfiles.tsv and nvidia/driver-runfiles-update.tsv" "$TMP/err" || fail "runfile twice: $(cat "$TMP/err")"
sed -i '/^Catalog date: /d' "$TMP/data/SOURCES.md"
python3 scripts/gen-catalog.py --data "$TMP/data" --out - --out-data - >/dev/null 2>"$TMP/err" && fail "SOURCES.md without a Catalog date passed"
grep -q "no 'Catalog date: YYYY-MM-DD' line" "$TMP/err" || fail "no catalog date: $(cat "$TMP/err")"
# One source of each fact: the script reads only data/ (its curated facts are
# data/catalog.json, each section with what it rests on): a fact changed
# there, and only there, changes the generated C; a section without its
# source, or a source citing a day after the catalog's date, is refused; the
# script itself holds no version, date or device ID.
rm -rf "$TMP/data" && cp -a data "$TMP/data"
python3 - "$TMP/data/catalog.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
[r for r in d["branches"]["rows"] if r["branch"] == 595][0]["end_of_life"] = "2027-06-30"
[r for r in d["gpu_traits"]["rows"] if r["device"] == "2335"][0]["hgx8_nvswitches"] = 5
json.dump(d, open(sys.argv[1], "w"), indent=1)
PY
python3 scripts/gen-catalog.py --data "$TMP/data" --out "$TMP/p.c" --out-data "$TMP/d.c" || fail "the edited catalog.json refused"
diff "$TMP/d.c" src/catalog/catalog-data.c | grep '^[<>]' >"$TMP/diff"
[ "$(grep -c '^<' "$TMP/diff")" = 2 ] && grep -q '^< 	{ 595, GB_BRANCH_PRODUCTION, "2027-06-30", "4.15" },$' "$TMP/diff" &&
	grep -q '^< 	{ 0x2335, "H200", false, false, false, 5, false, 143771, 0, 550 },$' "$TMP/diff" || fail "catalog.json's facts: $(cat "$TMP/diff")"
python3 - "$TMP/data/catalog.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); d["distros"]["source"] = ""
json.dump(d, open(sys.argv[1], "w"), indent=1)
PY
python3 scripts/gen-catalog.py --data "$TMP/data" --out - --out-data - >/dev/null 2>"$TMP/err" && fail "a section without its source passed"
grep -q "section distros missing, or without its source" "$TMP/err" || fail "sourceless section: $(cat "$TMP/err")"
rm -rf "$TMP/data" && cp -a data "$TMP/data"
sed -i 's/"source": "NVIDIA.s CUDA release notes, Table 3/"source": "read 2027-01-02: NVIDIA'"'"'s CUDA release notes, Table 3/' "$TMP/data/catalog.json"
python3 scripts/gen-catalog.py --data "$TMP/data" --out - --out-data - >/dev/null 2>"$TMP/err" && fail "catalog.json citing a later day passed"
grep -q "catalog.json cites 2027-01-02, newer than its Catalog date" "$TMP/err" || fail "later day in catalog.json: $(cat "$TMP/err")"
! grep -nE '"[0-9]{3}\.[0-9]+|20[0-9]{2}-[0-9]{2}-[0-9]{2}"|0x[0-9a-f]{4}[,)]' scripts/gen-catalog.py || fail "a fact typed into scripts/gen-catalog.py"
echo ok
