/* SPDX-License-Identifier: MIT */
/* The one list of test knobs (test-knob.h). */
#include "test-knob.h"

#ifdef GB_TEST_HOOKS
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "util.h"

/* docs/journal.md, "The test knobs", says what each does. */
static const char *const knobs[] = {
	"GPUBOOT_FAKE_OPS",
	"GPUBOOT_KILL_AT",
	"GPUBOOT_KILL_TRACE",
	"GPUBOOT_KILL_AFTER_JOURNAL_WRITE",
	"GPUBOOT_TEST_FAIL_DIR_FSYNC",
	"GPUBOOT_TEST_CURL_PROTOCOLS",
	"GPUBOOT_TEST_RUNFILE_PIN",
	"GPUBOOT_TEST_CUDA_MANIFEST_PIN",
	"GPUBOOT_TEST_HOLD_LOCK_MS",
	"GPUBOOT_TEST_NOT_IMPLEMENTED",
	"GPUBOOT_FETCH_BACKOFF_MS",
	"GPUBOOT_FETCH_LOW_SPEED_S",
	"GPUBOOT_NO_MEMFD",
	"GPUBOOT_PROBE_TIMEOUT_MS",
	"GPUBOOT_PROBE_FABRIC_WAIT_MS",
	"GPUBOOT_PROBE_PATTERN_MIB",
	"GPUBOOT_PROBE_BW_MIB",
	"GPUBOOT_PROBE_LOAD_MS",
	"GPUBOOT_DISK_PATH",
};

const char *gb_test_knob(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(knobs); i++)
		if (streq(knobs[i], name))
			return getenv(name);
	abort(); /* a knob not in the list is a bug in the caller */
}

int gb_test_knob_u32(const char *name, uint32_t *ret)
{
	const char *e = gb_test_knob(name);
	uint32_t v;

	if (!e)
		return -ENOENT;
	if (gb_safe_atou32(e, 10, &v) < 0)
		return -EINVAL;
	*ret = v;
	return 0;
}
#endif
