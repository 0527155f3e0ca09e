/* SPDX-License-Identifier: MIT */
/* The package managers' words (effects layer): what apt, dpkg, rpm, dnf
 * and zypper print and keep, parsed, for every stage that queries them
 * (install, prepare's kernel, repair, the toolkit). apt-query.c,
 * rpm-query.c. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

struct gb_ctx;

#define GB_INSTALL_NAME 96
#define GB_INSTALL_VERSION 64

/* One package a stage asks a package manager for, typed: the plan builds
 * it, the install turns it into the package manager's words, and nothing
 * parses a name back into parts (pkg-spec.c). Field order keeps
 * { name, version, hold } initialisers meaning what they say. */
enum gb_pkg_kind {
	GB_PKG_NAME = 0, /* a package: name at version */
	GB_PKG_STREAM, /* a dnf module stream (RHEL 8/9, Amazon Linux 2023): name the module, stream its stream;
	                * enabled, then its metapackage installed at version */
	GB_PKG_BRANCH_LOCK, /* the branch held by a versionlock glob (name: RHEL 10's "*nvidia*580*"); the
	                     * engines lock the exact versions they install instead, so it installs nothing */
};

struct gb_pkg_spec {
	char name[GB_INSTALL_NAME];
	/* an exact distribution version ("535.261.03-1"), an upstream version
	 * that the distribution version must carry ("535.261.03"), or "" for
	 * whatever the archive offers */
	char version[GB_INSTALL_VERSION];
	bool hold; /* held (apt-mark hold) or locked (dnf versionlock, zypper addlock) after the install */
	enum gb_pkg_kind kind;
	char stream[64]; /* GB_PKG_STREAM: "580-open" */
};

/* The spec as the plan, the status and the tests spell it: "name",
 * "@module:stream", "versionlock:glob". -ENAMETOOLONG when it does not fit. */
int gb_pkg_spec_format(const struct gb_pkg_spec *s, char *out, size_t outsz);
/* The reverse, for the tests' and tools' command lines (no stage parses a
 * plan's package back): kind, name and stream from text; version and hold
 * untouched. -EINVAL for "@" without ":" or an empty part, -ENAMETOOLONG. */
int gb_pkg_spec_parse(const char *text, struct gb_pkg_spec *ret);
/* Does a module stream install the open kernel module ("open", "580-open")? */
bool gb_pkg_stream_open(const char *stream);

/* Compare two version strings as rpm does (digit runs numerically, letter
 * runs as text, other bytes separate). <0, 0, >0. */
int gb_rpmvercmp(const char *a, const char *b);

/* apt-query.c */
struct gb_apt_version {
	char version[GB_INSTALL_VERSION];
	char suite[64]; /* "bookworm/non-free" */
};
/* `apt-cache madison NAME` output: the versions of NAME, in apt's order
 * (newest first). Lines that are not NAME's binary versions are ignored.
 * Returns how many were stored (at most max), or -EINVAL. */
int gb_apt_madison_parse(const char *out, const char *name, struct gb_apt_version *ret, size_t max);
/* Does the distribution version v satisfy wanted (exact, upstream, or "")? */
bool gb_deb_version_matches(const char *v, const char *wanted);
/* `dpkg-query -W -f '${Package}\t${Version}\t${Status}\n'` output: the
 * installed version of name ("" when not installed) and its hold. 0 or
 * -EINVAL for a version with bytes a version cannot hold. */
int gb_dpkg_query_parse(const char *out, const char *name, char ret_version[GB_INSTALL_VERSION], bool *ret_held);
/* A plausible package name or version (bounded, no spaces or shell bytes). */
bool gb_deb_name_valid(const char *s);
bool gb_deb_version_valid(const char *s);

/* rpm-query.c: what rpm, dnf and zypper print and keep. */
struct gb_rpm_pkg {
	char name[GB_INSTALL_NAME];
	char evr[GB_INSTALL_VERSION]; /* [epoch:]version-release as printed */
	char arch[16];
	char repo[64]; /* dnf list's repository column ("" from rpm -q) */
};
bool gb_rpm_name_valid(const char *s);
bool gb_rpm_evr_valid(const char *s);
/* [epoch:]version[-release] order (<0, 0, >0): the epochs as numbers, then
 * version and release with rpm's comparison (gb_rpmvercmp,
 * prepare/bootloader.h); a release missing on either side is not compared. */
int gb_rpm_evr_cmp(const char *a, const char *b);
/* Does evr satisfy wanted: "" (anything), a version ("580.95.05": any
 * release, any epoch), version-release, or with an epoch (then equal)? */
bool gb_rpm_version_matches(const char *evr, const char *wanted);
/* `rpm -q[a] --qf '%{NAME}\t%{EPOCHNUM}:%{VERSION}-%{RELEASE}\t%{ARCH}\n'`:
 * the packages (lines without a tab, "package x is not installed", are
 * skipped). Count, -EINVAL on a malformed line, -E2BIG past max. */
int gb_rpm_qf_parse(const char *out, struct gb_rpm_pkg *ret, size_t max);
/* name's entry satisfying wanted, else name's first entry, else NULL. */
const struct gb_rpm_pkg *gb_rpm_pkg_find(const struct gb_rpm_pkg *pkgs, size_t n, const char *name, const char *wanted);
/* `dnf -q list --showduplicates SPEC`: name's rows (NAME.ARCH EVR REPO,
 * wrapped or not). Count, -EINVAL for a bad name, -E2BIG past max. */
int gb_dnf_list_parse(const char *out, const char *name, struct gb_rpm_pkg *ret, size_t max);
/* Does zypper's output say that name (or name = version) was not found? */
bool gb_zypper_missing(const char *out, const char *name);
/* Does `rpm -q gpg-pubkey --qf '%{VERSION}-%{RELEASE}\n'` list the key of
 * fingerprint fpr (40 hex digits)? */
bool gb_rpm_pubkey_present(const char *out, const char *fpr);
/* dnf 4's etc/dnf/plugins/versionlock.list: a lock of name at exactly evr;
 * any lock of name. */
bool gb_dnf_versionlock_has(const char *text, const char *name, const char *evr);
bool gb_dnf_versionlock_names(const char *text, const char *name);
/* zypp's etc/zypp/locks: a lock of name (no version restriction). */
bool gb_zypp_locks_has(const char *text, const char *name);
/* etc/dnf/modules.d/MODULE.module: the stream named ("" when none) and
 * whether it is enabled; -EINVAL for a stream with bytes a stream cannot hold. */
int gb_dnf_module_parse(const char *text, const char *module, char ret_stream[64], bool *ret_enabled);
