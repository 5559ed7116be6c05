/* shell_literal_argv: only text that sh -c would simply exec is split. */
#include "shell/shell.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

static void expect_words(const char *text, const char *const *want)
{
	char **v = shell_literal_argv(text);
	if (!v)
		fail_msg("'%s' should be literal", text);
	size_t i = 0;
	for (; want[i]; i++) {
		assert_non_null(v[i]);
		assert_string_equal(v[i], want[i]);
	}
	assert_null(v[i]);
	shell_literal_argv_free(v);
}

static void test_literal_commands(void **state)
{
	(void)state;
	expect_words("true", (const char *const[]){"true", NULL});
	expect_words("  make  -j4\tall ", (const char *const[]){"make", "-j4", "all", NULL});
	expect_words("npm test", (const char *const[]){"npm", "test", NULL});
	expect_words("make CC=gcc-12 V=1", (const char *const[]){"make", "CC=gcc-12", "V=1", NULL});
	expect_words("./build.sh --out=dist/x,y:z@1%2+3", (const char *const[]){"./build.sh", "--out=dist/x,y:z@1%2+3", NULL});
	expect_words("/usr/bin/env", (const char *const[]){"/usr/bin/env", NULL});
}

static void test_not_literal(void **state)
{
	(void)state;
	static const char *const no[] = {
		"", "   ", "echo hi",          /* builtins behave differently from the programs */
		"cd /tmp", "exec ls", "kill 1", "pwd", "test -f x", "[ -f x ]", ". ./env.sh", "source x",
		"printf x", "read x", "export A=1", "set -e", "eval ls", "exit 3", "command ls", "type ls",
		"time make", "if", "while", "for", "case", "{", "!", "wait",
		"A=1 make",                    /* an assignment */
		"ls *.c", "ls a?", "ls [ab]",  /* globs */
		"ls ~", "ls $HOME", "ls `pwd`", "ls $(pwd)", "echo \"x\"", "ls 'a b'", "ls a\\ b",
		"ls > out", "ls < in", "ls | wc", "ls && ls", "ls; ls", "ls &", "(ls)", "ls #c",
		"ls\nrm x", "ls\rx", "l\xc3\xa9s", "ls {a,b}", "ls !x",
	};
	for (size_t i = 0; i < sizeof no / sizeof *no; i++) {
		char **v = shell_literal_argv(no[i]);
		if (v)
			fail_msg("'%s' must go through the shell", no[i]);
	}
	char big[5000];
	memset(big, 'a', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	assert_null(shell_literal_argv(big));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_literal_commands),
		cmocka_unit_test(test_not_literal),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
