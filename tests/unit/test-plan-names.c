/* SPDX-License-Identifier: MIT */
/* The plan's decisions are enums; their names are the words the plan's JSON
 * and text print (tests/expected/plan/ compares them byte for byte). */
#include "plan/plan.h"
#include "shared/macro.h"
#include "unit.h"

TEST(names_are_the_plan_words)
{
	CHECK_STREQ(gb_driver_flavor_name(GB_DRIVER_OPEN), "open");
	CHECK_STREQ(gb_driver_flavor_name(GB_DRIVER_PROPRIETARY), "proprietary");
	CHECK_STREQ(gb_driver_method_name(GB_METHOD_PACKAGES), "packages");
	CHECK_STREQ(gb_driver_method_name(GB_METHOD_RUNFILE), "runfile");
	CHECK_STREQ(gb_driver_method_name(GB_METHOD_DISTRO), "distro");
	CHECK_STREQ(gb_driver_method_name(GB_METHOD_NONE), "none");
	CHECK_STREQ(gb_action_name(GB_ACTION_NONE), "none");
	CHECK_STREQ(gb_action_name(GB_ACTION_KEEP), "keep");
	CHECK_STREQ(gb_action_name(GB_ACTION_INSTALL), "install");
	CHECK_STREQ(gb_action_name(GB_ACTION_REPLACE), "replace");
	CHECK_STREQ(gb_action_name(GB_ACTION_REBUILD), "rebuild");
	CHECK_STREQ(gb_kernel_action_name(GB_KERNEL_ACTION_NONE), "none");
	CHECK_STREQ(gb_kernel_action_name(GB_KERNEL_ACTION_INSTALL_HWE), "install-hwe");
	CHECK_STREQ(gb_kernel_action_name(GB_KERNEL_ACTION_INSTALL_HEADERS), "install-headers");
	CHECK_STREQ(gb_nouveau_action_name(GB_NOUVEAU_ACTION_NONE), "none");
	CHECK_STREQ(gb_nouveau_action_name(GB_NOUVEAU_ACTION_BLACKLIST), "blacklist");
	CHECK_STREQ(gb_nouveau_action_name(GB_NOUVEAU_ACTION_UNLOAD), "unload");
	CHECK_STREQ(gb_nouveau_action_name(GB_NOUVEAU_ACTION_REBOOT), "reboot");
	CHECK_STREQ(gb_sb_strategy_name(GB_SB_NOT_NEEDED), "not-needed");
	CHECK_STREQ(gb_sb_strategy_name(GB_SB_UBUNTU_SIGNED), "ubuntu-signed-modules");
	CHECK_STREQ(gb_sb_strategy_name(GB_SB_SIGN_WITH_KEY), "sign-with-key");
}

/* Not decided (a refusal): NULL, which the JSON prints as null. */
TEST(unset_is_null)
{
	CHECK(gb_driver_flavor_name(GB_DRIVER_FLAVOR_UNSET) == NULL);
	CHECK(gb_driver_method_name(GB_METHOD_UNSET) == NULL);
	CHECK(gb_action_name(GB_ACTION_UNSET) == NULL);
	CHECK(gb_kernel_action_name(GB_KERNEL_ACTION_UNSET) == NULL);
	CHECK(gb_nouveau_action_name(GB_NOUVEAU_ACTION_UNSET) == NULL);
	CHECK(gb_sb_strategy_name(GB_SB_UNSET) == NULL);
	CHECK(gb_action_name((enum gb_action)99) == NULL);
}

TEST(action_parse_round_trips)
{
	for (int a = GB_ACTION_NONE; a <= GB_ACTION_REBUILD; a++)
		CHECK_INT((int)gb_action_parse(gb_action_name((enum gb_action)a)), a);
	CHECK_INT((int)gb_action_parse(NULL), GB_ACTION_UNSET);
	CHECK_INT((int)gb_action_parse(""), GB_ACTION_UNSET);
	CHECK_INT((int)gb_action_parse("Install"), GB_ACTION_UNSET);
}

int main(void)
{
	unit_run_tests();
	UNIT_DONE();
}
