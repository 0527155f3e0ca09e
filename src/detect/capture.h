/* SPDX-License-Identifier: MIT */
#pragma once

#include "shared/root.h"

/* Copy every path the recorder saw into DIR, as a fixture tree: files with
 * their bytes, links as links, directories as directories, and paths whose
 * existence alone was read as empty files. DIR must not exist yet or be
 * empty. Returns 0 or a negative errno. */
int gb_capture_write(struct gb_root *root, const char *dir);
