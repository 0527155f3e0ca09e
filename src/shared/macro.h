/* SPDX-License-Identifier: MIT */
/* Small helpers shared by every module: cleanup attributes and hand-over. */
#pragma once

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _unused_ __attribute__((unused))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _nonnull_ __attribute__((nonnull))

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Hand a pointer over: return its value and leave NULL behind, so the
 * cleanup attribute of the old owner does nothing. */
#define TAKE_PTR(p)                       \
	({                                \
		__typeof__(p) _tp_ = (p); \
		(p) = NULL;               \
		_tp_;                     \
	})

#define TAKE_FD(fd)              \
	({                       \
		int _tf_ = (fd); \
		(fd) = -1;       \
		_tf_;            \
	})

static inline void freep(void *p)
{
	free(*(void **)p);
}
#define _cleanup_free_ _cleanup_(freep)

static inline void closep(int *fd)
{
	if (*fd >= 0) {
		int saved = errno;
		close(*fd);
		errno = saved;
	}
}
#define _cleanup_close_ _cleanup_(closep)

static inline void fclosep(FILE **f)
{
	if (*f)
		fclose(*f);
}
#define _cleanup_fclose_ _cleanup_(fclosep)

static inline int negative_errno(void)
{
	return errno > 0 ? -errno : -EIO;
}

#define streq(a, b) (strcmp((a), (b)) == 0)
#define strneq(a, b, n) (strncmp((a), (b), (n)) == 0)
