# Secure Boot as the kernel sees it: the SecureBoot variable under the UEFI
# global GUID, shim's MokSBStateRT, the lockdown mode, and the effective
# answer (.secure_boot.enforcing) that says whether an unsigned module loads.
# The base is a capture from a real guest (vm-tests bookworm-nvidia-secureboot).
. tests/integration/lib.sh
SB=8be4df61-93ca-11d2-aa0d-00e098032b8c
MOK=605dab50-e046-4300-abb6-3dd810dd8b23
M=$TMP/m
cp -a "$FIX/secureboot-debian12-qemu" "$M"
V=$M/sys/firmware/efi/efivars
L=$M/sys/kernel/security/lockdown

# sb: print "enabled shim lockdown enforcing" from the last detect --json.
sb() {
	expect_exit 0 "$GB" --root "$M" detect --json
	python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["secure_boot"]; print(s["enabled"], s["shim_validation_disabled"], s["lockdown"], s["enforcing"])' "$TMP/out"
}
want() { # WANT MESSAGE
	got=$(sb)
	[ "$got" = "$1" ] || fail "$2: got '$got', want '$1'"
}
want_quiet() {
	[ ! -s "$TMP/err" ] || { cat "$TMP/err"; fail "$1 warned"; }
}

want "True False integrity True" "the fixture (captured in a Debian 12 guest under OVMF Secure Boot)"
want_quiet "the fixture"

# The wrong GUID the detector once used is not the SecureBoot variable.
mv "$V/SecureBoot-$SB" "$V/SecureBoot-8be4df61-93ca-11d0-aa4d-00e098032b8c"
rm "$L"
want "False False None False" "only a SecureBoot under a wrong GUID"
mv "$V/SecureBoot-8be4df61-93ca-11d0-aa4d-00e098032b8c" "$V/SecureBoot-$SB"

# shim told to stop validating (volatile runtime copy, as shim makes it).
printf '\006\000\000\000\001' >"$V/MokSBStateRT-$MOK"
want "True True None False" "MokSBStateRT=1, no lockdown file"
want_quiet "MokSBStateRT=1"
# ... but the kernel locked down anyway: still refused.
printf 'none [integrity] confidentiality\n' >"$L"
want "True True integrity True" "MokSBStateRT=1 with lockdown integrity"
printf '[none] integrity confidentiality\n' >"$L"
want "True True none False" "MokSBStateRT=1 with lockdown none"
# A non-volatile MokSBStateRT was not made by shim: the kernel ignores it, so do we.
printf '\007\000\000\000\001' >"$V/MokSBStateRT-$MOK"
want "True False none True" "non-volatile MokSBStateRT"
printf '\006\000\000\000\000' >"$V/MokSBStateRT-$MOK"
want "True False none True" "MokSBStateRT=0"

# Garbled variables: null with a warning, never a crash.
printf '\006\000\001' >"$V/MokSBStateRT-$MOK"
want "True None none True" "a 3-byte MokSBStateRT"
grep -q "MokSBStateRT" "$TMP/err" || fail "a short MokSBStateRT gave no warning"
head -c 4096 /dev/zero >"$V/MokSBStateRT-$MOK"
want "True None none True" "a 4 KiB MokSBStateRT"
rm "$V/MokSBStateRT-$MOK"
printf '\006\000\000\000\001\001' >"$V/SecureBoot-$SB"
want "None False none False" "a 6-byte SecureBoot"
grep -q "SecureBoot" "$TMP/err" || fail "a long SecureBoot gave no warning"
printf '\006\000\000\000\000' >"$V/SecureBoot-$SB"

# Lockdown: the bracketed word, whatever the others are; garbage is null.
printf 'none integrity [confidentiality]\n' >"$L"
want "False False confidentiality True" "Secure Boot off, lockdown confidentiality"
printf 'none [integrity] [confidentiality]\n' >"$L"
want "False False confidentiality True" "two levels bracketed"
for bad in 'none integrity confidentiality' '[none' '[] integrity' '[NONE] x' "[$(head -c 100 /dev/zero | tr '\0' a)]"; do
	printf '%s\n' "$bad" >"$L"
	want "False False None False" "lockdown '$bad'"
	grep -q "lockdown" "$TMP/err" || fail "lockdown '$bad' gave no warning"
done
printf '\001\002\n' >"$L"
want "False False None False" "lockdown with control bytes"

# No lockdown file: the command line still says what the kernel was told.
rm "$L"
sed 's/$/ lockdown=integrity/' "$FIX/secureboot-debian12-qemu/proc/cmdline" >"$M/proc/cmdline"
want "False False None True" "lockdown=integrity on the command line"
sed 's/$/ module.sig_enforce=1/' "$FIX/secureboot-debian12-qemu/proc/cmdline" >"$M/proc/cmdline"
want "False False None True" "module.sig_enforce=1 on the command line"
sed 's/$/ xlockdown=integrity/' "$FIX/secureboot-debian12-qemu/proc/cmdline" >"$M/proc/cmdline"
want "False False None False" "a word that only ends in lockdown=integrity"

# Not EFI and no lockdown file: nothing is known.
rm -r "$M/sys/firmware"
want "None None None None" "no EFI, no lockdown"
expect_exit 0 "$GB" --root "$M" detect
grep -q '^secure boot: not EFI / unknown, lockdown -, unsigned modules unknown$' "$TMP/out" || fail "text: $(cat "$TMP/out")"
echo "secure boot, shim and lockdown as expected"
