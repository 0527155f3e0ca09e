# Packer: a Debian 12 AMI with Debian's NVIDIA driver installed by gpuboot at
# build time (image mode, docs/install.md). The chroot builder mounts the
# source AMI's volume and runs gpuboot against the mount:
#   gpuboot --root MOUNT run --target-gpu T4 --profile minimal --method distro
# installs the packages chrooted (bind mounts made and removed by gpuboot),
# builds the module with DKMS for the image's kernels, holds the packages,
# blacklists nouveau, writes the kernel hooks and gpuboot-repair.service, and
# keeps its journal and status in the image (/var/lib/gpuboot): no GPU is
# needed here and nothing is verified (the status says
# installed-pending-first-boot). gpuboot is copied into the image, where its
# gpuboot-firstboot.service (enabled by the build) keeps the installed driver
# at the instance's first boot, loads it and verifies it, with no download
# and whatever the instance's user-data.
#
# Checked by tests/integration/t-packer.sh (`packer validate`). Set
# source_ami to a Debian 12 AMI of your region, gpuboot_path to where the
# build host has the gpuboot binary (the release's binary for the build
# host's arch, checked against the release's signed SHA256SUMS first:
# docs/install-gpuboot.md), gpuboot_sha256 to that binary's line in the
# release's SHA256SUMS (the build runs the binary only when its sha256 is
# that one, as the cloud-init examples do), and gpu to the instance type's
# GPU. A build killed half-way (a Packer timeout) can leave gpuboot's bind
# mounts in the volume: `gpuboot --root MOUNT cleanup` undoes them (only
# gpuboot's own), and the next build continues from the image's journal.

variable "gpuboot_path" {
  type    = string
  default = "/usr/local/bin/gpuboot"
}

variable "gpuboot_sha256" {
  type        = string
  default     = ""
  description = "the sha256 of gpuboot_path, from the release's SHA256SUMS; the build refuses to run another binary"
}

variable "gpu" {
  type    = string
  default = "T4"
}

variable "source_ami" {
  type    = string
  default = "ami-00000000000000000"
}

variable "region" {
  type    = string
  default = "us-east-1"
}

source "amazon-chroot" "debian12-nvidia" {
  ami_name    = "debian12-nvidia-{{timestamp}}"
  source_ami  = var.source_ami
  region      = var.region
  ena_support = true
  post_mount_commands = [
    "printf '%s  %s\\n' '${var.gpuboot_sha256}' '${var.gpuboot_path}' | sha256sum --check --strict --quiet - || { echo 'gpuboot: ${var.gpuboot_path} is not the binary whose sha256 gpuboot_sha256 names (set it from the release SHA256SUMS); not run' >&2; exit 1; }",
    "install -D -m 0755 ${var.gpuboot_path} {{.MountPath}}/usr/local/bin/gpuboot",
    "${var.gpuboot_path} --root {{.MountPath}} run --target-gpu ${var.gpu} --profile minimal --method distro"
  ]
}

build {
  sources = ["source.amazon-chroot.debian12-nvidia"]
}
