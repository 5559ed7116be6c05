/* The default policy against tests/corpus/: every high-risk line must be
 * held or denied, every benign line allowed (workspace /work/ws, cwd
 * /work/ws, home /home/agent). Failing lines are printed with their verdict.
 * Usage: test-policy-corpus CORPUS_DIR */
#include "corpus.h"
#include "policy/policy.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static const char *corpus_dir = "tests/corpus";

static size_t run(const char *file, bool want_allow)
{
	char path[4096];
	corpus c;
	policy *p = NULL;
	txbox_error err = TXBOX_ERROR_INIT;
	policy_ctx ctx = {"/work/ws", "/work/ws", "/home/agent", NULL};
	size_t failed = 0;

	snprintf(path, sizeof(path), "%s/%s", corpus_dir, file);
	assert_int_equal(corpus_load(path, &c), 0);
	assert_true(c.n >= 300);
	assert_int_equal(policy_load_default(&p, &err), 0);
	for (size_t i = 0; i < c.n; i++) {
		policy_verdict v;
		const char *argv[] = {c.lines[i]};
		assert_int_equal(policy_decide(p, &ctx, argv, 1, &v, &err), 0);
		bool allowed = v.decision == POLICY_ALLOW;
		if (allowed != want_allow) {
			failed++;
			printf("FAIL %s:%zu: %s\n    -> %s [%s] %s\n", file, c.lineno[i], c.lines[i],
			       policy_decision_name(v.decision), v.rule, v.reason);
		}
		policy_verdict_free(&v);
	}
	printf("%s: %zu lines, %zu %s, %zu failing\n", file, c.n, c.n - failed,
	       want_allow ? "allowed" : "held or denied", failed);
	policy_free(p);
	corpus_free(&c);
	return failed;
}

static void test_high_risk(void **state)
{
	(void)state;
	assert_int_equal(run("high-risk.txt", false), 0);
}

static void test_benign(void **state)
{
	(void)state;
	assert_int_equal(run("benign.txt", true), 0);
}

int main(int argc, char **argv)
{
	if (argc > 1)
		corpus_dir = argv[1];
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_high_risk),
		cmocka_unit_test(test_benign),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
