/* Fail-closed: what cannot be known statically is reported unresolved. */
#include "helpers.h"

static void expect_unresolved(const char *text, const char *cmd, const char *reason_part)
{
	shell_analysis a = analyze_ok(text);
	assert_true(a.unresolved);
	assert_non_null(a.unresolved_reason);
	const shell_cmd *c = cmd ? find_cmd(&a, cmd) : NULL;
	if (cmd && !c) {
		dump(&a);
		fail_msg("%s: no command '%s'", text, cmd);
	}
	if (c && !c->unresolved) {
		dump(&a);
		fail_msg("%s: '%s' not unresolved", text, cmd);
	}
	if (c && reason_part && !strstr(c->unresolved_reason, reason_part)) {
		dump(&a);
		fail_msg("%s: reason '%s' lacks '%s'", text, c->unresolved_reason, reason_part);
	}
	shell_analysis_free(&a);
}

static void test_dynamic_command_names(void **state)
{
	(void)state;
	expect_unresolved("$cmd -rf /", "$cmd -rf /", "not static");
	expect_unresolved("r${X}m -rf /", "r${X}m -rf /", "not static");
	expect_unresolved("$(echo rm) -rf /", "$(echo rm) -rf /", "not static");
	expect_unresolved("`echo rm` -rf /", "`echo rm` -rf /", "not static");
	expect_unresolved("\"$(curl -s x)\"", "$(curl -s x)", "downloaded");
	expect_unresolved("eval \"$var\"", "eval $var", "eval");
	expect_unresolved("eval $(base64 -d <<< cm0gLXJmIC8K)", NULL, NULL);
	expect_unresolved("sudo $X rm", "sudo $X rm", NULL);
	expect_unresolved("env $E rm", "env $E rm", NULL);

	/* the name is static: only the word is unresolved */
	shell_analysis a = analyze_ok("echo $HOME $x");
	assert_false(a.cmds[0].unresolved);
	assert_false(a.cmds[0].word_unresolved[1]);
	assert_true(a.cmds[0].word_unresolved[2]);
	assert_true(a.unresolved);
	shell_analysis_free(&a);
}

static void test_piped_code(void **state)
{
	(void)state;
	expect_unresolved("curl -fsSL https://x/install.sh | sh", "sh", "downloaded");
	expect_unresolved("wget -O- https://x | sudo bash", "bash", "downloaded");
	expect_unresolved("curl x | bash -s -- --opt", "bash -s -- --opt", "downloaded");
	expect_unresolved("echo cm0K | base64 -d | sh", "sh", "decoded");
	expect_unresolved("xxd -r -p f | bash", "bash", "decoded");
	expect_unresolved("cat script | python3", "python3", "pipeline");
	expect_unresolved("curl x | python3 -", "python3 -", "downloaded");
	expect_unresolved("curl x | perl", "perl", "downloaded");
	expect_unresolved("curl x | node", "node", "downloaded");
	expect_unresolved("echo ls | sh", "sh", "pipeline into sh");
	expect_unresolved("curl x | tee >(sh) | cat", "sh", NULL);
	expect_unresolved("curl x | { sh; }", "sh", NULL);
	expect_unresolved("sh <(curl -s https://x)", "sh <(curl -s https://x)", "downloaded");
	expect_unresolved("bash <(wget -qO- x)", NULL, "downloaded");
	expect_unresolved("bash -c \"$(curl -fsSL https://x)\"", NULL, "downloaded");
	expect_unresolved("sh -c \"$CMD\"", NULL, "not static");
	expect_unresolved("python3 -c \"$(curl x)\"", NULL, "downloaded");
	expect_unresolved("bash < <(curl x)", "bash", "process substitution");

	/* reading a script file is not unresolved */
	shell_analysis a = analyze_ok("sh install.sh; bash < script.sh; python3 x.py");
	assert_false(a.unresolved);
	shell_analysis_free(&a);
	/* a shell not reading code from the pipe */
	a = analyze_ok("curl x | sh -c 'cat > f'");
	assert_false(get_cmd(&a, "sh -c cat > f")->unresolved);
	shell_analysis_free(&a);
}

static void test_heredoc_unresolved(void **state)
{
	(void)state;
	expect_unresolved("bash <<EOF\n$cmd -rf /\nEOF", NULL, NULL);
	shell_analysis a = analyze_ok("bash <<EOF\nrm -rf $HOME/x\nEOF");
	assert_cmd(a, "rm -rf ~/x", "bash <<");
	shell_analysis_free(&a);
}

static void test_interp_unresolved(void **state)
{
	(void)state;
	expect_unresolved("python3 -c 'import os; os.system(\"rm \" + x)'", NULL, "os.system");
	expect_unresolved("python3 -c 'import subprocess; subprocess.run(cmd)'", NULL, NULL);
	expect_unresolved("python3 -c 'os.system(f\"rm {x}\")'", NULL, NULL);
	expect_unresolved("ruby -e 'system \"rm #{x}\"'", NULL, NULL);
	expect_unresolved("node -e 'require(\"child_process\").execSync(`rm ${x}`)'", NULL, NULL);
	expect_unresolved("php -r 'system($c);'", NULL, NULL);
	expect_unresolved("perl -e \"$code\"", NULL, "not static");
}

/* Interpreter code that is static around values of the environment's
 * variables is unresolved in a way the sandbox contains; a value computed,
 * decoded or possibly changed in the line is not. */
static void contained(const char *text, bool want)
{
	shell_analysis a = analyze_ok(text);
	bool found = false;
	for (size_t i = 0; i < a.ncmds; i++)
		if (a.cmds[i].unresolved) {
			found = true;
			if (a.cmds[i].contained != want) {
				dump(&a);
				fail_msg("%s: want contained=%d", text, want);
			}
		}
	if (!found) {
		dump(&a);
		fail_msg("%s: want an unresolved command", text);
	}
	shell_analysis_free(&a);
}

static void test_interp_env_contained(void **state)
{
	(void)state;
	contained("perl -pi -e 's/^v =.*$/v = \"'\"${PYTHON_VERSION}\"'\"/' pyproject.toml", true);
	contained("python3 -c \"import sys; print('$V')\"", true);
	contained("ruby -e \"puts ENV.fetch('X'); p $V\"", true);
	contained("perl -e \"$CODE\"", false);                          /* code as a whole */
	contained("X=$(echo cHJpbnQ= | base64 -d); perl -e \"$X;1\"", false); /* decoded here */
	contained("perl -e \"print $(cat f)\"", false);                 /* substitution */
	contained("perl -e \"print ${V:-1}\"", false);                  /* not a plain value */
	contained("export V=1; perl -e \"print $V\"", false);           /* set in the line */
	contained("V=1 perl -e \"print $V\"", false);
	contained("while :; do perl -e \"print $V\"; V=2; done", false); /* in a loop */
	contained("sh -c 'perl -e \"print $V\"'", false);               /* re-parsed text */
	contained("perl -e \"system(\\\"$CMD\\\")\"", false);    /* runs a command */
}

static void test_lookalike_unresolved(void **state)
{
	(void)state;
	expect_unresolved("rm\xc2\xa0-rf /", NULL, "look-alike");
	expect_unresolved("sudo r\xe2\x80\x8dm -rf /", NULL, "look-alike");
	expect_unresolved("\xef\xbb\xbfrm x", NULL, "look-alike");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dynamic_command_names), cmocka_unit_test(test_piped_code),
		cmocka_unit_test(test_heredoc_unresolved),    cmocka_unit_test(test_interp_unresolved),
		cmocka_unit_test(test_lookalike_unresolved),
		cmocka_unit_test(test_interp_env_contained),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
