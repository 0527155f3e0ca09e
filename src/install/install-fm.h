/* SPDX-License-Identifier: MIT */
/* The fabric manager for the runfile method: NVIDIA ships it apart from
 * the .run, in the driver's redistributable manifest
 * (compute/nvidia-driver/redist/redistrib_<version>.json: "fabricmanager"
 * and "libnvidia_nscq", per platform relative_path, sha256, size) and
 * its -archive.tar.xz files. The manifest is trusted only as the caller
 * got it (a signed mirror's artifact, or a sha256 pinned by a signed
 * catalog): this file parses and places, it downloads nothing. Layout:
 * data/nvswitch-facts-2026-12.md ("The redistributable archives"). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "detect/detect.h" /* GB_FM_MARKER, gb_fm_marker_version */

struct gb_ctx;
struct gb_journal;

/* An archive is at most this big (NVIDIA's are 0.3-2 MB). */
#define GB_FM_MAX_ARCHIVE (256ull << 20)

struct gb_fm_redist_entry {
	char relative_path[200]; /* "fabricmanager/linux-x86_64/fabricmanager-linux-x86_64-V-archive.tar.xz" */
	char sha256[65];
	unsigned long long size;
};

struct gb_fm_redist {
	char version[32];
	char platform[16]; /* "x86_64" or "sbsa" */
	struct gb_fm_redist_entry fm, nscq;
};

/* Parse a redistrib_<version>.json (len bytes at text) for the driver
 * version and the CPU arch ("x86_64", "aarch64"). Both components must be
 * there at exactly that version, each for the platform, with
 * relative_path the archive name NVIDIA gives it, a sha256 of 64 hex
 * digits and a size (a decimal string, NVIDIA's form) within
 * GB_FM_MAX_ARCHIVE. 0, -EBADMSG (err names the key and why), -ENOMEM. */
int gb_fm_redist_parse(const char *text, size_t len, const char *version, const char *arch, struct gb_fm_redist *ret,
                       char *err, size_t errsz);

struct gb_fm_input {
	const struct gb_fm_redist *redist; /* parsed from a trusted manifest */
	const char *fm_archive; /* the fabricmanager archive (host path) */
	const char *nscq_archive; /* the libnvidia_nscq archive (host path) */
	const char *work; /* a host directory for the unpacked trees (removed after) */
};

struct gb_fm_result {
	unsigned placed; /* files and links written in this run */
	bool changed;
	char libdir[64]; /* where libnvidia-nscq went, below the root */
	char error[1024];
};

/* Each archive's size and sha256 against the manifest: 0, or
 * -EKEYREJECTED (the fetch stage's refusal: exit 13) with ret->error. */
int gb_fm_verify(const struct gb_fm_input *in, struct gb_fm_result *ret);

/* The install in three steps, so the runfile method checks and unpacks
 * the fabric manager before it installs the driver, and places it after:
 * gb_fm_unpack (gb_fm_verify, then both archives into the work directory,
 * each tree checked to be NVIDIA's layout), gb_fm_place (every file
 * journaled, the marker last), gb_fm_unpacked_done (the trees removed;
 * also after a failure). gb_install_fabricmanager is the three at once. */
struct gb_fm_unpacked {
	int fm_top, nscq_top; /* the archives' top directories */
};
int gb_fm_unpack(const struct gb_fm_input *in, struct gb_fm_unpacked *u, struct gb_fm_result *ret);
int gb_fm_place(struct gb_ctx *ctx, const struct gb_fm_input *in, const struct gb_fm_unpacked *u, struct gb_journal *j,
                struct gb_fm_result *ret);
void gb_fm_unpacked_done(const struct gb_fm_input *in, struct gb_fm_unpacked *u);

/* Verify each archive against the manifest (gb_fm_verify, before anything
 * is unpacked), unpack both into
 * the work directory (gb_unpack: no absolute path, no "..", no link
 * followed, sizes capped), check each tree is the one NVIDIA's layout
 * names (<component>-linux-<platform>-<version>-archive/, its files
 * regular files), then place every file where NVIDIA's packages put them,
 * each write journaled (no write when the content is already there), the
 * marker last. Nothing is placed unless both archives verified and
 * unpacked. 0 or a negative errno, ret->error one line. */
int gb_install_fabricmanager(struct gb_ctx *ctx, const struct gb_fm_input *in, struct gb_journal *j,
                             struct gb_fm_result *ret);
