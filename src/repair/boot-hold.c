/* SPDX-License-Identifier: MIT */
/* The kernel update gate: a kernel installed without its NVIDIA module is
 * not made the default boot entry. When the repair of a kernel that is not
 * running ends without its module, GRUB's default is held on the running
 * kernel (which has it) with a drop-in that Debian's and Ubuntu's
 * grub-mkconfig read after /etc/default/grub; a later repair that gives
 * the kernel its module lifts the hold (docs/repair.md, "The kernel update
 * gate"). Everything is journaled; the site's /etc/default/grub is never
 * edited. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "context.h"
#include "effect/effect.h"
#include "effect/journal.h"
#include "effect/root-write.h"
#include "prepare/bootloader.h"
#include "repair-internal.h"
#include "shared/log.h"
#include "shared/macro.h"
#include "shared/ops.h"
#include "shared/root.h"
#include "shared/util.h"

#define STAGE "repair"
#define GRUB_CFG "boot/grub/grub.cfg"
#define UPDATE_GRUB "usr/sbin/update-grub"
#define CFG_MAX (4u << 20)

static bool ready(const struct gb_repair_state *s)
{
	return s->verdict == GB_REPAIR_OK || s->verdict == GB_REPAIR_LOAD;
}

/* GRUB_DEFAULT is sourced by a shell: only the characters grub-mkconfig
 * puts in ids and titles of kernel entries, inside single quotes. */
static bool entry_safe(const char *e)
{
	if (!e[0])
		return false;
	for (; *e; e++)
		if (!(isalnum((unsigned char)*e) || strchr(" ._,:/()+>~-", *e)))
			return false;
	return true;
}

static int record_path(const char *kver, char *ret, size_t n)
{
	int m = snprintf(ret, n, "%s/%s%s", GB_REPAIR_MARKER_DIR, GB_REPAIR_HOLD_PREFIX, kver);
	return m < 0 || (size_t)m >= n ? -ENAMETOOLONG : 0;
}

static int unlink_step(struct gb_ctx *ctx, struct gb_journal *j, const char *path)
{
	char id[600];
	int r;

	snprintf(id, sizeof(id), "unlink:%s", path);
	r = gb_journal_begin(j, STAGE, id, "file", NULL);
	if (r != 0)
		return r < 0 ? r : 0;
	r = gb_root_unlink(ctx->root, path);
	if (r == 0)
		gb_journal_count_effect(j);
	if (r == -ENOENT)
		r = 0;
	return gb_journal_end(j, id, r, NULL) < 0 ? -EIO : r;
}

/* update-grub, in the root (chrooted under an image or test root). */
static int update_grub(struct gb_ctx *ctx, struct gb_journal *j, const char *why, struct gb_repair_hold *h)
{
	static const char *const argv[] = { "update-grub", NULL };
	struct gb_cmd_result res_buf, *res = &res_buf; /* 4 KiB of output */
	struct gb_cmd_spec spec = { .argv = argv, .timeout_ms = 5 * 60 * 1000 };
	struct gb_chroot c;
	char id[96];
	int r, k;

	memset(res, 0, sizeof(*res));
	snprintf(id, sizeof(id), "update-grub:%s", why);
	if (ctx->root->is_host) {
		r = gb_journal_run(j, STAGE, id, &spec, res);
		k = 0;
	} else if ((r = gb_chroot_enter(ctx, j, &c, h->error, sizeof(h->error))) >= 0) {
		spec.chroot_dir = c.dir;
		r = gb_journal_run(j, STAGE, id, &spec, res);
		k = gb_chroot_leave(ctx, j, &c, h->error, sizeof(h->error));
	} else
		return r;
	if (r < 0 && !h->error[0]) {
		char tail[320];
		size_t len = strnlen(res->output, res->output_len);
		gb_log_escape(tail, sizeof(tail), len > 300 ? res->output + len - 300 : res->output);
		snprintf(h->error, sizeof(h->error), "update-grub failed: %s", tail);
	}
	return r < 0 ? -EIO : k;
}

/* The kernel has its module now: drop its record; the last one lifts the
 * hold. */
static int lift(struct gb_ctx *ctx, struct gb_journal *j, const struct gb_repair_result *res, struct gb_repair_hold *h)
{
	char rec[GB_KVER_MAX + 64];
	char **names = NULL;
	size_t n = 0;
	bool others = false;
	int r;

	if (record_path(res->after.kver, rec, sizeof(rec)) < 0 || !gb_root_lexists(ctx->root, rec))
		return 0;
	r = unlink_step(ctx, j, rec);
	if (r < 0)
		return r;
	if (gb_root_list_dir(ctx->root, GB_REPAIR_MARKER_DIR, &names, &n) >= 0)
		for (size_t i = 0; i < n; i++)
			others |= gb_startswith(names[i], GB_REPAIR_HOLD_PREFIX) != NULL;
	gb_strv_free(names);
	if (others) {
		snprintf(h->reason, sizeof(h->reason),
		         "%s has its module now; the default stays held for another kernel without one (%s/%s*)",
		         res->after.kver, GB_REPAIR_MARKER_DIR, GB_REPAIR_HOLD_PREFIX);
		h->held = true;
		return 0;
	}
	r = unlink_step(ctx, j, GB_REPAIR_HOLD_CFG);
	if (r >= 0 && gb_root_exists(ctx->root, UPDATE_GRUB))
		r = update_grub(ctx, j, "lift", h);
	if (r < 0)
		return r;
	h->changed = true;
	snprintf(h->reason, sizeof(h->reason), "%s has its module now: the hold on the default boot entry is lifted",
	         res->after.kver);
	return 0;
}

/* Not held: why, in h->reason. */
static int not_held(struct gb_repair_hold *h, int err, const char *fmt, ...) _printf_(3, 4);
static int not_held(struct gb_repair_hold *h, int err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(h->reason, sizeof(h->reason), fmt, ap);
	va_end(ap);
	return err;
}

/* Why the default cannot be held here (h->reason), or 0 with the entry to
 * hold in h->entry and the kernel in h->keep. */
static int where(struct gb_ctx *ctx, const struct gb_repair_result *res, struct gb_repair_hold *h)
{
	_cleanup_free_ char *cfg = NULL;
	struct gb_repair_state w;
	size_t len = 0;
	int r;

	if (gb_repair_family(ctx, NULL) != GB_REPAIR_FAMILY_DEB || !gb_root_exists(ctx->root, UPDATE_GRUB) ||
	    gb_root_read_file(ctx->root, GRUB_CFG, CFG_MAX, &cfg, &len) < 0 || gb_grubcfg_uses_bls(cfg, len))
		return not_held(
		    h, -EOPNOTSUPP,
		    "the boot loader here is not GRUB with update-grub (Debian, Ubuntu): the default boot "
		    "entry is left as it is; check with gpuboot --repair --check-next-boot before a reboot");
	r = gb_repair_check(ctx, NULL, &w);
	if (r < 0 || !w.running || !ready(&w) || streq(w.kver, res->after.kver))
		return not_held(h, -ENOENT,
		                "no running kernel here has the module either: there is no better kernel to keep as "
		                "the default");
	gb_strscpy(h->keep, sizeof(h->keep), w.kver);
	r = gb_grubcfg_entry_path(cfg, len, w.kver, h->entry, sizeof(h->entry));
	if (r < 0 || !entry_safe(h->entry))
		return not_held(h, -ENOENT,
		                "%s has no menu entry named for %s that GRUB_DEFAULT can name: the default boot entry "
		                "is left as it is",
		                GRUB_CFG, w.kver);
	return 0;
}

static int hold(struct gb_ctx *ctx, struct gb_journal *j, const struct gb_repair_result *res, struct gb_repair_hold *h)
{
	char rec[GB_KVER_MAX + 64], text[1400], rtext[GB_KVER_MAX * 2 + 32];
	int r;

	if (where(ctx, res, h) < 0)
		return 0;
	snprintf(text, sizeof(text),
	         "# Written by gpuboot (docs/repair.md, \"The kernel update gate\"): kernel %s has no\n"
	         "# NVIDIA module, so the machine keeps booting %s, which has it. Removed by\n"
	         "# gpuboot --repair --kernel %s once that kernel has its module.\n"
	         "GRUB_DEFAULT='%s'\n",
	         res->after.kver, h->keep, res->after.kver, h->entry);
	snprintf(rtext, sizeof(rtext), "kernel=%s\nkeep=%s\n", res->after.kver, h->keep);
	r = record_path(res->after.kver, rec, sizeof(rec));
	if (r >= 0)
		r = gb_journal_write_file(j, STAGE, rec, rtext, strlen(rtext), 0644);
	if (r >= 0)
		r = gb_journal_write_file(j, STAGE, GB_REPAIR_HOLD_CFG, text, strlen(text), 0644);
	if (r < 0)
		return r;
	if (gb_journal_step_changed(j, "file:" GB_REPAIR_HOLD_CFG)) {
		r = update_grub(ctx, j, "hold", h);
		if (r < 0)
			return r;
		h->changed = true;
	}
	h->held = true;
	snprintf(h->reason, sizeof(h->reason),
	         "%s has no NVIDIA module: the default boot entry stays on %s (%s) until it has", res->after.kver,
	         h->keep, GB_REPAIR_HOLD_CFG);
	return 0;
}

int gb_repair_holds(struct gb_ctx *ctx, char *keep, size_t keep_n, char *ret, size_t n)
{
	char **names = NULL, kernels[512] = "";
	size_t n_names = 0, off = 0;
	int count = 0;

	keep[0] = ret[0] = '\0';
	if (gb_root_list_dir(ctx->root, GB_REPAIR_MARKER_DIR, &names, &n_names) < 0)
		return 0;
	for (size_t i = 0; i < n_names; i++) {
		_cleanup_free_ char *text = NULL;
		const char *k = gb_startswith(names[i], GB_REPAIR_HOLD_PREFIX), *v;
		char p[600];
		size_t len;
		int m;

		if (!k || !gb_repair_kver_valid(k))
			continue;
		snprintf(p, sizeof(p), "%s/%s", GB_REPAIR_MARKER_DIR, names[i]);
		if (gb_root_read_file(ctx->root, p, 4096, &text, &len) < 0)
			continue;
		v = strstr(text, "keep=");
		if (v && (v == text || v[-1] == '\n')) {
			size_t l = strcspn(v + 5, "\n");
			if (l < keep_n) {
				memcpy(keep, v + 5, l);
				keep[l] = '\0';
			}
		}
		m = snprintf(kernels + off, sizeof(kernels) - off, "%s%s", off ? ", " : "", k);
		if (m > 0 && (size_t)m < sizeof(kernels) - off)
			off += (size_t)m;
		count++;
	}
	gb_strv_free(names);
	if (count && gb_repair_kver_valid(keep))
		snprintf(ret, n, "the default boot entry is held on %s: %s %s no NVIDIA module (%s)", keep, kernels,
		         count == 1 ? "has" : "have", GB_REPAIR_HOLD_CFG);
	else if (count)
		snprintf(ret, n, "the default boot entry is held: %s %s no NVIDIA module (%s)", kernels,
		         count == 1 ? "has" : "have", GB_REPAIR_HOLD_CFG);
	return count;
}

int gb_repair_boot_hold(struct gb_ctx *ctx, struct gb_journal *j, bool repaired, struct gb_repair_result *res)
{
	struct gb_repair_hold *h = &res->hold;
	int r;

	if (res->before.no_driver)
		return 0;
	if (!res->after.kver[0] || res->after.running) {
		/* the running kernel's repair: only say what holds are in force */
		if (gb_repair_holds(ctx, h->keep, sizeof(h->keep), h->reason, sizeof(h->reason)) > 0)
			h->checked = h->held = true;
		return 0;
	}
	h->checked = true;
	r = repaired ? lift(ctx, j, res, h) : hold(ctx, j, res, h);
	if (r < 0) {
		if (!h->error[0])
			snprintf(h->error, sizeof(h->error), "%s", strerror(-r));
		gb_log_warning("repair: the default boot entry: %s", h->error);
	}
	return r;
}
