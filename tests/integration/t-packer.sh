# The Packer template of the image-mode example is a template Packer takes.
. tests/integration/lib.sh
command -v packer >/dev/null || skip "packer missing (scripts/install-deps.sh installs Debian's)"
packer validate cloud-init/packer-debian12.pkr.hcl >"$TMP/out" 2>&1 || fail "packer validate: $(cat "$TMP/out")"
grep -q -- '--root {{.MountPath}} run --target-gpu' cloud-init/packer-debian12.pkr.hcl || fail "the template does not run gpuboot in image mode"
echo ok
