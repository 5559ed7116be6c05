/* Words: quoting, ANSI-C strings, expansions, braces, tilde/HOME, look-alikes. */
#include "helpers.h"

static void test_quoting(void **state)
{
	(void)state;
	assert_words("echo 'a b' \"c d\" e\\ f", 4, "echo", "a b", "c d", "e f");
	assert_words("echo 'it'\\''s' \"x\\\"y\" \"\\$HOME\" \"a\\b\"", 5, "echo", "it's", "x\"y",
		     "$HOME", "a\\b");
	assert_words("echo a'b'\"c\"d", 2, "echo", "abcd");
	assert_words("echo \"\" ''", 3, "echo", "", "");
	assert_words("echo $\"loc al\"", 2, "echo", "loc al");
	assert_words("ec\\\nho a\\\nb", 2, "echo", "ab");
	assert_words("echo \"a\\\nb\"", 2, "echo", "ab");
	assert_words("echo 'a\\\nb'", 2, "echo", "a\\\nb");
	assert_words("echo \\", 2, "echo", "\\");
	assert_words("echo a#b #comment", 2, "echo", "a#b");
	assert_words("echo *.c ?x [ab]", 4, "echo", "*.c", "?x", "[ab]");
	assert_words("\\rm x", 2, "rm", "x");
	assert_words("\"rm\" x", 2, "rm", "x");
}

static void test_ansi_c(void **state)
{
	(void)state;
	assert_words("echo $'a\\tb\\n'", 2, "echo", "a\tb\n");
	assert_words("echo $'\\x41\\x4g\\xg'", 2, "echo", "A\x04g\\xg");
	assert_words("echo $'\\101\\0101'", 2, "echo", "A\b1");
	assert_words("echo $'\\u00e9\\U0001F600'", 2, "echo", "\xc3\xa9\xf0\x9f\x98\x80");
	assert_words("echo $'\\ca\\c?'", 2, "echo", "\x01\x7f");
	assert_words("echo $'a\\0b'c", 2, "echo", "ac");
	assert_words("echo $'\\q\\\"\\?\\'\\\\'", 2, "echo", "\\q\"?'\\");
	assert_words("echo $'\\e\\E\\a\\v\\f\\r'", 2, "echo", "\x1b\x1b\a\v\f\r");
	assert_words("echo $'\\u' $'\\c'", 3, "echo", "\\u", "\\c");
	/* inside double quotes $'…' is not special */
	assert_words("echo \"$'x'\"", 2, "echo", "$'x'");
}

static void test_braces(void **state)
{
	(void)state;
	assert_words("echo {a,b}{c,d}", 5, "echo", "ac", "ad", "bc", "bd");
	assert_words("echo x{a}y {a,{b,c}} a{,}b", 7, "echo", "x{a}y", "a", "b", "c", "ab", "ab");
	assert_words("echo {1..3} {3..1}", 7, "echo", "1", "2", "3", "3", "2", "1");
	assert_words("echo {01..3}", 4, "echo", "01", "02", "03");
	assert_words("echo {-01..1}", 4, "echo", "-01", "000", "001");
	assert_words("echo {a..e..2} {1..10..-3}", 8, "echo", "a", "c", "e", "1", "4", "7", "10");
	assert_words("echo {a{b,c}} {{a,b}", 5, "echo", "{ab}", "{ac}", "{a", "{b");
	assert_words("echo '{a,b}' {a\\,b} {a..}", 4, "echo", "{a,b}", "{a,b}", "{a..}");
	assert_words("echo {,a}", 2, "echo", "a");
	assert_words("echo {\"\",a}", 3, "echo", "", "a");
	assert_words("{rm,-rf,/}", 3, "rm", "-rf", "/");
	/* ${…} braces are not brace expansion */
	shell_analysis a = analyze_ok("echo ${x,y}");
	assert_int_equal(a.cmds[0].argc, 2);
	assert_true(a.cmds[0].word_unresolved[1]);
	shell_analysis_free(&a);
	/* a letter range across 'Z'..'a' yields '\\' and '`', which bash
	 * re-reads: unresolved */
	a = analyze_ok("echo {Y..b} {a..c}");
	assert_int_equal(a.cmds[0].argc, 14); /* echo, Y … b (10), a b c */
	assert_true(a.cmds[0].word_unresolved[1]);
	assert_false(a.cmds[0].word_unresolved[13]);
	shell_analysis_free(&a);
	/* {$a,b}: the resolved field stays resolved */
	a = analyze_ok("echo {$a,b}");
	assert_int_equal(a.cmds[0].argc, 3);
	assert_true(a.cmds[0].word_unresolved[1]);
	assert_false(a.cmds[0].word_unresolved[2]);
	shell_analysis_free(&a);
}

static void test_home(void **state)
{
	(void)state;
	assert_words("rm -rf ~ ~/x $HOME ${HOME} \"$HOME\"/y $HOME/z ~user", 9, "rm", "-rf", "~",
		     "~/x", "~", "~", "~/y", "~/z", "~user");
	shell_analysis a = analyze_ok("rm -rf $HOME");
	assert_false(a.unresolved);
	shell_analysis_free(&a);
	/* $HOME not at the start of a word is not "~" */
	a = analyze_ok("echo x$HOME ${HOME}z");
	assert_string_equal(a.cmds[0].argv[1], "x$HOME");
	assert_true(a.cmds[0].word_unresolved[1]);
	assert_true(a.cmds[0].word_unresolved[2]);
	assert_true(a.unresolved);
	shell_analysis_free(&a);
	/* after '=', '@' or ':' it is a path of its own; ..$HOME is not */
	a = analyze_ok("curl -d @$HOME/.ssh/k --out=${HOME} P=a:$HOME/b ..$HOME x=$HOME$y");
	assert_string_equal(a.cmds[0].argv[2], "@~/.ssh/k");
	assert_false(a.cmds[0].word_unresolved[2]);
	assert_string_equal(a.cmds[0].argv[3], "--out=~");
	assert_string_equal(a.cmds[0].argv[4], "P=a:~/b");
	assert_true(a.cmds[0].word_unresolved[5]);
	assert_true(a.cmds[0].word_unresolved[6]);
	shell_analysis_free(&a);
}

/* $PWD starting a word is bash's ~+ (the policy knows the directory), as is
 * $(dirname "$PWD") with /.. after it; not where the text may set PWD. */
static void test_pwd(void **state)
{
	(void)state;
	assert_words("rm -rf $PWD \"$PWD\"/../x ${PWD}/b \"${PWD}/../c\" $(dirname \"$PWD\")/d", 7,
		     "rm", "-rf", "~+", "~+/../x", "~+/b", "~+/../c", "~+/../d");
	assert_words("cd \"$(dirname build/x)\"", 2, "cd", "build/x/..");
	shell_analysis a = analyze_ok("rm -rf \"$PWD\"/../x");
	assert_false(a.cmds[0].word_unresolved[2]);
	shell_analysis_free(&a);
	/* not at the start, after a separator, or when the text names PWD */
	static const char *const unknown[] = {"echo x$PWD/y", "docker run -v $PWD:/src",
					      "PWD=/etc; rm -rf $PWD/x", "read PWD; rm -rf $PWD/x",
					      "echo $(dirname ..)", "echo $(dirname -z a/b)",
					      "rm -rf ${PWD%/*}/x"};
	for (size_t i = 0; i < ARRAY_SIZE(unknown); i++) {
		a = analyze_ok(unknown[i]);
		const shell_cmd *c = &a.cmds[a.ncmds - 1];
		if (strstr(c->argv[c->argc - 1], "~+"))
			fail_msg("%s: %s", unknown[i], c->argv[c->argc - 1]);
		shell_analysis_free(&a);
	}
	/* a known assignment is its value */
	a = analyze_ok("PWD=/etc; rm -rf $PWD/x");
	assert_string_equal(a.cmds[a.ncmds - 1].argv[2], "/etc/x");
	shell_analysis_free(&a);
}

static void test_expansions(void **state)
{
	(void)state;
	shell_analysis a = analyze_ok("echo $HOME $x ${y:-z} $1 $@ $((1+2)) $[3] \"$z\"");
	const shell_cmd *c = &a.cmds[0];
	assert_string_equal(c->argv[0], "echo");
	assert_false(c->unresolved);
	assert_false(c->word_unresolved[1]);
	for (size_t i = 2; i < c->argc; i++)
		assert_true(c->word_unresolved[i]);
	assert_string_equal(c->argv[2], "$x");
	assert_string_equal(c->argv[3], "${y:-z}");
	assert_true(a.unresolved);
	shell_analysis_free(&a);

	/* a lone $ is literal */
	assert_words("echo $ a$ \"$\"", 4, "echo", "$", "a$", "$");

	/* substitutions inside ${…} run */
	a = analyze_ok("echo ${x:-$(rm -rf /)} \"${y:=`id`}\"");
	assert_cmd(a, "rm -rf /", "$(…)");
	assert_cmd(a, "id", "`…`");
	shell_analysis_free(&a);
}

static void test_lookalikes(void **state)
{
	(void)state;
	/* NBSP inside the command word: one word, unresolved */
	shell_analysis a = analyze_ok("rm\xc2\xa0-rf /");
	assert_int_equal(a.cmds[0].argc, 2);
	assert_true(a.cmds[0].unresolved);
	assert_non_null(strstr(a.cmds[0].unresolved_reason, "look-alike"));
	shell_analysis_free(&a);
	/* em dash at the start of an argument: normalised, and matched as the
	 * folded text it pretends to be (rules see -rf, not an unknown word) */
	a = analyze_ok("rm \xe2\x80\x94rf /");
	assert_string_equal(a.cmds[0].argv[1], "-rf");
	assert_false(a.cmds[0].word_unresolved[1]);
	assert_false(a.cmds[0].word_unresolved[2]);
	shell_analysis_free(&a);
	/* U+2212, U+FF0D, U+2010 */
	const char *dashes[] = {"\xe2\x88\x92", "\xef\xbc\x8d", "\xe2\x80\x90"};
	for (size_t i = 0; i < 3; i++) {
		char buf[64];
		snprintf(buf, sizeof(buf), "rm %srf /", dashes[i]);
		a = analyze_ok(buf);
		assert_string_equal(a.cmds[0].argv[1], "-rf");
		assert_false(a.cmds[0].word_unresolved[1]);
		shell_analysis_free(&a);
	}
	/* zero-width joiner and ideographic space in argument words: known
	 * text (policy/cmdview.c folds them before matching) */
	a = analyze_ok("rm -rf /\xe2\x80\x8d \xe3\x80\x80x");
	assert_false(a.cmds[0].word_unresolved[2]);
	assert_false(a.cmds[0].word_unresolved[3]);
	shell_analysis_free(&a);
	/* look-alike in a quoted argument is just text */
	a = analyze_ok("echo \"a\xc2\xa0" "b\"");
	assert_false(a.cmds[0].word_unresolved[1]);
	assert_false(a.unresolved);
	shell_analysis_free(&a);
	/* in a command word even quoted */
	a = analyze_ok("\"r\xe2\x80\x8bm\" x");
	assert_true(a.cmds[0].unresolved);
	shell_analysis_free(&a);
	/* direct argv */
	const char *argv[] = {"rm", "\xe2\x80\x94rf", "/"};
	txbox_error err = TXBOX_ERROR_INIT;
	assert_int_equal(shell_analyze_argv(argv, 3, NULL, &a, &err), 0);
	assert_string_equal(a.cmds[0].argv[1], "-rf");
	assert_false(a.cmds[0].word_unresolved[1]);
	shell_analysis_free(&a);
}

static void test_assignments(void **state)
{
	(void)state;
	assert_words("A=1 B=$(date) rm x", 2, "rm", "x");
	shell_analysis a = analyze_ok("A=1 B=2");
	assert_int_equal(a.ncmds, 0);
	shell_analysis_free(&a);
	a = analyze_ok("A=$(rm -rf /) arr=(a $(id) b) x[1]=2 y+=3 env");
	assert_cmd(a, "rm -rf /", "$(…)");
	assert_cmd(a, "id", "$(…)");
	assert_cmd(a, "env", NULL);
	shell_analysis_free(&a);
	/* assignment-like words after the command name are arguments */
	assert_words("echo a=b {x,y}=1", 4, "echo", "a=b", "x=1", "y=1");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_quoting),     cmocka_unit_test(test_ansi_c),
		cmocka_unit_test(test_braces),      cmocka_unit_test(test_home), cmocka_unit_test(test_pwd),
		cmocka_unit_test(test_expansions),  cmocka_unit_test(test_lookalikes),
		cmocka_unit_test(test_assignments),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
