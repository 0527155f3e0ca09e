/* SPDX-License-Identifier: MIT */
/* nouveau: blacklist first (so nothing loads it again once it is gone),
 * then unbind and unload it where nothing holds it, then the initramfs of
 * every kernel that will boot, rebuilt only where it would still load
 * nouveau. A console (fbcon) or a display server holding nouveau cannot be
 * moved from under it: that is a reboot, with the blacklist in place. */
#include "prepare.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "effect/pkg.h"
#include "context.h"
#include "prepare/initramfs.h"
#include "effect/journal.h"
#include "shared/killpoint.h"
#include "shared/macro.h"
#include "shared/root.h"
#include "shared/util.h"
#include "shared/json-util.h"

#define NOUVEAU_DRIVER_DIR "sys/bus/pci/drivers/nouveau"
#define REGEN_TIMEOUT_MS (15u * 60u * 1000u)
#define READ_TIMEOUT_MS (120u * 1000u)

int gb_prepare_nouveau_action_parse(const char *s, enum gb_prepare_nouveau_action *ret)
{
	static const char *const names[] = { "none", "blacklist", "unload", "reboot" };
	for (size_t i = 0; s && i < ARRAY_SIZE(names); i++)
		if (streq(s, names[i])) {
			*ret = (enum gb_prepare_nouveau_action)i;
			return 0;
		}
	return -EINVAL;
}

const char *gb_initramfs_verdict_name(enum gb_initramfs_verdict v)
{
	switch (v) {
	case GB_INITRAMFS_CLEAN: return "no-nouveau";
	case GB_INITRAMFS_BLACKLISTED: return "nouveau-blacklisted";
	case GB_INITRAMFS_LOADS_NOUVEAU: return "loads-nouveau";
	case GB_INITRAMFS_UNREADABLE: return "unreadable";
	default: return "missing";
	}
}

/* "0000:01:00.0": what sysfs names a PCI function. */
static bool pci_address_ok(const char *s)
{
	static const char shape[] = "xxxx:xx:xx.x";
	if (strlen(s) != sizeof(shape) - 1)
		return false;
	for (size_t i = 0; shape[i]; i++)
		if (shape[i] == 'x' ? !strchr("0123456789abcdef", s[i]) : s[i] != shape[i])
			return false;
	return true;
}

/* Is nouveau held? refcnt above 0 (fbcon, an open /dev/dri node) or a
 * module that depends on it. why says what holds it. */
static bool nouveau_held(struct gb_ctx *ctx, char *why, size_t whysz)
{
	_cleanup_free_ char *refcnt = NULL;
	char **holders = NULL;
	size_t n = 0;
	uint32_t refs = 0;

	if (gb_root_list_dir(ctx->root, "sys/module/nouveau/holders", &holders, &n) == 0 && n > 0) {
		snprintf(why, whysz, "the module %s depends on nouveau", holders[0]);
		gb_strv_free(holders);
		return true;
	}
	gb_strv_free(holders);
	if (gb_root_read_attr(ctx->root, "sys/module/nouveau/refcnt", &refcnt) == 0 &&
	    gb_safe_atou32(refcnt, 10, &refs) == 0 && refs > 0) {
		snprintf(why, whysz, "nouveau is in use (%u references: a console or a display server holds it)", refs);
		return true;
	}
	return false;
}

/* *journal_failed: the failure is the journal's (out of memory, a full
 * disk), which a reboot does not fix, not the kernel's answer to the unbind. */
static int unbind_one(struct gb_ctx *ctx, struct gb_journal *j, const char *addr, bool *journal_failed)
{
	char id[64];
	json_object *d = gb_json_new_object();
	int r;

	snprintf(id, sizeof(id), "unbind:nouveau:%s", addr);
	gb_json_add(d, "path", gb_json_new_string(NOUVEAU_DRIVER_DIR "/unbind"));
	gb_json_add(d, "device", gb_json_new_string(addr));
	r = gb_journal_begin(j, "prepare", id, "sysfs", d);
	*journal_failed = r < 0;
	if (r != 0)
		return r < 0 ? r : 0;
	/* One write(2) of a sysfs attribute, through the operations table. */
	r = ctx->ops->write_attr(ctx->ops, ctx->root, NOUVEAU_DRIVER_DIR "/unbind", addr);
	gb_kill_point("effect");
	if (gb_journal_end(j, id, r, NULL) < 0) {
		*journal_failed = true;
		return -EIO;
	}
	return r;
}

/* Unbind nouveau from every PCI function it drives. Returns the number
 * unbound, or the first failure's negative errno. */
static int unbind_all(struct gb_ctx *ctx, struct gb_journal *j, struct gb_prepare_result *ret, bool *journal_failed)
{
	char **names = NULL;
	size_t n = 0;
	int r = gb_root_list_dir(ctx->root, NOUVEAU_DRIVER_DIR, &names, &n);

	if (r == -ENOENT)
		return 0;
	if (r < 0) {
		snprintf(ret->cause, sizeof(ret->cause), "cannot list the devices nouveau drives (%s): %s",
		         NOUVEAU_DRIVER_DIR, strerror(-r));
		return r;
	}
	for (size_t i = 0; i < n && ret->n_unbound < GB_PREPARE_MAX_GPUS; i++) {
		if (!pci_address_ok(names[i]))
			continue;
		r = unbind_one(ctx, j, names[i], journal_failed);
		if (r < 0) {
			snprintf(ret->cause, sizeof(ret->cause), "could not %s nouveau from %s: %s",
			         *journal_failed ? "journal the unbind of" : "unbind", names[i], strerror(-r));
			break;
		}
		ret->n_unbound++;
	}
	gb_strv_free(names);
	return r < 0 ? r : 0;
}

static void need_reboot(struct gb_prepare_result *ret, const char *cause)
{
	ret->reboot_needed = true;
	ret->reboot_reason = GB_PREPARE_REBOOT_NOUVEAU;
	if (cause)
		gb_strscpy(ret->cause, sizeof(ret->cause), cause);
}

/* The loaded module: unbind and unload where nothing holds it, else a
 * reboot. Returns a negative errno only for what a reboot cannot fix
 * (built in) or a journal failure. */
static int handle_loaded(struct gb_ctx *ctx, struct gb_journal *j, const struct gb_prepare_input *in,
                         struct gb_prepare_result *ret)
{
	char why[256];
	bool journal_failed = false;
	int r = ctx->ops->module_state(ctx->ops, "nouveau", &ret->state);

	if (r < 0) {
		snprintf(ret->cause, sizeof(ret->cause), "cannot read nouveau's state: %s", strerror(-r));
		return r;
	}
	if (ret->state == GB_MODULE_ABSENT)
		return 0;
	if (ret->state == GB_MODULE_BUILTIN) {
		snprintf(ret->cause, sizeof(ret->cause),
		         "nouveau is built into this kernel: a blacklist cannot stop it; boot with "
		         "nouveau.modeset=0 on the kernel command line");
		return -EOPNOTSUPP;
	}
	if (in->nouveau == GB_PREPARE_NOUVEAU_REBOOT) {
		need_reboot(ret, "nouveau drives a GPU; the kernel reboot already planned clears it (blacklisted)");
		return 0;
	}
	if (nouveau_held(ctx, why, sizeof(why))) {
		need_reboot(ret, why);
		return 0;
	}
	r = unbind_all(ctx, j, ret, &journal_failed);
	if (r < 0 && (journal_failed || r == -ENOMEM))
		return r; /* not the kernel's answer (the journal, memory): a reboot would not help */
	if (r < 0) {
		need_reboot(ret, NULL); /* the cause says which device */
		return 0;
	}
	json_object *d = gb_json_new_object();
	gb_json_add(d, "module", gb_json_new_string("nouveau"));
	r = gb_journal_begin(j, "prepare", "module-unload:nouveau", "module", d);
	if (r < 0) {
		snprintf(ret->cause, sizeof(ret->cause), "could not journal the unload of nouveau: %s", strerror(-r));
		return r;
	}
	if (r == 1)
		return 0;
	r = ctx->ops->module_unload(ctx->ops, "nouveau");
	gb_kill_point("module");
	if (gb_journal_end(j, "module-unload:nouveau", r, NULL) < 0)
		return -EIO;
	if (r == -ENOMEM) { /* not the module's refusal: a reboot is not the answer */
		snprintf(ret->cause, sizeof(ret->cause), "could not unload nouveau: %s", strerror(-r));
		return r;
	}
	if (r < 0) {
		snprintf(why, sizeof(why), "could not unload nouveau: %s", strerror(-r));
		need_reboot(ret, why);
		return 0;
	}
	ret->unloaded = true;
	return 0;
}

static int write_conf(struct gb_journal *j, const char *path, const char *text, struct gb_prepare_result *ret)
{
	unsigned before = gb_journal_effects(j);
	int r = gb_journal_write_file(j, "prepare", path, text, strlen(text), 0644);
	if (r < 0) {
		snprintf(ret->cause, sizeof(ret->cause), "cannot write %s: %s", path, strerror(-r));
		return r;
	}
	ret->blacklist_changed |= gb_journal_effects(j) > before;
	return 0;
}

static int add_kernel(char (*ret)[GB_KVER_MAX], size_t max, size_t *n, const char *kver)
{
	if (!gb_kver_valid(kver) || gb_startswith(kver, "0-rescue-"))
		return 0; /* the rescue image is generic; dracut cannot rebuild it for a missing module tree */
	for (size_t i = 0; i < *n; i++)
		if (streq(ret[i], kver))
			return 0;
	if (*n >= max)
		return -E2BIG;
	gb_strscpy(ret[(*n)++], GB_KVER_MAX, kver);
	return 0;
}

static int kver_cmp(const void *a, const void *b)
{
	return gb_rpmvercmp(a, b);
}

int gb_prepare_kernels(struct gb_root *root, char (*ret)[GB_KVER_MAX], size_t max, size_t *ret_n)
{
	char **names = NULL;
	size_t n_names = 0, n = 0;
	int r = 0;

	if (gb_root_list_dir(root, "boot", &names, &n_names) == 0)
		for (size_t i = 0; i < n_names && r == 0; i++) {
			const char *v = gb_startswith(names[i], "vmlinuz-");
			if (v)
				r = add_kernel(ret, max, &n, v);
		}
	gb_strv_free(names);
	names = NULL;
	if (r == 0 && gb_root_list_dir(root, "lib/modules", &names, &n_names) == 0)
		for (size_t i = 0; i < n_names && r == 0; i++) {
			char p[GB_KVER_MAX + 32];
			snprintf(p, sizeof(p), "lib/modules/%s/vmlinuz", names[i]);
			if (gb_kver_valid(names[i]) && gb_root_exists(root, p))
				r = add_kernel(ret, max, &n, names[i]);
		}
	gb_strv_free(names);
	if (r < 0)
		return r;
	qsort(ret, n, GB_KVER_MAX, kver_cmp);
	*ret_n = n;
	return 0;
}

enum gb_initramfs_verdict gb_prepare_initramfs_verdict(struct gb_ctx *ctx, const char *path, unsigned timeout_ms,
                                                       char *detail, size_t detailsz, int *ret_err)
{
	_cleanup_close_ int fd = gb_root_openat(ctx->root, path, O_RDONLY | O_NOCTTY);
	struct gb_initramfs_limits lim;
	struct gb_initramfs_scan *s;
	enum gb_initramfs_verdict v;
	int r;

	*ret_err = 0;
	detail[0] = '\0';
	if (fd == -ENOENT)
		return GB_INITRAMFS_MISSING;
	if (fd < 0) {
		*ret_err = fd;
		snprintf(detail, detailsz, "cannot open: %s", strerror(-fd));
		return GB_INITRAMFS_UNREADABLE;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		*ret_err = -ENOMEM;
		return GB_INITRAMFS_UNREADABLE;
	}
	gb_initramfs_limits_init(&lim, ctx->ops, timeout_ms ? timeout_ms : READ_TIMEOUT_MS);
	r = gb_initramfs_scan_fd(fd, &lim, s);
	if (r < 0) {
		*ret_err = r;
		snprintf(detail, detailsz, "%s", s->error);
		v = GB_INITRAMFS_UNREADABLE;
	} else if (!s->has_nouveau) {
		snprintf(detail, detailsz, "%u entries, %s", s->n_entries, s->compression);
		v = GB_INITRAMFS_CLEAN;
	} else if (s->blacklisted) {
		snprintf(detail, detailsz, "%s, blacklisted by %s", s->nouveau_entry, s->blacklist_entry);
		v = GB_INITRAMFS_BLACKLISTED;
	} else {
		snprintf(detail, detailsz, "%s", s->nouveau_entry);
		v = GB_INITRAMFS_LOADS_NOUVEAU;
	}
	free(s);
	return v;
}

/* Where the kernel's initramfs lives: Debian/Ubuntu, RHEL family, SUSE.
 * 0, or -ENOMEM (a lookup lost to memory is not an absent image). */
static int image_path(struct gb_root *root, const char *kver_in, char *ret, size_t n)
{
	static const char *const fmt[] = { "boot/initrd.img-%s", "boot/initramfs-%s.img", "boot/initrd-%s" };
	char kver[GB_KVER_MAX];
	int r;

	gb_strscpy(kver, sizeof(kver), kver_in);
	for (size_t i = 0; i < ARRAY_SIZE(fmt); i++) {
		snprintf(ret, n, fmt[i], kver);
		r = gb_root_lexists_r(root, ret);
		if (r != 0)
			return r < 0 ? r : 0;
	}
	snprintf(ret, n, fmt[0], kver);
	return 0;
}

static bool older_than(struct gb_root *root, const char *path, const char *than)
{
	_cleanup_close_ int a = gb_root_openat(root, path, O_RDONLY | O_NOCTTY);
	_cleanup_close_ int b = gb_root_openat(root, than, O_RDONLY | O_NOCTTY);
	struct stat sa, sb;
	if (a < 0 || b < 0 || fstat(a, &sa) < 0 || fstat(b, &sb) < 0)
		return false;
	return sa.st_mtim.tv_sec < sb.st_mtim.tv_sec ||
	       (sa.st_mtim.tv_sec == sb.st_mtim.tv_sec && sa.st_mtim.tv_nsec < sb.st_mtim.tv_nsec);
}

/* Rebuild one image with the family's tool, journaled, chrooted into an
 * image root. 0, or -EIO with ret->cause (exit status, output tail). */
static int rebuild(struct gb_ctx *ctx, struct gb_journal *j, const struct gb_prepare_input *in,
                   struct gb_prepare_image *img, struct gb_prepare_result *ret)
{
	bool tools = in->tool == GB_INITRAMFS_TOOL_INITRAMFS_TOOLS ||
	             (in->tool == GB_INITRAMFS_TOOL_AUTO && gb_startswith(img->path, "boot/initrd.img-"));
	const char *const argv_tools[] = { "update-initramfs", "-u", "-k", img->kver, NULL };
	const char *const argv_dracut[] = { "dracut", "-f", "--kver", img->kver, NULL };
	struct gb_cmd_spec spec = {
		.argv = tools ? argv_tools : argv_dracut,
		.chroot_dir = ctx->root->is_host ? NULL : ctx->root->path,
		.timeout_ms = (int)(in->regen_timeout_ms ? in->regen_timeout_ms : REGEN_TIMEOUT_MS),
	};
	struct gb_cmd_result *res = calloc(1, sizeof(*res));
	char id[GB_KVER_MAX + 16];
	int r;

	if (!res)
		return -ENOMEM;
	snprintf(id, sizeof(id), "initramfs:%s", img->kver);
	r = gb_journal_run(j, "prepare", id, &spec, res);
	if (r < 0) {
		snprintf(ret->cause, sizeof(ret->cause), "%s for %s failed%s: %.200s", spec.argv[0], img->kver,
		         res->timed_out ? " (timed out)" : "",
		         res->output_len > 200 ? res->output + res->output_len - 200 : res->output);
		free(res);
		return r;
	}
	free(res);
	img->rebuilt = r == 0; /* 1: done in an earlier boot of this journal */
	ret->n_rebuilt += img->rebuilt;
	return 0;
}

/* One kernel's initramfs: read it, rebuild it when it would load nouveau
 * (or when it cannot be read and is older than the blacklist), read it
 * again: the rebuilt image must not load nouveau. */
static int handle_image(struct gb_ctx *ctx, struct gb_journal *j, const struct gb_prepare_input *in,
                        struct gb_prepare_image *img, struct gb_prepare_result *ret)
{
	int r = image_path(ctx->root, img->kver, img->path, sizeof(img->path));

	if (r < 0) {
		snprintf(ret->cause, sizeof(ret->cause), "cannot look for the initramfs of %s: %s", img->kver,
		         strerror(-r));
		return r;
	}
	img->before = gb_prepare_initramfs_verdict(ctx, img->path, in->read_timeout_ms, img->detail,
	                                           sizeof(img->detail), &img->err);
	if (img->before != GB_INITRAMFS_LOADS_NOUVEAU &&
	    !(img->before == GB_INITRAMFS_UNREADABLE && older_than(ctx->root, img->path, GB_PREPARE_BLACKLIST_PATH)))
		return 0;
	r = rebuild(ctx, j, in, img, ret);
	if (r < 0)
		return r;
	img->after = gb_prepare_initramfs_verdict(ctx, img->path, in->read_timeout_ms, img->detail, sizeof(img->detail),
	                                          &img->err);
	if (img->after == GB_INITRAMFS_LOADS_NOUVEAU || img->after == GB_INITRAMFS_MISSING) {
		snprintf(ret->cause, sizeof(ret->cause), "the rebuilt initramfs %s %s", img->path,
		         img->after == GB_INITRAMFS_MISSING ? "is missing" : "still loads nouveau");
		return -EIO;
	}
	return 0;
}

int gb_prepare_nouveau(struct gb_ctx *ctx, struct gb_journal *j, const struct gb_prepare_input *in,
                       struct gb_prepare_result *ret)
{
	char kvers[GB_PREPARE_MAX_KERNELS][GB_KVER_MAX];
	size_t n = 0;
	int r;

	memset(ret, 0, sizeof(*ret));
	if (in->nouveau == GB_PREPARE_NOUVEAU_NONE)
		return 0;
	/* the blacklist first: once nouveau is gone, nothing may load it again */
	r = write_conf(j, GB_PREPARE_BLACKLIST_PATH, GB_PREPARE_BLACKLIST_TEXT, ret);
	if (r >= 0 && (in->tool == GB_INITRAMFS_TOOL_DRACUT ||
	               (in->tool == GB_INITRAMFS_TOOL_AUTO && gb_root_exists(ctx->root, "etc/dracut.conf.d"))))
		r = write_conf(j, GB_PREPARE_DRACUT_PATH, GB_PREPARE_DRACUT_TEXT, ret);
	if (r < 0)
		return r;
	r = in->image ? 0 : handle_loaded(ctx, j, in, ret);
	if (r < 0)
		return r;
	r = gb_prepare_kernels(ctx->root, kvers, GB_PREPARE_MAX_KERNELS, &n);
	if (r < 0) {
		snprintf(ret->cause, sizeof(ret->cause), "more than %d kernels installed", GB_PREPARE_MAX_KERNELS);
		return r;
	}
	for (size_t i = 0; i < n; i++) {
		struct gb_prepare_image *img = &ret->images[ret->n_images++];
		gb_strscpy(img->kver, sizeof(img->kver), kvers[i]);
		r = handle_image(ctx, j, in, img, ret);
		if (r < 0)
			return r;
	}
	return 0;
}

json_object *gb_prepare_result_to_json(const struct gb_prepare_result *r)
{
	static const char *const states[] = { "absent", "live", "coming", "going", "builtin" };
	json_object *o = gb_json_new_object(), *imgs = gb_json_new_array();

	gb_json_add(o, "nouveau_state",
	            gb_json_new_string((size_t)r->state < ARRAY_SIZE(states) ? states[r->state] : "?"));
	gb_json_add(o, "unbound", gb_json_new_int((int)r->n_unbound));
	gb_json_add(o, "unloaded", gb_json_new_boolean(r->unloaded));
	gb_json_add(o, "blacklist", gb_json_new_string(GB_PREPARE_BLACKLIST_PATH));
	gb_json_add(o, "blacklist_changed", gb_json_new_boolean(r->blacklist_changed));
	for (size_t i = 0; i < r->n_images; i++) {
		const struct gb_prepare_image *m = &r->images[i];
		json_object *e = gb_json_new_object();
		gb_json_add(e, "kernel", gb_json_new_string(m->kver));
		gb_json_add(e, "path", gb_json_new_string(m->path));
		gb_json_add(e, "before", gb_json_new_string(gb_initramfs_verdict_name(m->before)));
		if (m->rebuilt)
			gb_json_add(e, "after", gb_json_new_string(gb_initramfs_verdict_name(m->after)));
		gb_json_add(e, "rebuilt", gb_json_new_boolean(m->rebuilt));
		if (m->detail[0])
			gb_json_add(e, "detail", gb_json_new_string(m->detail));
		gb_json_append(imgs, e);
	}
	gb_json_add(o, "initramfs", imgs);
	gb_json_add(o, "rebuilt", gb_json_new_int((int)r->n_rebuilt));
	gb_json_add(o, "reboot_needed", gb_json_new_boolean(r->reboot_needed));
	if (r->reboot_reason)
		gb_json_add(o, "reboot_reason", gb_json_new_string(r->reboot_reason));
	if (r->cause[0])
		gb_json_add(o, "cause", gb_json_new_string(r->cause));
	return o;
}
