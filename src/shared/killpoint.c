/* SPDX-License-Identifier: MIT */
/* The kill points of killpoint.h: a count per site, kept for the process
 * (downloads and unpacks may pass from several threads). */
#include "killpoint.h"

#ifdef GB_TEST_HOOKS
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fileio.h"
#include "macro.h"
#include "test-knob.h"
#include "util.h"

static const char *const sites[] = { "journal", "download", "cache", "unpack", "swap",  "command",
	                             "status",  "write",    "link",  "module", "effect" };
static unsigned counts[ARRAY_SIZE(sites)];

void gb_kill_point(const char *site)
{
	const char *at = gb_test_knob("GPUBOOT_KILL_AT"), *trace = gb_test_knob("GPUBOOT_KILL_TRACE");
	size_t i, n;
	unsigned hit;
	uint32_t want;

	for (i = 0; i < ARRAY_SIZE(sites) && !streq(sites[i], site); i++)
		;
	if (i == ARRAY_SIZE(sites))
		abort(); /* a site not in the list is a bug in the caller */
	hit = __atomic_add_fetch(&counts[i], 1, __ATOMIC_SEQ_CST);
	if (trace && *trace) {
		int fd = open(trace, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
		if (fd >= 0) {
			char line[32];
			int len = snprintf(line, sizeof(line), "%s\n", site);
			(void)gb_write_all(fd, line, (size_t)len);
			close(fd);
		}
	}
	n = strlen(site);
	if (at && strneq(at, site, n) && at[n] == ':' && gb_safe_atou32(at + n + 1, 10, &want) == 0 && want == hit)
		raise(SIGKILL);
}
#endif
