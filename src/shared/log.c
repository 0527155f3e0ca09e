/* SPDX-License-Identifier: MIT */
#include "log.h"
#include "redact.h"

#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>
#include <errno.h>
#include <string.h>
#include <time.h>

static enum gb_log_level max_level = GB_LOG_WARNING;

void gb_log_set_level(enum gb_log_level level)
{
	max_level = level;
}

static const char *const level_names[] = {
	[GB_LOG_ERR] = "error",
	[GB_LOG_WARNING] = "warning",
	[GB_LOG_INFO] = "info",
	[GB_LOG_DEBUG] = "debug",
};

/* Expand %m from err ourselves: errno may have changed since the failure. */
static void expand_m(char *out, size_t outsz, const char *fmt, int err)
{
	size_t o = 0;
	const char *msg = strerror(err > 0 ? err : -err);

	for (const char *p = fmt; *p && o + 1 < outsz; p++) {
		if (p[0] == '%' && p[1] == '%') {
			if (o + 2 < outsz) {
				out[o++] = '%';
				out[o++] = '%';
			}
			p++;
		} else if (p[0] == '%' && p[1] == 'm') {
			for (const char *m = msg; *m && o + 2 < outsz; m++) {
				if (*m == '%')
					out[o++] = '%';
				out[o++] = *m;
			}
			p++;
		} else {
			out[o++] = *p;
		}
	}
	out[o] = '\0';
}

void gb_log_escape(char *out, size_t outsz, const char *in)
{
	const unsigned char *p = (const unsigned char *)in;
	size_t o = 0;

	if (outsz < 8)
		return;
	for (; *p && o + 8 < outsz; p++) {
		if (*p < 0x20 || *p == 0x7f)
			o += (size_t)snprintf(out + o, outsz - o, "\\x%02x", *p);
		else
			out[o++] = (char)*p;
	}
	if (*p) /* cut: say so, so a reader knows the message went on */
		o += (size_t)snprintf(out + o, outsz - o, "...");
	out[o] = '\0';
}

int gb_log_full(enum gb_log_level level, int err, const char *fmt, ...)
{
	int saved = errno;
	char f[1024], msg[2048], line[2048];
	char ts[32] = "";
	va_list ap;

	if (level > max_level)
		goto out;

	expand_m(f, sizeof(f), fmt, err);
	/* Plain timestamped lines for logs (cloud-init output, journal);
	 * a terminal gets the message alone. */
	if (!isatty(STDERR_FILENO)) {
		struct timespec t;
		struct tm tm;
		if (clock_gettime(CLOCK_REALTIME, &t) == 0 && gmtime_r(&t.tv_sec, &tm))
			strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ ", &tm);
	}
	va_start(ap, fmt);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
	vsnprintf(msg, sizeof(msg), f, ap);
#pragma GCC diagnostic pop
	va_end(ap);
	/* A URL's credentials never reach a log (redact.h). */
	if (gb_redact_urls(msg, line, sizeof(line)))
		memcpy(msg, line, sizeof(msg));
	gb_log_escape(line, sizeof(line), msg);
	fprintf(stderr, "%sgpuboot: %s: %s\n", ts, level_names[level], line);
out:
	errno = saved;
	return err > 0 ? -err : err;
}
