/* SPDX-License-Identifier: MIT */
/* The NVIDIA Container Toolkit after its packages are on disk: the
 * nvidia runtime declared to every container engine present under the root
 * (docker, containerd, CRI-O; podman uses CDI alone), with drop-in files
 * wherever the engine reads them and never a rewrite of the user's main
 * configuration (docker has no drop-in directory: daemon.json is merged,
 * key by key); and a CDI specification generated now (live) and at every
 * boot (NVIDIA's refresh units where the toolkit ships them, else
 * gpuboot-cdi.service). Every write through gb_journal_write_file, every
 * command through gb_journal_run or the journaled systemctl; a rerun with
 * everything in place has no effect. What each engine gets, file by file,
 * and how to undo it: docs/container-toolkit.md. */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include "install/install.h"

struct gb_ctx;
struct gb_journal;

#define GB_CTK_RUNTIME_PATH "/usr/bin/nvidia-container-runtime"
#define GB_CTK_MAX_ENGINES 4

/* Below the root. */
#define GB_CTK_DOCKER_CONFIG "etc/docker/daemon.json"
#define GB_CTK_CONTAINERD_CONFIG "etc/containerd/config.toml"
#define GB_CTK_CONTAINERD_DROPIN "etc/containerd/conf.d/99-nvidia.toml"
#define GB_CTK_CONTAINERD_IMPORT "/etc/containerd/conf.d/*.toml"
#define GB_CTK_CRIO_DROPIN "etc/crio/crio.conf.d/99-nvidia.toml"
#define GB_CTK_CDI_UNIT "gpuboot-cdi.service"
#define GB_CTK_CDI_UNIT_PATH "etc/systemd/system/" GB_CTK_CDI_UNIT
#define GB_CTK_CDI_SPEC "/etc/cdi/nvidia.yaml"
#define GB_CTK_REFRESH_SPEC "/var/run/cdi/nvidia.yaml" /* where NVIDIA's refresh service writes */

/* The caps on what is read: a configuration larger than this is refused. */
#define GB_CTK_CONFIG_MAX (1024u * 1024u)

struct gb_ctk_input {
	bool image; /* installing into an image: units enabled, nothing started, restarted or generated */
	const char *runtime_path; /* NULL: GB_CTK_RUNTIME_PATH */
	/* Make nvidia the default runtime (docker default-runtime, containerd
	 * default_runtime_name, CRI-O default_runtime). */
	bool set_default;
};

struct gb_ctk_engine_result {
	const char *name; /* "docker" | "containerd" | "cri-o" | "podman" */
	bool present;
	char binary[48]; /* the daemon found, below the root */
	char config[64]; /* the file gpuboot owns or merges ("" for podman) */
	char main_config[64]; /* containerd: config.toml, when gpuboot edited or created it */
	int config_version; /* containerd: the configuration version written */
	const char *version_from; /* containerd: "config" | "binary" | "default" */
	bool changed; /* a file of this engine changed (in this run or the killed run it resumes) */
	bool restarted; /* live: restart_verb was asked of systemd (a no-op where the engine is stopped) */
	const char *restart_verb; /* "try-reload-or-restart" | "try-restart" */
	const char *note; /* why a present engine was left as it was, or NULL */
};

struct gb_ctk_result {
	bool image;
	struct gb_ctk_engine_result engines[GB_CTK_MAX_ENGINES];
	size_t n_engines;
	/* CDI */
	bool cdi_refresh; /* NVIDIA's nvidia-cdi-refresh units regenerate the spec (else gpuboot-cdi.service) */
	char cdi_spec[128]; /* the spec's path on the machine */
	char cdi_unit[48]; /* the unit that regenerates it at boot */
	bool cdi_generated; /* live: nvidia-ctk cdi generate ran */
	bool cdi_changed; /* a unit written or enabled, or the spec generated */
	char error[768]; /* one line: what failed, on what, why, what to do (set on failure) */
};

/* Declare the nvidia runtime to each engine present under ctx->root (a
 * daemon binary in usr/bin, usr/sbin or usr/local/bin): docker's
 * daemon.json merged, containerd's and CRI-O's drop-ins written (and the
 * one imports entry containerd needs to read its drop-in). Live (not
 * in->image): an engine whose files changed is restarted with systemctl
 * try-restart (docker: try-reload-or-restart; SIGHUP reloads its runtimes).
 * ret is filled (the caller zeroes it once for configure and CDI). Returns
 * 0, or a negative errno with ret->error: -EINVAL (a configuration gpuboot
 * cannot read: bad JSON or TOML, a non-object, a bad runtime path; the file
 * is left as it was), -EFBIG (larger than GB_CTK_CONFIG_MAX), -ELOOP (a
 * configuration that is a symbolic link), -EOPNOTSUPP (a containerd
 * configuration gpuboot cannot carry into a drop-in), -EIO (a restart
 * failed). */
int gb_ctk_configure(struct gb_ctx *ctx, struct gb_journal *j, const struct gb_ctk_input *in,
                     struct gb_ctk_result *ret);

/* The CDI specification: where the toolkit ships nvidia-cdi-refresh.service
 * and .path (toolkit 1.18 and later) they are enabled (and the .path unit
 * started, live); else gpuboot-cdi.service is written and enabled. Live
 * (after the modules are loaded): nvidia-ctk cdi generate into the spec
 * the boot-time unit writes, unless it is there and names the loaded
 * driver's version. Image: nothing runs. Returns 0 or a negative errno
 * with ret->error: -ENOENT (no usr/bin/nvidia-ctk), -EIO (a command
 * failed; its output tail is in the journal and the error). */
int gb_ctk_cdi(struct gb_ctx *ctx, struct gb_journal *j, const struct gb_ctk_input *in, struct gb_ctk_result *ret);

/* {image, engines[{name, present, binary, config, main_config,
 * config_version, version_from, changed, restarted, restart, note}],
 * cdi{refresh_units, spec, unit, generated, changed}, error}. */
json_object *gb_ctk_result_to_json(const struct gb_ctk_result *r);

/* ---- the pure parts (exposed for tests and fuzzers) ---- */

/* docker: merge runtimes.nvidia = {"path": runtime_path, "args": []} (and
 * default-runtime = "nvidia" when set_default) into the daemon.json text,
 * keeping every other key and value. *ret NULL: already in place, nothing
 * to write; else the new text (malloc'd, NUL-terminated). -EINVAL with err
 * set: not strict JSON, not an object, "runtimes" or "runtimes.nvidia" not
 * an object, an integer json-c cannot keep exactly. An empty text is {}. */
int gb_ctk_docker_merge(const char *text, size_t len, const char *runtime_path, bool set_default, char **ret,
                        size_t *ret_len, char *err, size_t errsz);

/* containerd: from the main configuration's text (NULL: there is none),
 * the drop-in and what the main file needs. bin_major: containerd's major
 * version from its binary (0: unknown), used only where the main file
 * names no version. */
struct gb_ctk_containerd {
	int version; /* the configuration version of both files */
	const char *version_from; /* "config" | "binary" | "default" */
	char *main; /* the new main text, or NULL: the main file stays as it is */
	size_t main_len;
	char *dropin; /* the drop-in's text */
	size_t dropin_len;
	/* disabled_plugins names the CRI plugin (docker's containerd.io ships
	 * it so): nothing reads a runtime declared to it; main and dropin are
	 * NULL, nothing is to be written */
	bool cri_disabled;
};
int gb_ctk_containerd_build(const char *main, size_t len, int bin_major, const char *runtime_path, bool set_default,
                            struct gb_ctk_containerd *ret, char *err, size_t errsz);
void gb_ctk_containerd_done(struct gb_ctk_containerd *c);

/* CRI-O's drop-in text (malloc'd). */
char *gb_ctk_crio_dropin(const char *runtime_path, bool set_default);

/* The major version in `containerd --version` output ("containerd
 * containerd.io 1.7.27 05044ec..." -> 1, "... v2.1.4 ..." -> 2); 0 when
 * none. */
int gb_ctk_containerd_major(const char *out);

/* The text of gpuboot-cdi.service. */
const char *gb_ctk_cdi_unit_text(void);

/* A runtime path gpuboot writes into JSON, TOML and unit files: absolute,
 * printable, no quote, backslash or whitespace, at most 255 bytes. */
bool gb_ctk_path_valid(const char *p);

/* toolkit.c: the toolkit's packages, from NVIDIA's repository for the
 * plan's package family and arch, at version, held, userspace only
 * (gb_install); *ret_json: the install result for the status document.
 * gb_install's returns, with err. */
struct gb_toolkit_input {
	const char *version; /* the plan's toolkit.version */
	const char *arch; /* the machine's: "x86_64" | "aarch64" */
	bool rpm; /* dnf or zypper: NVIDIA's rpm repository; else its apt one */
	struct gb_install_source src;
};
int gb_toolkit_install(struct gb_ctx *ctx, struct gb_journal *j, const struct gb_toolkit_input *in,
                       json_object **ret_json, char *err, size_t errsz);
