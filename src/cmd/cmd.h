/* SPDX-License-Identifier: MIT */
/* The commands, one file each (as kmod's tools/): each is a struct gb_cmd
 * that main dispatches to. A command returns an exit code. */
#pragma once

#include <json-c/json.h>

struct gb_ctx;

/* Which commands an option applies to: an option given to a command it
 * does not apply to is a usage error (exit 2), never silently ignored. */
enum {
	GB_CMD_RUN = 1u << 0,
	GB_CMD_REPAIR = 1u << 1,
	GB_CMD_DETECT = 1u << 2,
	GB_CMD_PLAN = 1u << 3,
	GB_CMD_FETCH = 1u << 4,
	GB_CMD_VERIFY = 1u << 5,
	GB_CMD_STATUS = 1u << 6,
	GB_CMD_MIRROR = 1u << 7,
	GB_CMD_CLEANUP = 1u << 8,
	GB_CMD_CATALOG = 1u << 9,
	GB_CMD_MODULES = 1u << 10,
};

struct gb_cmd {
	const char *name;
	unsigned id; /* GB_CMD_* */
	int (*fn)(struct gb_ctx *ctx, int argc, char **argv);
	const char *help;
	unsigned writes_state : 1; /* needs a writable state directory (root, or --state-dir) */
	unsigned reads_root : 1; /* reads the machine under --root */
	unsigned uses_tls : 1; /* hashes, signs or downloads: OpenSSL and libcurl initialised and checked first */
};

extern const struct gb_cmd gb_cmd_run, gb_cmd_repair, gb_cmd_detect, gb_cmd_plan, gb_cmd_fetch, gb_cmd_verify,
    gb_cmd_status, gb_cmd_mirror, gb_cmd_cleanup, gb_cmd_catalog, gb_cmd_modules;

/* Print a JSON document the way every command prints one; -ENOMEM (logged)
 * when it lost a part to memory (gb_json_text), and nothing printed. */
int gb_cmd_print_json(json_object *o);
/* "CMD takes no arguments": a usage error when argc > 0. */
int gb_cmd_no_args(const char *name, int argc, char **argv);
