/* SPDX-License-Identifier: MIT */
/* The fake operations table's apt and dpkg (fake-apt.c). */
#pragma once

#include "ops.h"

/* Answer ARGV as apt or dpkg would on ROOT with the archive in DIR: 1 when
 * it was one of theirs (ret filled: output, exit status), 0 when not, a
 * negative errno when the fake itself failed. */
int gb_fake_apt_run(const char *root, const char *dir, const char *const *argv, struct gb_cmd_result *ret);
