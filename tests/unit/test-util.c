/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>

#include "shared/redact.h"
#include "shared/util.h"
#include "unit.h"

TEST(atou)
{
	uint64_t v = 7;
	uint32_t u = 7;
	int32_t i = 7;

	CHECK_INT(gb_safe_atou64("0x10de", 16, &v), 0);
	CHECK_INT(v, 0x10de);
	CHECK_INT(gb_safe_atou64("10de\n", 16, &v), 0);
	CHECK_INT(v, 0x10de);
	CHECK_INT(gb_safe_atou64("", 10, &v), -EINVAL);
	CHECK_INT(gb_safe_atou64("-1", 10, &v), -EINVAL);
	CHECK_INT(gb_safe_atou64("12abc", 10, &v), -EINVAL);
	CHECK_INT(gb_safe_atou64("0x", 16, &v), -EINVAL);
	CHECK_INT(gb_safe_atou64("99999999999999999999999", 10, &v), -ERANGE);
	CHECK_INT(v, 0x10de); /* untouched on failure */
	CHECK_INT(gb_safe_atou32("4294967296", 10, &u), -ERANGE);
	CHECK_INT(u, 7);
	CHECK_INT(gb_safe_atoi32("-1\n", &i), 0);
	CHECK_INT(i, -1);
	CHECK_INT(gb_safe_atoi32("1 2", &i), -EINVAL);
	CHECK_INT(gb_safe_atou64(NULL, 10, &v), -EINVAL);
}

TEST(atod)
{
	double d = 7;

	CHECK_INT(gb_safe_atod("12", &d), 0);
	CHECK(d == 12.0);
	CHECK_INT(gb_safe_atod(" 0.25\n", &d), 0);
	CHECK(d == 0.25);
	CHECK_INT(gb_safe_atod("-1.5", &d), 0);
	CHECK(d == -1.5);
	CHECK_INT(gb_safe_atod("1e3", &d), 0);
	CHECK(d == 1000.0);
	CHECK_INT(gb_safe_atod(".5", &d), 0);
	CHECK(d == 0.5);
	d = 7;
	CHECK_INT(gb_safe_atod("", &d), -EINVAL);
	CHECK_INT(gb_safe_atod("  ", &d), -EINVAL);
	CHECK_INT(gb_safe_atod("1.5x", &d), -EINVAL);
	CHECK_INT(gb_safe_atod("1 2", &d), -EINVAL);
	CHECK_INT(gb_safe_atod("0x10", &d), -EINVAL);
	CHECK_INT(gb_safe_atod("inf", &d), -EINVAL);
	CHECK_INT(gb_safe_atod("nan", &d), -EINVAL);
	CHECK_INT(gb_safe_atod("-", &d), -EINVAL);
	CHECK_INT(gb_safe_atod(".", &d), -EINVAL);
	CHECK_INT(gb_safe_atod("1e999", &d), -ERANGE);
	CHECK_INT(gb_safe_atod(NULL, &d), -EINVAL);
	CHECK(d == 7); /* untouched on failure */
}

TEST(version)
{
	CHECK(gb_version_cmp("580.65.06", "580.159.04") < 0);
	CHECK(gb_version_cmp("580.159.04", "580.159.04") == 0);
	CHECK(gb_version_cmp("590", "580.159.04") > 0);
	CHECK(gb_version_cmp("12.8", "12.8.0") < 0);
	CHECK(gb_version_valid("580.159.04"));
	CHECK(gb_version_valid("570.26"));
	CHECK(!gb_version_valid("580"));
	CHECK(!gb_version_valid("580..1"));
	CHECK(!gb_version_valid("580.1.2.3"));
	CHECK(!gb_version_valid("5a0.1"));
	CHECK(!gb_version_valid(""));
	CHECK(!gb_version_valid(NULL));
}

TEST(attr)
{
	char *v = NULL;

	CHECK_INT(gb_sysfs_attr_parse("0x10de\n", 7, &v), 0);
	CHECK_STREQ(v, "0x10de");
	free(v);
	CHECK_INT(gb_sysfs_attr_parse("32.0 GT/s PCIe\n", 15, &v), 0);
	CHECK_STREQ(v, "32.0 GT/s PCIe");
	free(v);
	v = NULL;
	CHECK_INT(gb_sysfs_attr_parse("a\nb\n", 4, &v), -EINVAL);
	CHECK_INT(gb_sysfs_attr_parse("a\0b", 3, &v), -EINVAL);
	CHECK(v == NULL);
	CHECK_INT(gb_sysfs_attr_parse("", 0, &v), 0);
	CHECK_STREQ(v, "");
	free(v);
}

TEST(str)
{
	char buf[8];
	char s[] = "  x y \n";

	CHECK_STREQ(gb_strstrip(s), "x y");
	CHECK_INT(gb_strscpy(buf, sizeof(buf), "1234567"), 0);
	CHECK_INT(gb_strscpy(buf, sizeof(buf), "12345678"), -ENAMETOOLONG);
	CHECK_STREQ(buf, "1234567");
	CHECK(gb_startswith("NVRM version: x", "NVRM version:") != NULL);
	CHECK(gb_startswith("NVR", "NVRM") == NULL);
}

TEST(redact)
{
	char out[256];
	char *d;

	CHECK(gb_redact_urls("https://user:pw@host:8443/m/manifest.json: refused", out, sizeof(out)));
	CHECK_STREQ(out, "https://***@host:8443/m/manifest.json: refused");
	/* JSON's escaped slashes; a password holding '@' (the last one ends it) */
	CHECK(gb_redact_urls("{\"e\":\"https:\\/\\/u:p@w@h\\/x\"}", out, sizeof(out)));
	CHECK_STREQ(out, "{\"e\":\"https:\\/\\/***@h\\/x\"}");
	/* an '@' in a path; an e-mail address: no URL's user information */
	CHECK(gb_redact_urls("a http://h/x@y c root@host", out, sizeof(out)) == false);
	CHECK_STREQ(out, "a http://h/x@y c root@host");
	/* a user name alone is user information too */
	CHECK(gb_redact_urls("ftp://me@f", out, sizeof(out)));
	CHECK_STREQ(out, "ftp://***@f");
	CHECK(gb_redact_urls("s3://k@b/x and https://a:b@c", out, sizeof(out)));
	CHECK_STREQ(out, "s3://***@b/x and https://***@c");
	/* a short user grows the text: cut to fit, always terminated */
	CHECK(gb_redact_urls("http://a@h", out, 10));
	CHECK_STREQ(out, "http://**");
	d = gb_redact_urls_dup("x http://a@h y");
	CHECK(d != NULL);
	if (d)
		CHECK_STREQ(d, "x http://***@h y");
	free(d);
	CHECK(!gb_redact_urls("://@", out, sizeof(out)));
	CHECK_STREQ(out, "://@");
}

/* Dates the plan compares (end of life, the catalog's, today): days since
 * 1970-01-01, the calendar's leap years, and nothing that is not a date. */
TEST(date_days)
{
	int64_t d = 7;
	CHECK_INT(gb_date_days("1970-01-01", &d), 0);
	CHECK_INT(d, 0);
	CHECK_INT(gb_date_days("2026-11-30", &d), 0);
	CHECK_INT(d, 1796040000 / 86400); /* the tests' fake clock, 2026-11-30T12:00:00Z */
	CHECK_INT(gb_date_days("2000-03-01", &d), 0);
	CHECK_INT(d, 11017);
	CHECK_INT(gb_date_days("1969-12-31", &d), 0);
	CHECK_INT(d, -1);
	{
		int64_t a = 0, b = 0;
		CHECK_INT(gb_date_days("2026-06-30", &a), 0); /* R535's end of life */
		CHECK_INT(gb_date_days("2026-12-04", &b), 0);
		CHECK_INT(b - a, 157);
		CHECK_INT(gb_date_days("2024-02-29", &a), 0);
		CHECK_INT(gb_date_days("2024-03-01", &b), 0);
		CHECK_INT(b - a, 1);
	}
	d = 7;
	CHECK_INT(gb_date_days("2026-02-29", &d), -EINVAL); /* not a leap year */
	CHECK_INT(gb_date_days("1900-02-29", &d), -EINVAL);
	CHECK_INT(gb_date_days("2026-13-01", &d), -EINVAL);
	CHECK_INT(gb_date_days("2026-04-31", &d), -EINVAL);
	CHECK_INT(gb_date_days("2026-1-01", &d), -EINVAL);
	CHECK_INT(gb_date_days("2026-01-01T00", &d), -EINVAL);
	CHECK_INT(gb_date_days("2026/01/01", &d), -EINVAL);
	CHECK_INT(gb_date_days("", &d), -EINVAL);
	CHECK_INT(gb_date_days(NULL, &d), -EINVAL);
	CHECK_INT(d, 7); /* untouched on failure */
}

int main(void)
{
	unit_run_tests();
	UNIT_DONE();
}
