/* SPDX-License-Identifier: MIT */
/* TLS trust for a static binary: it finds no CA bundle by itself. */
#pragma once

#include <stdio.h>

/* Initialise OpenSSL without reading the host's openssl.cnf, so a host
 * configuration cannot change what gpuboot trusts. Call once, early. */
int gb_tls_init(void);

/* The CA bundle to use: override (--ca-file) if given, else $SSL_CERT_FILE,
 * else the first of the distros' well-known bundle paths that exists.
 * Returns a static or caller-owned path in *ret (never freed), or -ENOENT. */
int gb_ca_bundle_find(const char *override, const char **ret);

/* Print the versions of the libraries linked in (for --version -v). */
void gb_print_library_versions(FILE *out);
