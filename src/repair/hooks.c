/* SPDX-License-Identifier: MIT */
/* The hooks that follow every kernel install, and the unit that checks at
 * every boot. A hook runs inside the package manager's transaction, so it
 * always exits 0 (a failing run-parts hook leaves the kernel package
 * half-configured: Debian's linux-image postinst runs them with
 * --exit-on-error), never calls the package manager (its lock is held:
 * dnf would wait for ever), gives gpuboot a bounded time, and when the
 * repair fails leaves var/lib/gpuboot/repair-needed-KVER for the boot
 * unit and the operator. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "context.h"
#include "repair-internal.h"
#include "effect/journal.h"
#include "shared/macro.h"
#include "effect/root-write.h"
#include "shared/root.h"
#include "shared/util.h"
#include "shared/json-util.h"

#define STAGE "install"
#define UNIT_TARGET "/etc/systemd/system/" GB_REPAIR_UNIT
#define STR_(x) #x
#define STR(x) STR_(x)

/* The part both kinds of hook share: $kver is set. */
#define HOOK_BODY                                                                                                      \
	"case \"$kver\" in\n"                                                                                          \
	"'' | */* | .* | -*) exit 0 ;;\n"                                                                              \
	"esac\n"                                                                                                       \
	"gpuboot=" GB_REPAIR_GPUBOOT "\n"                                                                              \
	"marker=/" GB_REPAIR_MARKER_DIR "/" GB_REPAIR_MARKER_PREFIX "$kver\n"                                          \
	"[ -x \"$gpuboot\" ] || exit 0\n"                                                                              \
	"if command -v timeout >/dev/null 2>&1; then\n"                                                                \
	"\ttimeout " STR(                                                                                              \
	    GB_REPAIR_HOOK_TIMEOUT_S) " \"$gpuboot\" --repair --kernel \"$kver\" --from-hook\n"                        \
	                              "else\n"                                                                         \
	                              "\t\"$gpuboot\" --repair --kernel \"$kver\" --from-hook\n"                       \
	                              "fi\n"                                                                           \
	                              "rc=$?\n"                                                                        \
	                              "if [ \"$rc\" -eq 0 ]; then\n"                                                   \
	                              "\trm -f \"$marker\" 2>/dev/null\n"                                              \
	                              "else\n"                                                                         \
	                              "\tmkdir -p \"${marker%/*}\" 2>/dev/null\n"                                      \
	                              "\tprintf 'kernel=%s\\nexit=%s\\n' \"$kver\" \"$rc\" >\"$marker\" 2>/dev/null\n" \
	                              "\techo \"gpuboot: the NVIDIA module for $kver is not ready (exit $rc); "        \
	                              "gpuboot-repair.service "                                                        \
	                              "retries at boot, 'gpuboot --repair --kernel $kver' says why\" >&2\n"            \
	                              "fi\n"                                                                           \
	                              "exit 0\n"

static const char runparts_text[] = "#!/bin/sh\n"
                                    "# Written by gpuboot. Run by run-parts after a kernel (postinst.d) or its\n"
                                    "# headers (header_postinst.d) are installed, with the release as $1:\n"
                                    "# builds the NVIDIA module for it. Always exits 0 (a failing hook leaves\n"
                                    "# the kernel package half-configured); never calls the package manager.\n"
                                    "kver=\"${1:-}\"\n" HOOK_BODY;

static const char kernel_install_text[] = "#!/bin/sh\n"
                                          "# Written by gpuboot. A kernel-install plugin, called as\n"
                                          "# COMMAND KERNEL_VERSION ENTRY_DIR KERNEL_IMAGE [INITRD...]: on add,\n"
                                          "# builds the NVIDIA module for the kernel (after DKMS's 40-dkms.install,\n"
                                          "# before 50-dracut.install builds the initramfs). Always exits 0 (77 would\n"
                                          "# stop kernel-install); never calls the package manager.\n"
                                          "[ \"${1:-}\" = add ] || exit 0\n"
                                          "kver=\"${2:-}\"\n" HOOK_BODY;

/* Before everything that opens the GPU at boot; after the filesystems and
 * udev (multi-user.target, and so cloud-final, are ordered after the units
 * it wants). */
static const char unit_text[] =
    "# Written by gpuboot: at every boot, make sure the running kernel has the\n"
    "# NVIDIA module at the installed version (build it with DKMS, load it)\n"
    "# before anything needs the GPU. A no-op when it is already loaded.\n"
    "[Unit]\n"
    "Description=gpuboot: repair the NVIDIA modules for the running kernel\n"
    "After=local-fs.target systemd-udevd.service systemd-modules-load.service\n"
    "Before=nvidia-persistenced.service nvidia-fabricmanager.service nvidia-dcgm.service dcgm.service\n"
    "Before=containerd.service docker.service crio.service kubelet.service\n"
    "Before=gpuboot-resume.service display-manager.service\n"
    "ConditionPathExists=" GB_REPAIR_GPUBOOT "\n"
    "\n"
    "[Service]\n"
    "Type=oneshot\n"
    "RemainAfterExit=yes\n"
    "ExecStart=" GB_REPAIR_GPUBOOT " --repair --if-needed\n"
    "TimeoutStartSec=45min\n"
    "StandardOutput=journal+console\n"
    "\n"
    "[Install]\n"
    "WantedBy=multi-user.target\n";

const char *gb_repair_hook_runparts_text(void)
{
	return runparts_text;
}

const char *gb_repair_hook_kernel_install_text(void)
{
	return kernel_install_text;
}

const char *gb_repair_unit_text(void)
{
	return unit_text;
}

/* The wants/ link under an image root (systemctl cannot run there). */
static int link_wants(struct gb_ctx *ctx)
{
	return gb_root_symlink(ctx->root, GB_REPAIR_UNIT_WANTS, UNIT_TARGET);
}

/* Enabled already (the wants/ link names the unit): no effect. */
static int enable(struct gb_ctx *ctx, struct gb_journal *j)
{
	_cleanup_free_ char *target = NULL;
	const char *id = ctx->root->is_host ? "systemctl:enable:" GB_REPAIR_UNIT : "link:" GB_REPAIR_UNIT_WANTS;
	json_object *d;
	int r;

	if (gb_root_readlink(ctx->root, GB_REPAIR_UNIT_WANTS, &target) == 0 && streq(target, UNIT_TARGET))
		return 0;
	d = gb_json_new_object();
	gb_json_add(d, "unit", gb_json_new_string(GB_REPAIR_UNIT));
	r = gb_journal_begin(j, STAGE, id, ctx->root->is_host ? "command" : "file", d);
	if (r != 0)
		return r < 0 ? r : 0;
	r = ctx->root->is_host ? ctx->ops->systemctl(ctx->ops, "enable", GB_REPAIR_UNIT) : link_wants(ctx);
	if (r == 0)
		gb_journal_count_effect(j);
	return gb_journal_end(j, id, r, NULL) < 0 ? -EIO : r;
}

int gb_repair_install_hooks(struct gb_ctx *ctx, struct gb_journal *j, const char *family)
{
	enum gb_repair_family f = gb_repair_family(ctx, family);
	int r;

	switch (f) {
	case GB_REPAIR_FAMILY_DEB:
		r = gb_journal_write_file(j, STAGE, GB_REPAIR_HOOK_DEB_POSTINST, runparts_text, strlen(runparts_text),
		                          0755);
		if (r >= 0)
			r = gb_journal_write_file(j, STAGE, GB_REPAIR_HOOK_DEB_HEADERS, runparts_text,
			                          strlen(runparts_text), 0755);
		break;
	case GB_REPAIR_FAMILY_RPM:
		r = gb_journal_write_file(j, STAGE, GB_REPAIR_HOOK_KERNEL_INSTALL, kernel_install_text,
		                          strlen(kernel_install_text), 0755);
		break;
	default: return -EOPNOTSUPP;
	}
	if (r >= 0)
		r = gb_journal_write_file(j, STAGE, GB_REPAIR_UNIT_PATH, unit_text, strlen(unit_text), 0644);
	if (r >= 0)
		r = enable(ctx, j);
	return r < 0 ? r : 0;
}
