/* SPDX-License-Identifier: MIT */
/* The one tree swap (shared/swap.h): a tree put in place where there was
 * none, an old tree exchanged and removed, the fallback's renames aside
 * and back, a failure that leaves the old tree as it was, the kill point
 * passed once per swap, and a removal that never follows a link. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shared/fileio.h"
#include "shared/swap.h"
#include "unit.h"

static char top[] = "/tmp/gpuboot-test-swap.XXXXXX";
static int top_fd = -1;
static char trace[300];

/* A tree name/ holding one file "what" with what as its text. */
static void tree(const char *name, const char *what)
{
	char p[400];
	snprintf(p, sizeof(p), "%s/%s/sub/%s", top, name, what);
	CHECK_INT(gb_write_file_atomic(p, what, strlen(what), 0644), 0);
}

static bool has(const char *path)
{
	return faccessat(top_fd, path, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
}

/* The passages of the kill point "swap" since the last call. */
static int swaps(void)
{
	char *text = NULL;
	size_t len = 0;
	int n = 0;
	if (gb_read_file(trace, 1 << 16, &text, &len) == 0)
		for (char *p = text; (p = strstr(p, "swap\n")); p += 5)
			n++;
	free(text);
	unlink(trace);
	return n;
}

TEST(fresh)
{
	bool replaced = true;
	tree("a.staging", "new");
	CHECK_INT(gb_swap_into_place(top_fd, "a.staging", "a", "a.old", &replaced), 0);
	CHECK(!replaced);
	CHECK(has("a/sub/new") && !has("a.staging") && !has("a.old"));
	CHECK_INT(swaps(), 1);
}

TEST(exchange)
{
	bool replaced = false;
	tree("b", "old");
	tree("b.staging", "new");
	CHECK_INT(gb_swap_into_place(top_fd, "b.staging", "b", "b.old", &replaced), 0);
	CHECK(replaced);
	CHECK(has("b/sub/new") && !has("b/sub/old"));
	CHECK(!has("b.staging") && !has("b.old")); /* the old tree removed */
	CHECK_INT(swaps(), 1);
	/* A file in place is replaced the same way, and NULL is allowed. */
	tree("c.staging", "new");
	CHECK_INT(close(openat(top_fd, "c", O_WRONLY | O_CREAT, 0644)), 0);
	CHECK_INT(gb_swap_into_place(top_fd, "c.staging", "c", "c.old", NULL), 0);
	CHECK(has("c/sub/new") && !has("c.staging"));
	CHECK_INT(swaps(), 1);
}

TEST(fallback)
{
	tree("d", "old");
	tree("d.staging", "new");
	CHECK_INT(gb_swap_aside(top_fd, "d.staging", "d", "d.old"), 0);
	CHECK(has("d/sub/new") && !has("d/sub/old") && !has("d.staging") && !has("d.old"));
	CHECK_INT(swaps(), 1);
	/* The new tree cannot be moved in: the old one is put back. */
	CHECK_INT(gb_swap_aside(top_fd, "d.missing", "d", "d.old"), -ENOENT);
	CHECK(has("d/sub/new") && !has("d.old"));
	/* Nothing to move aside: nothing done. */
	CHECK_INT(gb_swap_aside(top_fd, "d", "e", "e.old"), -ENOENT);
	CHECK(has("d/sub/new") && !has("e"));
	swaps();
}

TEST(failure_keeps_the_old_tree)
{
	bool replaced = false;
	tree("f", "old");
	CHECK_INT(gb_swap_into_place(top_fd, "f.missing", "f", "f.old", &replaced), -ENOENT);
	CHECK(has("f/sub/old") && !has("f.old"));
	CHECK_INT(gb_swap_into_place(top_fd, "g.missing", "g", "g.old", &replaced), -ENOENT);
	CHECK(!replaced && !has("g"));
	swaps();
}

TEST(remove)
{
	char p[400];
	tree("h", "x");
	tree("outside", "keep");
	snprintf(p, sizeof(p), "%s/outside", top);
	CHECK_INT(symlinkat(p, top_fd, "h/sub/link"), 0);
	CHECK_INT(symlinkat("../../outside", top_fd, "h/rel"), 0);
	CHECK_INT(gb_remove_tree_at(top_fd, "h"), 0);
	CHECK(!has("h") && has("outside/sub/keep"));
	CHECK_INT(gb_remove_tree_at(top_fd, "h"), 0); /* absent */
	CHECK_INT(symlinkat("outside", top_fd, "l"), 0);
	CHECK_INT(gb_remove_tree_at(top_fd, "l"), 0); /* a link is removed, not followed */
	CHECK(!has("l") && has("outside/sub/keep"));
}

int main(void)
{
	if (!mkdtemp(top))
		return 1;
	top_fd = open(top, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	snprintf(trace, sizeof(trace), "%s.trace", top);
	setenv("GPUBOOT_KILL_TRACE", trace, 1);
	unit_run_tests();
	close(top_fd);
	top_fd = open("/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	CHECK_INT(gb_remove_tree_at(top_fd, top + 5), 0);
	close(top_fd);
	unlink(trace);
	UNIT_DONE();
}
