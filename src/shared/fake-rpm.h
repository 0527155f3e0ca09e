/* SPDX-License-Identifier: MIT */
/* The fake operations table's rpm, dnf and zypper (fake-rpm.c). */
#pragma once

#include "ops.h"

/* Answer ARGV as rpm, dnf or zypper would on ROOT with the archive in DIR
 * (and rpm's database beside it, DIR/rpmdb): 1 when it was one of theirs
 * (ret filled: output, exit status), 0 when not, a negative errno when the
 * fake itself failed. */
int gb_fake_rpm_run(const char *root, const char *dir, const char *const *argv, struct gb_cmd_result *ret);
