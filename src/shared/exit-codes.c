/* SPDX-License-Identifier: MIT */
#include "exit-codes.h"

#include "macro.h"

const struct gb_exit_info gb_exit_table[] = {
	{ GB_EXIT_OK, "OK", "ok", "done and verified (or the answer was printed)" },
	{ GB_EXIT_FAILED, "FAILED", "failed", "failed: the status names the stage, the cause and a hint" },
	{ GB_EXIT_USAGE, "USAGE", "usage-error", "usage or configuration error; nothing was changed" },
	{ GB_EXIT_REBOOT, "REBOOT", "reboot-needed", "reboot needed; the resume unit finishes the job after it" },
	{ GB_EXIT_UNSUPPORTED, "UNSUPPORTED", "unsupported-platform",
	  "unsupported platform (musl libc, CPU architecture, distribution or release)" },
	{ GB_EXIT_NO_GPU, "NO_GPU", "no-gpu", "no NVIDIA GPU found" },
	{ GB_EXIT_UNSUPPORTED_GPU, "UNSUPPORTED_GPU", "unsupported-gpu",
	  "unsupported GPU or GPU mix for the profile (or branch)" },
	{ GB_EXIT_FETCH, "FETCH", "fetch-failed", "download or verification of an artifact failed; nothing installed" },
	{ GB_EXIT_MODULE, "MODULE", "module-load-failed", "a kernel module could not be loaded" },
	{ GB_EXIT_VERIFY, "VERIFY", "verify-failed", "installed, but verification failed" },
	{ GB_EXIT_LOCKED, "LOCKED", "locked", "another gpuboot holds the lock" },
};
const size_t gb_exit_table_len = ARRAY_SIZE(gb_exit_table);

const struct gb_exit_info *gb_exit_info(int code)
{
	for (size_t i = 0; i < gb_exit_table_len; i++)
		if (gb_exit_table[i].code == code)
			return &gb_exit_table[i];
	return &gb_exit_table[1];
}
