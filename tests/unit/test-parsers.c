/* SPDX-License-Identifier: MIT */
/* The detect parsers: os-release, PCI link speed, kernel flavour, NVRM banner. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "detect/detect.h"
#include "unit.h"

static void test_osrelease(void)
{
	static const char text[] = "PRETTY_NAME=\"Ubuntu 24.04.3 LTS\"\n"
	                           "NAME=\"Ubuntu\"\n"
	                           "VERSION_ID=\"24.04\"\n"
	                           "  # a comment\n"
	                           "\n"
	                           "ID=ubuntu\n"
	                           "ID_LIKE=debian\n"
	                           "ESCAPED=\"a \\\"quoted\\\" \\\\ word\"\n"
	                           "SINGLE='it''s'\n"
	                           "bad line without equals\n"
	                           "lower=case\n"
	                           "UNBALANCED=\"open\n"
	                           "SPACE=two words\n"
	                           "DOLLAR=\"$(reboot)\"\n"
	                           "ID=ubuntu2\n";
	struct gb_kv *kv = NULL;
	size_t n = 0;
	unsigned bad = 0;

	CHECK_INT(gb_osrelease_parse(text, strlen(text), &kv, &n, &bad), 0);
	CHECK_STREQ(gb_kv_get(kv, n, "PRETTY_NAME"), "Ubuntu 24.04.3 LTS");
	CHECK_STREQ(gb_kv_get(kv, n, "VERSION_ID"), "24.04");
	CHECK_STREQ(gb_kv_get(kv, n, "ID"), "ubuntu2"); /* last one wins */
	CHECK_STREQ(gb_kv_get(kv, n, "ESCAPED"), "a \"quoted\" \\ word");
	CHECK(gb_kv_get(kv, n, "SINGLE") == NULL); /* 'it''s' is not one quoted word */
	CHECK(gb_kv_get(kv, n, "lower") == NULL);
	CHECK(gb_kv_get(kv, n, "UNBALANCED") == NULL);
	CHECK(gb_kv_get(kv, n, "SPACE") == NULL);
	CHECK(gb_kv_get(kv, n, "DOLLAR") == NULL);
	CHECK_INT(bad, 6);
	gb_kv_free(kv, n);

	CHECK_INT(gb_osrelease_parse("ID=x\0y", 6, &kv, &n, &bad), -EINVAL);
	CHECK_INT(gb_osrelease_parse("", 0, &kv, &n, &bad), 0);
	CHECK_INT(n, 0);
	gb_kv_free(kv, n);
	/* no trailing newline */
	CHECK_INT(gb_osrelease_parse("ID=alpine", 9, &kv, &n, &bad), 0);
	CHECK_STREQ(gb_kv_get(kv, n, "ID"), "alpine");
	gb_kv_free(kv, n);
}

static void test_speed(void)
{
	CHECK_INT(gb_pci_speed_to_gen("2.5 GT/s PCIe"), 1);
	CHECK_INT(gb_pci_speed_to_gen("5.0 GT/s PCIe"), 2);
	CHECK_INT(gb_pci_speed_to_gen("8.0 GT/s PCIe"), 3);
	CHECK_INT(gb_pci_speed_to_gen("16.0 GT/s PCIe"), 4);
	CHECK_INT(gb_pci_speed_to_gen("32.0 GT/s PCIe"), 5);
	CHECK_INT(gb_pci_speed_to_gen("64.0 GT/s PCIe"), 6);
	CHECK_INT(gb_pci_speed_to_gen("8 GT/s"), 3); /* kernels before 5.2 */
	CHECK_INT(gb_pci_speed_to_gen("Unknown"), -1);
	CHECK_INT(gb_pci_speed_to_gen("Unknown speed"), -1);
	CHECK_INT(gb_pci_speed_to_gen(NULL), -1);
}

static void check_flavour(const char *release, const char *want)
{
	char *f = gb_kernel_flavour(release);
	if (want)
		CHECK_STREQ(f, want);
	else
		CHECK(f == NULL);
	free(f);
}

static void test_flavour(void)
{
	check_flavour("6.8.0-1015-aws", "aws");
	check_flavour("5.15.0-105-generic", "generic");
	check_flavour("6.8.0-1013-nvidia-64k", "nvidia-64k");
	check_flavour("6.1.0-18-cloud-amd64", "cloud-amd64");
	check_flavour("6.6.14-0-virt", "virt");
	check_flavour("5.14.0-362.8.1.el9_3.x86_64", "default");
	check_flavour("5.14.0-427.13.1.el9_4.aarch64+64k", "64k");
	check_flavour("6.1.72-96.166.amzn2023.x86_64", "default");
	check_flavour("6.18.44-fc-v657-gpu", NULL);
	check_flavour("", NULL);
	check_flavour("x; rm -rf /", NULL);
}

static void test_nvrm(void)
{
	char *v = NULL;
	const char *fl = NULL;

	CHECK_INT(gb_nvrm_version_parse("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  "
	                                "Release Build  (nixbld@)\nGCC version:  gcc version 15.3.0 (GCC)\n",
	                                &v, &fl),
	          0);
	CHECK_STREQ(v, "580.159.04");
	CHECK_STREQ(fl, "open");
	free(v);
	CHECK_INT(gb_nvrm_version_parse("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.183.01  Sun May 12 "
	                                "19:39:15 UTC 2024\n",
	                                &v, &fl),
	          0);
	CHECK_STREQ(v, "535.183.01");
	CHECK_STREQ(fl, "proprietary");
	free(v);
	v = NULL;
	CHECK_INT(gb_nvrm_version_parse("garbage", &v, &fl), -EINVAL);
	CHECK_INT(gb_nvrm_version_parse("NVRM version: no numbers here\n1.2.3", &v, &fl), -EINVAL);
	CHECK(v == NULL);
}

int main(void)
{
	test_osrelease();
	test_speed();
	test_flavour();
	test_nvrm();
	UNIT_DONE();
}
