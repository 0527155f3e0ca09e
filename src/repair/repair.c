/* SPDX-License-Identifier: MIT */
/* The repair action: a kernel that lacks the NVIDIA module at the
 * installed version gets it built by DKMS (journaled, chrooted into an
 * image root), and the check runs again to prove it appeared. Nothing is
 * installed from a package manager here: a hook runs inside the package
 * manager's transaction, whose lock is held (dnf would wait for ever). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "context.h"
#include "exit-codes.h"
#include "install/install-internal.h"
#include "repair-internal.h"
#include "effect/journal.h"
#include "shared/log.h"
#include "shared/macro.h"
#include "shared/ops.h"
#include "effect/root-write.h"
#include "shared/root.h"
#include "shared/util.h"
#include "shared/json-util.h"

#define STAGE "repair"
#define FAIL(ret, r, ...) (snprintf((ret)->error, sizeof((ret)->error), __VA_ARGS__), (r))

/* One journaled dkms command; -EIO (its output's tail kept) when it fails. */
static int dkms(struct gb_journal *j, const char *id, const char *const *argv, const char *chroot_dir,
                struct gb_repair_result *ret)
{
	_cleanup_free_ struct gb_cmd_result *res = calloc(1, sizeof(*res));
	struct gb_cmd_spec spec = { .argv = argv,
		                    .chroot_dir = chroot_dir,
		                    .timeout_ms = (int)(ret->build_timeout_min * 60u * 1000u) };
	const char *tail;
	int r;

	if (!res)
		return -ENOMEM;
	r = gb_journal_run(j, STAGE, id, &spec, res);
	if (r >= 0)
		return 0; /* 1: done in the run this one resumes */
	tail = res->output_len > 400 ? res->output + res->output_len - 400 : res->output;
	gb_log_escape(ret->dkms_output, sizeof(ret->dkms_output), tail);
	if (res->timed_out)
		return FAIL(ret, r, "'%s %s %s' was stopped after %u minutes ([kernel] build_timeout)", argv[0],
		            argv[1], argv[2], ret->build_timeout_min);
	return FAIL(ret, r, "'%s %s %s' failed%s%s", argv[0], argv[1], argv[2], r == -EIO ? "" : ": ",
	            r == -EIO ? "" : strerror(-r));
}

/* dkms add (when the source is not registered yet), then dkms install for
 * the one kernel. */
static int build(struct gb_ctx *ctx, struct gb_journal *j, const char *chroot_dir, struct gb_repair_result *ret)
{
	const struct gb_repair_state *s = &ret->before;
	char mv[GB_REPAIR_NAME_MAX + GB_REPAIR_VERSION_MAX + 2], id[GB_KVER_MAX + 160];
	int r = 0;

	(void)ctx;
	snprintf(mv, sizeof(mv), "%s/%s", s->dkms_name, s->dkms_version);
	if (!s->dkms_added) {
		const char *argv[] = { "dkms", "add", mv, NULL };
		snprintf(id, sizeof(id), "dkms:add:%s", mv);
		r = dkms(j, id, argv, chroot_dir, ret);
	}
	if (r >= 0) {
		const char *argv[] = { "dkms", "install", mv, "-k", s->kver, NULL };
		snprintf(id, sizeof(id), "dkms:install:%s:%s", mv, s->kver);
		r = dkms(j, id, argv, chroot_dir, ret);
	}
	if (r < 0 && strstr(ret->error, "build_timeout"))
		snprintf(ret->hint, sizeof(ret->hint),
		         "a slow machine: raise [kernel] build_timeout in gpuboot.conf (and gpuboot-repair.service's "
		         "TimeoutStartSec with a drop-in); DKMS's log: var/lib/dkms/%s/%s/build/make.log under %s",
		         s->dkms_name, s->dkms_version, ctx->root->path);
	else if (r < 0)
		snprintf(ret->hint, sizeof(ret->hint), "DKMS's build log: var/lib/dkms/%s/%s/build/make.log under %s",
		         s->dkms_name, s->dkms_version, ctx->root->path);
	return r;
}

static int build_in_root(struct gb_ctx *ctx, struct gb_journal *j, struct gb_repair_result *ret)
{
	struct gb_chroot c;
	int r, k;

	if (ctx->root->is_host)
		return build(ctx, j, NULL, ret);
	/* An image root: dkms runs inside it, with /proc, /sys and /dev bound
	 * in as for the install (src/install/chroot.c). */
	r = gb_chroot_enter(ctx, j, &c, ret->error, sizeof(ret->error));
	if (r < 0)
		return r;
	r = build(ctx, j, c.dir, ret);
	k = gb_chroot_leave(ctx, j, &c, ret->error, sizeof(ret->error));
	return r < 0 ? r : k;
}

static int unlink_marker(struct gb_ctx *ctx, struct gb_journal *j, struct gb_repair_result *ret)
{
	char p[GB_KVER_MAX + 64], id[GB_KVER_MAX + 80];
	int r;

	snprintf(p, sizeof(p), "%s/%s%s", GB_REPAIR_MARKER_DIR, GB_REPAIR_MARKER_PREFIX, ret->before.kver);
	snprintf(id, sizeof(id), "unlink:%s", p);
	r = gb_journal_begin(j, STAGE, id, "file", NULL);
	if (r != 0)
		return r < 0 ? r : 0;
	r = gb_root_unlink(ctx->root, p);
	if (r == 0) {
		gb_journal_count_effect(j);
		ret->marker_removed = true;
	}
	return gb_journal_end(j, id, r, NULL) < 0 ? -EIO : r;
}

static int finish_ok(struct gb_ctx *ctx, struct gb_journal *j, struct gb_repair_result *ret)
{
	const struct gb_repair_state *a = ret->built ? &ret->after : &ret->before;
	ret->exit_code = GB_EXIT_OK;
	if (a->verdict == GB_REPAIR_LOAD)
		snprintf(ret->hint, sizeof(ret->hint), "%s", a->hint);
	if (ret->before.marker) {
		int r = unlink_marker(ctx, j, ret);
		if (r < 0)
			return FAIL(ret, r, "Failed to remove the repair marker for %s: %s", a->kver, strerror(-r));
	}
	return 0;
}

static int repair_one(struct gb_ctx *ctx, const char *kver, unsigned build_timeout_min, struct gb_journal *j,
                      struct gb_repair_result *ret)
{
	int r;

	*ret = (struct gb_repair_result){
		.exit_code = GB_EXIT_FAILED,
		.build_timeout_min = build_timeout_min ? build_timeout_min : GB_REPAIR_DKMS_TIMEOUT_MIN,
	};
	r = gb_repair_check(ctx, kver, &ret->before);
	if (r < 0)
		return FAIL(ret, r, "Failed to check the NVIDIA module for %s: %s", kver ? kver : "the running kernel",
		            strerror(-r));
	ret->after = ret->before;
	switch (ret->before.verdict) {
	case GB_REPAIR_OK:
	case GB_REPAIR_LOAD: return finish_ok(ctx, j, ret);
	case GB_REPAIR_CANNOT:
		snprintf(ret->error, sizeof(ret->error), "%s", ret->before.reason);
		snprintf(ret->hint, sizeof(ret->hint), "%s", ret->before.hint);
		ret->exit_code = GB_EXIT_MODULE;
		return -ENOPKG;
	case GB_REPAIR_BUILD: break;
	}
	r = build_in_root(ctx, j, ret);
	if (r < 0)
		return r;
	r = gb_repair_check(ctx, ret->before.kver, &ret->after);
	if (r < 0)
		return FAIL(ret, r, "Failed to check the NVIDIA module for %s after the build: %s", ret->before.kver,
		            strerror(-r));
	if (!ret->after.module_present || ret->after.verdict == GB_REPAIR_BUILD ||
	    ret->after.verdict == GB_REPAIR_CANNOT) {
		snprintf(ret->hint, sizeof(ret->hint), "DKMS's build log: var/lib/dkms/%s/%s/build/make.log under %s",
		         ret->before.dkms_name, ret->before.dkms_version, ctx->root->path);
		return FAIL(ret, -EIO,
		            "dkms install %s/%s -k %s exited 0, but no NVIDIA module%s%s appeared under lib/modules/%s",
		            ret->before.dkms_name, ret->before.dkms_version, ret->before.kver,
		            ret->after.module_present ? " at " : "",
		            ret->after.module_present ? ret->before.installed_version : "", ret->before.kver);
	}
	ret->built = true;
	return finish_ok(ctx, j, ret);
}

int gb_repair(struct gb_ctx *ctx, const char *kver, unsigned build_timeout_min, struct gb_journal *j,
              struct gb_repair_result *ret)
{
	int r = repair_one(ctx, kver, build_timeout_min, j, ret);

	/* A kernel that is not running: the gate on the default boot entry
	 * (the running kernel: the holds in force, read). Its failure is the
	 * hold's own (hold.error, a warning): the module's verdict stands. */
	(void)gb_repair_boot_hold(ctx, j, r >= 0, ret);
	return r;
}

static json_object *hold_to_json(const struct gb_repair_hold *h)
{
	json_object *o;
	if (!h->checked)
		return NULL;
	o = gb_json_new_object();
	gb_json_add(o, "held", gb_json_new_boolean(h->held));
	gb_json_add(o, "changed", gb_json_new_boolean(h->changed));
	gb_json_add(o, "keep", h->keep[0] && h->held ? gb_json_new_string(h->keep) : NULL);
	gb_json_add(o, "entry", h->entry[0] && h->held ? gb_json_new_string(h->entry) : NULL);
	gb_json_add(o, "reason", h->reason[0] ? gb_json_new_string(h->reason) : NULL);
	gb_json_add(o, "error", h->error[0] ? gb_json_new_string(h->error) : NULL);
	return o;
}

static json_object *jstr(const char *s)
{
	return s && s[0] ? gb_json_new_string(s) : NULL;
}

json_object *gb_repair_state_to_json(const struct gb_repair_state *s)
{
	json_object *o = gb_json_new_object();
	gb_json_add(o, "kernel", jstr(s->kver));
	gb_json_add(o, "verdict", gb_json_new_string(gb_repair_verdict_name(s->verdict)));
	gb_json_add(o, "running", gb_json_new_boolean(s->running));
	gb_json_add(o, "no_driver", gb_json_new_boolean(s->no_driver));
	gb_json_add(o, "loaded_version", jstr(s->loaded_version));
	gb_json_add(o, "installed_version", jstr(s->installed_version));
	gb_json_add(o, "installed_from", jstr(s->installed_from));
	gb_json_add(o, "module", jstr(s->module_path));
	gb_json_add(o, "module_version", jstr(s->module_version));
	gb_json_add(o, "headers", gb_json_new_boolean(s->headers));
	if (s->dkms_source) {
		gb_json_add(o, "dkms_name", jstr(s->dkms_name));
		gb_json_add(o, "dkms_version", jstr(s->dkms_version));
		gb_json_add(o, "dkms_added", gb_json_new_boolean(s->dkms_added));
	}
	gb_json_add(o, "headers_package", jstr(s->headers_package));
	gb_json_add(o, "custom_kernel", gb_json_new_boolean(s->custom_kernel));
	gb_json_add(o, "marker", gb_json_new_boolean(s->marker));
	gb_json_add(o, "reason", jstr(s->reason));
	gb_json_add(o, "hint", jstr(s->hint));
	return o;
}

json_object *gb_repair_result_to_json(const struct gb_repair_result *r)
{
	json_object *o = gb_json_new_object();
	gb_json_add(o, "before", gb_repair_state_to_json(&r->before));
	gb_json_add(o, "after", gb_repair_state_to_json(&r->after));
	gb_json_add(o, "built", gb_json_new_boolean(r->built));
	gb_json_add(o, "marker_removed", gb_json_new_boolean(r->marker_removed));
	gb_json_add(o, "error", jstr(r->error));
	gb_json_add(o, "hint", jstr(r->hint));
	gb_json_add(o, "dkms_output", jstr(r->dkms_output));
	gb_json_add(o, "build_timeout_min", gb_json_new_int((int)r->build_timeout_min));
	gb_json_add(o, "exit_code", gb_json_new_int(r->exit_code));
	gb_json_add(o, "boot_default", hold_to_json(&r->hold));
	return o;
}
