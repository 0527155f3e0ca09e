/* SPDX-License-Identifier: MIT */
/* The NVIDIA device nodes, their /dev/char links and the udev rule for
 * later boots (docs/load.md#device-nodes). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include <json-c/json.h>

struct gb_ctx;
struct gb_journal;

#define GB_NODES_GPUBOOT "/usr/local/bin/gpuboot"
#define GB_NODES_UDEV_RULE "etc/udev/rules.d/71-gpuboot-nvidia.rules"

struct gb_nodes_result {
	size_t n; /* nodes for what is loaded */
	unsigned made, linked; /* made or remade this time */
	bool modify_off; /* ModifyDeviceFiles=0: the nodes are the site's; only the links were made */
	bool rule_changed; /* the udev rule was written (not merely unchanged) */
	char error[256];
};

/* Make every node gb_load_devnodes lists (ctx->ops->mknod: 0666 and the
 * driver's owner, a capability's own mode) where it is missing or wrong,
 * link dev/char/MAJ:MIN to each, and write the udev rule. j NULL (the udev
 * rule's own call, gpuboot --repair --nodes): nodes and links only, not
 * journaled. Idempotent: a rerun changes nothing. -ENODEV when no NVIDIA
 * module is loaded; another negative errno with ret->error. */
int gb_load_nodes(struct gb_ctx *ctx, struct gb_journal *j, struct gb_nodes_result *ret);

const char *gb_load_udev_rule_text(void);

json_object *gb_nodes_result_to_json(const struct gb_nodes_result *r);
