/* SPDX-License-Identifier: MIT */
/* The words the plan's decisions are printed as (its JSON and text). */
#include <string.h>

#include "plan.h"
#include "shared/macro.h"

static const char *const flavor_names[] = {
	[GB_DRIVER_OPEN] = "open",
	[GB_DRIVER_PROPRIETARY] = "proprietary",
};

static const char *const method_names[] = {
	[GB_METHOD_PACKAGES] = "packages",
	[GB_METHOD_RUNFILE] = "runfile",
	[GB_METHOD_DISTRO] = "distro",
	[GB_METHOD_NONE] = "none",
};

static const char *const action_names[] = {
	[GB_ACTION_NONE] = "none",       [GB_ACTION_KEEP] = "keep",       [GB_ACTION_INSTALL] = "install",
	[GB_ACTION_REPLACE] = "replace", [GB_ACTION_REBUILD] = "rebuild",
};

static const char *const kernel_action_names[] = {
	[GB_KERNEL_ACTION_NONE] = "none",
	[GB_KERNEL_ACTION_INSTALL_HWE] = "install-hwe",
	[GB_KERNEL_ACTION_INSTALL_HEADERS] = "install-headers",
};

static const char *const nouveau_action_names[] = {
	[GB_NOUVEAU_ACTION_NONE] = "none",
	[GB_NOUVEAU_ACTION_BLACKLIST] = "blacklist",
	[GB_NOUVEAU_ACTION_UNLOAD] = "unload",
	[GB_NOUVEAU_ACTION_REBOOT] = "reboot",
};

static const char *const sb_strategy_names[] = {
	[GB_SB_NOT_NEEDED] = "not-needed",
	[GB_SB_UBUNTU_SIGNED] = "ubuntu-signed-modules",
	[GB_SB_SIGN_WITH_KEY] = "sign-with-key",
	[GB_SB_MODULES_SIGNED] = "modules-signed",
};

/* The name of v in names; NULL for UNSET (index 0) or a value past the end. */
#define NAME_OF(names, v) ((size_t)(v) < ARRAY_SIZE(names) ? (names)[(size_t)(v)] : NULL)

const char *gb_driver_flavor_name(enum gb_driver_flavor f)
{
	return NAME_OF(flavor_names, f);
}

const char *gb_driver_method_name(enum gb_driver_method m)
{
	return NAME_OF(method_names, m);
}

const char *gb_action_name(enum gb_action a)
{
	return NAME_OF(action_names, a);
}

const char *gb_kernel_action_name(enum gb_kernel_action a)
{
	return NAME_OF(kernel_action_names, a);
}

const char *gb_nouveau_action_name(enum gb_nouveau_action a)
{
	return NAME_OF(nouveau_action_names, a);
}

const char *gb_sb_strategy_name(enum gb_sb_strategy s)
{
	return NAME_OF(sb_strategy_names, s);
}

enum gb_action gb_action_parse(const char *s)
{
	for (size_t i = 1; s && i < ARRAY_SIZE(action_names); i++)
		if (streq(s, action_names[i]))
			return (enum gb_action)i;
	return GB_ACTION_UNSET;
}
