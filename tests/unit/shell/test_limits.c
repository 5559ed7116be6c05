/* Malformed input, limits, and large adversarial inputs (no crash, no hang,
 * no quadratic blow-up). */
#include "helpers.h"

#include <errno.h>
#include <time.h>

static void test_syntax_errors(void **state)
{
	(void)state;
	struct {
		const char *text;
		const char *msg;
	} cases[] = {
		{"echo 'abc", "unterminated single quote at byte 5"},
		{"echo \"abc", "unterminated double quote at byte 5"},
		{"echo $'abc", "at byte 5"},
		{"echo `abc", "unterminated `…` at byte 5"},
		{"echo $(abc", "at byte 5"},
		{"echo ${abc", "unterminated ${…} at byte 5"},
		{"echo $((1+2", "at byte 5"},
		{"if true; then echo", "missing 'fi'"},
		{"while true; do echo", "missing 'done'"},
		{"for x in a; do", "missing 'done'"},
		{"case x in a) echo", "missing 'esac'"},
		{"{ echo", "missing '}'"},
		{"( echo", "missing ')'"},
		{"echo )", "unexpected ')'"},
		{"echo a |", "missing command after '|'"},
		{"a &&", "missing command"},
		{";; echo", "unexpected ';;'"},
		{"echo >", "redirection without target"},
		{"echo (", "missing ')'"},
		{"fi", "unexpected 'fi'"},
		{"[[ -f x", "missing ']]'"},
		{"echo $(case x in", "at byte"},
		{"cat <<EOF && echo $(\nEOF", "at byte"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		char msg[256];
		int rc = analyze_err(cases[i].text, msg, sizeof(msg));
		assert_int_equal(rc, -EINVAL);
		if (!strstr(msg, cases[i].msg))
			fail_msg("%s: message '%s' lacks '%s'", cases[i].text, msg, cases[i].msg);
		assert_non_null(strstr(msg, "byte"));
	}
	/* NUL byte */
	shell_analysis a;
	txbox_error err = TXBOX_ERROR_INIT;
	assert_int_equal(shell_analyze("ls\0rm", 5, NULL, &a, &err), -EINVAL);
	assert_non_null(strstr(err.message, "byte 2"));
	txbox_error_clear(&err);
	/* empty input and comments only */
	assert_int_equal(shell_analyze("", 0, NULL, &a, &err), 0);
	assert_int_equal(a.ncmds, 0);
	assert_false(a.unresolved);
	shell_analysis_free(&a);
	a = analyze_ok("  # just a comment\n\n");
	assert_int_equal(a.ncmds, 0);
	shell_analysis_free(&a);
}

/* shell_analyze_partial: after a syntax error, the commands read before
 * it (also in unfinished compound commands and the words of an unfinished
 * command); a NUL byte or a limit is not a syntax error. */
static void test_partial_after_error(void **state)
{
	(void)state;
	struct {
		const char *text;
		size_t ncmds;
		const char *last; /* argv joined by spaces of the last command */
	} cases[] = {
		{"go build -o $@ $<", 1, "go build -o $@ $"},
		{"rm -rf ~; go build -o $@ $<", 2, "go build -o $@ $"},
		{"rm -rf ~ && (", 1, "rm -rf ~"},
		{"if true; then rm -rf ~; (", 2, "rm -rf ~"},
		{"rm -rf ~ 'x", 1, "rm -rf ~"},
		{"f() { rm -rf /; echo (", 1, "rm -rf /"},
		{"echo $(rm -rf ~; ) )", 2, "echo $(rm -rf ~; )"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		shell_analysis a;
		txbox_error err = TXBOX_ERROR_INIT;
		const char *t = cases[i].text;
		assert_int_equal(shell_analyze_partial(t, strlen(t), NULL, &a, &err), -EINVAL);
		assert_non_null(strstr(err.message, "at byte"));
		if (!a.syntax_error || !a.partial || a.ncmds != cases[i].ncmds)
			fail_msg("%s: syntax_error %d partial %d ncmds %zu", t, a.syntax_error, a.partial,
				 a.ncmds);
		if (cases[i].last) {
			char buf[128] = "";
			const shell_cmd *c = &a.cmds[a.ncmds - 1];
			for (size_t k = 0; k < c->argc; k++)
				snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "%s%s", k ? " " : "",
					 c->argv[k]);
			if (strcmp(buf, cases[i].last) != 0)
				fail_msg("%s: last command '%s', want '%s'", t, buf, cases[i].last);
		}
		shell_analysis_free(&a);
		txbox_error_clear(&err);
	}
	shell_analysis a;
	txbox_error err = TXBOX_ERROR_INIT;
	assert_int_equal(shell_analyze_partial("ls\0rm", 5, NULL, &a, &err), -EINVAL);
	assert_false(a.syntax_error);
	txbox_error_clear(&err);
	shell_limits lim = {.max_length = 4};
	assert_int_equal(shell_analyze_partial("echo hello", 10, &lim, &a, &err), -E2BIG);
	assert_false(a.syntax_error);
	assert_int_equal(a.ncmds, 0);
	txbox_error_clear(&err);
	/* shell_analyze itself keeps nothing */
	assert_int_equal(shell_analyze("rm -rf ~; (", 11, NULL, &a, &err), -EINVAL);
	assert_int_equal(a.ncmds, 0);
	assert_false(a.syntax_error);
	txbox_error_clear(&err);
}

static void test_limits(void **state)
{
	(void)state;
	shell_analysis a;
	txbox_error err = TXBOX_ERROR_INIT;
	shell_limits lim = {.max_length = 10};
	assert_int_equal(shell_analyze("echo hello world", 16, &lim, &a, &err), -E2BIG);
	assert_non_null(strstr(err.message, "too long"));
	txbox_error_clear(&err);

	lim = (shell_limits){.max_depth = 2};
	const char *deep = "sh -c \"sh -c 'sh -c ls'\"";
	assert_int_equal(shell_analyze(deep, strlen(deep), &lim, &a, &err), -ELOOP);
	assert_non_null(strstr(err.message, "depth"));
	txbox_error_clear(&err);
	lim.max_depth = 3;
	assert_int_equal(shell_analyze(deep, strlen(deep), &lim, &a, &err), 0);
	assert_cmd(a, "ls", "sh -c");
	shell_analysis_free(&a);

	lim = (shell_limits){.max_nodes = 50};
	char buf[1024] = "";
	for (int i = 0; i < 60; i++)
		strcat(buf, "a;");
	assert_int_equal(shell_analyze(buf, strlen(buf), &lim, &a, &err), -E2BIG);
	assert_non_null(strstr(err.message, "nodes"));
	txbox_error_clear(&err);

	/* eval loop: bounded by depth */
	const char *ev = "eval eval eval eval eval eval eval eval eval eval eval ls";
	assert_int_equal(shell_analyze(ev, strlen(ev), NULL, &a, &err), -ELOOP);
	txbox_error_clear(&err);

	/* brace expansion bounds */
	const char *br = "echo {1..100000000}";
	assert_int_equal(shell_analyze(br, strlen(br), NULL, &a, &err), -E2BIG);
	txbox_error_clear(&err);
	const char *br2 = "echo {a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}"
			  "{a,b}{a,b}{a,b}{a,b}";
	assert_int_equal(shell_analyze(br2, strlen(br2), NULL, &a, &err), -E2BIG);
	txbox_error_clear(&err);
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Run text (any result) and check it takes bounded time. */
static void run_big(const char *what, const char *text, size_t len, size_t max_nodes)
{
	shell_analysis a;
	txbox_error err = TXBOX_ERROR_INIT;
	shell_limits lim = {.max_length = 2u << 20, .max_nodes = max_nodes};
	double t0 = now();
	int rc = shell_analyze(text, len, &lim, &a, &err);
	double dt = now() - t0;
	if (rc == 0)
		shell_analysis_free(&a);
	else
		assert_non_null(err.message);
	txbox_error_clear(&err);
	print_message("  %-28s %7zu bytes rc=%d %.3fs\n", what, len, rc, dt);
	if (dt > 20.0)
		fail_msg("%s took %.1fs", what, dt);
}

static char *repeat(const char *unit, size_t times, const char *tail, size_t *len)
{
	size_t ul = strlen(unit), tl = tail ? strlen(tail) : 0;
	char *s = malloc(ul * times + tl + 1);
	assert_non_null(s);
	for (size_t i = 0; i < times; i++)
		memcpy(s + i * ul, unit, ul);
	if (tl)
		memcpy(s + ul * times, tail, tl);
	s[ul * times + tl] = '\0';
	*len = ul * times + tl;
	return s;
}

static void test_big_inputs(void **state)
{
	(void)state;
	const size_t MB = 1u << 20;
	struct {
		const char *what, *unit, *tail;
		size_t times;
	} cases[] = {
		{"open parens", "(", NULL, MB},
		{"open double parens", "((", NULL, MB / 2},
		{"balanced parens", "(", NULL, 0},
		{"open $(", "$(", NULL, MB / 2},
		{"open ${", "${", NULL, MB / 2},
		{"open $((", "$((", NULL, MB / 3},
		{"open backquotes", "`", NULL, MB},
		{"double quotes", "\"", NULL, MB},
		{"single quotes", "'", NULL, MB},
		{"quote mix", "\"'", NULL, MB / 2},
		{"long pipeline", "a|", "a", MB / 2},
		{"long list", "a;", NULL, MB / 2},
		{"long word", "a", NULL, MB},
		{"many braces", "{a,b}", NULL, MB / 5},
		{"nested braces", "{", "a,b}", MB - 8},
		{"unmatched braces", "{a", NULL, MB / 2},
		{"seq braces", "{a..}", NULL, MB / 5},
		{"heredocs", "cat <<E\n", NULL, MB / 8},
		{"backslashes", "\\", NULL, MB},
		{"ansi-c", "$'\\x41'", NULL, MB / 7},
		{"env chain", "env ", "ls", MB / 4},
		{"sh -c nesting", "sh -c ", "ls", MB / 6},
		{"if nesting", "if a; then ", NULL, MB / 11},
		{"lookalikes", "\xc2\xa0", NULL, MB / 2},
		{"redirections", ">a ", "ls", MB / 3},
		{"arith parens", "$((((", "1", MB / 5},
		{"case", "case x in ", NULL, MB / 10},
		{"assignments", "a=b ", NULL, MB / 4},
		{"dollar names", "$a", NULL, MB / 2},
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		size_t len;
		char *s;
		if (cases[i].times == 0) {
			/* (((( … )))) balanced */
			s = malloc(MB + 1);
			assert_non_null(s);
			memset(s, '(', MB / 2);
			memset(s + MB / 2, ')', MB / 2);
			s[MB] = '\0';
			len = MB;
		} else
			s = repeat(cases[i].unit, cases[i].times, cases[i].tail, &len);
		run_big(cases[i].what, s, len, 0);
		/* and with a large node budget (worst case for work done) */
		run_big(cases[i].what, s, len, 10u * 1000 * 1000);
		free(s);
	}
}

static void test_deep_nesting_ok(void **state)
{
	(void)state;
	/* 40 levels of $( ) are fine */
	char buf[512] = "";
	for (int i = 0; i < 40; i++)
		strcat(buf, "$(");
	strcat(buf, "rm x");
	for (int i = 0; i < 40; i++)
		strcat(buf, ")");
	shell_analysis a = analyze_ok(buf);
	const shell_cmd *c = get_cmd(&a, "rm x");
	assert_int_equal(c->depth, 40);
	shell_analysis_free(&a);
	/* 200 levels: a clean error */
	char big[2048] = "";
	for (int i = 0; i < 200; i++)
		strcat(big, "$(");
	char msg[256];
	assert_int_equal(analyze_err(big, msg, sizeof(msg)), -ELOOP);
	assert_non_null(strstr(msg, "nesting"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_syntax_errors),
		cmocka_unit_test(test_partial_after_error),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_big_inputs),
		cmocka_unit_test(test_deep_nesting_ok),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
