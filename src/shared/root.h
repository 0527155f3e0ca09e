/* SPDX-License-Identifier: MIT */
/* The root: every input is a path below it. Held as a directory fd; paths
 * are resolved inside it (openat2 RESOLVE_IN_ROOT where the kernel has it),
 * so a symlink in a fixture tree cannot reach the host. */
#pragma once

#include <dirent.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* What the capture recorder saw being read. */
enum gb_root_kind {
	GB_ROOT_FILE,
	GB_ROOT_LINK,
	GB_ROOT_DIR,
	GB_ROOT_STAT, /* only its existence was read: captured empty */
};

struct gb_root {
	int fd;
	char *path; /* as given, for messages */
	bool is_host; /* the root is "/" (the live machine) */
	bool have_openat2; /* probed once */
	/* A read under the root (or the capture's record of one) ran out of
	 * memory since this was last cleared: an answer of "absent" may be
	 * wrong. Set by every reader here; detect fails when it is set. */
	bool oom;
	/* capture recorder (NULL when off): every successful read is appended */
	struct gb_root_record *records;
	size_t n_records, cap_records;
};

struct gb_root_record {
	char *path;
	enum gb_root_kind kind;
};

/* Open DIR as the root. -ENOTDIR when it is not a directory. */
int gb_root_open(const char *dir, struct gb_root **ret);
struct gb_root *gb_root_free(struct gb_root *root);
void gb_root_freep(struct gb_root **root);

/* Turn the capture recorder on; every later successful read is recorded. */
void gb_root_record_start(struct gb_root *root);

/* Open a path below the root, relative ("etc/os-release" or "/etc/os-release"). */
int gb_root_openat(struct gb_root *root, const char *path, int flags);

/* The same for writes: where openat2 is missing, plain openat only on the
 * host's own root ("/"); for an image or fixture root, -EOPNOTSUPP. */
int gb_root_openat_strict(struct gb_root *root, const char *path, int flags);

/* Read a whole file below the root, at most max bytes (-EFBIG when larger).
 * The buffer is NUL-terminated; *ret_len excludes the NUL. Only a regular
 * file is read: it is opened without blocking (a FIFO never hangs the
 * reader) and anything else is -EINVAL. A walk raced by a rename or a mount
 * (openat2's EAGAIN) is tried again, bounded, by every opener here. */
int gb_root_read_file(struct gb_root *root, const char *path, size_t max, char **ret, size_t *ret_len);

/* Read at most max bytes from the start of a regular file (no error when it
 * is longer). NUL-terminated; *ret_len excludes the NUL. */
int gb_root_read_head(struct gb_root *root, const char *path, size_t max, char **ret, size_t *ret_len);

/* Read a sysfs-style one-line attribute, trimmed. -EINVAL on garbage. */
int gb_root_read_attr(struct gb_root *root, const char *path, char **ret);

/* readlink below the root; ret is malloc'd. */
int gb_root_readlink(struct gb_root *root, const char *path, char **ret);

/* Does the path exist below the root (following links inside the root)? */
bool gb_root_exists(struct gb_root *root, const char *path);

/* Does the path exist, without following a final symlink (a dangling link
 * counts)? Records the path for capture as a link or an existence check. */
bool gb_root_lexists(struct gb_root *root, const char *path);

/* gb_root_lexists for a decision that must not be made on a lost answer:
 * 1, 0, or -ENOMEM when the lookup ran out of memory (root->oom set too). */
int gb_root_lexists_r(struct gb_root *root, const char *path);

/* List a directory below the root: names (excluding . and ..), sorted.
 * *ret is a NULL-terminated malloc'd array of malloc'd strings. */
int gb_root_list_dir(struct gb_root *root, const char *path, char ***ret, size_t *ret_n);
void gb_strv_free(char **v);
