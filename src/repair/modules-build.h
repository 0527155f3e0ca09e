/* SPDX-License-Identifier: MIT */
/* gpuboot --root IMAGE modules build: the NVIDIA module built once per
 * kernel in an image root and published, signed, in the site's mirror
 * (docs/mirror.md, "Prebuilt modules"). */
#pragma once

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>

struct gb_ctx;
struct gb_journal;

struct gb_modules_build_opts {
	const char *out_dir; /* the mirror directory (its manifest is added to) */
	const char *sign_key; /* the mirror's Ed25519 private key */
	const char *module_key, *module_cert; /* the site's module signing pair, NULL: as DKMS left them */
	char *const *kernels; /* NULL: every kernel of the image (lib/modules/KVER with boot/vmlinuz-KVER) */
	size_t n_kernels;
	uint64_t version; /* the manifest's version, 0: the time */
	unsigned build_timeout_min; /* one dkms command, 0: repair's default */
};

/* For each kernel: the module at the image's Debian DKMS package's version
 * (built by DKMS in the image when it is not there yet: gb_repair), signed
 * with the site's pair when given, packed as a .deb that provides what the
 * DKMS package provides (nvidia-kernel-VERSION, nvidia-open-kernel-VERSION)
 * and depends on that kernel's image package at its exact version, written
 * to OUT_DIR/modules/ and listed in OUT_DIR's manifest with what it fits;
 * the manifest is signed again. *ret_json: {kernels: [...]} (also on a
 * failure, what was done). Returns a GB_EXIT_* code with err set when not 0. */
int gb_modules_build(struct gb_ctx *ctx, const struct gb_modules_build_opts *o, struct gb_journal *j,
                     json_object **ret_json, char *err, size_t errsz);
