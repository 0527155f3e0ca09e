/* SPDX-License-Identifier: MIT */
/* After the modules are live: the device nodes nvidia-modprobe would make
 * (the driver registers no device with udev, so nothing else makes them
 * on a machine without nvidia-modprobe), the /dev/char/MAJ:MIN links runc
 * looks for when systemd re-applies a container's device rules (without
 * them a container loses its GPUs at the next systemctl daemon-reload:
 * NVIDIA's notice nvidia-docker#1730), and the udev rule that does both
 * again whenever an NVIDIA module loads at a later boot. */
#include "nodes.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "context.h"
#include "devnodes.h"
#include "effect/journal.h"
#include "shared/log.h"
#include "shared/macro.h"
#include "shared/ops.h"
#include "effect/root-write.h"
#include "shared/root.h"
#include "shared/util.h"
#include "shared/json-util.h"

#define STAGE "load"

static const char udev_rule[] = "# Written by gpuboot. When an NVIDIA module loads (at every boot, and at\n"
                                "# a reload), make its device nodes as nvidia-modprobe would, and the\n"
                                "# /dev/char/MAJ:MIN links runc needs to keep a container's GPUs across\n"
                                "# systemctl daemon-reload (the driver registers no device with udev).\n"
                                "ACTION==\"add\", SUBSYSTEM==\"module\", KERNEL==\"nvidia|nvidia_uvm|nvidia_modeset\", "
                                "RUN+=\"" GB_NODES_GPUBOOT " --repair --nodes\"\n";

const char *gb_load_udev_rule_text(void)
{
	return udev_rule;
}

/* The node itself, through the operations table (mknod needs root). */
static int make_node(struct gb_ctx *ctx, struct gb_journal *j, const struct gb_devnode *d, struct gb_nodes_result *ret)
{
	struct gb_node_spec spec = {
		.path = d->path, .perm = d->perm, .uid = d->uid, .gid = d->gid, .major = d->major, .minor = d->minor
	};
	_cleanup_close_ int dfd = -1;
	char id[80];
	const char *name;
	int r, k;

	snprintf(id, sizeof(id), "node:%s", d->path);
	if (j) {
		r = gb_journal_begin(j, STAGE, id, "node", NULL);
		if (r < 0)
			return r;
	}
	dfd = gb_root_open_parent(ctx->root, d->path, true, &name);
	r = dfd < 0 ? dfd : ctx->ops->mknod(ctx->ops, dfd, name, &spec);
	if (r == 0) {
		ret->made++;
		if (j)
			gb_journal_count_effect(j);
	}
	if (r < 0)
		snprintf(ret->error, sizeof(ret->error), "Failed to make %s (%u:%u): %s", d->path, d->major, d->minor,
		         strerror(-r));
	if (!j)
		return r < 0 ? r : 0;
	k = gb_journal_end(j, id, r < 0 ? r : 0, NULL);
	return r < 0 ? r : k < 0 ? -EIO : 0;
}

/* dev/char/MAJ:MIN -> ../nvidiactl, as udev makes them for the devices it knows. */
static int make_link(struct gb_ctx *ctx, struct gb_journal *j, const struct gb_devnode *d, struct gb_nodes_result *ret)
{
	_cleanup_free_ char *have = NULL;
	char path[48], target[64], id[80];
	int r, k;

	snprintf(path, sizeof(path), "dev/char/%u:%u", d->major, d->minor);
	snprintf(target, sizeof(target), "../%s", d->path + strlen("dev/"));
	if (gb_root_readlink(ctx->root, path, &have) == 0 && streq(have, target))
		return 0;
	snprintf(id, sizeof(id), "link:%s", path);
	if (j) {
		r = gb_journal_begin(j, STAGE, id, "file", NULL);
		if (r < 0)
			return r;
	}
	r = gb_root_symlink(ctx->root, path, target);
	if (r == -EEXIST) { /* another maker at once (the udev rule): right is right */
		free(have);
		have = NULL;
		if (gb_root_readlink(ctx->root, path, &have) == 0 && streq(have, target))
			r = 0;
	}
	if (r == 0) {
		ret->linked++;
		if (j)
			gb_journal_count_effect(j);
	} else {
		snprintf(ret->error, sizeof(ret->error), "Failed to link %s to %s: %s", path, target, strerror(-r));
	}
	if (!j)
		return r;
	k = gb_journal_end(j, id, r, NULL);
	return r < 0 ? r : k < 0 ? -EIO : 0;
}

int gb_load_nodes(struct gb_ctx *ctx, struct gb_journal *j, struct gb_nodes_result *ret)
{
	struct gb_devnodes *d = calloc(1, sizeof(*d));
	int r;

	memset(ret, 0, sizeof(*ret));
	if (!d)
		return -ENOMEM;
	r = gb_load_devnodes(ctx->root, d);
	if (r < 0) {
		snprintf(ret->error, sizeof(ret->error), "Failed to list the NVIDIA device nodes from proc/devices: %s",
		         r == -ENODEV ? "no NVIDIA module is loaded" : strerror(-r));
		free(d);
		return r;
	}
	ret->n = d->n;
	ret->modify_off = d->modify_off;
	for (size_t i = 0; i < d->n && r >= 0 && !d->modify_off; i++)
		r = make_node(ctx, j, &d->node[i], ret);
	for (size_t i = 0; i < d->n && r >= 0; i++)
		r = make_link(ctx, j, &d->node[i], ret);
	free(d);
	if (r >= 0 && j) {
		unsigned mid = gb_journal_effects(j);
		r = gb_journal_write_file(j, STAGE, GB_NODES_UDEV_RULE, udev_rule, sizeof(udev_rule) - 1, 0644);
		ret->rule_changed = r >= 0 && gb_journal_effects(j) != mid;
		if (r < 0)
			snprintf(ret->error, sizeof(ret->error), "Failed to write %s: %s", GB_NODES_UDEV_RULE,
			         strerror(-r));
	}
	return r < 0 ? r : 0;
}

json_object *gb_nodes_result_to_json(const struct gb_nodes_result *r)
{
	json_object *o = gb_json_new_object();
	gb_json_add(o, "count", gb_json_new_int((int)r->n));
	gb_json_add(o, "made", gb_json_new_int((int)r->made));
	gb_json_add(o, "char_links_made", gb_json_new_int((int)r->linked));
	gb_json_add(o, "modify_device_files", gb_json_new_boolean(!r->modify_off));
	gb_json_add(o, "udev_rule", gb_json_new_string(GB_NODES_UDEV_RULE));
	gb_json_add(o, "udev_rule_changed", gb_json_new_boolean(r->rule_changed));
	if (r->error[0])
		gb_json_add(o, "error", gb_json_new_string(r->error));
	return o;
}
