/* SPDX-License-Identifier: MIT */
/* `gpuboot run` and `gpuboot --repair`: the stage table, walked in order,
 * under the lock, with the journal and a status document written after
 * every stage (so a killed run leaves one that names its last stage).
 *
 * The stages that change the machine (prepare, install, load) are not
 * written yet: where the plan needs them, run stops there with exit 2 and
 * says so, having changed nothing. It never pretends. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "context.h"
#include "exit-codes.h"
#include "run.h"
#include "catalog/catalog.h"
#include "toolkit/ctk.h"
#include "effect/effect.h"
#include "install/install.h"
#include "load/load.h"
#include "load/modsign.h"
#include "load/daemons.h"
#include "load/devnodes.h"
#include "load/nodes.h"
#include "repair/repair.h"
#include "prepare/prepare.h"
#include "run/fetch-stage.h"
#include "effect/journal.h"
#include "run/stage.h"
#include "run/verify-stage.h"
#include "shared/log.h"
#include "shared/test-knob.h"
#include "shared/util.h"
#include "version.h"
#include "shared/json-util.h"

struct run {
	struct gb_ctx *ctx;
	struct gb_inputs in;
	struct gb_plan plan;
	bool have_plan;
	struct gb_status st;
	struct gb_journal *journal;
	struct gb_verify_result vres;
	struct gb_artifact *arts; /* what the fetch stage verified into the cache */
	size_t n_arts;
	/* The fetch in the background, beside the driver's install: the
	 * thread owns arts, n_arts, fetch_copy and fetch_code until joined. */
	pthread_t fetch_thread;
	bool fetch_running;
	atomic_bool fetch_cancel;
	struct gb_stage *fetch_st, fetch_copy;
	struct gb_fetch_job fetch_job;
	struct gb_plan fetch_want;
	int fetch_code;
	bool repair_running; /* --repair: the kernel repaired is the one running */
	struct gb_ctk_result *ctk; /* the toolkit's configuration, once this run installed it */
};

struct stage_def {
	const char *name;
	/* 0 to go on, or the exit code the run ends with */
	int (*fn)(struct run *r, struct gb_stage *st);
};

/* A stage that could not get the memory it starts with: said in the status
 * and on stderr, as every failure is. */
static int stage_oom(struct run *r, struct gb_stage *st)
{
	gb_stage_end(r->ctx, st, "failed", -ENOMEM, "out of memory");
	gb_log_error("%s: out of memory", st->name);
	return GB_EXIT_FAILED;
}

static int stage_detect(struct run *r, struct gb_stage *st)
{
	int code = gb_inputs_load(r->ctx, &r->in);
	if (!code)
		code = gb_inputs_detect(r->ctx, &r->in);
	r->in.want_offers = !r->ctx->opt.repair;
	if (!code && gb_inputs_offers(r->ctx, &r->in) < 0)
		return stage_oom(r, st);
	if (code) {
		gb_stage_end(r->ctx, st, "failed", code == GB_EXIT_USAGE ? -EINVAL : -EIO,
		             code == GB_EXIT_USAGE ? "the profile or the configuration is not valid"
		                                   : "the machine could not be read");
		gb_stage_hint(st, "see the error above; nothing was changed");
		return code;
	}
	r->st.facts = gb_facts_to_json(&r->in.facts);
	gb_stage_end(r->ctx, st, "ok", 0, NULL);
	return 0;
}

static const char *refusal_hint(int code)
{
	switch (code) {
	case GB_EXIT_NO_GPU:
		return "attach a GPU to the instance (lspci -d 10de: lists it), or for an image build pass "
		       "--target-gpu "
		       "MODEL; nothing was changed";
	case GB_EXIT_UNSUPPORTED:
		return "NVIDIA's drivers need glibc on x86_64 or aarch64 and a supported release (docs/plan.md); "
		       "nothing "
		       "was changed";
	case GB_EXIT_UNSUPPORTED_GPU:
		return "choose a profile or branch that supports this GPU (docs/profiles.md); nothing was changed";
	default: return "see the refusal above; nothing was changed";
	}
}

static int open_journal(struct run *r, struct gb_stage *st);

/* The killed run's action for a component: "install", "replace", ... */
static const char *journal_action(const struct run *r, const char *part)
{
	return gb_json_get_str(gb_json_get(gb_json_get(r->journal->doc, "plan"), part), "action");
}

/* The killed run's install, replace or rebuild; UNSET for anything else. */
static enum gb_action redo_action(const char *a)
{
	enum gb_action x = gb_action_parse(a);
	return x == GB_ACTION_INSTALL || x == GB_ACTION_REPLACE || x == GB_ACTION_REBUILD ? x : GB_ACTION_UNSET;
}

/* Resuming a killed run: what it installed is on disk now, and the plan
 * made from the disk keeps it, so the rest of its install (the kernel
 * hooks, the toolkit's runtimes and CDI) would never run. The same target
 * (the journal's plan hash) is planned as the killed run planned it: the
 * installed component ignored, the action its own; each install step the
 * journal has done is skipped, the rest runs. */
static int replan_unfinished(struct run *r)
{
	enum gb_action da = redo_action(journal_action(r, "driver")), ta = redo_action(journal_action(r, "toolkit"));
	const char *ca = journal_action(r, "cuda");
	int code;

	r->in.redo_driver = da != GB_ACTION_UNSET && r->plan.driver.action == GB_ACTION_KEEP;
	r->in.redo_cuda = ca && streq(ca, "install") && r->plan.cuda.action == GB_ACTION_KEEP;
	r->in.redo_toolkit = ta != GB_ACTION_UNSET && r->plan.toolkit.action == GB_ACTION_KEEP;
	if (!r->in.redo_driver && !r->in.redo_cuda && !r->in.redo_toolkit)
		return 0;
	gb_plan_done(&r->plan);
	r->have_plan = false;
	code = gb_plan_from_inputs(r->ctx, &r->in, &r->plan);
	if (code)
		return code;
	r->have_plan = true;
	if (r->in.redo_driver && r->plan.driver.action != GB_ACTION_KEEP)
		r->plan.driver.action = da;
	gb_log_info("Resuming: the killed run's install of the%s%s%s is finished", r->in.redo_driver ? " driver" : "",
	            r->in.redo_cuda ? " CUDA" : "", r->in.redo_toolkit ? " Container Toolkit" : "");
	json_object_put(r->st.plan);
	r->st.plan = gb_plan_to_json(&r->plan);
	if (r->plan.refusal_code)
		gb_log_error("%s", r->plan.refusal);
	return r->plan.refusal_code;
}

static int stage_plan(struct run *r, struct gb_stage *st)
{
	int code = gb_plan_from_inputs(r->ctx, &r->in, &r->plan);
	if (code) {
		gb_stage_end(r->ctx, st, "failed", -EINVAL, "no plan could be made (exit %d)", code);
		return code;
	}
	r->have_plan = true;
	r->st.plan = gb_plan_to_json(&r->plan);
	if (r->plan.refusal_code == GB_EXIT_NO_GPU && r->ctx->opt.repair) {
		/* The modules for a kernel are repaired whether a GPU is seen or not. */
		gb_stage_end(r->ctx, st, "skipped", 0, "%s; --repair goes on with the modules", r->plan.refusal);
		return open_journal(r, st);
	}
	if (r->plan.refusal_code) {
		gb_stage_end(r->ctx, st, "refused", r->plan.refusal_code == GB_EXIT_NO_GPU ? -ENODEV : -EOPNOTSUPP,
		             "%s", r->plan.refusal);
		gb_stage_hint(st, "%s", refusal_hint(r->plan.refusal_code));
		gb_log_error("%s", r->plan.refusal);
		return r->plan.refusal_code;
	}
	code = open_journal(r, st);
	if (code)
		return code;
	if (r->journal->resumed && (code = replan_unfinished(r))) {
		gb_stage_end(r->ctx, st, "failed", -EINVAL, "the resumed run could not be planned again (exit %d)",
		             code);
		gb_stage_hint(st, "see the error above; nothing was changed by this run");
		return code;
	}
	gb_plan_print(&r->plan, stdout);
	gb_stage_end(r->ctx, st, "ok", 0, NULL);
	return 0;
}

/* --repair for a kernel that is not running, or from a hook: nothing to load or verify now. */
static bool repair_stops_before_load(const struct run *r)
{
	return r->ctx->opt.repair && (r->ctx->opt.from_hook || !r->repair_running);
}

/* Every decision keeps what is there: prepare, fetch and install have
 * nothing to do (load still runs when the kept driver is not loaded). */
static bool nothing_to_change(const struct run *r)
{
	return gb_plan_changes_nothing(&r->plan);
}

static int stage_skip_if_kept(struct run *r, struct gb_stage *st)
{
	gb_stage_end(r->ctx, st, "skipped", 0, "nothing to change: the installed driver %s is kept%s",
	             r->plan.driver.version, r->plan.cuda.action == GB_ACTION_KEEP ? ", CUDA is kept" : "");
	return 0;
}

/* Installing into an image root for a GPU that is not here (Packer): the
 * first boot of the image loads and verifies. */
static bool image_mode(const struct run *r)
{
	return !r->ctx->root->is_host && r->ctx->opt.target_gpu;
}

static bool plan_has_module(const struct gb_plan *p, const char *name)
{
	for (size_t i = 0; i < p->n_modules; i++)
		if (streq(p->modules[i].name, name))
			return true;
	return false;
}

/* Where the NVIDIA modules of the plan's kernel are: the directory of the
 * module detect found, else where DKMS puts them. */
static void module_dir(const struct run *r, char *out, size_t outsz)
{
	const char *kver = r->plan.in.kernel_release;
	for (size_t i = 0; i < r->in.facts.kernel.n_installed; i++) {
		const struct gb_kernel_install *k = &r->in.facts.kernel.installed[i];
		const char *p = k->nvidia.path, *slash;
		if (!k->release || !streq(k->release, kver) || !p || !(slash = strrchr(p, '/')))
			continue;
		while (*p == '/')
			p++;
		snprintf(out, outsz, "%.*s", (int)(slash - p), p);
		return;
	}
	snprintf(out, outsz, "lib/modules/%s/%s", kver, gb_module_dirs(GB_MODULES_DEB)[0]);
}

/* Secure Boot with a site key: every NVIDIA module of the kernel signed
 * with it (journaled) before the first insert. 0, or the exit code. */
static int sign_modules(struct run *r, struct gb_stage *st, json_object **ret_json)
{
	struct gb_modsign_result *ms = calloc(1, sizeof(*ms));
	char dir[256];
	int k;

	if (!ms) {
		return stage_oom(r, st);
	}
	module_dir(r, dir, sizeof(dir));
	k = gb_modsign_dir(r->ctx, r->journal, dir, r->in.site.signing_key, r->in.site.signing_cert, ms);
	*ret_json = gb_modsign_result_to_json(ms);
	if (k < 0) {
		gb_stage_end(r->ctx, st, "failed", k, "signing the modules with the site key: %s", ms->error);
		gb_stage_hint(st, "the modules were left as they were; fix the cause and run gpuboot again");
		gb_log_error("signing the modules with the site key: %s", ms->error);
		free(ms);
		return GB_EXIT_MODULE;
	}
	gb_log_info("modules in %s signed with the site key: %zu signed now, %zu already", dir, ms->n_signed,
	            ms->n_files - ms->n_signed);
	free(ms);
	return 0;
}

/* The plan's modules and parameters, loaded with libkmod through the
 * operations table; a failure named from its errno and the kernel's lines. */
/* After the load: the CDI specification for the loaded driver, where this
 * run installed the toolkit or keeps one (a new driver needs a new spec). */
static int load_nodes_daemons(struct run *r, struct gb_stage *st);

static int load_cdi(struct run *r, struct gb_stage *st)
{
	struct gb_ctk_input in = { 0 };
	bool kept = r->plan.toolkit.action == GB_ACTION_KEEP;
	int k;

	if (!r->ctk && !kept)
		return 0;
	if (!r->ctk && !(r->ctk = calloc(1, sizeof(*r->ctk))))
		return GB_EXIT_FAILED;
	gb_journal_set_scope(r->journal, "toolkit");
	k = gb_ctk_cdi(r->ctx, r->journal, &in, r->ctk);
	gb_journal_set_scope(r->journal, NULL);
	gb_json_add(r->st.load, "cdi", gb_ctk_result_to_json(r->ctk));
	if (k >= 0)
		return 0;
	gb_stage_end(r->ctx, st, "failed", k, "the modules are loaded; the CDI specification is not: %s",
	             r->ctk->error);
	gb_stage_hint(st, "containers will not find the GPUs through CDI; see load.cdi in the status document");
	gb_log_error("load: %s", st->error);
	return GB_EXIT_FAILED;
}

static int stage_load(struct run *r, struct gb_stage *st)
{
	json_object *signing = NULL;
	struct gb_load_input in;
	struct gb_load_result *res;
	int k, code;

	if (repair_stops_before_load(r)) {
		gb_stage_end(r->ctx, st, "skipped", 0, "%s",
		             r->ctx->opt.from_hook ? "from a kernel hook: the module loads at boot"
		                                   : "the kernel is not running: it loads at its boot");
		return 0;
	}
	if (r->plan.in.installed.loaded && nothing_to_change(r)) {
		/* Loaded before: by gpuboot, which made its nodes, links and rule
		 * then, or by whoever installed it; a kept run changes nothing. */
		gb_stage_end(r->ctx, st, "skipped", 0, "the kept driver %s is loaded", r->plan.driver.version);
		return 0;
	}
	if (image_mode(r)) {
		gb_stage_end(r->ctx, st, "skipped", 0, "image root '%s' for a %s: the modules load at its first boot",
		             r->ctx->opt.root, r->ctx->opt.target_gpu);
		return 0;
	}
	if (r->plan.secure_boot.strategy == GB_SB_SIGN_WITH_KEY) {
		code = sign_modules(r, st, &signing);
		if (code) {
			json_object_put(r->st.load);
			r->st.load = gb_json_new_object();
			gb_json_add(r->st.load, "signing", signing);
			return code;
		}
	}
	gb_load_input_init(&in, plan_has_module(&r->plan, "nvidia_drm"), plan_has_module(&r->plan, "nvidia_peermem"));
	if (plan_has_module(&r->plan, "ib_umad"))
		(void)gb_load_input_add_at_boot(&in, "ib_umad"); /* room: 5 NVIDIA modules of 8 */
	for (size_t i = 0; i < r->plan.n_params; i++)
		(void)gb_load_input_set_params(&in, r->plan.params[i].name, r->plan.params[i].value);
	res = calloc(1, sizeof(*res));
	if (!res) {
		json_object_put(signing);
		return stage_oom(r, st);
	}
	k = gb_load(r->ctx, &in, r->journal, res);
	json_object_put(r->st.load);
	r->st.load = gb_load_result_to_json(res);
	if (signing)
		gb_json_add(r->st.load, "signing", signing);
	if (k == 0) {
		gb_stage_end(r->ctx, st, "ok", 0, NULL);
		code = load_nodes_daemons(r, st);
		k = load_cdi(r, st); /* containers' spec whatever a daemon said */
		if (!code)
			code = k;
	} else if (!res->failed_module && k == -ENOMEM) {
		gb_stage_end(r->ctx, st, "failed", k, "out of memory before an insert");
		gb_log_error("load: %s", st->error);
		code = GB_EXIT_FAILED;
	} else if (!res->failed_module) {
		gb_stage_end(r->ctx, st, "failed", k, "the load could not be journaled: %s", strerror(-k));
		gb_log_error("load: %s", st->error);
		code = GB_EXIT_FAILED;
	} else {
		gb_stage_end(r->ctx, st, "failed", res->cause.err ? res->cause.err : k, "%s: %s", res->failed_module,
		             res->cause.info->summary);
		gb_stage_hint(st, "%s", res->hint);
		gb_log_error("loading %s: %s (%s)", res->failed_module, res->cause.info->summary,
		             res->cause.detail[0] ? res->cause.detail : strerror(-k));
		code = res->exit_code ? res->exit_code : GB_EXIT_MODULE;
	}
	free(res);
	return code;
}

/* The distribution whose kernel hooks the install writes: the catalog's
 * row of the plan's ID, else of its ID_LIKE (a rebuild that names itself). */
static const char *hooks_os(const struct run *r)
{
	const struct gb_os *os = gb_os_lookup(r->plan.in.os_id, r->plan.in.os_id_like);
	return os ? os->id : r->plan.in.os_id;
}

/* The plan's package manager (the root's, or the --target-os row's) drives rpm. */
static bool rpm_family(const struct run *r)
{
	enum gb_pkgmgr pm = gb_pkgmgr_from_string(r->plan.in.pkgmgr);
	return pm == GB_PKGMGR_DNF || pm == GB_PKGMGR_ZYPPER;
}

static bool toolkit_installs(const struct run *r)
{
	return r->plan.toolkit.version &&
	       (r->plan.toolkit.action == GB_ACTION_INSTALL || r->plan.toolkit.action == GB_ACTION_REPLACE);
}

/* What this version can change: nouveau (prepare), the distribution's own
 * packages (install, --method distro), NVIDIA's repositories (the packages
 * method and the Container Toolkit, on apt, dnf and zypper), the modules
 * (load).
 * Anything else the plan needs ends the run before the first change, and
 * says so. */
static const char *not_implemented(const struct run *r)
{
	/* The distro install adds the headers of every kernel it builds for. */
	bool apt = gb_pkgmgr_from_string(r->plan.in.pkgmgr) == GB_PKGMGR_APT, rpm = rpm_family(r);
	/* Tests of the journal, the lock and the CLI need a run that stops at
	 * prepare, before any change, whatever the fixture's plan. */
	const char *knob = gb_test_knob("GPUBOOT_TEST_NOT_IMPLEMENTED");

	if (knob)
		return knob;
	if (r->plan.kernel.action == GB_KERNEL_ACTION_INSTALL_HWE && !apt)
		return "installing an HWE kernel without apt";
	if (r->plan.kernel.action == GB_KERNEL_ACTION_INSTALL_HEADERS &&
	    !(r->plan.driver.method == GB_METHOD_DISTRO ||
	      ((apt || rpm) && r->plan.driver.method == GB_METHOD_PACKAGES)))
		return "installing kernel headers for this method";
	if (r->plan.driver.action != GB_ACTION_KEEP && r->plan.driver.method == GB_METHOD_PACKAGES && !apt && !rpm)
		return "the packages method with this package manager";
	if (toolkit_installs(r) && !apt && !rpm)
		return "installing the Container Toolkit with this package manager";
	return NULL;
}

static enum gb_initramfs_tool initramfs_tool(const struct gb_plan *p)
{
	switch (gb_pkgmgr_from_string(p->in.pkgmgr)) {
	case GB_PKGMGR_APT: return GB_INITRAMFS_TOOL_INITRAMFS_TOOLS;
	case GB_PKGMGR_DNF:
	case GB_PKGMGR_ZYPPER: return GB_INITRAMFS_TOOL_DRACUT;
	default: return GB_INITRAMFS_TOOL_AUTO;
	}
}

/* A reboot is needed: arm the resume unit and end with exit 3 (with
 * --reboot, ask systemd). A reboot that would loop is a failure. */
static int need_reboot(struct run *r, struct gb_stage *st, const char *reason, const char *cause)
{
	char why[320] = "";
	int k = gb_prepare_arm_resume(r->ctx, r->journal, reason, why, sizeof(why));
	if (k < 0) {
		gb_stage_end(r->ctx, st, "failed", k, "%s", why[0] ? why : strerror(-k));
		gb_stage_hint(st, "%s", cause);
		return GB_EXIT_FAILED;
	}
	gb_stage_end(r->ctx, st, "reboot-needed", 0, "%s", cause);
	gb_stage_hint(st, "the resume unit (gpuboot-resume.service) finishes the run after the reboot%s",
	              r->ctx->opt.reboot ? "; rebooting now" : "; reboot when convenient, or pass --reboot");
	if (r->ctx->opt.reboot && r->ctx->root->is_host && r->ctx->ops->systemctl(r->ctx->ops, "reboot", NULL) < 0)
		gb_log_warning("systemctl reboot failed; reboot the machine to finish");
	return GB_EXIT_REBOOT;
}

/* The newer kernel the plan chose (Ubuntu's HWE, Debian's backports):
 * installed now; the live machine reboots into it after prepare (the
 * resume unit finishes the run), an image gets the modules built for it by
 * the install stage. */
static int prepare_hwe(struct run *r, bool image, char *cause, size_t causesz)
{
	struct gb_prepare_kernel_result *kr = calloc(1, sizeof(*kr));
	const struct gb_prepare_kernel_request req = { .package = r->plan.kernel.package,
		                                       .headers = r->plan.kernel.headers,
		                                       .suite = r->plan.kernel.suite,
		                                       .minimum = r->plan.kernel.minimum,
		                                       .image = image };
	int k;
	if (!kr)
		return -ENOMEM;
	k = gb_prepare_hwe(r->ctx, r->journal, &req, kr);
	gb_json_add(r->st.prepare, "kernel", gb_prepare_kernel_result_to_json(kr));
	if (k < 0)
		gb_strscpy(cause, causesz, kr->error);
	else if (kr->next_kernel[0])
		gb_log_info("%s installed; GRUB boots %s next", kr->package, kr->next_kernel);
	free(kr);
	return k;
}

static int stage_prepare(struct run *r, struct gb_stage *st)
{
	struct gb_prepare_input in = { .tool = initramfs_tool(&r->plan) };
	struct gb_prepare_result *pr;
	const char *ni;
	int k, code = 0;

	if (r->ctx->opt.repair) {
		gb_stage_end(r->ctx, st, "skipped", 0, "--repair: the kernel's modules only");
		return 0;
	}
	if (nothing_to_change(r))
		return stage_skip_if_kept(r, st);
	ni = not_implemented(r);
	if (ni) {
		gb_stage_end(r->ctx, st, "not-implemented", -EOPNOTSUPP, "%s is not implemented yet in gpuboot %s", ni,
		             GPUBOOT_VERSION);
		gb_stage_hint(st, "nothing was changed; --method distro installs Debian 12/13's own driver; the plan "
		                  "above is what a later version will do");
		gb_log_error("'%s': %s; nothing was changed", r->st.command, st->error);
		return GB_EXIT_USAGE;
	}
	if (r->st.write_flags && (k = gb_status_withdraw_flags(r->ctx)) < 0) {
		gb_stage_end(r->ctx, st, "failed", k, "cannot withdraw the ready flags in '%s': %s",
		             r->ctx->opt.run_dir, strerror(-k));
		gb_log_error("prepare: %s; nothing was changed", st->error);
		return GB_EXIT_FAILED;
	}
	if (gb_prepare_nouveau_action_parse(gb_nouveau_action_name(r->plan.nouveau.action), &in.nouveau) < 0)
		in.nouveau = GB_PREPARE_NOUVEAU_BLACKLIST;
	in.image = image_mode(r);
	pr = calloc(1, sizeof(*pr));
	if (!pr) {
		return stage_oom(r, st);
	}
	k = gb_prepare_nouveau(r->ctx, r->journal, &in, pr);
	json_object_put(r->st.prepare);
	r->st.prepare = gb_prepare_result_to_json(pr);
	/* The HWE kernel after the blacklist: its initramfs is made with it. */
	if (k >= 0 && r->plan.kernel.action == GB_KERNEL_ACTION_INSTALL_HWE &&
	    (k = prepare_hwe(r, in.image, pr->cause, sizeof(pr->cause))) < 0)
		gb_stage_hint(st, "see prepare.kernel in the status document; the journal names the apt command");
	if (k < 0) {
		gb_stage_end(r->ctx, st, "failed", k, "%s", pr->cause[0] ? pr->cause : strerror(-k));
		gb_stage_hint(st, "see the prepare entry of the status document; the journal lists what was done");
		gb_log_error("prepare: %s", st->error);
		code = GB_EXIT_FAILED;
	} else if (pr->reboot_needed || (r->plan.kernel.reboot_required && !in.image)) {
		code = need_reboot(r, st, pr->reboot_needed ? pr->reboot_reason : "kernel",
		                   pr->reboot_needed ? pr->cause : r->plan.kernel.reason);
	} else {
		gb_stage_end(r->ctx, st, "ok", 0, NULL);
	}
	free(pr);
	return code;
}

static bool driver_installs(const struct run *r)
{
	return r->plan.driver.action != GB_ACTION_UNSET && r->plan.driver.action != GB_ACTION_KEEP;
}

/* A kept driver's fabric manager alone (the plan's fm_only). */
static bool fm_installs(const struct run *r)
{
	return r->plan.driver.action == GB_ACTION_KEEP && r->plan.driver.fm_only != GB_ACTION_UNSET;
}

static bool cuda_installs(const struct run *r)
{
	return r->plan.cuda.action == GB_ACTION_INSTALL;
}

static void *fetch_main(void *p)
{
	struct run *r = p;
	r->fetch_code = gb_fetch_run(r->ctx, &r->fetch_want, &r->fetch_job, &r->fetch_copy, &r->arts, &r->n_arts);
	return NULL;
}

/* The fetch stage stays "running" in the status until fetch_join. */
static int fetch_start(struct run *r, struct gb_stage *st, const struct gb_plan *want, const struct gb_fetch_job *j)
{
	int k;
	if (gb_fetch_global_init() < 0) {
		gb_stage_end(r->ctx, st, "failed", -EIO, "libcurl failed to initialise");
		return GB_EXIT_FETCH;
	}
	r->fetch_want = *want;
	r->fetch_job = *j;
	r->fetch_job.fo.background = true;
	r->fetch_job.fo.cancel = &r->fetch_cancel;
	atomic_store(&r->fetch_cancel, false);
	r->fetch_st = st;
	r->fetch_copy = *st;
	k = pthread_create(&r->fetch_thread, NULL, fetch_main, r);
	if (k) {
		gb_log_debug("no thread for the background fetch (%s): fetching first", strerror(k));
		return gb_fetch_run(r->ctx, &r->fetch_want, &r->fetch_job, st, &r->arts, &r->n_arts);
	}
	r->fetch_running = true;
	gb_log_info("Downloading CUDA's components in the background, beside the driver's install");
	return 0;
}

/* Wait for the background fetch (cancel it first when the run already
 * failed); its stage record is final from here. The fetch's exit code. */
static int fetch_join(struct run *r, bool cancel)
{
	if (!r->fetch_running)
		return 0;
	if (cancel)
		atomic_store(&r->fetch_cancel, true);
	pthread_join(r->fetch_thread, NULL);
	r->fetch_running = false;
	*r->fetch_st = r->fetch_copy;
	if (cancel && r->fetch_code)
		gb_stage_hint(r->fetch_st, "cancelled: the install it was for failed first");
	(void)gb_status_write_progress(r->ctx, &r->st);
	return r->fetch_code;
}

/* What the install needs from NVIDIA's hosts (or a mirror): the runfile of
 * the runfile method, CUDA's components; verified into the cache. The
 * distribution's packages come from its own archive. */
static int stage_fetch(struct run *r, struct gb_stage *st)
{
	struct gb_fetch_job j;
	struct gb_plan want;
	bool runfile, prebuilt;
	int code;

	if (r->ctx->opt.repair) {
		gb_stage_end(r->ctx, st, "skipped", 0, "--repair builds from what is on disk");
		return 0;
	}
	runfile = driver_installs(r) && r->plan.driver.method == GB_METHOD_RUNFILE;
	prebuilt = driver_installs(r) && r->plan.driver.n_prebuilt > 0;
	if (!runfile && !prebuilt && !cuda_installs(r)) {
		if (fm_installs(r)) {
			gb_stage_end(r->ctx, st, "skipped", 0,
			             "the kept driver's fabric manager installs from NVIDIA's repository (%s/%s), "
			             "through %s",
			             r->plan.driver.repo, r->plan.driver.repo_arch, r->plan.in.pkgmgr);
			return 0;
		}
		if (nothing_to_change(r) || !driver_installs(r))
			return stage_skip_if_kept(r, st);
		if (r->plan.driver.method == GB_METHOD_PACKAGES)
			gb_stage_end(r->ctx, st, "skipped", 0,
			             "the packages method installs from NVIDIA's repository (%s/%s), through %s",
			             r->plan.driver.repo, r->plan.driver.repo_arch, r->plan.in.pkgmgr);
		else
			gb_stage_end(r->ctx, st, "skipped", 0, "the %s method installs from %s %s's archive",
			             gb_driver_method_name(r->plan.driver.method), r->plan.in.os_id,
			             r->plan.in.os_version);
		return 0;
	}
	memset(&j, 0, sizeof(j));
	code = gb_fetch_job_setup(r->ctx, &r->in.site, false, &j);
	if (code) {
		gb_stage_end(r->ctx, st, "failed", -EINVAL, "the mirror or fetch options are not usable");
		return code;
	}
	want = r->plan; /* a view: only what this machine installs */
	if (!runfile)
		want.driver.runfile = NULL;
	if (!prebuilt)
		want.driver.n_prebuilt = 0;
	if (!cuda_installs(r))
		want.cuda.release = NULL;
	/* CUDA alone, and a driver from packages to install first: its
	 * download runs beside the install (the DKMS build), joined before
	 * CUDA's unpack. The mirror's prebuilt module is the install's own
	 * input: fetched first. */
	if (!runfile && !prebuilt && driver_installs(r) && !r->in.site.no_overlap && !r->ctx->opt.dry_run)
		return fetch_start(r, st, &want, &j);
	return gb_fetch_run(r->ctx, &want, &j, st, &r->arts, &r->n_arts);
}

static const struct gb_artifact *artifact(const struct run *r, const char *name)
{
	for (size_t i = 0; i < r->n_arts; i++)
		if (streq(r->arts[i].name, name) && gb_artifact_ok(&r->arts[i]))
			return &r->arts[i];
	return NULL;
}

/* --repair: the module for the kernel, built by DKMS from what is on disk. */
static int stage_repair(struct run *r, struct gb_stage *st)
{
	struct gb_repair_result *res = calloc(1, sizeof(*res));
	int k, code = 0;

	if (!res) {
		return stage_oom(r, st);
	}
	k = gb_repair(r->ctx, r->ctx->opt.kernel, r->in.site.build_timeout_min, r->journal, res);
	if (k >= 0 && res->before.no_driver) {
		gb_stage_end(r->ctx, st, "refused", -ENOENT, "no NVIDIA driver is installed: nothing to repair");
		gb_stage_hint(st,
		              "gpuboot run installs one; --repair makes an installed driver's modules match a kernel");
		gb_log_error("repair: %s", st->error);
		json_object_put(r->st.install);
		r->st.install = gb_repair_result_to_json(res);
		free(res);
		return GB_EXIT_USAGE;
	}
	json_object_put(r->st.install);
	r->st.install = gb_repair_result_to_json(res);
	r->repair_running = res->after.running || (!res->after.kver[0] && res->before.running);
	if (res->hold.held && res->hold.changed) /* the kernel update gate: said in the package manager's output */
		gb_log_warning("repair: %s", res->hold.reason);
	if (k < 0) {
		gb_stage_end(r->ctx, st, "failed", k, "%s", res->error[0] ? res->error : strerror(-k));
		gb_stage_hint(st, "%s", res->hint[0] ? res->hint : "see the repair entry of the status document");
		gb_log_error("repair: %s", st->error);
		code = res->exit_code ? res->exit_code : GB_EXIT_FAILED;
	} else {
		gb_stage_end(r->ctx, st, "ok", 0, "kernel %s: %s", res->after.kver,
		             gb_repair_verdict_name(res->after.verdict));
	}
	free(res);
	return code;
}

/* Where NVIDIA's repositories are fetched from: a mirror serving NVIDIA's
 * layout below its root ([site] mirror, --mirror), or --upstream standing
 * in for NVIDIA's hosts; else NVIDIA's hosts. */
static struct gb_install_source install_source(const struct run *r)
{
	const char *m = r->ctx->opt.mirror ? r->ctx->opt.mirror : r->in.site.mirror;
	if (!m || !(gb_startswith(m, "https://") || gb_startswith(m, "http://")))
		m = r->ctx->opt.upstream;
	return (struct gb_install_source){ .mirror = m,
		                           .ca_file = r->ctx->opt.ca_file ? r->ctx->opt.ca_file : r->in.site.ca_file };
}

/* The driver by the plan's method (the install stage's choice): the
 * distribution's packages, NVIDIA's repository, or the .run the fetch
 * stage verified. */
static int install_plan(struct run *r, char *err, size_t errsz, json_object **ret_json)
{
	struct gb_install_source src = install_source(r);
	char name[160];
	const struct gb_artifact *a;

	snprintf(name, sizeof(name), "driver runfile %s", r->plan.driver.version);
	a = artifact(r, name);
	src.runfile = a ? a->cache_path : NULL;
	src.image = image_mode(r);
	for (size_t i = 0; i < r->plan.driver.n_prebuilt; i++) {
		snprintf(name, sizeof(name), "prebuilt module %s", r->plan.driver.prebuilt[i].kernel);
		a = artifact(r, name);
		src.prebuilt[i] = a ? a->cache_path : NULL;
	}
	if (r->plan.driver.fm_redist.path[0]) {
		snprintf(name, sizeof(name), "fabric manager manifest %s", r->plan.driver.version);
		a = artifact(r, name);
		src.fm_redist = a ? a->cache_path : NULL;
		snprintf(name, sizeof(name), "fabricmanager %s", r->plan.driver.version);
		a = artifact(r, name);
		src.fm_archive = a ? a->cache_path : NULL;
		snprintf(name, sizeof(name), "libnvidia_nscq %s", r->plan.driver.version);
		a = artifact(r, name);
		src.nscq_archive = a ? a->cache_path : NULL;
	}
	return gb_install_plan(r->ctx, &r->plan, &src, r->journal, ret_json, err, errsz);
}

/* CUDA's components, verified by the fetch stage, into usr/local/cuda-X.Y. */
static int install_cuda(struct run *r, char *err, size_t errsz, json_object **ret_json)
{
	struct gb_cuda_component_in comps[64];
	char names[64][2][96];
	struct gb_cuda_input in = { .version = r->plan.cuda.version,
		                    .components = comps,
		                    .arch = gb_cpu_arch_target(r->plan.in.arch)->cuda_repo };
	struct gb_cuda_result *res;
	int k;

	for (char **c = r->plan.cuda.components; c && *c && in.n_components < ARRAY_SIZE(comps); c++) {
		const struct gb_artifact *a = artifact(r, *c);
		size_t i = in.n_components;
		if (!a || sscanf(*c, "%95s %95s", names[i][0], names[i][1]) != 2) {
			snprintf(err, errsz, "CUDA component %s is not in the cache: the fetch stage did not verify it",
			         *c);
			return -ENOENT;
		}
		comps[i] = (struct gb_cuda_component_in){
			.name = names[i][0], .version = names[i][1], .archive = a->cache_path, .sha256 = a->sha256
		};
		in.n_components++;
	}
	res = calloc(1, sizeof(*res));
	if (!res)
		return -ENOMEM;
	k = gb_install_cuda(r->ctx, &in, r->journal, res);
	*ret_json = gb_cuda_result_to_json(res);
	if (k < 0)
		gb_strscpy(err, errsz, res->error[0] ? res->error : strerror(-k));
	free(res);
	return k;
}

/* The engines present get the nvidia runtime; an image gets the unit that
 * writes the CDI specification at every boot (a live machine's is
 * generated after the load). */
static int configure_toolkit(struct run *r, json_object **ret_json)
{
	struct gb_ctk_input in = { .image = image_mode(r) };
	int k;

	*ret_json = NULL;
	r->ctk = calloc(1, sizeof(*r->ctk));
	if (!r->ctk)
		return -ENOMEM;
	gb_journal_set_scope(r->journal, "toolkit");
	k = gb_ctk_configure(r->ctx, r->journal, &in, r->ctk);
	if (k >= 0 && in.image)
		k = gb_ctk_cdi(r->ctx, r->journal, &in, r->ctk);
	gb_journal_set_scope(r->journal, NULL);
	*ret_json = gb_ctk_result_to_json(r->ctk);
	return k;
}

static int install_failed(struct run *r, struct gb_stage *st, int k, const char *what, const char *err)
{
	gb_stage_end(r->ctx, st, "failed", k, "%s: %s", what, err[0] ? err : strerror(-k));
	gb_stage_hint(st, "%s",
	              k == -ENOPKG         ? "nothing was installed: the archive lacks a package or version named"
	              : k == -EBUSY        ? "another package manager holds the lock; rerun when it is done"
	              : k == -EKEYREJECTED ? "nothing was trusted or installed: check the mirror or the network path"
	              : k == -EREMOTEIO    ? "nothing was changed: the repository's key could not be downloaded"
	              : k == -EEXIST       ? "nothing was changed: one repository, one sources entry"
	              : k == -EHOSTUNREACH ? "nothing was installed: the archive could not be reached"
	              : k == -ENOSPC       ? "free space on the filesystem named, then run again: the run continues"
	              : k == -ENOKEY       ? "nothing was changed: choose another method with --method"
	                                   : "the journal names the step that failed; a rerun continues from it");
	gb_log_error("install: %s", st->error);
	if (k == -EKEYREJECTED || k == -EREMOTEIO || k == -EHOSTUNREACH)
		return GB_EXIT_FETCH;
	return k == -EOPNOTSUPP || k == -ENOKEY ? GB_EXIT_UNSUPPORTED : GB_EXIT_FAILED;
}

static int stage_install(struct run *r, struct gb_stage *st)
{
	json_object *out = gb_json_new_object(), *part = NULL;
	char err[768] = "";
	int k = 0, code = 0;

	if (r->ctx->opt.repair) {
		json_object_put(out);
		return stage_repair(r, st);
	}
	if (!driver_installs(r) && !fm_installs(r) && !cuda_installs(r) && !toolkit_installs(r)) {
		json_object_put(out);
		return stage_skip_if_kept(r, st);
	}
	if (fm_installs(r)) {
		k = install_plan(r, err, sizeof(err), &part);
		gb_json_add(out, "fabricmanager", part);
		if (k < 0)
			code = install_failed(r, st, k, "the kept driver's fabric manager", err);
	}
	if (driver_installs(r)) {
		k = install_plan(r, err, sizeof(err), &part);
		gb_json_add(out, "driver", part);
		if (k < 0)
			code = install_failed(r, st, k, "the driver", err);
		else if ((k = gb_repair_install_hooks(r->ctx, r->journal, hooks_os(r))) < 0 && k != -EOPNOTSUPP)
			code = install_failed(r, st, k, "the kernel hooks and gpuboot-repair.service", "");
	}
	if (r->fetch_running) {
		int fc = fetch_join(r, code != 0);
		if (!code && fc) {
			gb_stage_end(r->ctx, st, "failed", -EIO, "CUDA's components were not fetched: %s",
			             r->fetch_st->error);
			gb_stage_hint(st, "the driver is installed; CUDA is not: fix the fetch (above) and run again");
			code = fc;
		}
	}
	if (!code && cuda_installs(r)) {
		part = NULL;
		k = install_cuda(r, err, sizeof(err), &part);
		gb_json_add(out, "cuda", part);
		if (k < 0)
			code = install_failed(r, st, k, "CUDA", err);
	}
	if (!code && toolkit_installs(r)) {
		part = NULL;
		k = gb_toolkit_install(r->ctx, r->journal,
		                       &(struct gb_toolkit_input){ .version = r->plan.toolkit.version,
		                                                   .arch = r->plan.in.arch,
		                                                   .rpm = rpm_family(r),
		                                                   .src = install_source(r) },
		                       &part, err, sizeof(err));
		gb_json_add(out, "toolkit", part);
		if (k < 0)
			code = install_failed(r, st, k, "the Container Toolkit", err);
		else if ((k = configure_toolkit(r, &part)) < 0)
			code = install_failed(r, st, k, "the Container Toolkit's runtimes and CDI",
			                      r->ctk ? r->ctk->error : "");
		if (k >= 0 || r->ctk)
			gb_json_add(out, "toolkit_config", part);
	}
	json_object_put(r->st.install);
	r->st.install = out;
	if (!code)
		gb_stage_end(r->ctx, st, "ok", 0, NULL);
	return code;
}

static int stage_verify(struct run *r, struct gb_stage *st)
{
	int code;
	if (r->ctx->opt.no_verify) {
		gb_stage_end(r->ctx, st, "skipped", 0, "--no-verify");
		return 0;
	}
	if (image_mode(r)) {
		/* The image finishes its own job at its first boot, whatever the
		 * user-data of the instances launched from it. */
		char why[320] = "";
		int k = gb_prepare_arm_firstboot(r->ctx, r->journal, why, sizeof(why));
		if (k < 0) {
			gb_stage_end(r->ctx, st, "failed", k, "%s", why);
			gb_stage_hint(st, "the image holds the driver but would not verify itself at its first boot");
			gb_log_error("verify: %s", why);
			return GB_EXIT_FAILED;
		}
		gb_stage_end(r->ctx, st, "skipped", 0,
		             "image root: verification pending the image's first boot (" GB_PREPARE_FIRSTBOOT_UNIT
		             " enabled)");
		r->st.result_override = "installed-pending-first-boot";
		return 0;
	}
	if (repair_stops_before_load(r)) {
		gb_stage_end(r->ctx, st, "skipped", 0, "--repair of a kernel that is not running, or from a hook");
		return 0;
	}
	/* Verify judges the machine as it is now: install and load changed the
	 * driver, its userspace, the nodes, CUDA and the toolkit since detect.
	 * The facts are read again; the status keeps both. */
	{
		struct gb_inputs now = r->in; /* the profile and the site, shared */
		int k;
		now.facts = (struct gb_facts){ .secure_boot = -1 };
		k = gb_detect(r->ctx, &now.facts);
		if (k < 0) {
			gb_facts_done(&now.facts);
			gb_stage_end(r->ctx, st, "failed", k, "the machine could not be read again after the load: %s",
			             strerror(-k));
			gb_stage_hint(st, "see the error above; run gpuboot verify once it is fixed");
			gb_log_error("verify: %s", st->error);
			return GB_EXIT_FAILED;
		}
		json_object_put(r->st.facts_after);
		r->st.facts_after = gb_facts_to_json(&now.facts);
		code = gb_verify_stage(r->ctx, &now, r->ctx->opt.tier ? r->ctx->opt.tier : r->in.profile.tier,
		                       &(struct gb_verify_expect){
		                           .cuda = r->plan.cuda.version[0] ? r->plan.cuda.version : NULL,
		                           .driver = r->plan.driver.version[0] ? r->plan.driver.version : NULL,
		                       },
		                       st, &r->st, &r->vres);
		/* the ready flags judge the toolkit as it is now, too */
		gb_facts_done(&now.facts);
	}
	gb_verify_print(&r->vres, stdout);
	return code;
}

static const struct stage_def stages[] = {
	{ "detect", stage_detect },   { "plan", stage_plan }, { "prepare", stage_prepare }, { "fetch", stage_fetch },
	{ "install", stage_install }, { "load", stage_load }, { "verify", stage_verify },
};

/* Once the plan is made, the journal opens; the stages so far are recorded. */
static int open_journal(struct run *r, struct gb_stage *st)
{
	char err[1024] = "";
	int k;

	k = gb_journal_open(r->ctx, r->st.plan, r->st.command, &r->journal, err, sizeof(err));
	if (k == -EBUSY) {
		gb_stage_end(r->ctx, st, "refused", k, "%s", err);
		gb_stage_hint(st, "the journal in %s holds the unfinished run; nothing was changed by this one",
		              r->ctx->opt.state_dir);
		gb_log_error("%s", err);
		return GB_EXIT_USAGE;
	}
	if (k < 0) {
		gb_stage_end(r->ctx, st, "failed", k, "cannot open the journal in '%s': %s", r->ctx->opt.state_dir,
		             strerror(-k));
		gb_log_error("%s", st->error);
		return GB_EXIT_FAILED;
	}
	if (r->journal->resumed)
		gb_log_info("Resuming the unfinished run of this plan from '%s'", r->journal->path);
	for (size_t i = 0; i < r->st.n_stages; i++) {
		char id[64];
		if (r->st.stages[i] == st)
			continue; /* recorded by walk when it ends */
		snprintf(id, sizeof(id), "stage:%s", r->st.stages[i]->name);
		if (gb_journal_begin(r->journal, r->st.stages[i]->name, id, "stage", NULL) < 0 ||
		    gb_journal_end(r->journal, id, 0, NULL) < 0)
			return GB_EXIT_FAILED;
	}
	return 0;
}

static int walk(struct run *r)
{
	int code = 0;
	for (size_t i = 0; i < ARRAY_SIZE(stages) && !code; i++) {
		struct gb_stage *st;
		char id[64];
		bool had_journal = r->journal != NULL;
		st = gb_stage_begin(r->ctx, &r->st, stages[i].name);
		snprintf(id, sizeof(id), "stage:%s", stages[i].name);
		/* The journal first (its save also writes the stage before's end,
		 * which gb_journal_end leaves to it), then a status that names the
		 * stage, so a run killed in it is found interrupted there and the
		 * status never claims a stage the journal has not recorded. The
		 * stage's end is in the next stage's status, or the run's last. */
		if (had_journal && gb_journal_begin(r->journal, stages[i].name, id, "stage", NULL) < 0)
			return GB_EXIT_FAILED;
		if (i > 0 && gb_status_write_progress(r->ctx, &r->st) < 0)
			return GB_EXIT_FAILED;
		code = stages[i].fn(r, st);
		if (r->journal && !had_journal && gb_journal_begin(r->journal, stages[i].name, id, "stage", NULL) < 0)
			return GB_EXIT_FAILED;
		/* a stage that ends in a needed reboot did its part: not a failed step */
		if (r->journal &&
		    gb_journal_end(r->journal, id, code && code != GB_EXIT_REBOOT ? -ECANCELED : 0, NULL) < 0)
			return GB_EXIT_FAILED;
	}
	return code;
}

static const char *journal_state(int code)
{
	return code == GB_EXIT_OK ? "done" : code == GB_EXIT_REBOOT ? "reboot-pending" : "failed";
}

/* --dry-run's account of the stages, decided by the predicates the stages
 * themselves use: what a real run would change, in order. */
static void dry_run_stages(const struct run *r, const char *tier)
{
	const struct gb_plan *p = &r->plan;
	const char *ni = not_implemented(r);
	bool image = image_mode(r);

	if (ni) {
		printf("  stop before any change: %s is not implemented yet in gpuboot %s (exit 2)\n", ni,
		       GPUBOOT_VERSION);
		return;
	}
	if (r->ctx->opt.repair) {
		/* the repair's own check, as the stage starts with it */
		struct gb_repair_state rs;
		bool running = true;
		if (gb_repair_check(r->ctx, r->ctx->opt.kernel, &rs) >= 0) {
			printf("  repair: kernel %s: %s (%s)\n", rs.kver, gb_repair_verdict_name(rs.verdict),
			       rs.reason);
			running = rs.running;
		} else
			printf("  repair: the modules of driver %s for the kernel\n", p->driver.version);
		if (r->ctx->opt.from_hook || !running) {
			printf("  load and verify: not now (the kernel repaired is not running)\n");
			return;
		}
	} else {
		if (p->nouveau.action != GB_NOUVEAU_ACTION_UNSET && p->nouveau.action != GB_NOUVEAU_ACTION_NONE)
			printf("  prepare: nouveau: %s\n", gb_nouveau_action_name(p->nouveau.action));
		if (p->kernel.action != GB_KERNEL_ACTION_UNSET && p->kernel.action != GB_KERNEL_ACTION_NONE)
			printf("  prepare: %s %s%s\n", gb_kernel_action_name(p->kernel.action), p->kernel.package,
			       p->kernel.reboot_required && !image ? ", then reboot (exit 3); the resume unit finishes"
			                                           : "");
		if (driver_installs(r) && p->driver.method == GB_METHOD_RUNFILE && p->driver.runfile)
			printf("  fetch: the driver runfile %s (sha256 %s)\n", p->driver.runfile->url,
			       p->driver.runfile->sha256);
		if (driver_installs(r) && p->driver.fm_redist.path[0])
			printf("  fetch: the fabric manager's redistributable manifest %s (sha256 %s) and its "
			       "fabricmanager and libnvidia_nscq archives, from the mirror\n",
			       p->driver.fm_redist.path, p->driver.fm_redist.sha256);
		if (cuda_installs(r))
			printf("  fetch: CUDA %s's manifest and components\n", p->cuda.version);
		if (driver_installs(r))
			printf("  install: %s driver %s (%s module) with the %s method%s\n",
			       gb_action_name(p->driver.action), p->driver.version,
			       gb_driver_flavor_name(p->driver.flavor), gb_driver_method_name(p->driver.method),
			       p->driver.method == GB_METHOD_RUNFILE ? "" : ", from the package archive");
		if (fm_installs(r))
			printf("  install: %s the kept driver's fabric manager %s %s from NVIDIA's repository (%s/%s), "
			       "nothing of the driver\n",
			       gb_action_name(p->driver.fm_only), p->fm_package, p->driver.version, p->driver.repo,
			       p->driver.repo_arch);
		if (cuda_installs(r))
			printf("  install: CUDA %s into /usr/local/cuda-%.*s\n", p->cuda.version,
			       (int)(strrchr(p->cuda.version, '.') ? strrchr(p->cuda.version, '.') - p->cuda.version
			                                           : (long)strlen(p->cuda.version)),
			       p->cuda.version);
		if (toolkit_installs(r))
			printf("  install: the Container Toolkit %s, its runtimes and CDI\n", p->toolkit.version);
	}
	if (image) {
		printf("  load and verify: not now (an image root: its first boot loads and verifies)\n");
		return;
	}
	printf("  load:");
	for (size_t i = 0; i < p->n_modules; i++)
		printf(" %s", p->modules[i].name);
	printf("%s\n", p->n_modules ? "" : " the plan's modules");
	if (r->ctx->opt.no_verify)
		printf("  verify: skipped (--no-verify)\n");
	else
		printf("  verify: tier %s\n", tier);
}

/* --dry-run: decide and say what would happen; no lock, no journal, no
 * status, nothing written anywhere. */
static int dry_run(struct run *r)
{
	const char *tier;
	int code;

	r->in.want_offers = !r->ctx->opt.repair;
	code = gb_inputs_plan(r->ctx, &r->in, &r->plan);
	if (code)
		return code;
	r->have_plan = true;
	if (r->plan.refusal_code) {
		gb_log_error("%s", r->plan.refusal);
		return r->plan.refusal_code;
	}
	gb_plan_print(&r->plan, stdout);
	tier = r->ctx->opt.tier ? r->ctx->opt.tier : r->in.profile.tier;
	if (nothing_to_change(r) && !r->ctx->opt.repair) {
		printf("\ndry run: nothing was written. A real '%s' would change nothing (every decision keeps what "
		       "is installed, the driver is loaded) and verify (tier %s).\n",
		       r->st.command, tier);
		return GB_EXIT_OK;
	}
	printf("\ndry run: nothing was written. A real '%s' would:\n", r->st.command);
	dry_run_stages(r, tier);
	return GB_EXIT_OK;
}

/* --repair --if-needed: the module for the running kernel is there and
 * loaded at the installed version, and no hook left a marker. */
static bool repair_not_needed(struct gb_ctx *ctx)
{
	struct gb_repair_state s;
	if (gb_repair_check(ctx, ctx->opt.kernel, &s) < 0)
		return false;
	return s.verdict == GB_REPAIR_OK && !s.marker;
}

/* --repair --check-next-boot (automation before a reboot): the kernel the
 * machine boots next and whether it has its module; reads only, no lock,
 * no journal, no status. 0 ready, 14 not, 1 when the kernel booted next
 * cannot be named. */
static int check_next_boot(struct gb_ctx *ctx)
{
	struct gb_repair_next n;
	int k = gb_repair_next_boot(ctx, &n);

	if (k < 0) {
		gb_log_error("--check-next-boot: %s", n.error[0] ? n.error : strerror(-k));
		return GB_EXIT_FAILED;
	}
	printf("next boot  %s (%s)\n", n.kver, n.source);
	{
		char keep[GB_KVER_MAX], line[700];
		if (gb_repair_holds(ctx, keep, sizeof(keep), line, sizeof(line)) > 0)
			printf("held       %s\n", line);
	}
	if (n.ready) {
		printf("ready      %s\n", n.state.reason);
		return GB_EXIT_OK;
	}
	printf("NOT READY  %s\n", n.state.reason);
	if (n.state.hint[0])
		printf("fix        %s\n", n.state.hint);
	return GB_EXIT_MODULE;
}

/* --repair --nodes (the udev rule, when an NVIDIA module loads): the
 * nodes and /dev/char links only; no lock (the gpuboot that loads the
 * modules may hold it, and makes them too), no journal, no status:
 * idempotent effects on devtmpfs, gone at the next boot. */
static int nodes_only(struct gb_ctx *ctx)
{
	struct gb_nodes_result res;
	int k;

	if (ctx->opt.dry_run) { /* what it would make; nothing made */
		struct gb_devnodes *d = calloc(1, sizeof(*d));
		if (!d)
			return GB_EXIT_FAILED;
		k = gb_load_devnodes(ctx->root, d);
		for (size_t i = 0; k >= 0 && i < d->n; i++)
			printf("would make %s %u:%u %04o and dev/char/%u:%u\n", d->node[i].path, d->node[i].major,
			       d->node[i].minor, d->node[i].perm, d->node[i].major, d->node[i].minor);
		free(d);
		if (k == -ENODEV)
			printf("no NVIDIA module is loaded: no device node to make\n");
		return k < 0 && k != -ENODEV ? GB_EXIT_FAILED : GB_EXIT_OK;
	}
	k = gb_load_nodes(ctx, NULL, &res);

	if (k == -ENODEV) {
		printf("no NVIDIA module is loaded: no device node to make\n");
		return GB_EXIT_OK;
	}
	if (k < 0) {
		gb_log_error("%s", res.error);
		return GB_EXIT_FAILED;
	}
	printf("%zu NVIDIA device nodes: %u made, %u /dev/char links made%s\n", res.n, res.made, res.linked,
	       res.modify_off ? " (ModifyDeviceFiles=0: the nodes are the site's)" : "");
	return fflush(stdout) == 0 ? GB_EXIT_OK : GB_EXIT_FAILED;
}

/* After the modules are live: the device nodes and their /dev/char links
 * (and the udev rule for later boots), then the plan's daemons. */
static int load_nodes_daemons(struct run *r, struct gb_stage *st)
{
	struct gb_nodes_result nodes;
	struct gb_daemons_result *dm;
	const char *names[ARRAY_SIZE(r->plan.daemons)];
	int k;

	k = gb_load_nodes(r->ctx, r->journal, &nodes);
	gb_json_add(r->st.load, "nodes", gb_nodes_result_to_json(&nodes));
	if (k < 0) {
		gb_stage_end(r->ctx, st, "failed", k, "the modules are loaded; their device nodes are not: %s",
		             nodes.error);
		gb_stage_hint(st, "CUDA cannot open the GPUs without /dev/nvidiactl and /dev/nvidiaN; see load.nodes");
		gb_log_error("load: %s", st->error);
		return GB_EXIT_FAILED;
	}
	dm = calloc(1, sizeof(*dm));
	if (!dm)
		return stage_oom(r, st);
	for (size_t i = 0; i < r->plan.n_daemons; i++)
		names[i] = r->plan.daemons[i].name;
	k = gb_load_daemons(r->ctx, r->journal, names, r->plan.n_daemons, r->plan.driver.version, r->plan.imex_nodes,
	                    dm);
	gb_json_add(r->st.load, "daemons", gb_daemons_result_to_json(dm));
	if (k < 0) {
		gb_stage_end(r->ctx, st, "failed", k, "the modules are loaded; %s", dm->error);
		if (dm->hint[0])
			gb_stage_hint(st, "%s", dm->hint);
		gb_log_error("load: %s", st->error);
	}
	free(dm);
	return k < 0 ? GB_EXIT_FAILED : 0;
}

int gb_run_cleanup_image(struct gb_ctx *ctx)
{
	char err[512] = "";
	unsigned n = 0;
	bool policy = false;
	int r = gb_chroot_cleanup(ctx, &n, &policy, err, sizeof(err));

	if (n || policy)
		gb_log_warning("Undid what a killed run left in %s: %u bind mount(s)%s", ctx->opt.root, n,
		               policy ? ", usr/sbin/policy-rc.d" : "");
	if (r < 0)
		gb_log_error("%s; unmount it (umount -R), then run again", err);
	return r < 0 ? r : (int)n + (policy ? 1 : 0);
}

/* The image's own first-boot unit on a machine with no GPU (a Packer test
 * boot, an instance type without one): the plan's no-GPU refusal stands,
 * and the module the image holds is still offered to the kernel, once, so
 * the status carries the kernel's own answer: "No NVIDIA GPU found"
 * (ENODEV, exit 11) says the image's module loads here; a rejected
 * signature under Secure Boot (exit 14) says the image would fail on every
 * instance, before one with a GPU is ever launched. */
static bool unit_no_gpu(const struct run *r, int code)
{
	const char *unit = getenv("GPUBOOT_FIRST_BOOT_UNIT");
	return code == GB_EXIT_NO_GPU && unit && streq(unit, "1") && !r->ctx->opt.repair && !image_mode(r) &&
	       r->have_plan && r->plan.in.installed.version[0] && r->plan.in.installed.module &&
	       !r->plan.in.installed.loaded;
}

static int unit_no_gpu_load(struct run *r)
{
	struct gb_stage *st = gb_stage_begin(r->ctx, &r->st, "load");
	struct gb_load_input in;
	struct gb_load_result *res;
	int k, code = GB_EXIT_NO_GPU;

	if (!r->journal && (k = open_journal(r, st)))
		return k;
	res = calloc(1, sizeof(*res));
	if (!res)
		return stage_oom(r, st);
	gb_load_input_init(&in, true, false);
	k = gb_load(r->ctx, &in, r->journal, res);
	json_object_put(r->st.load);
	r->st.load = gb_load_result_to_json(res);
	if (k == 0) {
		gb_stage_end(r->ctx, st, "ok", 0, "no GPU to drive, yet the kernel took the image's %s module",
		             r->plan.in.installed.version);
	} else if (!res->failed_module) {
		gb_stage_end(r->ctx, st, "failed", k, "the load could not be journaled: %s", strerror(-k));
		code = GB_EXIT_FAILED;
	} else {
		gb_stage_end(r->ctx, st, "failed", res->cause.err ? res->cause.err : k,
		             "no GPU: the image's %s module offered to the kernel anyway: %s: %s",
		             r->plan.in.installed.version, res->failed_module, res->cause.info->summary);
		gb_stage_hint(st, "%s", res->hint);
		gb_log_info("no GPU; the kernel's answer to the image's module: %s (%s)", res->cause.info->summary,
		            res->cause.detail[0] ? res->cause.detail : strerror(-k));
		/* no GPU is the expected answer here; any other refusal is the image's fault */
		if (res->exit_code && res->exit_code != GB_EXIT_NO_GPU)
			code = res->exit_code;
	}
	free(res);
	(void)gb_status_write_progress(r->ctx, &r->st);
	return code;
}

int gb_run(struct gb_ctx *ctx)
{
	struct run r = { .ctx = ctx };
	int code, k, lock = -1;

	r.st.command = ctx->opt.repair ? "repair" : "run";
	r.st.write_flags = true;
	if (ctx->opt.repair && ctx->opt.if_needed && repair_not_needed(ctx))
		return GB_EXIT_OK; /* on every boot's path: nothing read beyond the check, nothing written */
	if (ctx->opt.repair && ctx->opt.nodes)
		return nodes_only(ctx);
	if (ctx->opt.repair && ctx->opt.check_next_boot)
		return check_next_boot(ctx);
	if (ctx->opt.dry_run) {
		code = dry_run(&r);
		goto out;
	}
	code = gb_lock_take(ctx, &lock);
	if (code)
		goto out;
	if (gb_status_mark_interrupted(ctx, &r.st) == -ENOMEM) {
		code = GB_EXIT_FAILED;
		goto out;
	}
	if (!ctx->root->is_host && gb_run_cleanup_image(ctx) < 0) {
		code = GB_EXIT_FAILED;
		goto out;
	}
	r.st.started_ns = ctx->ops->now_realtime_ns(ctx->ops);
	code = walk(&r);
	if (unit_no_gpu(&r, code))
		code = unit_no_gpu_load(&r);
	if (fetch_join(&r, true) && code == GB_EXIT_OK) /* never left running; never "ok" without it */
		code = GB_EXIT_FETCH;
	/* The resume unit is a run's; a repair (gpuboot-repair.service at the
	 * same boot) leaves it to the run it resumes. */
	if (r.journal && !ctx->opt.repair && code != GB_EXIT_REBOOT &&
	    (k = gb_prepare_disarm_resume(ctx, r.journal)) < 0) {
		if (k != -ENOMEM) {
			gb_log_warning("Failed to disarm gpuboot-resume.service, ignoring");
		} else if (code == GB_EXIT_OK) { /* not known whether it is armed: not a success */
			gb_log_error("Failed to disarm gpuboot-resume.service: out of memory");
			code = GB_EXIT_FAILED;
		}
	}
	if (!ctx->opt.repair && !image_mode(&r) && gb_prepare_firstboot_done(ctx, code) < 0)
		gb_log_warning("Failed to remove '%s' under the root, ignoring", GB_PREPARE_IMAGE_PENDING);
	if (r.journal) {
		if (gb_journal_finish(r.journal, journal_state(code), code) < 0 && code == GB_EXIT_OK)
			code = GB_EXIT_FAILED;
		r.st.journal = gb_journal_summary(r.journal->doc);
	}
	r.st.exit_code = code;
	if (gb_status_write(ctx, &r.st) < 0 && code == GB_EXIT_OK)
		code = GB_EXIT_FAILED;
out:
	gb_journal_free(r.journal);
	gb_status_done(&r.st);
	gb_verify_result_done(&r.vres);
	free(r.arts);
	free(r.ctk);
	if (r.have_plan)
		gb_plan_done(&r.plan);
	gb_inputs_done(&r.in);
	if (lock >= 0)
		close(lock);
	fflush(stdout);
	return code;
}
