/* Policy loading and validation: every mistake is named as file:line:col;
 * the sandbox section and defaults are filled in. */
#include "policy/policy.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

static char *load_error(const char *text)
{
	policy *p = NULL;
	txbox_error err = TXBOX_ERROR_INIT;
	int r = policy_load_buffer("t.yaml", text, strlen(text), &p, &err);
	if (r == 0) {
		policy_free(p);
		return NULL;
	}
	assert_null(p);
	assert_non_null(err.message);
	return err.message;
}

static void expect_error(const char *text, const char *needle)
{
	char *msg = load_error(text);
	if (!msg)
		fail_msg("policy loaded but should fail (%s):\n%s", needle, text);
	if (!strstr(msg, needle))
		fail_msg("error '%s' does not contain '%s'", msg, needle);
	free(msg);
}

static void test_default_loads(void **state)
{
	(void)state;
	policy *p = NULL;
	txbox_error err = TXBOX_ERROR_INIT;
	assert_int_equal(policy_load_default(&p, &err), 0);
	const policy_sandbox *s = policy_get_sandbox(p);
	assert_false(s->network);
	assert_true(s->strip_setuid);
	assert_string_equal(s->masked_paths[0], "~/.ssh");
	assert_null(s->allowed_sockets[0]);
	bool token = false;
	for (char **e = s->env_deny; *e; e++)
		token = token || strcmp(*e, "GITHUB_TOKEN") == 0;
	assert_true(token);
	assert_int_equal(s->memory_bytes, 4ull << 30);
	policy_free(p);
}

static void test_minimal_defaults(void **state)
{
	(void)state;
	policy *p = NULL;
	txbox_error err = TXBOX_ERROR_INIT;
	const char *t = "version: 1\n";
	assert_int_equal(policy_load_buffer("t", t, strlen(t), &p, &err), 0);
	const policy_sandbox *s = policy_get_sandbox(p);
	assert_true(s->strip_setuid);
	assert_false(s->network);
	assert_non_null(s->masked_paths[0]);
	assert_non_null(s->env_deny[0]);
	policy_free(p);
}

static void test_errors(void **state)
{
	(void)state;
	expect_error("", "empty policy");
	expect_error("rules: []\n", "missing 'version: 1'");
	expect_error("version: 2\n", "t.yaml:1:10: unsupported policy version '2'");
	expect_error("version: 1\nbogus: 1\n", "t.yaml:2:1: unknown key 'bogus'");
	expect_error("version: 1\nversion: 1\n", "t.yaml:2:1: duplicate key 'version'");
	expect_error("version: 1\nunresolved: allow\n", "t.yaml:2:13: unresolved must be hold or deny");
	expect_error("version: 1\nsandbox:\n  network: maybe\n", "t.yaml:3:12: sandbox.network must be true or false");
	expect_error("version: 1\nsandbox:\n  limits:\n    memory: 12Q\n", "t.yaml:4:13:");
	expect_error("version: 1\nsandbox:\n  masked_paths: [relative]\n", "must be an absolute path");
	expect_error("version: 1\nrules: {a: 1}\n", "t.yaml:2:8: rules must be a list");
	expect_error("version: 1\nrules:\n  - id: a\n    decision: maybe\n    reason: r\n    match: {command: rm}\n",
		     "t.yaml:4:15: decision must be allow, hold or deny, not 'maybe'");
	expect_error("version: 1\nrules:\n  - id: a\n    decision: deny\n    reason: r\n    match: {command: rm}\n"
		     "  - id: a\n    decision: deny\n    reason: r\n    match: {command: rm}\n",
		     "t.yaml:7:9: duplicate rule id 'a' (first defined at line 3)");
	expect_error("version: 1\nrules:\n  - id: a\n    decision: deny\n    reason: r\n    match: {command: \"[rm\"}\n",
		     "t.yaml:6:22: match.command: bad glob '[rm'");
	expect_error("version: 1\nrules:\n  - id: a\n    decision: deny\n    reason: r\n    match: {colour: red}\n",
		     "t.yaml:6:13: unknown key 'colour' in match");
	expect_error("version: 1\nrules:\n  - id: a\n    decision: deny\n    reason: r\n    match: {paths: [nowhere]}\n",
		     "unknown path class 'nowhere'");
	expect_error("version: 1\nrules:\n  - id: a\n    decision: deny\n    reason: r\n    match: {flags: [rf]}\n",
		     "bad flag 'rf'");
	expect_error("version: 1\nrules:\n  - id: a\n    decision: deny\n    reason: r\n    match: {flags: [\"-f|\"]}\n",
		     "bad flag '-f|'");
	expect_error("version: 1\nrules:\n  - id: a\n    decision: deny\n    reason: r\n    match: {flags: [\"-f|force\"]}\n",
		     "bad flag '-f|force'");
	expect_error("version: 1\nrules:\n  - id: a\n    decision: deny\n    reason: r\n"
		     "    match: {options: {\"-o||--out\": [system]}}\n",
		     "bad option name '-o||--out'");
	expect_error("version: 1\nrules:\n  - id: a\n    decision: deny\n    match: {command: rm}\n", "has no reason");
	expect_error("version: 1\nrules:\n  - id: a\n    decision: deny\n    reason: r\n    match: {}\n",
		     "match needs at least one condition");
	expect_error("version: 1\nrules:\n  - id: \"bad id\"\n    decision: deny\n    reason: r\n    match: {command: x}\n",
		     "may only use letters");
	expect_error("version: 1\nrules:\n  - id: a\n    decision: deny\n    reason: r\n    match: {builtin: fork-bomb, command: x}\n",
		     "takes no other condition");
	expect_error("version: 1\nrules: [\n", "YAML syntax error");
	expect_error("version: 1\n---\nversion: 1\n", "more than one YAML document");
	expect_error("version: 1\nrules: *nope\n", "unknown alias");
	expect_error("version: 1\nrules:\n  - id: a\n    decision: deny\n    reason: \"a\\0b\"\n    match: {command: x}\n",
		     "contains a NUL");
}

static void test_size_limits(void **state)
{
	(void)state;
	/* over 1 MiB */
	size_t n = 1024 * 1024 + 16;
	char *big = malloc(n + 1);
	memset(big, '#', n);
	memcpy(big, "version: 1\n", 11);
	big[11] = '#';
	big[n] = '\0';
	expect_error(big, "over the limit");
	free(big);
	/* more than 10000 rules */
	size_t cap = 10001 * 64 + 64, o = 0;
	char *t = malloc(cap);
	o += (size_t)sprintf(t + o, "version: 1\nrules:\n");
	for (int i = 0; i < 10001; i++)
		o += (size_t)sprintf(t + o, "- {id: r%d, decision: deny, reason: x, match: {command: c}}\n", i);
	expect_error(t, "more than 10000 rules");
	free(t);
	/* alias expansion bomb */
	const char *bomb = "version: 1\na: &a [x, x, x, x, x, x, x, x, x, x]\n"
			   "b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
			   "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n"
			   "d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
			   "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\n"
			   "f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n";
	expect_error(bomb, "limit");
}

static void test_file_errors(void **state)
{
	(void)state;
	policy *p = NULL;
	txbox_error err = TXBOX_ERROR_INIT;
	assert_true(policy_load_file("/nonexistent/policy.yaml", &p, &err) < 0);
	assert_non_null(strstr(err.message, "/nonexistent/policy.yaml"));
	txbox_error_clear(&err);
	assert_true(policy_load_file("/", &p, &err) < 0);
	txbox_error_clear(&err);
	char path[] = "/tmp/txbox-policy-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	const char *t = "version: 1\nsandbox:\n  network: true\n  limits: {pids: 7, timeout: 1.5}\n";
	assert_int_equal(write(fd, t, strlen(t)), (ssize_t)strlen(t));
	close(fd);
	assert_int_equal(policy_load_file(path, &p, &err), 0);
	assert_true(policy_get_sandbox(p)->network);
	assert_int_equal(policy_get_sandbox(p)->pids, 7);
	assert_true(policy_get_sandbox(p)->timeout_sec == 1.5);
	policy_free(p);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_default_loads),  cmocka_unit_test(test_minimal_defaults),
		cmocka_unit_test(test_errors),         cmocka_unit_test(test_size_limits),
		cmocka_unit_test(test_file_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
