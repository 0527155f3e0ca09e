/* SPDX-License-Identifier: MIT */
/* The install stage's entry: one method per call, a result for the status
 * document. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "context.h"
#include "install-internal.h"
#include "install.h"
#include "shared/json-util.h"
#include "shared/util.h"

int gb_install(struct gb_ctx *ctx, const struct gb_install_input *in, struct gb_journal *j,
               struct gb_install_result *ret)
{
	memset(ret, 0, sizeof(*ret));
	if (!ctx || !ctx->root || !ctx->ops || !in || !j)
		return -EINVAL;
	switch (in->method) {
	case GB_INSTALL_DISTRO:
	case GB_INSTALL_KERNEL: return gb_install_distro(ctx, in, j, ret);
	case GB_INSTALL_PACKAGES:
		/* NVIDIA's repository: dnf or zypper on an rpm family, apt otherwise */
		if (gb_rpm_root_pm(ctx) != GB_PKGMGR_NONE)
			return gb_install_rpm(ctx, in, j, ret);
		return gb_install_distro(ctx, in, j, ret);
	}
	snprintf(ret->error, sizeof(ret->error), "Install method %d is not implemented in this version",
	         (int)in->method);
	return -EOPNOTSUPP;
}

int gb_install_report(struct gb_ctx *ctx, const struct gb_install_input *in, struct gb_journal *j,
                      json_object **ret_json, char *err, size_t errsz)
{
	struct gb_install_result *res = calloc(1, sizeof(*res));
	int k;

	*ret_json = NULL;
	if (!res)
		return -ENOMEM;
	k = gb_install(ctx, in, j, res);
	*ret_json = gb_install_result_to_json(res);
	if (k < 0)
		gb_strscpy(err, errsz, res->error[0] ? res->error : strerror(-k));
	free(res);
	return k;
}

static json_object *str_or_null(const char *s)
{
	return s && s[0] ? gb_json_new_string(s) : NULL;
}

json_object *gb_install_result_to_json(const struct gb_install_result *r)
{
	json_object *o = gb_json_new_object(), *pkgs = gb_json_new_array(), *mods = gb_json_new_array();

	gb_json_add(o, "method", str_or_null(r->method));
	gb_json_add(o, "image", gb_json_new_boolean(r->image));
	gb_json_add(o, "distro", str_or_null(r->distro));
	gb_json_add(o, "codename", str_or_null(r->codename));
	gb_json_add(o, "sources_changed", gb_json_new_boolean(r->sources_changed));
	gb_json_add(o, "packages_changed", gb_json_new_boolean(r->packages_changed));
	gb_json_add(o, "recovered", str_or_null(r->recovered));
	for (size_t i = 0; i < r->n_pkgs; i++) {
		const struct gb_install_pkg_result *p = &r->pkgs[i];
		json_object *x = gb_json_new_object();
		gb_json_add(x, "name", gb_json_new_string(p->name));
		gb_json_add(x, "wanted", str_or_null(p->wanted));
		gb_json_add(x, "version", str_or_null(p->resolved));
		gb_json_add(x, "suite", str_or_null(p->suite));
		gb_json_add(x, "before", str_or_null(p->before));
		gb_json_add(x, "after", str_or_null(p->after));
		gb_json_add(x, "held", gb_json_new_boolean(p->held_after));
		gb_json_append(pkgs, x);
	}
	gb_json_add(o, "packages", pkgs);
	for (size_t i = 0; i < r->n_kernels; i++) {
		json_object *x = gb_json_new_object();
		gb_json_add(x, "kernel", gb_json_new_string(r->kernels[i].kver));
		gb_json_add(x, "path", str_or_null(r->kernels[i].module));
		gb_json_append(mods, x);
	}
	gb_json_add(o, "modules", mods);
	gb_json_add(o, "error", str_or_null(r->error));
	return o;
}
