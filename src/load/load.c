/* SPDX-License-Identifier: MIT */
/* The load stage. Each insert is one journaled effect, "module:<name>";
 * the kernel log is marked before it and read after it, so the lines that
 * explain a failure are this insert's, not those of an earlier try by a
 * boot service (Debian's packages load nvidia during boot themselves). */
#include "load.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "context.h"
#include "effect/journal.h"
#include "shared/killpoint.h"
#include "shared/macro.h"
#include "shared/root.h"
#include "shared/util.h"
#include "shared/json-util.h"

static const char *const load_order[] = { "nvidia", "nvidia_uvm", "nvidia_modeset", "nvidia_drm", "nvidia_peermem" };

void gb_load_input_init(struct gb_load_input *in, bool want_drm, bool want_peermem)
{
	memset(in, 0, sizeof(*in));
	for (size_t i = 0; i < ARRAY_SIZE(load_order); i++) {
		if ((streq(load_order[i], "nvidia_drm") && !want_drm) ||
		    (streq(load_order[i], "nvidia_peermem") && !want_peermem))
			continue;
		in->modules[in->n_modules++].name = load_order[i];
	}
}

static bool module_name_ok(const char *name);

int gb_load_input_add_at_boot(struct gb_load_input *in, const char *name)
{
	if (!name || !module_name_ok(name))
		return -EINVAL;
	if (in->n_modules >= GB_LOAD_MAX_MODULES)
		return -E2BIG;
	in->modules[in->n_modules++] = (struct gb_load_module){ .name = name, .at_boot = true };
	return 0;
}

int gb_load_input_set_params(struct gb_load_input *in, const char *module, const char *params)
{
	for (size_t i = 0; i < in->n_modules; i++)
		if (streq(in->modules[i].name, module)) {
			in->modules[i].params = params;
			return 0;
		}
	return -ENOENT;
}

const char *gb_load_state_name(enum gb_load_state s)
{
	switch (s) {
	case GB_LOAD_ALREADY: return "already-loaded";
	case GB_LOAD_LOADED: return "loaded";
	case GB_LOAD_FAILED: return "failed";
	default: return "not-tried";
	}
}

static bool module_name_ok(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	if (n == 0 || n >= sizeof(((struct gb_load_module_result *)0)->name))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == '-'))
			return false;
	return true;
}

/* A parameter string must stay one modprobe.d line: printable, no comment. */
static bool params_ok(const char *s)
{
	size_t n = strlen(s);
	if (n >= GB_LOAD_PARAMS_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] >= 0x7f || s[i] == '#' || s[i] == '\\')
			return false;
	return true;
}

int gb_load_conf_text(const struct gb_load_input *in, char *buf, size_t bufsz, size_t *ret_len)
{
	size_t o;
	int n;

	n = snprintf(buf, bufsz,
	             "# Written by gpuboot: the NVIDIA module parameters of its plan, so that every boot\n"
	             "# loads the modules as gpuboot did. gpuboot rewrites this file; edit its profile.\n");
	if (n < 0 || (size_t)n >= bufsz)
		return -ENOBUFS;
	o = (size_t)n;
	for (size_t i = 0; i < in->n_modules; i++) {
		const struct gb_load_module *m = &in->modules[i];
		if (!module_name_ok(m->name) || (m->params && !params_ok(m->params)))
			return -EINVAL;
		if (!m->params || !m->params[0])
			continue;
		n = snprintf(buf + o, bufsz - o, "options %s %s\n", m->name, m->params);
		if (n < 0 || (size_t)n >= bufsz - o)
			return -ENOBUFS;
		o += (size_t)n;
	}
	*ret_len = o;
	return 0;
}

/* The failed insert: classify, and add to the hint what only we know. */
static void describe_failure(struct gb_ctx *ctx, const char *module, int err, struct gb_load_result *ret)
{
	const char *lines[GB_KMSG_MAX_LINES];
	_cleanup_free_ char *version = NULL;
	char p[128];

	for (size_t i = 0; i < ret->kernel.n; i++)
		lines[i] = ret->kernel.line[i].text;
	ret->err = err;
	gb_load_classify(err, lines, ret->kernel.n, &ret->cause);
	ret->exit_code = ret->cause.info->exit_code;
	snprintf(p, sizeof(p), "sys/module/%s/version", module);
	if (ret->cause.info->cause == GB_CAUSE_OTHER_VERSION_LOADED && gb_root_read_attr(ctx->root, p, &version) == 0)
		snprintf(ret->hint, sizeof(ret->hint), "%s %s is loaded: %s", module, version, ret->cause.info->hint);
	else
		snprintf(ret->hint, sizeof(ret->hint), "%s", ret->cause.info->hint);
}

static json_object *failure_detail(const struct gb_load_result *ret)
{
	json_object *d = gb_json_new_object();
	gb_json_add(d, "cause", gb_json_new_string(ret->cause.info->id));
	if (ret->cause.detail[0])
		gb_json_add(d, "kernel_line", gb_json_new_string(ret->cause.detail));
	return d;
}

/* Record the step's start; a step done in an earlier boot of a resumed
 * journal whose module is not live now (a reboot unloads everything) is
 * marked stale and started again, so the insert is recorded before it
 * happens. Returns 0 or a negative errno. */
static int step_begin(struct gb_journal *j, const char *id, const struct gb_load_module *m)
{
	json_object *d = gb_json_new_object();
	int r;

	gb_json_add(d, "module", gb_json_new_string(m->name));
	gb_json_add(d, "params", m->params ? gb_json_new_string(m->params) : NULL);
	r = gb_journal_begin(j, "load", id, "module", d);
	if (r == 1) {
		d = gb_json_new_object();
		gb_json_add(d, "note", gb_json_new_string("done before, not live now: loaded again"));
		r = gb_journal_end(j, id, -ESTALE, d);
		if (r >= 0)
			r = gb_journal_begin(j, "load", id, "module", NULL);
	}
	return r < 0 ? r : 0;
}

/* One module. Returns a negative errno only when the journal failed or
 * memory ran out (the insert did not run); an insert's failure is in res
 * and ret. */
static int load_one(struct gb_ctx *ctx, struct gb_journal *j, const struct gb_load_module *m,
                    struct gb_load_module_result *res, struct gb_load_result *ret)
{
	const struct gb_ops *ops = ctx->ops;
	enum gb_module_state st = GB_MODULE_ABSENT;
	struct gb_kmsg_mark mark;
	char id[96];
	int r;

	/* A state that cannot be read is tried: the insert ignores a loaded
	 * module. Not one lost to memory: the insert would be no better off. */
	r = ops->module_state(ops, m->name, &st);
	if (r == -ENOMEM)
		return r;
	if (r == 0 && (st == GB_MODULE_LIVE || st == GB_MODULE_BUILTIN)) {
		res->state = GB_LOAD_ALREADY;
		return 0;
	}
	snprintf(id, sizeof(id), "module:%s", m->name);
	r = step_begin(j, id, m);
	if (r < 0)
		return r;
	gb_kmsg_mark(ctx->root, &mark);
	r = ops->module_load(ops, m->name, m->params);
	gb_kill_point("module");
	if (r == 0) {
		gb_kmsg_mark_close(&mark);
		res->state = GB_LOAD_LOADED;
		ret->n_loaded++;
		gb_journal_count_effect(j);
		return gb_journal_end(j, id, 0, NULL) < 0 ? -EIO : 0;
	}
	if (r > 0)
		r = -EIO; /* an operation returns a negative errno; anything else is a bug below us */
	ret->kmsg_err = gb_kmsg_read_since(ctx->root, &mark, m->name, &ret->kernel);
	res->state = GB_LOAD_FAILED;
	res->err = r;
	ret->failed_module = res->name;
	describe_failure(ctx, m->name, r, ret);
	(void)gb_journal_end(j, id, r, failure_detail(ret)); /* the failure stands even if this record does not */
	return 0;
}

static int write_conf(struct gb_journal *j, const struct gb_load_input *in, struct gb_load_result *ret)
{
	char text[GB_LOAD_MAX_MODULES * (GB_LOAD_PARAMS_MAX + 80) + 256];
	unsigned before = gb_journal_effects(j);
	size_t len;
	int r;

	r = gb_load_conf_text(in, text, sizeof(text), &len);
	if (r < 0)
		return r;
	r = gb_journal_write_file(j, "load", GB_LOAD_CONF_PATH, text, len, 0644);
	if (r < 0)
		return r;
	ret->conf_changed = gb_journal_effects(j) != before;
	/* the modules no device loads at boot: systemd-modules-load does */
	len = (size_t)snprintf(text, sizeof(text), "# Written by gpuboot: modules its plan needs at every boot.\n");
	for (size_t i = 0; i < in->n_modules; i++)
		if (in->modules[i].at_boot)
			len += (size_t)snprintf(text + len, sizeof(text) - len, "%s\n", in->modules[i].name);
	for (size_t i = 0; i < in->n_modules; i++)
		if (in->modules[i].at_boot)
			return gb_journal_write_file(j, "load", GB_LOAD_AT_BOOT_PATH, text, len, 0644);
	return 0;
}

int gb_load(struct gb_ctx *ctx, const struct gb_load_input *in, struct gb_journal *j, struct gb_load_result *ret)
{
	int r;

	memset(ret, 0, sizeof(*ret));
	ret->cause.info = gb_load_cause_info(GB_CAUSE_NONE);
	if (!ctx || !in || !j || in->n_modules > GB_LOAD_MAX_MODULES)
		return -EINVAL;
	ret->n_modules = in->n_modules;
	for (size_t i = 0; i < in->n_modules; i++)
		if (!module_name_ok(in->modules[i].name))
			return -EINVAL;
		else
			gb_strscpy(ret->modules[i].name, sizeof(ret->modules[i].name), in->modules[i].name);
	r = write_conf(j, in, ret);
	if (r < 0)
		return r;
	for (size_t i = 0; i < in->n_modules; i++) {
		r = load_one(ctx, j, &in->modules[i], &ret->modules[i], ret);
		if (r < 0)
			return r;
		if (ret->modules[i].state == GB_LOAD_FAILED)
			return ret->err; /* the later modules need this one */
	}
	return 0;
}

json_object *gb_load_result_to_json(const struct gb_load_result *r)
{
	json_object *o = gb_json_new_object(), *mods = gb_json_new_array(), *lines;
	char eb[16];

	for (size_t i = 0; i < r->n_modules; i++) {
		json_object *m = gb_json_new_object();
		gb_json_add(m, "name", gb_json_new_string(r->modules[i].name));
		gb_json_add(m, "state", gb_json_new_string(gb_load_state_name(r->modules[i].state)));
		if (r->modules[i].err)
			gb_json_add(m, "errno",
			            gb_json_new_string(gb_load_errno_name(r->modules[i].err, eb, sizeof(eb))));
		gb_json_append(mods, m);
	}
	gb_json_add(o, "modules", mods);
	gb_json_add(o, "loaded_this_run", gb_json_new_int((int)r->n_loaded));
	gb_json_add(o, "modprobe_conf", gb_json_new_string(GB_LOAD_CONF_PATH));
	gb_json_add(o, "modprobe_conf_changed", gb_json_new_boolean(r->conf_changed));
	gb_json_add(o, "exit_code", gb_json_new_int(r->exit_code));
	if (!r->failed_module)
		return o;
	gb_json_add(o, "failed_module", gb_json_new_string(r->failed_module));
	gb_json_add(o, "cause", gb_json_new_string(r->cause.info->id));
	gb_json_add(o, "summary", gb_json_new_string(r->cause.info->summary));
	gb_json_add(o, "hint", gb_json_new_string(r->hint));
	gb_json_add(o, "errno", gb_json_new_string(gb_load_errno_name(r->err, eb, sizeof(eb))));
	gb_json_add(o, "kernel_errno", gb_json_new_string(gb_load_errno_name(r->cause.err, eb, sizeof(eb))));
	if (r->cause.detail[0])
		gb_json_add(o, "detail", gb_json_new_string(r->cause.detail));
	lines = gb_json_new_array();
	for (size_t i = 0; i < r->kernel.n; i++)
		gb_json_append(lines, gb_json_new_string(r->kernel.line[i].text));
	gb_json_add(o, "kernel_lines", lines);
	if (r->kernel.dropped)
		gb_json_add(o, "kernel_lines_dropped", gb_json_new_int((int)r->kernel.dropped));
	return o;
}
