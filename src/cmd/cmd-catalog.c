/* SPDX-License-Identifier: MIT */
/* gpuboot catalog [--json] [--catalog FILE]: the catalog in force (the
 * built-in, or a newer signed update), its date and sources, what differs
 * from the built-in one, and any update refused (docs/catalog.md). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "catalog/catalog.h"
#include "cmd.h"
#include "context.h"
#include "exit-codes.h"
#include "plan/profile.h"
#include "run/run.h"
#include "shared/json-util.h"
#include "shared/log.h"
#include "shared/macro.h"

static const struct gb_branch *builtin_branch(unsigned b)
{
	for (size_t i = 0; i < gb_branches_len; i++)
		if (gb_branches[i].branch == b)
			return &gb_branches[i];
	return NULL;
}

static const struct gb_runfile *builtin_runfile(const struct gb_runfile *r)
{
	for (size_t i = 0; i < gb_runfiles_len; i++)
		if (streq(gb_runfiles[i].version, r->version) && streq(gb_runfiles[i].arch, r->arch))
			return &gb_runfiles[i];
	return NULL;
}

static bool same_str(const char *a, const char *b)
{
	return a == b || (a && b && streq(a, b));
}

static json_object *branch_json(const struct gb_branch *b)
{
	json_object *o = gb_json_new_object();
	gb_json_add(o, "branch", gb_json_new_int((int32_t)b->branch));
	gb_json_add(o, "type", gb_json_new_string(gb_branch_type_to_string(b->type)));
	gb_json_add(o, "end_of_life", b->eol ? gb_json_new_string(b->eol) : NULL);
	gb_json_add(o, "min_kernel", gb_json_new_string(b->min_kernel));
	return o;
}

/* The branches and runfiles in force that the built-in lacks or has otherwise. */
static json_object *differences(void)
{
	json_object *d = gb_json_new_object(), *br = gb_json_new_array(), *rf = gb_json_new_array(), *ctk = NULL;
	size_t nb, nr;
	const struct gb_branch *b = gb_catalog_branches(&nb);
	const struct gb_runfile *r = gb_catalog_runfiles(&nr);

	for (size_t i = 0; i < nb; i++) {
		const struct gb_branch *was = builtin_branch(b[i].branch);
		json_object *o;
		if (was && was->type == b[i].type && same_str(was->eol, b[i].eol) &&
		    same_str(was->min_kernel, b[i].min_kernel))
			continue;
		o = branch_json(&b[i]);
		gb_json_add(o, "change", gb_json_new_string(was ? "changed" : "added"));
		gb_json_add(o, "built_in", was ? branch_json(was) : NULL);
		gb_json_append(br, o);
	}
	for (size_t i = 0; i < nr; i++) {
		const struct gb_runfile *was = builtin_runfile(&r[i]);
		json_object *o;
		if (was && streq(was->sha256, r[i].sha256) && was->size == r[i].size && streq(was->url, r[i].url) &&
		    streq(was->category, r[i].category))
			continue;
		o = gb_json_new_object();
		gb_json_add(o, "version", gb_json_new_string(r[i].version));
		gb_json_add(o, "arch", gb_json_new_string(r[i].arch));
		gb_json_add(o, "category", gb_json_new_string(r[i].category));
		gb_json_add(o, "sha256", gb_json_new_string(r[i].sha256));
		gb_json_add(o, "size", gb_json_new_int64((int64_t)r[i].size));
		gb_json_add(o, "url", gb_json_new_string(r[i].url));
		gb_json_add(o, "change", gb_json_new_string(was ? "changed" : "added"));
		gb_json_append(rf, o);
	}
	if (!streq(gb_catalog_ctk_min(), gb_catalog_builtin_ctk_min())) {
		ctk = gb_json_new_object();
		gb_json_add(ctk, "built_in", gb_json_new_string(gb_catalog_builtin_ctk_min()));
		gb_json_add(ctk, "in_force", gb_json_new_string(gb_catalog_ctk_min()));
		gb_json_add(ctk, "cve", gb_json_new_string(gb_catalog_ctk_min_cve()));
		gb_json_add(ctk, "why", gb_json_new_string(gb_catalog_ctk_min_why()));
	}
	gb_json_add(d, "branches", br);
	gb_json_add(d, "runfiles", rf);
	gb_json_add(d, "container_toolkit_min", ctk);
	return d;
}

static json_object *catalog_to_json(void)
{
	const struct gb_catalog_info *c = gb_catalog_in_force();
	json_object *o = gb_json_new_object(), *b = gb_json_new_object(), *src = gb_json_new_array(),
	            *ref = gb_json_new_array();
	const char *text, *fix;

	gb_json_add(o, "version", gb_json_new_int64((int64_t)c->version));
	gb_json_add(o, "date", gb_json_new_string(c->date));
	gb_json_add(o, "source", gb_json_new_string(c->origin ? c->origin : "built-in"));
	for (size_t i = 0; i < c->n_sources; i++)
		gb_json_append(src, gb_json_new_string(c->sources[i]));
	gb_json_add(o, "sources", src);
	gb_json_add(o, "container_toolkit_min", gb_json_new_string(gb_catalog_ctk_min()));
	gb_json_add(b, "version", gb_json_new_int64((int64_t)gb_catalog_builtin_number()));
	gb_json_add(b, "date", gb_json_new_string(gb_catalog_date));
	gb_json_add(o, "built_in", b);
	gb_json_add(o, "differences", differences());
	for (size_t i = 0; (text = gb_catalog_refusal(i, &fix)); i++) {
		json_object *r = gb_json_new_object();
		gb_json_add(r, "text", gb_json_new_string(text));
		gb_json_add(r, "fix", gb_json_new_string(fix));
		gb_json_append(ref, r);
	}
	gb_json_add(o, "refused", ref);
	return o;
}

/* The same as the JSON, for a person. */
static void catalog_print(json_object *o, FILE *out)
{
	json_object *d = gb_json_get(o, "differences"), *ctk = gb_json_get(d, "container_toolkit_min");
	json_object *src = gb_json_get(o, "sources"), *br = gb_json_get(d, "branches"),
	            *rf = gb_json_get(d, "runfiles");
	json_object *ref = gb_json_get(o, "refused");
	const struct gb_catalog_info *c = gb_catalog_in_force();

	fprintf(out, "catalog    %llu of %s (%s)\n", (unsigned long long)c->version, c->date,
	        c->origin ? c->origin : "built-in");
	if (c->origin)
		fprintf(out, "built-in   %llu of %s\n", (unsigned long long)gb_catalog_builtin_number(),
		        gb_catalog_date);
	for (size_t i = 0; i < gb_json_len(src); i++)
		fprintf(out, "%-10s %s\n", i ? "" : "sources", json_object_get_string(gb_json_idx(src, i)));
	fprintf(out, "toolkit    floor %s\n", gb_catalog_ctk_min());
	if (!gb_json_len(br) && !gb_json_len(rf) && !ctk)
		fprintf(out, "differs    nothing from the built-in catalog\n");
	for (size_t i = 0; i < gb_json_len(br); i++) {
		json_object *x = gb_json_idx(br, i);
		const char *eol = gb_json_get_str(x, "end_of_life");
		fprintf(out, "branch     R%d %s, end of life %s, min kernel %s (%s)\n",
		        json_object_get_int(gb_json_get(x, "branch")), gb_json_get_str(x, "type"),
		        eol ? eol : "not announced", gb_json_get_str(x, "min_kernel"), gb_json_get_str(x, "change"));
	}
	for (size_t i = 0; i < gb_json_len(rf); i++) {
		json_object *x = gb_json_idx(rf, i);
		fprintf(out, "runfile    %s %s %s (%s)\n", gb_json_get_str(x, "version"), gb_json_get_str(x, "arch"),
		        gb_json_get_str(x, "category"), gb_json_get_str(x, "change"));
	}
	if (ctk)
		fprintf(out, "toolkit    floor raised from %s to %s (%s)\n", gb_json_get_str(ctk, "built_in"),
		        gb_json_get_str(ctk, "in_force"), gb_json_get_str(ctk, "cve"));
	for (size_t i = 0; i < gb_json_len(ref); i++)
		fprintf(out, "REFUSED    %s; fix: %s\n", gb_json_get_str(gb_json_idx(ref, i), "text"),
		        gb_json_get_str(gb_json_idx(ref, i), "fix"));
}

static int cmd_catalog(struct gb_ctx *ctx, int argc, char **argv)
{
	struct gb_site_config site = { 0 };
	char err[1024] = "";
	json_object *o;
	int r, code = GB_EXIT_OK;

	if ((code = gb_cmd_no_args("catalog", argc, argv)))
		return code;
	r = gb_site_config_load(ctx, ctx->opt.config_given ? ctx->opt.config : NULL, &site, err, sizeof(err));
	if (r < 0) {
		gb_log_error("%s", r == -ENOMEM ? "out of memory while loading the configuration" : err);
		return r == -ENOMEM ? GB_EXIT_FAILED : GB_EXIT_USAGE;
	}
	r = gb_inputs_catalog(ctx, &site);
	gb_site_config_done(&site);
	if (r < 0) {
		gb_log_error("out of memory while reading the catalog update");
		return GB_EXIT_FAILED;
	}
	o = catalog_to_json();
	if (ctx->opt.json)
		code = gb_cmd_print_json(o) < 0 ? GB_EXIT_FAILED : GB_EXIT_OK;
	else
		catalog_print(o, stdout);
	json_object_put(o);
	if (fflush(stdout) != 0)
		return GB_EXIT_FAILED;
	return code;
}

const struct gb_cmd gb_cmd_catalog = {
	.name = "catalog",
	.id = GB_CMD_CATALOG,
	.fn = cmd_catalog,
	.help = "print the catalog in force, its date and sources, and what differs from the built-in (--json)",
};
