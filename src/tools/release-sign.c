/* SPDX-License-Identifier: MIT */
/* release-sign: the release's SHA256SUMS signed and checked with the code
 * gpuboot uses for its mirror manifests (src/fetch/sig.c), in the same
 * format (128 hex digits and a newline).
 *
 *   release-sign sign KEY.pem FILE        FILE.sig on stdout
 *   release-sign verify KEY.pub FILE SIG  exit 0 when SIG verifies
 *
 * Used by scripts/release.sh and tests/integration/t-release.sh. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fetch/sig.h"
#include "shared/fileio.h"

static int slurp(const char *path, char **ret, size_t *len)
{
	int r = gb_read_file(path, 64u << 20, ret, len);
	if (r < 0)
		fprintf(stderr, "release-sign: %s: %s\n", path, strerror(-r));
	return r;
}

int main(int argc, char **argv)
{
	char err[512], kid[GB_KEY_ID_LEN], hex[GB_SIG_HEX_LEN], *data = NULL, *sig = NULL;
	size_t len = 0, siglen = 0;
	int r;

	if (argc == 4 && strcmp(argv[1], "sign") == 0) {
		if (slurp(argv[3], &data, &len) < 0)
			return 1;
		r = gb_sig_sign(argv[2], data, len, hex, kid, err, sizeof(err));
		free(data);
		if (r < 0) {
			fprintf(stderr, "release-sign: %s\n", err);
			return 1;
		}
		fprintf(stderr, "release-sign: %s signed by %s\n", argv[3], kid);
		return fputs(hex, stdout) == EOF || fflush(stdout) != 0 ? 1 : 0;
	}
	if (argc == 5 && strcmp(argv[1], "verify") == 0) {
		char *keys[] = { argv[2], NULL };
		if (slurp(argv[3], &data, &len) < 0 || slurp(argv[4], &sig, &siglen) < 0) {
			free(data);
			return 1;
		}
		r = memchr(sig, '\0', siglen) ? -EBADMSG : 0;
		if (r == 0)
			r = gb_sig_verify(argv[3], data, len, sig, keys, kid, err, sizeof(err));
		else
			snprintf(err, sizeof(err), "%s: not a hex signature", argv[4]);
		free(data);
		free(sig);
		if (r < 0) {
			fprintf(stderr, "release-sign: %s\n", err);
			return 1;
		}
		printf("%s: good signature by %s\n", argv[3], kid);
		return 0;
	}
	fprintf(stderr, "usage: release-sign sign KEY.pem FILE | release-sign verify KEY.pub FILE FILE.sig\n");
	return 2;
}
