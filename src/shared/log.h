/* SPDX-License-Identifier: MIT */
/* One log for the whole program. Library code does not print: it returns
 * a negative errno and the caller logs once, with context. */
#pragma once

#include "macro.h"

enum gb_log_level {
	GB_LOG_ERR = 0,
	GB_LOG_WARNING = 1,
	GB_LOG_INFO = 2,
	GB_LOG_DEBUG = 3,
};

#include <stddef.h>

/* Copy in to out with control bytes (ESC, newline, ...) written as \xHH and
 * the text cut to fit: user strings in a message stay on one line and
 * cannot drive a terminal. Every log line goes through it. */
void gb_log_escape(char *out, size_t outsz, const char *in);

/* Messages above this level are dropped. Default GB_LOG_WARNING; -v raises it. */
void gb_log_set_level(enum gb_log_level level);

/* Returns -abs(err) so callers can `return gb_log_error_errno(r, ...)`;
 * err must be non-zero there (a zero err would return 0: success).
 * "%m" in fmt is expanded from err, not from errno. */
int gb_log_full(enum gb_log_level level, int err, const char *fmt, ...) _printf_(3, 4);

/* The helpers without an errno return nothing: `return gb_log_error(...)`
 * cannot compile, so no error path returns 0 by accident. */
#define gb_log_error(...) ((void)gb_log_full(GB_LOG_ERR, 0, __VA_ARGS__))
#define gb_log_warning(...) ((void)gb_log_full(GB_LOG_WARNING, 0, __VA_ARGS__))
#define gb_log_info(...) ((void)gb_log_full(GB_LOG_INFO, 0, __VA_ARGS__))
#define gb_log_debug(...) ((void)gb_log_full(GB_LOG_DEBUG, 0, __VA_ARGS__))
#define gb_log_error_errno(e, ...) gb_log_full(GB_LOG_ERR, (e), __VA_ARGS__)
#define gb_log_warning_errno(e, ...) gb_log_full(GB_LOG_WARNING, (e), __VA_ARGS__)
#define gb_log_debug_errno(e, ...) gb_log_full(GB_LOG_DEBUG, (e), __VA_ARGS__)
