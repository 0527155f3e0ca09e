# The Packer template of the image-mode example is a template Packer takes.
. tests/integration/lib.sh
command -v packer >/dev/null || skip "packer missing (scripts/install-deps.sh installs Debian's)"
packer validate cloud-init/packer-debian12.pkr.hcl >"$TMP/out" 2>&1 || fail "packer validate: $(cat "$TMP/out")"
grep -q -- '--root {{.MountPath}} run --target-gpu' cloud-init/packer-debian12.pkr.hcl || fail "the template does not run gpuboot in image mode"
# The build runs the binary only when its sha256 is gpuboot_sha256's: the
# first post-mount command, as Packer hands it to the shell (HCL's escapes
# undone, the variables filled in), with the right, a wrong and no sha256.
printf '#!/bin/sh\necho ran\n' >"$TMP/gpuboot" && chmod +x "$TMP/gpuboot"
good=$(sha256sum "$TMP/gpuboot" | cut -d' ' -f1)
check_cmd() { # SHA EXPECTED-EXIT
	python3 - cloud-init/packer-debian12.pkr.hcl "$TMP/gpuboot" "$1" >"$TMP/cmd" <<'PY'
import re, sys
t = open(sys.argv[1]).read()
cmds = re.search(r'post_mount_commands = \[\n\s*"((?:[^"\\]|\\.)*)"', t).group(1)
cmd = cmds.encode().decode("unicode_escape")  # HCL's \\ and \" as the shell gets them
cmd = cmd.replace("${var.gpuboot_path}", sys.argv[2]).replace("${var.gpuboot_sha256}", sys.argv[3])
print(cmd)
PY
	set +e
	sh "$TMP/cmd" >"$TMP/out" 2>"$TMP/err"
	got=$?
	set -e
	[ "$got" -eq "$2" ] || fail "the sha256 check with '$1': exit $got, expected $2: $(cat "$TMP/err") [$(cat "$TMP/cmd")]"
}
check_cmd "$good" 0
check_cmd "$(echo "$good" | tr 0-9a-f 1-9a-f0)" 1
grep -q "is not the binary whose sha256 gpuboot_sha256 names" "$TMP/err" || fail "the refusal: $(cat "$TMP/err")"
check_cmd "" 1
echo ok
