/* SPDX-License-Identifier: MIT */
/* rename-loop DIR STOPFILE: rename DIR/a to DIR/b and back as fast as the
 * kernel allows until STOPFILE exists: the renames of a first boot (dpkg,
 * cloud-init, journald) that race openat2's RESOLVE_IN_ROOT walks
 * (tests/integration/t-detect-races.sh). */
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	char a[4096], b[4096];
	FILE *f;

	if (argc != 3) {
		fprintf(stderr, "usage: rename-loop DIR STOPFILE\n");
		return 2;
	}
	snprintf(a, sizeof(a), "%s/a", argv[1]);
	snprintf(b, sizeof(b), "%s/b", argv[1]);
	f = fopen(a, "we");
	if (!f || fclose(f) != 0) {
		perror(a);
		return 1;
	}
	while (access(argv[2], F_OK) != 0)
		for (int i = 0; i < 10000; i++)
			if (rename(a, b) < 0 || rename(b, a) < 0) {
				perror("rename");
				return 1;
			}
	return 0;
}
