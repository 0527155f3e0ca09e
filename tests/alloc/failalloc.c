/* SPDX-License-Identifier: MIT */
/* An LD_PRELOAD shim for allocation-failure torture (curl's style): the
 * Nth allocation a program makes after main() starts fails with ENOMEM.
 *
 *   GPUBOOT_FAIL_ALLOC_AT=N     fail allocation number N (1-based), once
 *   GPUBOOT_FAIL_ALLOC_LOG=FILE append "injected N pid FN SIZE" there when
 *                               it happens, then the call stack
 *   GPUBOOT_FAIL_ALLOC_COUNT=FILE write how many allocations main() made
 *                               (at exit)
 *
 * Counted: malloc, calloc, realloc, reallocarray, strdup, strndup,
 * posix_memalign, aligned_alloc, memalign, from the program and from every
 * library it calls (json-c, OpenSSL, libcurl, libarchive, libkmod, libc's
 * own strdup/getline/fopen/asprintf ...), in the main process only: the
 * variables are removed from the environment when main() starts, so the
 * programs it executes are not armed, and allocations made before main()
 * (the dynamic loader, library constructors, the sanitizer's own
 * allocator) or after it returns or calls exit() (the libraries' exit
 * handlers: OpenSSL's cleanup) are not counted. A fork()ed child shares the count it was
 * forked with. Works under AddressSanitizer with
 * ASAN_OPTIONS=verify_asan_link_order=0 (the shim is first, ASan's malloc
 * is the next one). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void *(*real_malloc)(size_t);
static void *(*real_calloc)(size_t, size_t);
static void *(*real_realloc)(void *, size_t);
static void (*real_free)(void *);
static int (*real_posix_memalign)(void **, size_t, size_t);
static int (*real_main)(int, char **, char **);

static unsigned long long fail_at, count;
static int armed, resolving;
static char log_path[512], count_path[512];

/* dlsym may allocate before the real functions are known: serve it here */
static char early[8192];
static size_t early_used;

static int is_early(const void *p)
{
	return (const char *)p >= early && (const char *)p < early + sizeof(early);
}

static void *early_alloc(size_t n)
{
	void *p;
	n = (n + 15) & ~(size_t)15;
	if (early_used + n > sizeof(early))
		return NULL;
	p = early + early_used;
	early_used += n;
	return p;
}

static void resolve(void)
{
	if (real_malloc || resolving)
		return;
	resolving = 1;
	real_malloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "malloc");
	real_calloc = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "calloc");
	real_realloc = (void *(*)(void *, size_t))dlsym(RTLD_NEXT, "realloc");
	real_free = (void (*)(void *))dlsym(RTLD_NEXT, "free");
	real_posix_memalign = (int (*)(void **, size_t, size_t))dlsym(RTLD_NEXT, "posix_memalign");
	resolving = 0;
}

static void say(const char *fn, size_t size, unsigned long long n)
{
	char line[200];
	void *bt[48];
	int fd, k, len;

	if (!log_path[0])
		return;
	fd = open(log_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	len = snprintf(line, sizeof(line), "injected %llu pid %d %s %zu\n", n, (int)getpid(), fn, size);
	if (write(fd, line, (size_t)len) != len) {
		close(fd);
		return;
	}
	k = backtrace(bt, 48);
	backtrace_symbols_fd(bt, k, fd);
	close(fd);
	/* under a sanitizer, the symbolized stack too (to stderr) */
	{
		void (*pst)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "__sanitizer_print_stack_trace");
		if (pst) {
			fprintf(stderr, "failalloc: allocation %llu (%s of %zu bytes) fails here:\n", n, fn, size);
			pst();
		}
	}
}

/* Is this allocation the one to fail? */
static int should_fail(const char *fn, size_t size)
{
	unsigned long long n;
	if (!armed)
		return 0;
	n = __atomic_add_fetch(&count, 1, __ATOMIC_RELAXED);
	if (n != fail_at)
		return 0;
	armed = 0; /* backtrace() below may allocate */
	say(fn, size, n);
	armed = 1;
	errno = ENOMEM;
	return 1;
}

void *malloc(size_t n)
{
	resolve();
	if (!real_malloc)
		return early_alloc(n);
	return should_fail("malloc", n) ? NULL : real_malloc(n);
}

void *calloc(size_t a, size_t b)
{
	resolve();
	if (!real_calloc)
		return early_alloc(a * b); /* zeroed: static */
	return should_fail("calloc", a * b) ? NULL : real_calloc(a, b);
}

void *realloc(void *p, size_t n)
{
	resolve();
	if (is_early(p)) {
		void *q = malloc(n);
		if (q)
			memcpy(q, p,
			       n < (size_t)(early + sizeof(early) - (char *)p)
			           ? n
			           : (size_t)(early + sizeof(early) - (char *)p));
		return q;
	}
	return should_fail("realloc", n) ? NULL : real_realloc(p, n);
}

void *reallocarray(void *p, size_t a, size_t b)
{
	if (b && a > SIZE_MAX / b) {
		errno = ENOMEM;
		return NULL;
	}
	return realloc(p, a * b);
}

void free(void *p)
{
	resolve();
	if (!p || is_early(p))
		return;
	real_free(p);
}

char *strdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *p = malloc(n);
	return p ? memcpy(p, s, n) : NULL;
}

char *strndup(const char *s, size_t max)
{
	size_t n = strnlen(s, max);
	char *p = malloc(n + 1);
	if (!p)
		return NULL;
	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

int posix_memalign(void **ret, size_t align, size_t n)
{
	resolve();
	if (should_fail("posix_memalign", n))
		return ENOMEM;
	return real_posix_memalign(ret, align, n);
}

void *aligned_alloc(size_t align, size_t n)
{
	void *p = NULL;
	return posix_memalign(&p, align < sizeof(void *) ? sizeof(void *) : align, n) == 0 ? p : NULL;
}

void *memalign(size_t align, size_t n)
{
	return aligned_alloc(align, n);
}

static void write_count(void)
{
	char line[32];
	int fd, len;
	if (!count_path[0])
		return;
	fd = open(count_path, O_WRONLY | O_TRUNC | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	len = snprintf(line, sizeof(line), "%llu\n", count);
	if (write(fd, line, (size_t)len) != len)
		fprintf(stderr, "failalloc: could not write %s\n", count_path);
	close(fd);
}

static void take(const char *name, char *buf, size_t size)
{
	const char *v = getenv(name);
	if (v)
		snprintf(buf, size, "%s", v);
	unsetenv(name);
}

static int armed_main(int argc, char **argv, char **envp)
{
	char at[32] = "";
	int r;

	take("GPUBOOT_FAIL_ALLOC_AT", at, sizeof(at));
	take("GPUBOOT_FAIL_ALLOC_LOG", log_path, sizeof(log_path));
	take("GPUBOOT_FAIL_ALLOC_COUNT", count_path, sizeof(count_path));
	fail_at = at[0] ? strtoull(at, NULL, 10) : 0;
	atexit(write_count);
	count = 0;
	armed = 1;
	r = real_main(argc, argv, environ);
	armed = 0;
	return r;
	(void)envp;
}

/* The exit handlers (OpenSSL's cleanup, ...) run after the program's
 * result is decided: not counted. */
void exit(int status)
{
	void (*real_exit)(int) = (void (*)(int))dlsym(RTLD_NEXT, "exit");
	armed = 0;
	real_exit(status);
	abort();
}

int __libc_start_main(int (*main)(int, char **, char **), int argc, char **argv, void (*init)(void), void (*fini)(void),
                      void (*rtld_fini)(void), void *stack_end);
int __libc_start_main(int (*main)(int, char **, char **), int argc, char **argv, void (*init)(void), void (*fini)(void),
                      void (*rtld_fini)(void), void *stack_end)
{
	int (*real)(int (*)(int, char **, char **), int, char **, void (*)(void), void (*)(void), void (*)(void),
	            void *) = (int (*)(int (*)(int, char **, char **), int, char **, void (*)(void), void (*)(void),
	                               void (*)(void), void *))dlsym(RTLD_NEXT, "__libc_start_main");
	real_main = main;
	return real(armed_main, argc, argv, init, fini, rtld_fini, stack_end);
}
