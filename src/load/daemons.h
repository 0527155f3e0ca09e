/* SPDX-License-Identifier: MIT */
/* The plan's daemons after the load: nvidia-persistenced, the fabric
 * manager (docs/load.md#daemons). */
#pragma once

#include <stddef.h>

#include <json-c/json.h>

struct gb_ctx;
struct gb_journal;

struct gb_daemon_result {
	char name[40];
	/* "started", "installed" (nvlsm), "not-installed", "refused" (another
	 * version), "not-configured" (nvidia-imex without [imex] nodes), "failed" */
	const char *state;
	char version[40]; /* the fabric manager's, as installed */
};

struct gb_daemons_result {
	struct gb_daemon_result d[5];
	size_t n;
	char error[320];
	char hint[200];
};

/* For each of the plan's daemons (names[n]): nvidia-persistenced is
 * enabled and started (systemctl enable, start; journaled) when its unit is
 * installed, else left ("not-installed"); nvidia-fabricmanager only when
 * installed at exactly driver_version: -ENOPKG when none is installed,
 * -EPROTO when another version is (neither started), a systemctl failure
 * as its negative errno; nvlsm (started by the fabric manager's unit, so
 * listed before it) only checked: -ENOPKG when not installed;
 * nvidia-imex (GB200/GB300, listed after the fabric manager): with
 * imex_nodes (the site's [imex] nodes, space-separated) its
 * etc/nvidia-imex/nodes_config.cfg is written (one address a line,
 * journaled) and the unit enabled and started (restarted when the list
 * changed: IMEX reads it only at its start), -ENOPKG when its unit is not
 * installed; without them nothing is done ("not-configured"). ret->error
 * and ret->hint say why. */
int gb_load_daemons(struct gb_ctx *ctx, struct gb_journal *j, const char *const *names, size_t n,
                    const char *driver_version, const char *imex_nodes, struct gb_daemons_result *ret);

json_object *gb_daemons_result_to_json(const struct gb_daemons_result *r);
