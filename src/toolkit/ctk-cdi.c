/* SPDX-License-Identifier: MIT */
/* The CDI specification: containers ask for nvidia.com/gpu=... and the
 * engine reads the devices, libraries and hooks from it. It names the
 * driver's libraries by version, so it is regenerated at every boot: by
 * NVIDIA's nvidia-cdi-refresh.service and .path where the toolkit ships
 * them (1.18 and later; the .path unit also follows driver upgrades), else
 * by gpuboot-cdi.service. On a live machine the spec is generated now,
 * after the modules are loaded, into the file the boot-time unit writes
 * (one spec, not two of different age). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "context.h"
#include "ctk-internal.h"
#include "effect/journal.h"
#include "shared/json-util.h"
#include "shared/log.h"
#include "shared/ops.h"
#include "effect/root-write.h"
#include "shared/root.h"
#include "shared/util.h"

#define NVIDIA_CTK "usr/bin/nvidia-ctk"
#define REFRESH_ENV "etc/nvidia-container-toolkit/nvidia-cdi-refresh.env"
#define SPEC_MAX (16u << 20)
#define UNIT_MAX (64u * 1024u)
#define GENERATE_TIMEOUT_MS (5 * 60 * 1000)
#define MAX_WANTED 4

static const char *const unit_dirs[] = { "etc/systemd/system", "usr/lib/systemd/system", "lib/systemd/system" };
static const char *const refresh_units[] = { "nvidia-cdi-refresh.path", "nvidia-cdi-refresh.service" };

/* After everything that loads the modules or makes their device nodes
 * (gpuboot-repair.service builds and loads them for a new kernel), before
 * the engines whose containers may start at boot. */
static const char unit_text[] =
    "# Written by gpuboot: at every boot, the CDI specification of this boot's NVIDIA\n"
    "# driver and GPUs, so containers that ask for nvidia.com/gpu=... find them.\n"
    "# To undo: systemctl disable gpuboot-cdi.service, then remove this file and\n"
    "# /etc/cdi/nvidia.yaml (docs/container-toolkit.md).\n"
    "[Unit]\n"
    "Description=gpuboot: generate the NVIDIA CDI specification\n"
    "After=systemd-modules-load.service systemd-udev-trigger.service nvidia-persistenced.service\n"
    "After=gpuboot-repair.service\n"
    "Before=docker.service containerd.service crio.service kubelet.service\n"
    "ConditionPathExists=/usr/bin/nvidia-ctk\n"
    "\n"
    "[Service]\n"
    "Type=oneshot\n"
    "RemainAfterExit=yes\n"
    "ExecStartPre=-/usr/bin/nvidia-ctk system create-device-nodes --control-devices --load-kernel-modules\n"
    "ExecStart=/usr/bin/nvidia-ctk cdi generate --output=" GB_CTK_CDI_SPEC "\n"
    "TimeoutStartSec=5min\n"
    "\n"
    "[Install]\n"
    "WantedBy=multi-user.target\n";

const char *gb_ctk_cdi_unit_text(void)
{
	return unit_text;
}

/* The unit file below the root ("" when none). */
static void find_unit(struct gb_ctk *s, const char *unit, char *out, size_t outsz)
{
	out[0] = '\0';
	for (size_t i = 0; i < ARRAY_SIZE(unit_dirs) && !out[0]; i++) {
		snprintf(out, outsz, "%s/%s", unit_dirs[i], unit);
		if (!gb_root_exists(s->ctx->root, out))
			out[0] = '\0';
	}
}

static bool unit_name_ok(const char *n)
{
	size_t l = strlen(n);
	return l > 0 && l < 64 &&
	       strspn(n, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789@._:-") == l && n[0] != '.';
}

/* The targets of WantedBy= in the unit's [Install] section (what systemctl
 * enable links it into); multi-user.target where it names none. */
static size_t wanted_by(struct gb_ctk *s, const char *path, char (*out)[64])
{
	_cleanup_free_ char *text = NULL;
	bool install = false;
	size_t n = 0;

	if (gb_root_read_file(s->ctx->root, path, UNIT_MAX, &text, NULL) >= 0)
		for (char *save = NULL, *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
			l = gb_strstrip(l);
			if (l[0] == '[')
				install = streq(l, "[Install]");
			const char *v = install ? gb_startswith(l, "WantedBy=") : NULL;
			for (char *s2 = NULL, *w = v ? strtok_r((char *)v, " \t", &s2) : NULL; w && n < MAX_WANTED;
			     w = strtok_r(NULL, " \t", &s2))
				if (unit_name_ok(w))
					gb_strscpy(out[n++], 64, w);
		}
	if (n == 0)
		gb_strscpy(out[n++], 64, "multi-user.target");
	return n;
}

/* The link systemctl enable makes, made by hand under an image root (no
 * systemd runs there); already there: no effect. */
static int link_wants(struct gb_ctk *s, const char *link, const char *target)
{
	_cleanup_free_ char *cur = NULL;
	char id[300];
	json_object *d;
	int r;

	if (gb_root_readlink(s->ctx->root, link, &cur) == 0 && streq(cur, target))
		return 0;
	snprintf(id, sizeof(id), "link:%s", link);
	d = gb_json_new_object();
	gb_json_add(d, "path", gb_json_new_string(link));
	gb_json_add(d, "target", gb_json_new_string(target));
	r = gb_journal_begin(s->j, GB_CTK_STAGE, id, "file", d);
	if (r != 0)
		return r < 0 ? gb_ctk_fail(s, r, "Failed to journal the link '%s': %s", link, strerror(-r)) : 0;
	r = gb_root_symlink(s->ctx->root, link, target);
	if (r == 0)
		gb_journal_count_effect(s->j);
	if (gb_journal_end(s->j, id, r, NULL) < 0 && r == 0)
		r = -EIO;
	if (r < 0)
		return gb_ctk_fail(s, r, "Failed to link '%s' to '%s' in %s: %s", link, target, s->ctx->root->path,
		                   strerror(-r));
	s->ret->cdi_changed = true;
	return 1;
}

/* Enable unit (its file at path below the root): systemctl enable on the
 * live machine, the wants/ links in an image. Returns 1 when something
 * was done, 0 when it was enabled already. */
static int enable(struct gb_ctk *s, const char *unit, const char *path)
{
	char wanted[MAX_WANTED][64], link[200], target[200];
	size_t n = wanted_by(s, path, wanted);
	bool all = true;
	int r, done = 0;

	for (size_t i = 0; i < n; i++) {
		snprintf(link, sizeof(link), "etc/systemd/system/%s.wants/%s", wanted[i], unit);
		all &= gb_root_lexists(s->ctx->root, link);
	}
	if (all)
		return 0;
	if (s->ctx->root->is_host) {
		r = gb_ctk_systemctl(s, "enable", unit);
		if (r < 0)
			return r;
		s->ret->cdi_changed = true;
		return 1;
	}
	snprintf(target, sizeof(target), "/%s", path);
	for (size_t i = 0; i < n; i++) {
		snprintf(link, sizeof(link), "etc/systemd/system/%s.wants/%s", wanted[i], unit);
		r = link_wants(s, link, target);
		if (r < 0)
			return r;
		done |= r;
	}
	return done;
}

/* NVIDIA_CTK_CDI_OUTPUT_FILE_PATH from the refresh service's environment
 * file, where a site changed it; else the unit's own default. */
static void refresh_spec(struct gb_ctk *s, char *out, size_t outsz)
{
	_cleanup_free_ char *text = NULL;
	gb_strscpy(out, outsz, GB_CTK_REFRESH_SPEC);
	if (gb_root_read_file(s->ctx->root, REFRESH_ENV, UNIT_MAX, &text, NULL) < 0)
		return;
	for (char *save = NULL, *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char *v = (char *)gb_startswith(gb_strstrip(l), "NVIDIA_CTK_CDI_OUTPUT_FILE_PATH=");
		size_t n = v ? strlen(v) : 0;
		if (n >= 2 && (v[0] == '"' || v[0] == '\'') && v[n - 1] == v[0])
			v[n - 1] = '\0', v++;
		if (v && gb_ctk_path_valid(v))
			gb_strscpy(out, outsz, v);
	}
}

/* The spec is there and names the loaded driver's libraries
 * (libcuda.so.<version>, ...): nothing to generate. */
static bool spec_in_place(struct gb_ctk *s, const char *spec)
{
	_cleanup_free_ char *text = NULL, *version = NULL;
	char needle[80];
	if (gb_root_read_attr(s->ctx->root, "sys/module/nvidia/version", &version) < 0 || !gb_version_valid(version))
		return false;
	if (gb_root_read_file(s->ctx->root, spec + 1, SPEC_MAX, &text, NULL) < 0)
		return false;
	snprintf(needle, sizeof(needle), ".so.%s", version);
	return strstr(text, needle) != NULL;
}

static int generate(struct gb_ctk *s, const char *spec)
{
	_cleanup_free_ struct gb_cmd_result *res = calloc(1, sizeof(*res));
	char output[160], esc[700];
	const char *argv[] = { "nvidia-ctk", "cdi", "generate", output, NULL };
	struct gb_cmd_spec cmd = { .argv = argv, .timeout_ms = GENERATE_TIMEOUT_MS };
	int r;

	if (!res)
		return gb_ctk_fail(s, -ENOMEM, "Out of memory");
	snprintf(output, sizeof(output), "--output=%s", spec);
	r = gb_journal_run(s->j, GB_CTK_STAGE, "command:nvidia-ctk-cdi-generate", &cmd, res);
	if (r == 1)
		return 0; /* done in the run this one resumes */
	if (r < 0) {
		const char *tail = res->output_len > 300 ? res->output + res->output_len - 300 : res->output;
		gb_log_escape(esc, sizeof(esc), tail);
		return gb_ctk_fail(s, r, "nvidia-ctk cdi generate --output=%s failed%s: %s", spec,
		                   res->timed_out ? " (timed out)" : "", esc);
	}
	s->ret->cdi_generated = s->ret->cdi_changed = true;
	return 0;
}

/* NVIDIA's units: enabled (both), the .path unit started live when it was
 * just enabled (what enable --now does). */
static int use_refresh(struct gb_ctk *s, char (*paths)[128])
{
	int r = 0;
	s->ret->cdi_refresh = true;
	gb_strscpy(s->ret->cdi_unit, sizeof(s->ret->cdi_unit), "nvidia-cdi-refresh.service");
	refresh_spec(s, s->ret->cdi_spec, sizeof(s->ret->cdi_spec));
	for (size_t i = 0; i < ARRAY_SIZE(refresh_units) && r >= 0; i++) {
		r = enable(s, refresh_units[i], paths[i]);
		if (r > 0 && i == 0 && !s->ret->image)
			r = gb_ctk_systemctl(s, "start", refresh_units[0]);
	}
	return r < 0 ? r : 0;
}

static int use_own(struct gb_ctk *s)
{
	int r = gb_ctk_write(s, GB_CTK_CDI_UNIT_PATH, unit_text, strlen(unit_text), 0644);
	if (r < 0)
		return r;
	s->ret->cdi_changed |= gb_ctk_file_changed(s, GB_CTK_CDI_UNIT_PATH);
	gb_strscpy(s->ret->cdi_unit, sizeof(s->ret->cdi_unit), GB_CTK_CDI_UNIT);
	gb_strscpy(s->ret->cdi_spec, sizeof(s->ret->cdi_spec), GB_CTK_CDI_SPEC);
	r = enable(s, GB_CTK_CDI_UNIT, GB_CTK_CDI_UNIT_PATH);
	return r < 0 ? r : 0;
}

int gb_ctk_cdi(struct gb_ctx *ctx, struct gb_journal *j, const struct gb_ctk_input *in, struct gb_ctk_result *ret)
{
	struct gb_ctk s;
	char paths[ARRAY_SIZE(refresh_units)][128];
	int r = gb_ctk_init(&s, ctx, j, in, ret);

	if (r < 0)
		return r;
	if (!gb_root_exists(ctx->root, NVIDIA_CTK))
		return gb_ctk_fail(&s, -ENOENT,
		                   "No %s in %s: the Container Toolkit's packages (nvidia-container-toolkit-base) are "
		                   "not installed",
		                   NVIDIA_CTK, ctx->root->path);
	for (size_t i = 0; i < ARRAY_SIZE(refresh_units); i++)
		find_unit(&s, refresh_units[i], paths[i], sizeof(paths[i]));
	r = paths[0][0] && paths[1][0] ? use_refresh(&s, paths) : use_own(&s);
	if (r < 0 || ret->image)
		return r;
	return spec_in_place(&s, ret->cdi_spec) ? 0 : generate(&s, ret->cdi_spec);
}
