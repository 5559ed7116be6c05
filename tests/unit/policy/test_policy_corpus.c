/* The default policy against tests/corpus/: every high-risk line must be
 * held or denied, every benign line allowed (workspace /work/ws, cwd
 * /work/ws, home /home/agent). Failing lines are printed with their verdict.
 * Usage: test-policy-corpus CORPUS_DIR */
#include "corpus.h"
#include "policy/policy.h"
#include "policy/internal.h"

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
	policy_ctx ctx = {.workspace = "/work/ws", .cwd = "/work/ws", .home = "/home/agent"};
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

/* The built-in policy is compiled to static data at build time
 * (treegen.c); loading the same YAML at run time must give the same
 * verdict — decision, rule and reason — on every corpus line, and the
 * same sandbox settings. */
static void test_compiled_equals_loaded(void **state)
{
	(void)state;
	policy *built = NULL, *loaded = NULL;
	txbox_error err = TXBOX_ERROR_INIT;
	assert_int_equal(policy_load_default(&built, &err), 0);
	assert_int_equal(policy_load_buffer("default.yaml", policy_default_yaml, policy_default_yaml_len, &loaded, &err), 0);
	const policy_sandbox *a = policy_get_sandbox(built), *b = policy_get_sandbox(loaded);
	assert_int_equal(a->memory_bytes, b->memory_bytes);
	assert_int_equal(a->pids, b->pids);
	assert_int_equal(a->nofile, b->nofile);
	assert_int_equal(a->network, b->network);
	assert_int_equal(a->strip_setuid, b->strip_setuid);
	for (size_t i = 0; a->env_deny[i] || b->env_deny[i]; i++) {
		assert_non_null(a->env_deny[i]);
		assert_non_null(b->env_deny[i]);
		assert_string_equal(a->env_deny[i], b->env_deny[i]);
	}
	for (size_t i = 0; a->masked_paths[i] || b->masked_paths[i]; i++) {
		assert_non_null(a->masked_paths[i]);
		assert_non_null(b->masked_paths[i]);
		assert_string_equal(a->masked_paths[i], b->masked_paths[i]);
	}
	policy_ctx ctx = {.workspace = "/work/ws", .cwd = "/work/ws", .home = "/home/agent"};
	static const char *const files[] = {"high-risk.txt", "benign.txt"};
	size_t lines = 0;
	for (size_t f = 0; f < 2; f++) {
		char path[4096];
		corpus c;
		snprintf(path, sizeof(path), "%s/%s", corpus_dir, files[f]);
		assert_int_equal(corpus_load(path, &c), 0);
		for (size_t i = 0; i < c.n; i++, lines++) {
			policy_verdict va, vb;
			const char *argv[] = {c.lines[i]};
			assert_int_equal(policy_decide(built, &ctx, argv, 1, &va, &err), 0);
			assert_int_equal(policy_decide(loaded, &ctx, argv, 1, &vb, &err), 0);
			if (va.decision != vb.decision || strcmp(va.rule ? va.rule : "", vb.rule ? vb.rule : "") ||
			    strcmp(va.reason ? va.reason : "", vb.reason ? vb.reason : ""))
				fail_msg("%s:%zu differs: compiled %s/%s, loaded %s/%s", files[f], c.lineno[i],
					 policy_decision_name(va.decision), va.rule, policy_decision_name(vb.decision),
					 vb.rule);
			policy_verdict_free(&va);
			policy_verdict_free(&vb);
		}
		corpus_free(&c);
	}
	assert_true(lines > 800);
	policy_free(built);
	policy_free(loaded);
}

int main(int argc, char **argv)
{
	if (argc > 1)
		corpus_dir = argv[1];
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_high_risk),
		cmocka_unit_test(test_benign),
		cmocka_unit_test(test_compiled_equals_loaded),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
