/* SPDX-License-Identifier: MIT */
/* TLS trust for a static binary: it finds no CA bundle by itself. */
#pragma once

#include <stdbool.h>
#include <stdio.h>

/* Initialise OpenSSL, early (before any thread), without reading the
 * host's openssl.cnf, so a host configuration cannot change what gpuboot
 * trusts. full: everything gpuboot's hashing, signing and downloads use
 * (the cipher and digest names, the error strings, the default library
 * context), then checked: *ret_missing names an algorithm OpenSSL lacks
 * (-ENOPKG). -ENOMEM when OpenSSL failed, or any of its allocations failed
 * meanwhile (OpenSSL ignores some of those itself). main calls it first;
 * again with full before a first use of OpenSSL in a command that did not
 * ask for it at start (plan and verify reading a site certificate). */
int gb_tls_init(bool full, const char **ret_missing);

/* OpenSSL's allocations that failed since the start (gb_tls_init counts
 * them); a caller that initialises more of it (libcurl) checks again. */
unsigned long gb_tls_alloc_failures(void);

/* Whether OpenSSL allocated since a gb_tls_init without full, and no full
 * one came after: OpenSSL then initialised itself lazily, unchecked (test
 * builds fail the command). */
bool gb_tls_used_uninitialised(void);

/* The CA bundle to use: override (--ca-file) if given, else $SSL_CERT_FILE,
 * else the first of the distros' well-known bundle paths that exists.
 * Returns a static or caller-owned path in *ret (never freed), or -ENOENT. */
int gb_ca_bundle_find(const char *override, const char **ret);

/* Print the versions of the libraries linked in (for --version -v). */
void gb_print_library_versions(FILE *out);
