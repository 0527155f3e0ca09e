# The first-boot examples as users paste them (cloud-init/gpuboot.sh and the
# script inside cloud-init/gpuboot.yaml, which must be the same): the binary
# is chosen by `uname -m`, runs only when its sha256 is the one pasted from
# the release's SHA256SUMS, and every failure says what to do. Run in a
# private mount namespace (tmpfs over /usr/local/bin and /var/log) with fake
# release binaries that record how they were run; needs root for the mounts.
. tests/integration/lib.sh
[ "$(id -u)" -eq 0 ] || skip "needs root (mount namespace with tmpfs)"
command -v unshare >/dev/null || skip "unshare missing (util-linux)"
python3 -c 'import yaml' 2>/dev/null || fail "python3-yaml missing (scripts/install-deps.sh installs it)"

# The two examples carry the same script.
python3 - <<'PY' || fail "cloud-init/gpuboot.yaml's script and cloud-init/gpuboot.sh differ"
import yaml
y = yaml.safe_load(open("cloud-init/gpuboot.yaml"))
files = {f["path"]: f["content"] for f in y["write_files"]}
a = files["/usr/local/sbin/gpuboot-firstboot"]
b = open("cloud-init/gpuboot.sh").read()
a, b = a[a.index("set -u"):], b[b.index("set -u"):]
assert a == b, "drift"
assert y["runcmd"] == [["/usr/local/sbin/gpuboot-firstboot"]]
PY

rel=$TMP/release
mkdir -p "$rel" "$TMP/bin"
for a in x86_64 aarch64; do
	printf '#!/bin/sh\necho "%s $*" >>/var/log/fake-gpuboot.calls\n[ "$1" = --version ] && echo "gpuboot 0.1.0"\n[ "$1" = run ] && exit 11\nexit 0\n' "$a" >"$rel/gpuboot-$a"
done
(cd "$rel" && sha256sum gpuboot-aarch64 gpuboot-x86_64 >SHA256SUMS)

# paste SUMS_FILE URL OUT: the example with the release's values filled in, as a user does it
paste() {
	awk -v sums="$1" -v url="$2" '
		/^GPUBOOT_RELEASE=/ { print "GPUBOOT_RELEASE=" url; next }
		/^GPUBOOT_SHA256SUMS='\''$/ { print; while ((getline l < sums) > 0) print l; skip = 1; next }
		skip && /^'\''$/ { skip = 0 }
		!skip { print }' cloud-init/gpuboot.sh >"$3"
}
# first_boot SCRIPT [UNAME_M]: run it as cloud-init would, in a private mount namespace;
# the log it wrote in $TMP/log, the fake's calls in $TMP/calls, installed binary's sha in $TMP/installed
# (a systemctl that records, never the host's: the exit-3 path reboots;
# the script's own exit code in $TMP/rc)
printf '#!/bin/sh\necho "systemctl $*" >>"%s/systemctl.calls"\n' "$TMP" >"$TMP/bin/systemctl"
chmod +x "$TMP/bin/systemctl"
first_boot() {
	script=$1 arch=${2:-}
	path=$TMP/bin:$PATH
	rm -f "$TMP/bin/uname" "$TMP/systemctl.calls"
	if [ -n "$arch" ]; then
		printf '#!/bin/sh\n[ "$1" = -m ] && echo %s && exit 0\nexec /bin/uname "$@"\n' "$arch" >"$TMP/bin/uname"
		chmod +x "$TMP/bin/uname"
	fi
	set +e
	env PATH="$path" unshare -m sh -c '
		mount --make-rprivate / && mount -t tmpfs none /usr/local/bin && mount -t tmpfs none /var/log || exit 90
		sh "$1"; rc=$?
		cat /var/log/gpuboot-firstboot.log >"$2/log" 2>/dev/null
		cat /var/log/fake-gpuboot.calls >"$2/calls" 2>/dev/null || : >"$2/calls"
		if [ -e /usr/local/bin/gpuboot ]; then sha256sum /usr/local/bin/gpuboot | cut -d" " -f1 >"$2/installed"; else : >"$2/installed"; fi
		exit $rc' sh "$script" "$TMP"
	rc=$?
	set -e
	[ "$rc" -ne 90 ] || fail "could not set up the mount namespace"
	echo "$rc" >"$TMP/rc"
}
sha_of() { sha256sum "$rel/$1" | cut -d' ' -f1; }

# 1. x86_64 (this machine): the x86_64 binary is checked, installed and run.
paste "$rel/SHA256SUMS" "file://$rel" "$TMP/good.sh"
first_boot "$TMP/good.sh"
[ "$(uname -m)" = x86_64 ] || skip "this test expects an x86_64 host"
grep -q "gpuboot-x86_64 sha256 $(sha_of gpuboot-x86_64) verified" "$TMP/log" || fail "x86_64: no verified line: $(cat "$TMP/log")"
[ "$(cat "$TMP/installed")" = "$(sha_of gpuboot-x86_64)" ] || fail "x86_64: the installed binary is not gpuboot-x86_64"
printf 'x86_64 --version\nx86_64 detect\nx86_64 plan --profile training\nx86_64 run --profile training\nx86_64 status\n' >"$TMP/want"
cmp -s "$TMP/calls" "$TMP/want" || fail "x86_64: gpuboot was run as: $(cat "$TMP/calls")"
grep -q "gpuboot run exited 11" "$TMP/log" || fail "x86_64: run's exit code not logged"
[ "$(cat "$TMP/rc")" = 11 ] || fail "x86_64: the script exited $(cat "$TMP/rc"), not gpuboot's 11 (cloud-init would report success)"
[ ! -e "$TMP/systemctl.calls" ] || fail "x86_64: exit 11 rebooted: $(cat "$TMP/systemctl.calls")"
# The timeouts of the download: a stalled one never blocks first boot.
grep -q "curl .*--connect-timeout [0-9]* --max-time [0-9]*" cloud-init/gpuboot.sh || fail "curl without timeouts"

# 1b. Exit 3 (a reboot is needed): the script reboots and exits 3; the resume unit finishes.
sed -i 's/\[ "\$1" = run \] \&\& exit 11/[ "$1" = run ] \&\& exit 3/' "$rel/gpuboot-x86_64"
(cd "$rel" && sha256sum gpuboot-aarch64 gpuboot-x86_64 >SHA256SUMS)
paste "$rel/SHA256SUMS" "file://$rel" "$TMP/reboot.sh"
first_boot "$TMP/reboot.sh"
[ "$(cat "$TMP/rc")" = 3 ] || fail "exit 3: the script exited $(cat "$TMP/rc"): $(cat "$TMP/log")"
[ "$(cat "$TMP/systemctl.calls" 2>/dev/null)" = "systemctl reboot" ] || fail "exit 3: no reboot: $(cat "$TMP/log")"
grep -q "gpuboot-resume.service finishes the run" "$TMP/log" || fail "exit 3: the log does not say: $(cat "$TMP/log")"
sed -i 's/\[ "\$1" = run \] \&\& exit 3/[ "$1" = run ] \&\& exit 11/' "$rel/gpuboot-x86_64"
(cd "$rel" && sha256sum gpuboot-aarch64 gpuboot-x86_64 >SHA256SUMS)

# 2. aarch64 (uname -m says so): the aarch64 binary.
first_boot "$TMP/good.sh" aarch64
[ "$(cat "$TMP/installed")" = "$(sha_of gpuboot-aarch64)" ] || fail "aarch64: the installed binary is not gpuboot-aarch64: $(cat "$TMP/log")"
grep -q "^aarch64 run --profile training" "$TMP/calls" || fail "aarch64: not run: $(cat "$TMP/calls")"

# 3. A binary that is not the pasted one (altered download, or another release): not installed, not run.
printf '\n# altered\n' >>"$rel/gpuboot-x86_64"
first_boot "$TMP/good.sh"
[ ! -s "$TMP/installed" ] && [ ! -s "$TMP/calls" ] || fail "altered binary: installed or run"
grep -q "gpuboot-x86_64 has sha256 $(sha_of gpuboot-x86_64), not the pasted .*gpuboot was not run. See docs/install-gpuboot.md" "$TMP/log" ||
	fail "altered binary: the log does not say what happened: $(cat "$TMP/log")"

# 4. The example's zeros left in place; 5. a machine with no release binary; 6. a SHA256SUMS without this arch's line.
first_boot cloud-init/gpuboot.sh
grep -q "holds the example's zeros: paste the release's SHA256SUMS" "$TMP/log" || fail "zeros: $(cat "$TMP/log")"
[ ! -s "$TMP/calls" ] || fail "zeros: gpuboot was run"
first_boot "$TMP/good.sh" ppc64le
grep -q "no gpuboot release binary for ppc64le" "$TMP/log" || fail "ppc64le: $(cat "$TMP/log")"
grep -v gpuboot-x86_64 "$rel/SHA256SUMS" >"$TMP/arm-only"
paste "$TMP/arm-only" "file://$rel" "$TMP/arm-only.sh"
first_boot "$TMP/arm-only.sh"
grep -q "no sha256 for gpuboot-x86_64 in GPUBOOT_SHA256SUMS" "$TMP/log" || fail "missing line: $(cat "$TMP/log")"

# 7. A download that fails: said, not run (5 tries with sleeps: use a URL that fails at once, and no sleep).
sed 's/sleep \$((i \* 5))/:/' "$TMP/good.sh" >"$TMP/nosleep.sh"
sed -i "s|^GPUBOOT_RELEASE=.*|GPUBOOT_RELEASE=file://$TMP/nowhere|" "$TMP/nosleep.sh"
first_boot "$TMP/nosleep.sh"
grep -q "could not download file://$TMP/nowhere/gpuboot-x86_64 (5 tries)" "$TMP/log" || fail "download failure: $(cat "$TMP/log")"
[ ! -s "$TMP/calls" ] || fail "download failure: gpuboot was run"
echo ok
