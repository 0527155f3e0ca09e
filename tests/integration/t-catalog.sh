# The compiled-in catalog is exactly what the generator makes from data/.
. tests/integration/lib.sh
command -v python3 >/dev/null || skip "python3 missing"
python3 scripts/gen-catalog.py --out "$TMP/catalog-pci.c"
diff -q "$TMP/catalog-pci.c" src/catalog/catalog-pci.c || fail "src/catalog/catalog-pci.c is stale: run make catalog"
echo ok
