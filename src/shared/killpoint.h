/* SPDX-License-Identifier: MIT */
#pragma once

/* Named kill points for the kill-point harness (tests/integration/
 * t-killpoints.sh): test builds (GB_TEST_HOOKS) only, inert unless set.
 *   GPUBOOT_KILL_AT=SITE:N    SIGKILL at the Nth passage through SITE
 *   GPUBOOT_KILL_TRACE=FILE   append each passage's SITE to FILE (one a line),
 *                             so a harness counts the points of a whole run
 * Sites: journal (a record durable), download (a chunk written to the
 * cache's temp file), cache (renamed into the cache, before the directory
 * sync), unpack (an archive entry written), swap (gb_swap_into_place:
 * between the old tree leaving and the new one arriving), command (a journaled command ran,
 * before its end record), status (a status document in place), write (a
 * file's temp copy written and synced, before its rename into place), link
 * (CUDA's temp link made, before its rename), module (a module inserted or
 * unloaded, before its end record), effect (another journaled effect done,
 * before its end record: a sysfs unbind, the resume unit). Release builds
 * compile the calls away. */
#ifdef GB_TEST_HOOKS
void gb_kill_point(const char *site);
#else
static inline void gb_kill_point(const char *site)
{
	(void)site;
}
#endif
