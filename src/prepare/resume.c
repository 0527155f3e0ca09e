/* SPDX-License-Identifier: MIT */
/* Reboot and resume. gpuboot never reboots by itself: a needed reboot
 * writes and enables a oneshot unit that runs `gpuboot run --resume` with
 * the same options at the next boot, and the run exits 3. The journal
 * carries what stops a loop: the boots the run has spanned and every
 * reboot it armed, with its reason and the boot it was armed in. */
#include "prepare.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "context.h"
#include "effect/journal.h"
#include "shared/json-util.h"
#include "shared/killpoint.h"
#include "shared/macro.h"
#include "shared/redact.h"
#include "effect/root-write.h"
#include "shared/root.h"
#include "shared/util.h"

#define UNIT_TARGET "/etc/systemd/system/" GB_PREPARE_RESUME_UNIT

int gb_prepare_reboot_allowed(json_object *doc, const char *reason, char *why, size_t whysz)
{
	json_object *steps = gb_json_get(doc, "steps");
	int boots = json_object_get_int(gb_json_get(doc, "boots")), taken = 0;

	if (boots < 1)
		boots = 1;
	for (size_t i = 0; steps && json_object_is_type(steps, json_type_array) && i < gb_json_len(steps); i++) {
		json_object *s = gb_json_idx(steps, i);
		const char *kind = gb_json_get_str(s, "kind"), *r = gb_json_get_str(s, "reason");
		int boot = json_object_get_int(gb_json_get(s, "boot"));
		if (!kind || !streq(kind, "reboot") || !r)
			continue;
		if (streq(r, reason)) {
			if (boot >= boots)
				return 0; /* armed in this boot already: the same reboot, not another */
			snprintf(why, whysz,
			         "the reboot for %s was taken after boot %d and is needed again in boot %d: it did not "
			         "help, so gpuboot stops rather than reboot in a loop",
			         reason, boot, boots);
			return -ELOOP;
		}
		if (boot < boots)
			taken++;
	}
	if (taken >= GB_PREPARE_MAX_REBOOTS || boots > GB_PREPARE_MAX_REBOOTS) {
		snprintf(why, whysz,
		         "this run has rebooted %d times (boot %d now); a reboot for %s would be one more than the %d "
		         "allowed",
		         taken, boots, reason, GB_PREPARE_MAX_REBOOTS);
		return -ELOOP;
	}
	return 0;
}

/* A value that can stand as one word of ExecStart= unquoted (with spaces:
 * in double quotes, as systemd splits its command lines). */
static bool unit_word_ok(const char *s, bool spaces)
{
	if (!s || !s[0] || strlen(s) > 1024)
		return false;
	for (const char *p = s; *p; p++)
		if (((unsigned char)*p <= 0x20 && !(spaces && *p == ' ')) || (unsigned char)*p >= 0x7f ||
		    strchr("\"'\\%$;", *p))
			return false;
	return true;
}

static int add_opt(char *buf, size_t bufsz, size_t *o, const char *name, const char *value)
{
	const char *q = value && strchr(value, ' ') ? "\"" : "";
	int n;
	if (value && !unit_word_ok(value, true))
		return -EINVAL;
	n = snprintf(buf + *o, bufsz - *o, " --%s%s%s%s%s", name, value ? " " : "", q, value ? value : "", q);
	if (n < 0 || (size_t)n >= bufsz - *o)
		return -ENOBUFS;
	*o += (size_t)n;
	return 0;
}

/* ExecStart's options: those that decide the plan (the resumed run must
 * find the same plan, installed the same way) and where its files go.
 * --target-gpu only from the live machine (the GPU it was told to plan
 * for); from an image root the first boot plans for the GPU it has. Never
 * --root (the resume runs on the booted machine) or --force. */
static int exec_options(const struct gb_ctx *ctx, char *buf, size_t bufsz, size_t *o)
{
	const struct gb_options *opt = &ctx->opt;
	int r = 0;

	if (opt->profile)
		r = add_opt(buf, bufsz, o, "profile", opt->profile);
	if (r >= 0 && opt->method)
		r = add_opt(buf, bufsz, o, "method", opt->method);
	if (r >= 0 && opt->target_gpu && ctx->root && ctx->root->is_host)
		r = add_opt(buf, bufsz, o, "target-gpu", opt->target_gpu);
	if (r >= 0 && opt->config_given && opt->config)
		r = add_opt(buf, bufsz, o, "config", opt->config);
	if (r >= 0 && opt->state_dir_given && opt->state_dir)
		r = add_opt(buf, bufsz, o, "state-dir", opt->state_dir);
	if (r >= 0 && opt->run_dir_given && opt->run_dir)
		r = add_opt(buf, bufsz, o, "run-dir", opt->run_dir);
	if (r >= 0 && opt->mirror)
		r = add_opt(buf, bufsz, o, "mirror", opt->mirror);
	if (r >= 0 && opt->ca_file)
		r = add_opt(buf, bufsz, o, "ca-file", opt->ca_file);
	for (size_t i = 0; r >= 0 && i < opt->n_trust_keys && i < GB_MAX_TRUST_KEYS; i++)
		r = add_opt(buf, bufsz, o, "trust-key", opt->trust_keys[i]);
	if (r >= 0 && opt->offline)
		r = add_opt(buf, bufsz, o, "offline", NULL);
	if (r >= 0 && opt->no_verify)
		r = add_opt(buf, bufsz, o, "no-verify", NULL);
	if (r >= 0 && opt->reboot)
		r = add_opt(buf, bufsz, o, "reboot", NULL);
	return r;
}

int gb_prepare_resume_unit_text(const struct gb_ctx *ctx, char *buf, size_t bufsz, size_t *ret_len)
{
	const char *state = ctx->opt.state_dir ? ctx->opt.state_dir : "/var/lib/gpuboot";
	size_t o;
	int n, r;

	if (!unit_word_ok(state, false))
		return -EINVAL;
	n = snprintf(buf, bufsz,
	             "# Written by gpuboot: finishes a run after the reboot it needed, then removes itself.\n"
	             "[Unit]\n"
	             "Description=gpuboot: finish the GPU setup after a reboot\n"
	             "Wants=network-online.target\n"
	             "After=network-online.target\n"
	             "ConditionPathExists=%s/journal.json\n"
	             "\n"
	             "[Service]\n"
	             "Type=oneshot\n"
	             "ExecStart=/usr/local/bin/gpuboot run --resume",
	             state);
	if (n < 0 || (size_t)n >= bufsz)
		return -ENOBUFS;
	o = (size_t)n;
	r = exec_options(ctx, buf, bufsz, &o);
	if (r < 0)
		return r;
	/* 3 is "reboot needed": the unit stays armed for the next boot. Any
	 * other end disables it, even when gpuboot could not (a crash); when
	 * gpuboot did (the unit file gone), there is nothing left to do. */
	n = snprintf(buf + o, bufsz - o,
	             "\n"
	             "SuccessExitStatus=3\n"
	             "ExecStopPost=/bin/sh -c '[ \"$$EXIT_STATUS\" = 3 ] || [ ! -e /%s ] || exec systemctl --no-reload "
	             "disable %s'\n"
	             "TimeoutStartSec=2h\n"
	             "StandardOutput=journal+console\n"
	             "\n"
	             "[Install]\n"
	             "WantedBy=multi-user.target\n",
	             GB_PREPARE_RESUME_PATH, GB_PREPARE_RESUME_UNIT);
	if (n < 0 || (size_t)n >= bufsz - o)
		return -ENOBUFS;
	*ret_len = o + (size_t)n;
	return 0;
}

/* A wants/ link under an image root (systemctl cannot run there): 1 when
 * it is already there, pointing at target. */
static int link_unit(struct gb_ctx *ctx, const char *wants, const char *target)
{
	_cleanup_free_ char *have = NULL;

	if (gb_root_readlink(ctx->root, wants, &have) == 0 && streq(have, target))
		return 1;
	return gb_root_symlink(ctx->root, wants, target);
}

static int link_wants(struct gb_ctx *ctx)
{
	return link_unit(ctx, GB_PREPARE_RESUME_WANTS, UNIT_TARGET);
}

/* One journaled effect: step id, then fn; fn's 1 is "already so": done,
 * recorded unchanged, not an effect (a rerun changes nothing). */
static int step(struct gb_journal *j, const char *id, const char *kind, json_object *detail,
                int (*fn)(struct gb_ctx *ctx, const char *arg), const char *arg)
{
	json_object *u = NULL;
	int r = gb_journal_begin(j, "prepare", id, kind, detail);
	if (r != 0)
		return r < 0 ? r : 0;
	r = fn(j->ctx, arg);
	gb_kill_point("effect");
	if (r == 0)
		gb_journal_count_effect(j);
	if (r > 0) {
		u = gb_json_new_object();
		gb_json_add(u, "unchanged", gb_json_new_boolean(true));
		r = 0;
	}
	return gb_journal_end(j, id, r, u) < 0 ? -EIO : r;
}

static int do_enable(struct gb_ctx *ctx, const char *unit)
{
	return ctx->root->is_host ? ctx->ops->systemctl(ctx->ops, "enable", unit) : link_wants(ctx);
}

static int do_disable(struct gb_ctx *ctx, const char *unit)
{
	return ctx->root->is_host ? ctx->ops->systemctl(ctx->ops, "disable", unit)
	                          : gb_root_unlink(ctx->root, GB_PREPARE_RESUME_WANTS);
}

static int do_unlink(struct gb_ctx *ctx, const char *path)
{
	return gb_root_unlink(ctx->root, path);
}

int gb_prepare_arm_resume(struct gb_ctx *ctx, struct gb_journal *j, const char *reason, char *why, size_t whysz)
{
	char text[4096], id[128];
	json_object *d;
	size_t len;
	mode_t mode;
	int r;

	why[0] = '\0';
	if (!reason || !unit_word_ok(reason, false) || strlen(reason) > 64)
		return -EINVAL;
	r = gb_prepare_reboot_allowed(j->doc, reason, why, whysz);
	if (r < 0)
		return r;
	r = gb_prepare_resume_unit_text(ctx, text, sizeof(text), &len);
	if (r < 0) {
		snprintf(why, whysz, "an option cannot be written into the resume unit (whitespace, a quote, %% or $)");
		return r;
	}
	snprintf(id, sizeof(id), "reboot:%s", reason);
	d = gb_json_new_object();
	gb_json_add(d, "reason", gb_json_new_string(reason));
	gb_json_add(d, "boot", gb_json_new_int(json_object_get_int(gb_json_get(j->doc, "boots"))));
	r = gb_journal_begin(j, "prepare", id, "reboot", d);
	if (r < 0)
		return r;
	/* A --mirror with credentials must reach the resumed run, and no one
	 * else: the unit is then readable by root alone (systemd reads it so). */
	{
		char scrubbed[sizeof(text)];
		mode = gb_redact_urls(text, scrubbed, sizeof(scrubbed)) ? 0600 : 0644;
	}
	r = gb_journal_write_file(j, "prepare", GB_PREPARE_RESUME_PATH, text, len, mode);
	if (r >= 0) {
		d = gb_json_new_object();
		gb_json_add(d, "unit", gb_json_new_string(GB_PREPARE_RESUME_UNIT));
		r = step(j,
		         ctx->root->is_host ? "systemctl:enable:" GB_PREPARE_RESUME_UNIT
		                            : "link:" GB_PREPARE_RESUME_WANTS,
		         ctx->root->is_host ? "command" : "file", d, do_enable, GB_PREPARE_RESUME_UNIT);
	}
	if (r < 0)
		snprintf(why, whysz, "cannot arm %s: %s", GB_PREPARE_RESUME_UNIT, strerror(-r));
	if (gb_journal_end(j, id, r < 0 ? r : 0, NULL) < 0 && r >= 0)
		r = -EIO;
	return r < 0 ? r : 0;
}

int gb_prepare_disarm_resume(struct gb_ctx *ctx, struct gb_journal *j)
{
	int unit = gb_root_lexists_r(ctx->root, GB_PREPARE_RESUME_PATH);
	int wants = ctx->root->is_host || unit < 0 ? 0 : gb_root_lexists_r(ctx->root, GB_PREPARE_RESUME_WANTS);
	int r = 0;

	if (unit < 0 || wants < 0)
		return -ENOMEM; /* an armed unit left behind would run again at the next boot */
	if (!unit && !wants)
		return 0;
	if (unit || wants)
		r = step(j,
		         ctx->root->is_host ? "systemctl:disable:" GB_PREPARE_RESUME_UNIT
		                            : "unlink:" GB_PREPARE_RESUME_WANTS,
		         ctx->root->is_host ? "command" : "file", NULL, do_disable, GB_PREPARE_RESUME_UNIT);
	if (r >= 0 && unit)
		r = step(j, "unlink:" GB_PREPARE_RESUME_PATH, "file", NULL, do_unlink, GB_PREPARE_RESUME_PATH);
	return r;
}

/* ---- the image's own first boot ---- */

int gb_prepare_firstboot_unit_text(const struct gb_ctx *ctx, char *buf, size_t bufsz, size_t *ret_len)
{
	const struct gb_options *opt = &ctx->opt;
	size_t o;
	int n, r = 0;

	n = snprintf(buf, bufsz,
	             "# Written by gpuboot into an image it installed: at the image's first boot (while\n"
	             "# /%s is there: a run that ends other than 'no GPU' or 'reboot needed',\n"
	             "# or any other gpuboot run on the booted machine, removes it), keep what the image\n"
	             "# holds, load the modules, verify, write the status and the flags; nothing is downloaded.\n"
	             "[Unit]\n"
	             "Description=gpuboot: load and verify the image's GPU driver at its first boot\n"
	             "ConditionPathExists=/%s\n"
	             "ConditionFileIsExecutable=/usr/local/bin/gpuboot\n"
	             "After=local-fs.target systemd-modules-load.service gpuboot-repair.service\n"
	             "Before=gpuboot-resume.service cloud-final.service\n"
	             "\n"
	             "[Service]\n"
	             "Type=oneshot\n"
	             "Environment=GPUBOOT_FIRST_BOOT_UNIT=1\n"
	             "ExecStart=/usr/local/bin/gpuboot run --offline",
	             GB_PREPARE_IMAGE_PENDING, GB_PREPARE_IMAGE_PENDING);
	if (n < 0 || (size_t)n >= bufsz)
		return -ENOBUFS;
	o = (size_t)n;
	if (opt->profile)
		r = add_opt(buf, bufsz, &o, "profile", opt->profile);
	if (r >= 0 && opt->method)
		r = add_opt(buf, bufsz, &o, "method", opt->method);
	if (r >= 0 && opt->config_given && opt->config)
		r = add_opt(buf, bufsz, &o, "config", opt->config);
	if (r < 0)
		return r;
	/* 11 (no GPU: the image booted where there is none, a build's test
	 * boot) and 3 (a reboot, the resume unit finishes) keep the marker for
	 * the next boot (gpuboot itself removes it after any other end). */
	n = snprintf(buf + o, bufsz - o,
	             "\n"
	             "SuccessExitStatus=3\n"
	             "TimeoutStartSec=1h\n"
	             "StandardOutput=journal+console\n"
	             "\n"
	             "[Install]\n"
	             "WantedBy=multi-user.target\n");
	if (n < 0 || (size_t)n >= bufsz - o)
		return -ENOBUFS;
	*ret_len = o + (size_t)n;
	return 0;
}

static int link_firstboot(struct gb_ctx *ctx, const char *unused)
{
	(void)unused;
	return link_unit(ctx, GB_PREPARE_FIRSTBOOT_WANTS, "/" GB_PREPARE_FIRSTBOOT_PATH);
}

static const char image_pending_text[] = "installed by gpuboot into this image; its first boot loads and verifies\n";

int gb_prepare_arm_firstboot(struct gb_ctx *ctx, struct gb_journal *j, char *why, size_t whysz)
{
	char text[4096];
	size_t len;
	int r;

	why[0] = '\0';
	r = gb_prepare_firstboot_unit_text(ctx, text, sizeof(text), &len);
	if (r < 0) {
		snprintf(why, whysz, "an option cannot be written into %s (whitespace, a quote, %% or $)",
		         GB_PREPARE_FIRSTBOOT_UNIT);
		return r;
	}
	r = gb_journal_write_file(j, "verify", GB_PREPARE_FIRSTBOOT_PATH, text, len, 0644);
	if (r >= 0)
		r = step(j, "link:" GB_PREPARE_FIRSTBOOT_WANTS, "file", NULL, link_firstboot, NULL);
	if (r >= 0)
		r = gb_journal_write_file(j, "verify", GB_PREPARE_IMAGE_PENDING, image_pending_text,
		                          sizeof(image_pending_text) - 1, 0644);
	if (r < 0)
		snprintf(why, whysz, "cannot enable %s in the image: %s", GB_PREPARE_FIRSTBOOT_UNIT, strerror(-r));
	return r;
}

int gb_prepare_firstboot_done(struct gb_ctx *ctx, int exit_code)
{
	const char *unit = getenv("GPUBOOT_FIRST_BOOT_UNIT");
	int r;
	/* the unit's own run without a GPU, or before a reboot: again next boot */
	if (exit_code == 3 || (unit && streq(unit, "1") && exit_code == 11))
		return 0;
	r = gb_root_unlink(ctx->root, GB_PREPARE_IMAGE_PENDING);
	return r == -ENOENT ? 0 : r;
}
