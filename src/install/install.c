/* SPDX-License-Identifier: MIT */
/* The install stage's entry: one method per call, a result for the status
 * document. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "context.h"
#include "install-internal.h"
#include "install.h"

int gb_install(struct gb_ctx *ctx, const struct gb_install_input *in, struct gb_journal *j,
               struct gb_install_result *ret)
{
	memset(ret, 0, sizeof(*ret));
	if (!ctx || !ctx->root || !ctx->ops || !in || !j)
		return -EINVAL;
	switch (in->method) {
	case GB_INSTALL_DISTRO: return gb_install_distro(ctx, in, j, ret);
	}
	snprintf(ret->error, sizeof(ret->error), "Install method %d is not implemented in this version",
	         (int)in->method);
	return -EOPNOTSUPP;
}

static json_object *str_or_null(const char *s)
{
	return s && s[0] ? json_object_new_string(s) : NULL;
}

json_object *gb_install_result_to_json(const struct gb_install_result *r)
{
	json_object *o = json_object_new_object(), *pkgs = json_object_new_array(), *mods = json_object_new_array();

	json_object_object_add(o, "method", str_or_null(r->method));
	json_object_object_add(o, "image", json_object_new_boolean(r->image));
	json_object_object_add(o, "distro", str_or_null(r->distro));
	json_object_object_add(o, "codename", str_or_null(r->codename));
	json_object_object_add(o, "sources_changed", json_object_new_boolean(r->sources_changed));
	json_object_object_add(o, "packages_changed", json_object_new_boolean(r->packages_changed));
	for (size_t i = 0; i < r->n_pkgs; i++) {
		const struct gb_install_pkg_result *p = &r->pkgs[i];
		json_object *x = json_object_new_object();
		json_object_object_add(x, "name", json_object_new_string(p->name));
		json_object_object_add(x, "wanted", str_or_null(p->wanted));
		json_object_object_add(x, "version", str_or_null(p->resolved));
		json_object_object_add(x, "suite", str_or_null(p->suite));
		json_object_object_add(x, "before", str_or_null(p->before));
		json_object_object_add(x, "after", str_or_null(p->after));
		json_object_object_add(x, "held", json_object_new_boolean(p->held_after));
		json_object_array_add(pkgs, x);
	}
	json_object_object_add(o, "packages", pkgs);
	for (size_t i = 0; i < r->n_kernels; i++) {
		json_object *x = json_object_new_object();
		json_object_object_add(x, "kernel", json_object_new_string(r->kernels[i].kver));
		json_object_object_add(x, "path", str_or_null(r->kernels[i].module));
		json_object_array_add(mods, x);
	}
	json_object_object_add(o, "modules", mods);
	json_object_object_add(o, "error", str_or_null(r->error));
	return o;
}
