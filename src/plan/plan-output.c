/* SPDX-License-Identifier: MIT */
/* The plan as JSON (the keys others rely on) and as a console table. */
#include <string.h>

#include "plan.h"
#include "shared/macro.h"
#include "shared/json-util.h"
#include "shared/util.h"

static json_object *jstr(const char *s)
{
	return s && *s ? gb_json_new_string(s) : NULL;
}

/* s, or dflt where a decision is not made */
static const char * or (const char *s, const char *dflt)
{
	return s ? s : dflt;
}

static json_object *named_array(const struct gb_plan_named *a, size_t n, const char *value_key)
{
	json_object *arr = gb_json_new_array();
	for (size_t i = 0; i < n; i++) {
		json_object *o = gb_json_new_object();
		gb_json_add(o, value_key ? "module" : "name", gb_json_new_string(a[i].name));
		if (value_key)
			gb_json_add(o, value_key, gb_json_new_string(a[i].value));
		gb_json_add(o, "reason", gb_json_new_string(a[i].reason));
		gb_json_append(arr, o);
	}
	return arr;
}

static json_object *gpus_json(const struct gb_plan *p)
{
	json_object *gpus = gb_json_new_array();

	for (size_t i = 0; i < p->n_gpus; i++) {
		const struct gb_plan_gpu *g = &p->gpus[i];
		json_object *o = gb_json_new_object();
		char id[8];
		snprintf(id, sizeof(id), "%04x", g->device);
		gb_json_add(o, "device_id", gb_json_new_string(id));
		gb_json_add(o, "name", gb_json_new_string(g->name));
		gb_json_add(o, "count", gb_json_new_int((int)g->count));
		gb_json_add(o, "architecture", jstr(gb_arch_to_string(g->arch)));
		gb_json_add(o, "compute_capability", jstr(g->cc));
		gb_json_add(o, "open_module",
		            gb_json_new_string(g->open_required        ? "required"
		                               : g->open == GB_OPEN_NO ? "unsupported"
		                                                       : "supported"));
		gb_json_add(o, "min_branch", g->min_branch ? gb_json_new_int((int)g->min_branch) : NULL);
		gb_json_add(o, "last_branch", g->last_branch ? gb_json_new_int((int)g->last_branch) : NULL);
		gb_json_add(o, "held_back", gb_json_new_boolean(g->held_back));
		gb_json_add(o, "source", gb_json_new_string(g->source));
		gb_json_append(gpus, o);
	}
	return gpus;
}

/* What was there before the plan: version, flavour, where it was seen. */
static json_object *installed_json(const struct gb_plan *p)
{
	json_object *o;
	if (!p->in.installed.version[0])
		return NULL;
	o = gb_json_new_object();
	gb_json_add(o, "version", gb_json_new_string(p->in.installed.version));
	gb_json_add(o, "flavor", jstr(p->in.installed.flavor));
	gb_json_add(o, "source", jstr(p->in.installed.source));
	gb_json_add(o, "loaded", gb_json_new_boolean(p->in.installed.loaded));
	gb_json_add(o, "module_for_kernel", gb_json_new_boolean(p->in.installed.module));
	return o;
}

static json_object *driver_json(const struct gb_plan *p)
{
	json_object *d = gb_json_new_object(), *pk = gb_json_new_array();
	const struct gb_runfile *rf = p->driver.runfile;
	gb_json_add(d, "version", gb_json_new_string(p->driver.version));
	gb_json_add(d, "branch", gb_json_new_int((int)p->driver.branch));
	gb_json_add(d, "branch_type", jstr(p->driver.branch_type));
	gb_json_add(d, "end_of_life", jstr(p->driver.eol));
	gb_json_add(d, "module_flavor", gb_json_new_string(gb_driver_flavor_name(p->driver.flavor)));
	gb_json_add(d, "method", gb_json_new_string(gb_driver_method_name(p->driver.method)));
	gb_json_add(d, "repository", jstr(p->driver.repo));
	gb_json_add(d, "repository_arch", jstr(p->driver.repo_arch));
	for (size_t i = 0; i < p->driver.n_packages; i++) {
		char spec[GB_INSTALL_NAME + 72];
		gb_pkg_spec_format(&p->driver.packages[i], spec, sizeof(spec));
		gb_json_append(pk, gb_json_new_string(spec));
	}
	gb_json_add(d, "packages", pk);
	gb_json_add(d, "runfile_url", jstr(rf ? rf->url : NULL));
	gb_json_add(d, "sha256", jstr(rf ? rf->sha256 : NULL));
	gb_json_add(d, "size", rf ? gb_json_new_int64((int64_t)rf->size) : NULL);
	if (p->driver.fm_redist.path[0]) { /* the runfile method's fabric manager, from the mirror */
		json_object *fm = gb_json_new_object();
		gb_json_add(fm, "path", gb_json_new_string(p->driver.fm_redist.path));
		gb_json_add(fm, "sha256", gb_json_new_string(p->driver.fm_redist.sha256));
		gb_json_add(fm, "size", gb_json_new_int64((int64_t)p->driver.fm_redist.size));
		gb_json_add(d, "fabricmanager_redist", fm);
	}
	gb_json_add(d, "reason", gb_json_new_string(p->driver.reason));
	gb_json_add(d, "module_flavor_reason", gb_json_new_string(p->driver.flavor_reason));
	gb_json_add(d, "method_reason", gb_json_new_string(p->driver.method_reason));
	if (p->driver.module_source) { /* the distro method: the mirror's prebuilt module, or DKMS */
		json_object *pb = gb_json_new_array();
		gb_json_add(d, "module_source", gb_json_new_string(p->driver.module_source));
		gb_json_add(d, "module_source_reason", gb_json_new_string(p->driver.module_source_reason));
		for (size_t i = 0; i < p->driver.n_prebuilt; i++) {
			const struct gb_plan_prebuilt *b = &p->driver.prebuilt[i];
			json_object *o = gb_json_new_object();
			gb_json_add(o, "kernel", gb_json_new_string(b->kernel));
			gb_json_add(o, "package", gb_json_new_string(b->package));
			gb_json_add(o, "version", gb_json_new_string(b->version));
			gb_json_add(o, "path", gb_json_new_string(b->path));
			gb_json_add(o, "sha256", gb_json_new_string(b->sha256));
			gb_json_add(o, "size", gb_json_new_int64((int64_t)b->size));
			gb_json_add(o, "signer", b->signer[0] ? gb_json_new_string(b->signer) : NULL);
			gb_json_append(pb, o);
		}
		gb_json_add(d, "prebuilt", pb);
	}
	gb_json_add(d, "action", jstr(gb_action_name(p->driver.action)));
	gb_json_add(d, "action_reason", jstr(p->driver.action_reason));
	gb_json_add(d, "installed", installed_json(p));
	return d;
}

/* What ages, each with what to do (docs/plan.md, Warnings): always an array. */
static json_object *warnings_json(const struct gb_plan *p)
{
	json_object *arr = gb_json_new_array();
	for (size_t i = 0; i < p->n_warnings; i++) {
		json_object *o = gb_json_new_object();
		gb_json_add(o, "code", gb_json_new_string(p->warnings[i].code));
		gb_json_add(o, "text", gb_json_new_string(p->warnings[i].text));
		gb_json_add(o, "fix", gb_json_new_string(p->warnings[i].fix));
		gb_json_append(arr, o);
	}
	return arr;
}

/* The catalog the plan was made from: the built-in, or the update in force. */
static json_object *catalog_json(void)
{
	const struct gb_catalog_info *c = gb_catalog_in_force();
	json_object *o = gb_json_new_object();
	gb_json_add(o, "version", gb_json_new_int64((int64_t)c->version));
	gb_json_add(o, "date", gb_json_new_string(c->date));
	gb_json_add(o, "source", gb_json_new_string(c->origin ? c->origin : "built-in"));
	return o;
}

json_object *gb_plan_to_json(const struct gb_plan *p)
{
	json_object *root = gb_json_new_object();
	json_object *target = gb_json_new_object(), *gpus = gpus_json(p);
	bool refused = p->refusal_code != 0;

	gb_json_add(root, "profile", gb_json_new_string(p->profile));
	gb_json_add(root, "profile_source", gb_json_new_string(p->profile_source));
	gb_json_add(root, "date", gb_json_new_string(p->today));
	gb_json_add(root, "catalog", catalog_json());
	gb_json_add(target, "os", jstr(p->in.os_id));
	gb_json_add(target, "version", jstr(p->in.os_version));
	gb_json_add(target, "arch", jstr(p->in.arch));
	gb_json_add(target, "kernel", jstr(p->in.kernel_release));
	gb_json_add(target, "source", gb_json_new_string(p->in.target_os ? "target" : "detected"));
	gb_json_add(target, "gpus_source", gb_json_new_string(p->in.target_gpu ? "target" : "detected"));
	gb_json_add(root, "target", target);
	gb_json_add(root, "gpus", gpus);

	if (refused) {
		json_object *r = gb_json_new_object();
		gb_json_add(r, "code", gb_json_new_int(p->refusal_code));
		gb_json_add(r, "reason", gb_json_new_string(p->refusal));
		gb_json_add(root, "refusal", r);
		gb_json_add(root, "warnings", warnings_json(p));
		return root;
	}
	gb_json_add(root, "refusal", NULL);
	gb_json_add(root, "warnings", warnings_json(p));

	gb_json_add(root, "driver", driver_json(p));
	{
		json_object *c = gb_json_new_object(), *comp = gb_json_new_array();
		gb_json_add(c, "version", jstr(p->cuda.version));
		gb_json_add(c, "min_driver", jstr(p->cuda.release ? p->cuda.release->min_driver : NULL));
		gb_json_add(c, "manifest_sha256", jstr(p->cuda.release ? p->cuda.release->manifest_sha256 : NULL));
		gb_json_add(c, "platform", jstr(p->cuda.release ? p->in.platform : NULL));
		for (char **x = p->cuda.components; x && *x; x++)
			gb_json_append(comp, gb_json_new_string(*x));
		gb_json_add(c, "components", comp);
		gb_json_add(c, "reason", gb_json_new_string(p->cuda.reason));
		gb_json_add(c, "action", jstr(gb_action_name(p->cuda.action)));
		gb_json_add(c, "action_reason", jstr(p->cuda.action_reason));
		{
			json_object *inst = gb_json_new_array();
			for (size_t i = 0; i < p->in.n_cuda_installed; i++)
				gb_json_append(inst, gb_json_new_string(p->in.cuda_installed[i]));
			gb_json_add(c, "installed", inst);
		}
		gb_json_add(root, "cuda", c);
	}
	{
		json_object *t = gb_json_new_object();
		char kept[64] = "";
		/* A kept toolkit's version is the one there (its upstream part,
		 * without epoch and revision): the target is the same as when a run
		 * installed it, so a run killed after the install resumes. */
		if (!p->toolkit.version && p->toolkit.action == GB_ACTION_KEEP && p->in.toolkit_installed[0]) {
			const char *v = strchr(p->in.toolkit_installed, ':') ? strchr(p->in.toolkit_installed, ':') + 1
			                                                     : p->in.toolkit_installed;
			gb_strscpy(kept, sizeof(kept), v);
			kept[strcspn(kept, "-~+")] = '\0';
		}
		gb_json_add(t, "version", kept[0] ? gb_json_new_string(kept) : jstr(p->toolkit.version));
		gb_json_add(t, "reason", gb_json_new_string(p->toolkit.reason));
		gb_json_add(t, "action", jstr(gb_action_name(p->toolkit.action)));
		gb_json_add(t, "action_reason", jstr(p->toolkit.action_reason));
		gb_json_add(t, "installed", jstr(p->in.toolkit_installed));
		gb_json_add(root, "toolkit", t);
	}
	{
		json_object *k = gb_json_new_object();
		gb_json_add(k, "action", gb_json_new_string(gb_kernel_action_name(p->kernel.action)));
		gb_json_add(k, "package", jstr(p->kernel.package));
		gb_json_add(k, "headers", jstr(p->kernel.headers));
		gb_json_add(k, "suite", jstr(p->kernel.suite));
		gb_json_add(k, "minimum", jstr(p->kernel.minimum));
		gb_json_add(k, "reboot_required", gb_json_new_boolean(p->kernel.reboot_required));
		gb_json_add(k, "reason", gb_json_new_string(p->kernel.reason));
		gb_json_add(root, "kernel", k);
	}
	{
		json_object *n = gb_json_new_object();
		gb_json_add(n, "action", gb_json_new_string(gb_nouveau_action_name(p->nouveau.action)));
		gb_json_add(n, "reason", gb_json_new_string(p->nouveau.reason));
		gb_json_add(root, "nouveau", n);
	}
	{
		json_object *s = gb_json_new_object();
		gb_json_add(s, "strategy", gb_json_new_string(gb_sb_strategy_name(p->secure_boot.strategy)));
		gb_json_add(s, "package", jstr(p->secure_boot.package));
		gb_json_add(s, "reason", gb_json_new_string(p->secure_boot.reason));
		gb_json_add(root, "secure_boot", s);
	}
	gb_json_add(root, "daemons", named_array(p->daemons, p->n_daemons, NULL));
	gb_json_add(root, "modules", named_array(p->modules, p->n_modules, NULL));
	gb_json_add(root, "module_params", named_array(p->params, p->n_params, "params"));
	{
		json_object *v = gb_json_new_object(), *skip = gb_json_new_array();
		gb_json_add(v, "tier", gb_json_new_string(p->verify.tier));
		gb_json_add(v, "min_gpu_memory_gib", gb_json_new_double(p->verify.min_gpu_memory_gib));
		gb_json_add(v, "fp64_gate", gb_json_new_boolean(p->verify.fp64_gate));
		gb_json_add(v, "ecc_required", gb_json_new_boolean(p->verify.ecc_required));
		gb_json_add(v, "min_network_gbps", gb_json_new_double(p->verify.min_network_gbps));
		gb_json_add(v, "min_disk_write_mbps", gb_json_new_double(p->verify.min_disk_write_mbps));
		for (char **x = p->verify.skip; x && *x; x++)
			gb_json_append(skip, gb_json_new_string(*x));
		gb_json_add(v, "skip", skip);
		gb_json_add(v, "reason", gb_json_new_string(p->verify.reason));
		gb_json_add(v, "network_gate_applies", gb_json_new_boolean(p->verify.network_gate_applies));
		gb_json_add(v, "gates_reason", jstr(p->verify.gates_reason));
		gb_json_add(root, "verify", v);
	}
	return root;
}

static void row(FILE *out, const char *what, const char *value, const char *reason)
{
	if (reason && *reason)
		fprintf(out, "%-12s %-28s %s\n", what, value && *value ? value : "-", reason);
	else
		fprintf(out, "%-12s %s\n", what, value && *value ? value : "-");
}

static const char *yes_no(bool b)
{
	return b ? "yes" : "no";
}

/* One row per GPU model: what the catalog (or an override) says of it. */
static void print_gpus(const struct gb_plan *p, FILE *out)
{
	for (size_t i = 0; i < p->n_gpus; i++) {
		const struct gb_plan_gpu *g = &p->gpus[i];
		const char *arch = gb_arch_to_string(g->arch);
		char what[160], detail[160] = "", range[40] = "";

		snprintf(what, sizeof(what), "%ux %s (%04x, %s, sm_%s)%s", g->count, g->name, g->device,
		         arch ? arch : "?", g->cc[0] ? g->cc : "?", p->in.target_gpu ? " (target)" : "");
		if (g->min_branch)
			snprintf(range, sizeof(range), ", R%u%s", g->min_branch, g->last_branch ? "" : " and newer");
		if (g->last_branch)
			snprintf(range + strlen(range), sizeof(range) - strlen(range), "%s to R%u (its last branch)",
			         g->min_branch ? "" : ", up", g->last_branch);
		snprintf(detail, sizeof(detail), "open module %s%s%s; from %s",
		         g->open_required        ? "required"
		         : g->open == GB_OPEN_NO ? "unsupported"
		                                 : "supported",
		         range, g->held_back ? ", held back" : "", g->source);
		row(out, i ? "" : "gpu", what, detail);
	}
}

static void print_driver(const struct gb_plan *p, FILE *out)
{
	const struct gb_runfile *rf = p->driver.runfile;
	char buf[512];

	snprintf(buf, sizeof(buf), "%s (R%u %s%s%s)", p->driver.version, p->driver.branch,
	         p->driver.branch_type ? p->driver.branch_type : "", p->driver.eol ? ", end of life " : "",
	         p->driver.eol ? p->driver.eol : "");
	row(out, "driver", buf, p->driver.reason);
	row(out, "flavour", gb_driver_flavor_name(p->driver.flavor), p->driver.flavor_reason);
	snprintf(buf, sizeof(buf), "%s%s%s%s%s", gb_driver_method_name(p->driver.method), p->driver.repo[0] ? " " : "",
	         p->driver.repo, p->driver.repo_arch[0] ? " " : "", p->driver.repo_arch);
	row(out, "method", buf, p->driver.method_reason);
	for (size_t i = 0; i < p->driver.n_packages; i++) {
		char spec[GB_INSTALL_NAME + 72];
		gb_pkg_spec_format(&p->driver.packages[i], spec, sizeof(spec));
		row(out, i ? "" : "packages", spec, NULL);
	}
	if (p->driver.module_source)
		row(out, "module", p->driver.module_source, p->driver.module_source_reason);
	if (rf) {
		snprintf(buf, sizeof(buf), "%llu bytes, sha256 %s", rf->size, rf->sha256);
		row(out, "runfile", rf->url, buf);
	}
}

static void print_cuda(const struct gb_plan *p, FILE *out)
{
	const struct gb_cuda_release *r = p->cuda.release;
	char buf[160];

	if (r)
		snprintf(buf, sizeof(buf), "%s %s (driver >= %s)", p->cuda.version, p->in.platform, r->min_driver);
	row(out, "cuda", r ? buf : p->cuda.version[0] ? p->cuda.version : "none", p->cuda.reason);
	if (r && r->manifest_sha256)
		row(out, "", "manifest", r->manifest_sha256);
	for (char **x = p->cuda.components; x && *x; x++)
		row(out, x == p->cuda.components ? "components" : "", *x, NULL);
}

/* Every gate the verifier applies, and the checks the site skips. */
static void print_verify(const struct gb_plan *p, FILE *out)
{
	char buf[256];

	row(out, "verify", p->verify.tier, p->verify.reason);
	snprintf(buf, sizeof(buf),
	         "min_gpu_memory_gib %g, min_network_gbps %g, min_disk_write_mbps %g, fp64_gate %s, ecc_required %s",
	         p->verify.min_gpu_memory_gib, p->verify.min_network_gbps, p->verify.min_disk_write_mbps,
	         yes_no(p->verify.fp64_gate), yes_no(p->verify.ecc_required));
	row(out, "gates", buf, p->verify.gates_reason[0] ? p->verify.gates_reason : NULL);
	for (char **x = p->verify.skip; x && *x; x++)
		row(out, x == p->verify.skip ? "skip" : "", *x,
		    x == p->verify.skip ? "the site configuration skips these checks ([checks] skip)" : NULL);
}

/* What ages: a row each, the fix beside it. */
static void print_warnings(const struct gb_plan *p, FILE *out)
{
	for (size_t i = 0; i < p->n_warnings; i++) {
		char buf[GB_REASON * 2 + 8];
		snprintf(buf, sizeof(buf), "%s; fix: %s", p->warnings[i].text, p->warnings[i].fix);
		row(out, i ? "" : "WARNING", p->warnings[i].code, buf);
	}
}

/* Keep, replace or install, for each component: the first thing to read. */
static void print_actions(const struct gb_plan *p, FILE *out)
{
	char buf[160];
	if (p->in.installed.version[0]) {
		snprintf(buf, sizeof(buf), "%s %s%s%s", p->in.installed.version,
		         p->in.installed.flavor[0] ? p->in.installed.flavor : "flavour unknown",
		         p->in.installed.loaded ? ", loaded" : "",
		         p->in.installed.module ? ", module for kernel" : ", no module for the kernel");
		row(out, "installed", buf, NULL);
	}
	row(out, "driver do", or (gb_action_name(p->driver.action), "?"), p->driver.action_reason);
	{
		size_t o = (size_t)snprintf(buf, sizeof(buf), "%s", or (gb_action_name(p->cuda.action), "none"));
		for (size_t i = 0; i < p->in.n_cuda_installed && o < sizeof(buf); i++)
			o += (size_t)snprintf(buf + o, sizeof(buf) - o, "%s%s", i ? ", " : " (installed ",
			                      p->in.cuda_installed[i]);
		if (p->in.n_cuda_installed && o < sizeof(buf))
			snprintf(buf + o, sizeof(buf) - o, ")");
		row(out, "cuda do", buf, p->cuda.action_reason);
	}
	snprintf(buf, sizeof(buf), "%s%s%s%s", or (gb_action_name(p->toolkit.action), "none"),
	         p->in.toolkit_installed[0] ? " (installed " : "", p->in.toolkit_installed,
	         p->in.toolkit_installed[0] ? ")" : "");
	row(out, "toolkit do", buf, p->toolkit.action_reason);
}

/* The same rows as gb_plan_to_json (t-plan-cases.sh checks that each of
 * its values shows here), for a person to read. */
void gb_plan_print(const struct gb_plan *p, FILE *out)
{
	char buf[256];

	const struct gb_catalog_info *c = gb_catalog_in_force();

	fprintf(out, "profile %s (%s), %s %s %s, kernel %s (%s), %s\n", p->profile, p->profile_source,
	        p->in.os_id[0] ? p->in.os_id : "?", p->in.os_version, p->in.arch,
	        p->in.kernel_release[0] ? p->in.kernel_release : "?", p->in.target_os ? "target" : "detected",
	        p->today);
	fprintf(out, "catalog %llu of %s (%s)\n", (unsigned long long)c->version, c->date,
	        c->origin ? c->origin : "built-in");
	print_gpus(p, out);
	if (p->refusal_code) {
		fprintf(out, "REFUSED      exit %d: %s\n", p->refusal_code, p->refusal);
		print_warnings(p, out);
		return;
	}
	print_warnings(p, out);
	print_actions(p, out);
	print_driver(p, out);
	print_cuda(p, out);
	row(out, "toolkit", p->toolkit.version ? p->toolkit.version : "none", p->toolkit.reason);
	snprintf(buf, sizeof(buf), "%s%s%s%s%s", gb_kernel_action_name(p->kernel.action),
	         p->kernel.package[0] ? " " : "", p->kernel.package, p->kernel.minimum[0] ? ", minimum " : "",
	         p->kernel.minimum);
	row(out, "kernel", buf, p->kernel.reason);
	if (p->kernel.reboot_required)
		row(out, "", "reboot_required", NULL);
	row(out, "nouveau", gb_nouveau_action_name(p->nouveau.action), p->nouveau.reason);
	snprintf(buf, sizeof(buf), "%s%s%s", gb_sb_strategy_name(p->secure_boot.strategy),
	         p->secure_boot.package[0] ? " " : "", p->secure_boot.package);
	row(out, "secure boot", buf, p->secure_boot.reason);
	for (size_t i = 0; i < p->n_daemons; i++)
		row(out, i ? "" : "daemons", p->daemons[i].name, p->daemons[i].reason);
	for (size_t i = 0; i < p->n_modules; i++)
		row(out, i ? "" : "modules", p->modules[i].name, p->modules[i].reason);
	for (size_t i = 0; i < p->n_params; i++) {
		snprintf(buf, sizeof(buf), "%s %s", p->params[i].name, p->params[i].value);
		row(out, i ? "" : "module param", buf, p->params[i].reason);
	}
	print_verify(p, out);
}
