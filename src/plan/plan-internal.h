/* SPDX-License-Identifier: MIT */
/* Shared between the plan's files (plan.c, plan-installed.c): not API. */
#pragma once

#include <stddef.h>

#include "plan.h"
#include "shared/macro.h"

_printf_(3, 4) void gb_plan_say(char *dst, size_t n, const char *fmt, ...);
#define SAY(field, ...) gb_plan_say(field, sizeof(field), __VA_ARGS__)
/* The first refusal wins; later ones are ignored. */
_printf_(3, 4) void gb_plan_refuse(struct gb_plan *p, int code, const char *fmt, ...);
/* 580 from "580.159.04"; 0 when not a version. */
unsigned gb_plan_version_branch(const char *version);

/* What is installed: keep, replace or install (plan-installed.c). Called
 * after the target driver is chosen; a kept driver becomes the plan's. */
void gb_plan_decide_driver_action(struct gb_plan *p, const struct gb_profile *prof, const struct gb_site_config *site);
void gb_plan_decide_cuda_action(struct gb_plan *p);
void gb_plan_decide_toolkit_action(struct gb_plan *p, const struct gb_profile *prof);
/* The catalog's row of the plan's distribution and release, NULL when none. */
const struct gb_distro *gb_plan_distro(const struct gb_plan *p);
/* The install methods that could bring a newer branch here, in words:
 * "--method packages or --method runfile", or the runfile's alone where
 * NVIDIA's repository for it is not trusted (no pinned key). */
const char *gb_plan_other_methods(const struct gb_plan *p);
/* Is the date a (YYYY-MM-DD) before today's? A date that is not one is not. */
bool gb_plan_date_past(const struct gb_plan *p, const char *date);
/* What ages (docs/plan.md, Warnings): the branch near or past its end of
 * life, the catalog's age, a toolkit below the floor left in place
 * (plan-warnings.c). Refused plans get the catalog's only. */
void gb_plan_decide_warnings(struct gb_plan *p);
/* The distro method's module: the mirror's prebuilt packages (which the
 * method lists in place of the DKMS package), or DKMS (plan-prebuilt.c).
 * Called by the method before it words its reason. */
void gb_plan_decide_module_source(struct gb_plan *p, const struct gb_site_config *site);
/* Gates the GPU cannot pass are refusals now, not failures after the install. */
void gb_plan_check_gates(struct gb_plan *p, const struct gb_profile *prof);
