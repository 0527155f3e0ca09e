/* SPDX-License-Identifier: MIT */
/* The profile / config syntax and its errors (file:line: what). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "plan/conf.h"
#include "plan/profile.h"
#include "shared/root.h"
#include "unit.h"

static int parse(const char *text, struct gb_conf *c, char *err, size_t n)
{
	return gb_conf_parse("t.conf", text, strlen(text), c, err, n);
}

int main(void)
{
	struct gb_conf c;
	struct gb_profile p;
	struct gb_site_config s;
	struct gb_gpu_overrides o = { 0 };
	char err[256];
	char **list = NULL;
	double d;
	int b;

	CHECK_INT(
	    parse("# comment\n[driver]\nbranch = lts   # trailing\n  flavor=open\n\n[gpu 2330]\nname = H100 # x\n", &c,
	          err, sizeof(err)),
	    0);
	CHECK_INT(c.n, 3);
	CHECK_STREQ(c.entries[0].section, "driver");
	CHECK_STREQ(c.entries[0].value, "lts");
	CHECK_INT(c.entries[0].line, 3);
	CHECK_STREQ(c.entries[1].key, "flavor");
	CHECK_STREQ(c.entries[2].section, "gpu 2330");
	CHECK_STREQ(c.entries[2].value, "H100");
	gb_conf_done(&c);
	/* '#' inside a value (no space before it) is kept. */
	CHECK_INT(parse("[a]\nurl = https://x/#frag\n", &c, err, sizeof(err)), 0);
	CHECK_STREQ(c.entries[0].value, "https://x/#frag");
	gb_conf_done(&c);

	CHECK_INT(parse("[driver\n", &c, err, sizeof(err)), -EINVAL);
	CHECK_STREQ(err, "t.conf:1: a section header is [name]");
	CHECK_INT(parse("[a]\nKey = x\n", &c, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "t.conf:2: key 'Key'") != NULL);
	CHECK_INT(parse("[a]\njust words\n", &c, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "t.conf:2: expected 'key = value'") != NULL);
	CHECK_INT(parse("[a]\n= x\n", &c, err, sizeof(err)), -EINVAL);
	CHECK_INT(parse("[a]\nk = \001\n", &c, err, sizeof(err)), -EINVAL);
	CHECK_INT(gb_conf_parse("t.conf", "[a]\0", 4, &c, err, sizeof(err)), -EINVAL);

	CHECK_INT(gb_conf_split_list(" a, ,b ,c", &list), 0);
	CHECK_STREQ(list[0], "a");
	CHECK_STREQ(list[2], "c");
	CHECK(list[3] == NULL);
	gb_strv_free(list);
	CHECK_INT(gb_conf_parse_bool("yes", &b), 0);
	CHECK_INT(b, 1);
	CHECK_INT(gb_conf_parse_bool("maybe", &b), -EINVAL);
	CHECK_INT(gb_conf_parse_number("0.5", &d), 0);
	CHECK_INT(gb_conf_parse_number("-1", &d), -EINVAL);
	CHECK_INT(gb_conf_parse_number("1e999", &d), -EINVAL);
	CHECK_INT(gb_conf_parse_number("12abc", &d), -EINVAL);

	/* Every built-in profile parses. */
	for (size_t i = 0; i < gb_builtin_profiles_len; i++) {
		const char *t = gb_builtin_profiles[i].text;
		CHECK_INT(gb_profile_parse(gb_builtin_profiles[i].name, "built-in", t, strlen(t), &p, err, sizeof(err)),
		          0);
		gb_profile_done(&p);
	}
	CHECK_INT(gb_profile_parse("x", "x.profile", "[driver]\nbranch = R580\n[cuda]\npolicy = none\n",
	                           strlen("[driver]\nbranch = R580\n[cuda]\npolicy = none\n"), &p, err, sizeof(err)),
	          0);
	CHECK_INT(p.policy, GB_POLICY_BRANCH);
	CHECK_INT(p.pinned_branch, 580);
	gb_profile_done(&p);
	CHECK_INT(gb_profile_parse("x", "x.profile", "[verify]\ntier = extreme\n", strlen("[verify]\ntier = extreme\n"),
	                           &p, err, sizeof(err)),
	          -EINVAL);
	CHECK_STREQ(err, "x.profile:2: tier must be passive, active or full, not 'extreme'");

	CHECK_INT(gb_site_config_parse("g.conf", "[trust]\nkey = /etc/k1.pub\nkey = /etc/k2.pub\n",
	                               strlen("[trust]\nkey = /etc/k1.pub\nkey = /etc/k2.pub\n"), &s, err, sizeof(err)),
	          0);
	CHECK_STREQ(s.trusted_keys[1], "/etc/k2.pub");
	gb_site_config_done(&s);
	CHECK_INT(gb_site_config_parse("g.conf", "[trust]\nkey = k1.pub\n", strlen("[trust]\nkey = k1.pub\n"), &s, err,
	                               sizeof(err)),
	          -EINVAL);
	CHECK_STREQ(err, "g.conf:2: key must be an absolute path, not 'k1.pub'");

	CHECK_INT(gb_gpu_overrides_parse("o.conf", "[gpu 2bb5]\narchitecture = blackwell\nopen_module = required\n",
	                                 strlen("[gpu 2bb5]\narchitecture = blackwell\nopen_module = required\n"), &o,
	                                 err, sizeof(err)),
	          0);
	CHECK_INT(o.n, 1);
	CHECK(o.v[0].open_required);
	CHECK(gb_gpu_override_find(&o, 0x2bb5) != NULL);
	gb_gpu_overrides_done(&o);
	CHECK_INT(gb_gpu_overrides_parse("o.conf", "[gpu 2bb]\nname = x\n", strlen("[gpu 2bb]\nname = x\n"), &o, err,
	                                 sizeof(err)),
	          -EINVAL);
	CHECK(strstr(err, "o.conf:2: sections are [gpu XXXX]") != NULL);
	gb_gpu_overrides_done(&o);
	UNIT_DONE();
}
