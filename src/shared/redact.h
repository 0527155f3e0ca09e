/* SPDX-License-Identifier: MIT */
/* Credentials never leave gpuboot in what it records or prints: a URL's
 * user information (https://user:password@host/) becomes "***" in every
 * log line and every JSON document gpuboot writes (status, journal), the
 * two sinks everything it records or prints goes through. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* Copy in to out (outsz bytes, always NUL-terminated, cut where it does not
 * fit) with each URL's user information replaced by "***". A URL is a
 * scheme (letters, digits, + - .) then "://" (or JSON's escaped ":\/\/"),
 * its authority running to the first '/', '?', '#', quote, backslash,
 * space or control character; user information is what precedes the last
 * '@' in it. Returns whether anything was replaced. */
bool gb_redact_urls(const char *in, char *out, size_t outsz);

/* The same into a new string (NULL when out of memory). */
char *gb_redact_urls_dup(const char *in);
