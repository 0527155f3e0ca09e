/* SPDX-License-Identifier: MIT */
#include "ops.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/reboot.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "macro.h"
#include "util.h"

extern char **environ;

static int real_module_insert(const char *module, const char *options)
{
	/* The load stage inserts with libkmod; this is the raw fallback seam. */
	(void)module;
	(void)options;
	return -EOPNOTSUPP;
}

static int real_module_remove(const char *module)
{
	long r = syscall(SYS_delete_module, module, O_NONBLOCK);
	return r < 0 ? negative_errno() : 0;
}

static int real_reboot(void)
{
	sync();
	if (reboot(RB_AUTOBOOT) < 0)
		return negative_errno();
	return 0;
}

static uint64_t ts_ns(clockid_t c)
{
	struct timespec t;
	if (clock_gettime(c, &t) < 0)
		return 0;
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static uint64_t real_now_monotonic_ns(void)
{
	return ts_ns(CLOCK_MONOTONIC);
}

static uint64_t real_now_realtime_ns(void)
{
	return ts_ns(CLOCK_REALTIME);
}

static int real_run_command(char *const argv[], int timeout_ms, int *ret_status)
{
	pid_t pid;
	int r, status = 0;
	uint64_t deadline = real_now_monotonic_ns() + (uint64_t)timeout_ms * 1000000ull;

	r = posix_spawnp(&pid, argv[0], NULL, NULL, argv, environ);
	if (r != 0)
		return -r;
	for (;;) {
		pid_t w = waitpid(pid, &status, WNOHANG);
		if (w == pid)
			break;
		if (w < 0 && errno != EINTR)
			return negative_errno();
		if (real_now_monotonic_ns() > deadline) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			return -ETIMEDOUT;
		}
		usleep(2000);
	}
	*ret_status = status;
	return 0;
}

static int real_uname(struct utsname *ret)
{
	return uname(ret) < 0 ? negative_errno() : 0;
}

const struct gb_ops gb_ops_real = {
	.name = "real",
	.module_insert = real_module_insert,
	.module_remove = real_module_remove,
	.reboot = real_reboot,
	.run_command = real_run_command,
	.now_monotonic_ns = real_now_monotonic_ns,
	.now_realtime_ns = real_now_realtime_ns,
	.uname = real_uname,
};

/* ---- the fake ---- */

#define FAKE_MAX_RULES 32

struct fake_rule {
	char kind[16];
	char name[64];
	int value;
};

static struct {
	char record[4096];
	struct fake_rule rules[FAKE_MAX_RULES];
	size_t n_rules;
	uint64_t clock;
	int has_clock;
	char release[65];
	char machine[65];
} fake;

static void fake_record(const char *fmt, const char *a, const char *b)
{
	FILE *f;
	if (!fake.record[0])
		return;
	f = fopen(fake.record, "ae");
	if (!f)
		return;
	fprintf(f, fmt, a, b ? b : "");
	fputc('\n', f);
	fclose(f);
}

static const struct fake_rule *fake_find(const char *kind, const char *name)
{
	for (size_t i = 0; i < fake.n_rules; i++)
		if (streq(fake.rules[i].kind, kind) && streq(fake.rules[i].name, name))
			return &fake.rules[i];
	return NULL;
}

static int fake_module_insert(const char *module, const char *options)
{
	const struct fake_rule *r = fake_find("module", module);
	fake_record("module_insert %s %s", module, options);
	return r ? -r->value : 0;
}

static int fake_module_remove(const char *module)
{
	const struct fake_rule *r = fake_find("remove", module);
	fake_record("module_remove %s%s", module, NULL);
	return r ? -r->value : 0;
}

static int fake_reboot(void)
{
	fake_record("reboot%s%s", "", NULL);
	return 0;
}

static int fake_run_command(char *const argv[], int timeout_ms, int *ret_status)
{
	const struct fake_rule *r = fake_find("command", argv[0]);
	char line[1024] = "";
	size_t o = 0;
	(void)timeout_ms;
	for (size_t i = 1; argv[i] && o < sizeof(line) - 2; i++) {
		int n = snprintf(line + o, sizeof(line) - o, "%s%s", i > 1 ? " " : "", argv[i]);
		if (n < 0)
			break;
		o += (size_t)n;
	}
	fake_record("run %s %s", argv[0], line);
	*ret_status = r ? (r->value & 0xff) << 8 : 0;
	return 0;
}

static uint64_t fake_now(void)
{
	if (!fake.has_clock)
		return real_now_monotonic_ns();
	fake.clock += 1000000ull;
	return fake.clock;
}

static uint64_t fake_now_realtime(void)
{
	if (!fake.has_clock)
		return real_now_realtime_ns();
	fake.clock += 1000000ull;
	return fake.clock;
}

static int fake_uname(struct utsname *ret)
{
	int r = real_uname(ret);
	if (r < 0)
		return r;
	if (fake.release[0])
		gb_strscpy(ret->release, sizeof(ret->release), fake.release);
	if (fake.machine[0])
		gb_strscpy(ret->machine, sizeof(ret->machine), fake.machine);
	return 0;
}

static const struct gb_ops gb_ops_fake = {
	.name = "fake",
	.module_insert = fake_module_insert,
	.module_remove = fake_module_remove,
	.reboot = fake_reboot,
	.run_command = fake_run_command,
	.now_monotonic_ns = fake_now,
	.now_realtime_ns = fake_now_realtime,
	.uname = fake_uname,
};

int gb_ops_fake_setup(const char *spec, const struct gb_ops **ret)
{
	_cleanup_free_ char *copy = strdup(spec);
	char *save = NULL, *item;

	if (!copy)
		return -ENOMEM;
	memset(&fake, 0, sizeof(fake));
	for (item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
		const char *v;
		if ((v = gb_startswith(item, "record="))) {
			if (gb_strscpy(fake.record, sizeof(fake.record), v) < 0)
				return -EINVAL;
		} else if ((v = gb_startswith(item, "clock:"))) {
			if (gb_safe_atou64(v, 10, &fake.clock) < 0)
				return -EINVAL;
			fake.has_clock = 1;
		} else if ((v = gb_startswith(item, "uname:"))) {
			const char *c = strchr(v, ':');
			if (!c || (size_t)(c - v) >= sizeof(fake.release))
				return -EINVAL;
			memcpy(fake.release, v, (size_t)(c - v));
			if (gb_strscpy(fake.machine, sizeof(fake.machine), c + 1) < 0)
				return -EINVAL;
		} else {
			struct fake_rule *r;
			char *c1 = strchr(item, ':'), *c2;
			uint32_t value;
			if (!c1 || fake.n_rules >= FAKE_MAX_RULES)
				return -EINVAL;
			c2 = strrchr(item, ':');
			if (c2 == c1)
				return -EINVAL;
			*c1 = *c2 = '\0';
			if (!streq(item, "module") && !streq(item, "remove") && !streq(item, "command"))
				return -EINVAL;
			if (gb_safe_atou32(c2 + 1, 10, &value) < 0 || value > 4095)
				return -EINVAL;
			r = &fake.rules[fake.n_rules++];
			if (gb_strscpy(r->kind, sizeof(r->kind), item) < 0 ||
			    gb_strscpy(r->name, sizeof(r->name), c1 + 1) < 0)
				return -EINVAL;
			r->value = (int)value;
		}
	}
	*ret = &gb_ops_fake;
	return 0;
}
