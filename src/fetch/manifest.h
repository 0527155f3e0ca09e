/* SPDX-License-Identifier: MIT */
/* Manifests: NVIDIA's redistrib_<version>.json, and gpuboot's own signed
 * mirror manifest (docs/mirror.md). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct gb_manifest_entry {
	char name[64]; /* component ("cuda_cudart") or "" for mirror entries */
	char version[32];
	char path[512]; /* relative path: "cuda_cudart/linux-x86_64/cuda_cudart-...tar.xz" */
	char sha256[65];
	unsigned long long size;
};

/* A prebuilt NVIDIA module package a mirror serves (docs/mirror.md,
 * "Prebuilt modules"): the package is an artifact (path, sha256, size);
 * this says what it fits. Every field is checked when the manifest is
 * read; only a node whose kernel matches all of them may take it. */
struct gb_mirror_module {
	char path[512]; /* the package, listed in the artifacts */
	char distro[48]; /* os-release "ID:VERSION_ID": "debian:12" */
	char arch[16]; /* the package's architecture: "amd64" */
	char kernel[80]; /* the kernel release: "6.1.0-50-amd64" */
	char kernel_package[96], kernel_package_version[64]; /* "linux-image-6.1.0-50-amd64", "6.1.158-1" */
	char vermagic[160]; /* the module's, as modinfo says */
	char driver[32], flavor[16]; /* "535.309.01", "open" | "proprietary" */
	char package[128], package_version[96]; /* the .deb's Package and Version */
	char signer[128]; /* the module signer's certificate subject, "" = as DKMS left it */
};

struct gb_manifest {
	struct gb_manifest_entry *v;
	size_t n;
	struct gb_mirror_module *mods; /* mirror manifests: the prebuilt modules */
	size_t n_mods;
	/* mirror manifests */
	uint64_t version;
	char expires[32], created[32], key_id[40];
};

void gb_manifest_done(struct gb_manifest *m);
/* "2027-02-28T12:00:00Z" (UTC, as the signed documents write it) to seconds. */
int gb_iso_to_epoch(const char *s, uint64_t *ret);
const struct gb_manifest_entry *gb_manifest_find(const struct gb_manifest *m, const char *path);

/* Parse NVIDIA's redistrib JSON for one platform ("linux-x86_64"). Each
 * entry's path is checked (relative, no ".."), sha256 and size validated.
 * Handles the plain form (component -> platform -> entry) and the variant
 * form (platform -> cudaNN -> entry) of cuDNN's manifests (cuda_variant). */
int gb_redistrib_parse(const char *text, size_t len, const char *platform, const char *cuda_variant,
                       struct gb_manifest *ret, char *err, size_t errsz);

/* gpuboot's mirror manifest: verify SIG (hex Ed25519 signature over the exact
 * bytes of TEXT) against one of the trusted PEM public keys, then parse it,
 * refuse it if expired (now_s) or older than min_version (-ESTALE: then
 * ret->version alone is set, the refused manifest's version). */
int gb_mirror_manifest_verify(const char *text, size_t len, const char *sig_hex, char *const *key_files, uint64_t now_s,
                              uint64_t min_version, struct gb_manifest *ret, char *err, size_t errsz);

/* Parse a mirror manifest whose signature the caller has checked (its own
 * manifest, signed again by the same key): no expiry or version checks. */
int gb_mirror_manifest_parse(const char *text, size_t len, struct gb_manifest *ret, char *err, size_t errsz);

/* Add an artifact, or replace the one at its path. -ENOMEM, -E2BIG. */
int gb_manifest_put(struct gb_manifest *m, const struct gb_manifest_entry *e);

/* Add (or replace: same distro, arch, kernel, driver and flavour) a module
 * entry. -ENOMEM. */
int gb_mirror_module_put(struct gb_manifest *m, const struct gb_mirror_module *mod);

/* Write a mirror manifest for entries and sign it with a PEM private key.
 * *ret_text and *ret_sig are malloc'd. */
int gb_mirror_manifest_sign(const struct gb_manifest *m, const char *key_file, char **ret_text, char **ret_sig,
                            char *err, size_t errsz);

/* The last mirror manifest version accepted (rollback protection):
 * <state>/mirror-version. *ret is 0 when the file does not exist; a file
 * that cannot be read or does not hold a decimal number is an error
 * (-EBADMSG, or the read's errno) with a message naming it and the fix,
 * never 0: that would switch rollback protection off. */
int gb_mirror_version_load(const char *state_dir, uint64_t *ret, char *err, size_t errsz);
int gb_mirror_version_store(const char *state_dir, uint64_t v);
