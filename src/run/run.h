/* SPDX-License-Identifier: MIT */
/* The orchestration: the inputs every command decides from, the lock, and
 * the pipeline `run` and `--repair` walk through its stage table. */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>

#include "detect/detect.h"
#include "plan/plan.h"
#include "plan/profile.h"

struct gb_ctx;

/* What a command decides from: the facts, the profile and the site. */
struct gb_inputs {
	struct gb_facts facts;
	bool have_facts;
	struct gb_profile profile;
	struct gb_site_config site;
	/* A resumed run whose killed predecessor installed a component but did
	 * not finish (its hooks, its configuration): plan it as that run did,
	 * as if it were not there yet (gb_plan_from_inputs ignores it). */
	bool redo_driver, redo_cuda, redo_toolkit;
	/* The distro method's prebuilt modules (gb_inputs_offers): the site
	 * mirror's offers, why there are none, and the node's kernels as an
	 * offer must match them. want_offers: this command reads them (run,
	 * fetch). */
	bool want_offers, offers_loaded;
	struct gb_plan_module_offer *offers;
	size_t n_offers;
	char offers_note[200];
	struct gb_plan_node_kernel node_kernels[GB_PLAN_MAX_PREBUILT];
	size_t n_node_kernels;
	/* The runfile method's fabric manager on an NVSwitch machine: the
	 * driver redistributable manifests the mirror's signed manifest
	 * lists, or why none (gb_inputs_offers). */
	struct gb_plan_redist_offer redist[GB_PLAN_MAX_REDIST];
	size_t n_redist;
	char redist_note[200];
	bool redist_loaded;
};

/* Load the profile (--profile, default "training") and the site
 * configuration. Returns 0, or an exit code with the error logged. */
int gb_inputs_load(struct gb_ctx *ctx, struct gb_inputs *in);
/* The catalog in force (docs/catalog.md): the newest valid of the update
 * kept in the state directory, --catalog FILE and the mirror's (run's own
 * mirror, or --mirror); once a process, by gb_inputs_load. A refused one
 * is a warning (the plan's catalog-refused), never an error: 0, or
 * -ENOMEM. */
int gb_inputs_catalog(struct gb_ctx *ctx, const struct gb_site_config *site);
/* Detect the machine under the root. Returns 0 or an exit code (logged). */
int gb_inputs_detect(struct gb_ctx *ctx, struct gb_inputs *in);
/* The distro method on apt (--method distro, [install] method = distro):
 * the node's kernels (release, image package version, the vermagic of its
 * own modules) and the site mirror's prebuilt modules (its signed
 * manifest), once a process; with a note instead where there are none to
 * read. After gb_inputs_detect. Only -ENOMEM is an error: a mirror that
 * cannot be read is a note (the plan then builds with DKMS, or refuses
 * under [install] prebuilt_modules = require). */
int gb_inputs_offers(struct gb_ctx *ctx, struct gb_inputs *in);
void gb_inputs_done(struct gb_inputs *in);

/* Decide from the inputs (the --target-* options stand in for the machine).
 * Returns 0 with *plan made (a refusal is a plan too: plan->refusal_code),
 * or an exit code with the error logged. */
int gb_plan_from_inputs(struct gb_ctx *ctx, const struct gb_inputs *in, struct gb_plan *plan);

/* Detect, load and decide in one call (plan, fetch, mirror). */
int gb_inputs_plan(struct gb_ctx *ctx, struct gb_inputs *in, struct gb_plan *plan);

/* One gpuboot at a time per state directory: <state-dir>/lock, flock'd.
 * Returns 0 with *ret_fd held, or an exit code (16 when another holds it). */
int gb_lock_take(struct gb_ctx *ctx, int *ret_fd);

/* `gpuboot run` and `gpuboot --repair`: the whole pipeline. Exit code. */
int gb_run(struct gb_ctx *ctx);

/* An image root: undo what a killed run left there (gb_chroot_cleanup),
 * saying what; the count undone, or a negative errno (logged). */
int gb_run_cleanup_image(struct gb_ctx *ctx);
