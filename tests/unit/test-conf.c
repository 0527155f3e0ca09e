/* SPDX-License-Identifier: MIT */
/* The profile / config syntax and its errors (file:line: what). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "plan/conf.h"
#include "catalog/catalog.h"
#include "plan/profile.h"
#include "shared/root.h"
#include "unit.h"

static int parse(const char *text, struct gb_conf *c, char *err, size_t n)
{
	return gb_conf_parse("t.conf", text, strlen(text), c, err, n);
}

/* Parse a profile text as "x.profile"; the profile is freed when it parsed. */
static int profile(const char *text, char *err, size_t n)
{
	struct gb_profile p;
	int r = gb_profile_parse("x", "x.profile", text, strlen(text), &p, err, n);
	if (r == 0)
		gb_profile_done(&p);
	return r;
}

static int site(const char *text, struct gb_site_config *s, char *err, size_t n)
{
	return gb_site_config_parse("g.conf", text, strlen(text), s, err, n);
}

/* Values the catalog does not have, and repeated keys: FILE:LINE, exit 2, and the known values. */
TEST(known_values)
{
	struct gb_site_config s;
	struct gb_gpu_overrides o = { 0 };
	char err[1024], text[256];
	const char *no_manifest = NULL, *newest = gb_runfiles[gb_runfiles_len - 1].version;

	CHECK_INT(gb_conf_distance("netwrk", "network"), 1);
	CHECK_INT(gb_conf_distance("", "abc"), 3);
	CHECK_INT(gb_conf_distance("kitten", "sitting"), 3);

	/* Duplicates: profiles, gpuboot.conf and gpus.d alike; [trust] key repeats. */
	CHECK_INT(profile("[driver]\nbranch = lts\n[cuda]\npolicy = none\n[driver]\nbranch = R580\n", err, sizeof(err)),
	          -EINVAL);
	CHECK_STREQ(err, "x.profile:6: duplicate key 'branch' in [driver], first at line 2");
	CHECK_INT(site("[site]\nproxy = http://p:3128\nproxy = http://q:3128\n", &s, err, sizeof(err)), -EINVAL);
	CHECK_STREQ(err, "g.conf:3: duplicate key 'proxy' in [site], first at line 2");
	CHECK_INT(gb_gpu_overrides_parse("o.conf", "[gpu 2bb5]\nname = a\nname = b\n",
	                                 strlen("[gpu 2bb5]\nname = a\nname = b\n"), &o, err, sizeof(err)),
	          -EINVAL);
	CHECK_STREQ(err, "o.conf:3: duplicate key 'name' in [gpu 2bb5], first at line 2");
	gb_gpu_overrides_done(&o);

	/* CUDA components: known to some manifest of the catalog, each once. */
	CHECK_INT(profile("[cuda]\ncomponents = cuda_cudart, libcublas\n", err, sizeof(err)), 0);
	CHECK_INT(profile("[cuda]\ncomponents = cuda_cudart, libcublass\n", err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "x.profile:2: unknown CUDA component 'libcublass' (did you mean 'libcublas'?); nearest of") ==
	      err);
	CHECK_INT(profile("[cuda]\ncomponents = cudart\n", err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "(did you mean 'cuda_cudart'?)") != NULL);
	CHECK_INT(profile("[cuda]\ncomponents = libcublas, libcublas\n", err, sizeof(err)), -EINVAL);
	CHECK_STREQ(err, "x.profile:2: CUDA component 'libcublas' is listed twice");

	/* Driver pins: a runfile the catalog has; else the nearest of that branch. */
	snprintf(text, sizeof(text), "[driver]\nbranch = %s\n[cuda]\npolicy = none\n", newest);
	CHECK_INT(profile(text, err, sizeof(err)), 0);
	CHECK_INT(profile("[driver]\nbranch = 580.95.06\n", err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "x.profile:2: driver 580.95.06 is not a runfile in the catalog; the R580 versions nearest to "
	                  "it: ") == err);
	CHECK(strstr(err, "580.95.05") != NULL);
	CHECK_INT(profile("[driver]\nbranch = 599.1.1\n", err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "it has no R599 runfile; the catalog's branches are R470, ") != NULL);
	CHECK_INT(profile("[driver]\nbranch = R599\n", err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "x.profile:2: no branch R599 in the catalog; it knows R470, ") == err);
	CHECK_INT(site("[pins]\ndriver = 999.1.1\n", &s, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "g.conf:2: driver 999.1.1 is not a runfile in the catalog") == err);

	/* CUDA pins: a release with a manifest (12.8 or 12.8.0), nothing else. */
	for (size_t i = 0; i < gb_cuda_releases_len; i++)
		if (!gb_cuda_releases[i].manifest)
			no_manifest = gb_cuda_releases[i].version;
	CHECK(no_manifest != NULL);
	snprintf(text, sizeof(text), "[pins]\ncuda = %s\n", no_manifest ? no_manifest : "12.4");
	CHECK_INT(site(text, &s, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "its redistrib manifest is not in the catalog, so it cannot be verified; installable: ") !=
	      NULL);
	CHECK_INT(site("[pins]\ncuda = 12.8.1\n", &s, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "g.conf:2: no CUDA release 12.8.1 in the catalog; installable: ") == err);
	CHECK_INT(profile("[cuda]\npolicy = 12.7\ncomponents = cuda_cudart\n", err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "x.profile:2: no CUDA release 12.7") == err);
	CHECK_INT(site("[pins]\ncuda = 12.8.0\ntoolkit = 1.19.1\n", &s, err, sizeof(err)), 0);
	gb_site_config_done(&s);
	CHECK_INT(site("[pins]\ntoolkit = 1.17.0\n", &s, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "g.conf:2: toolkit 1.17.0 is older than 1.19.1") == err);

	/* [kernel] build_timeout: whole minutes, 1 to a day. */
	CHECK_INT(site("[kernel]\nbuild_timeout = 120\n", &s, err, sizeof(err)), 0);
	CHECK_INT(s.build_timeout_min, 120);
	gb_site_config_done(&s);
	CHECK_INT(site("[kernel]\nbuild_timeout = 0\n", &s, err, sizeof(err)), -EINVAL);
	CHECK_STREQ(err, "g.conf:2: build_timeout must be minutes from 1 to 1440, not '0'");
	CHECK_INT(site("[kernel]\nbuild_timeout = 90min\n", &s, err, sizeof(err)), -EINVAL);
	CHECK_INT(site("[kernel]\nbuild_timeout = 1441\n", &s, err, sizeof(err)), -EINVAL);

	/* [checks] skip: a check name or a group ("network", "network."). */
	CHECK_INT(site("[checks]\nskip = network., gpu.count, memory\n", &s, err, sizeof(err)), 0);
	CHECK_STREQ(s.skip_checks[0], "network");
	CHECK_STREQ(s.skip_checks[1], "gpu.count");
	gb_site_config_done(&s);
	CHECK_INT(site("[checks]\nskip = disk, netwrk\n", &s, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "g.conf:2: unknown check 'netwrk' in skip (did you mean 'network'?); give a check name") ==
	      err);
	CHECK(strstr(err, " clocks, compute,") != NULL);
	CHECK_INT(site("[checks]\nskip = memory.read_bandwdth\n", &s, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "(did you mean 'memory.read_bandwidth'?); the memory checks are memory.copy_bandwidth,") !=
	      NULL);
	CHECK_INT(site("[checks]\nskip = gp\n", &s, err, sizeof(err)), -EINVAL);
}

int main(void)
{
	struct gb_conf c;
	struct gb_profile p;
	struct gb_site_config s;
	struct gb_gpu_overrides o = { 0 };
	char err[1024];
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
	unit_run_tests();
	UNIT_DONE();
}
