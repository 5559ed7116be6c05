/* Variables assigned earlier in the same text (vars.c). */
#include "helpers.h"

static void resolved(const char *text, const char *cmd)
{
	shell_analysis a = analyze_ok(text);
	const shell_cmd *c = find_cmd(&a, cmd);
	if (!c || c->unresolved) {
		dump(&a);
		fail_msg("%s: want resolved '%s'", text, cmd);
	}
	shell_analysis_free(&a);
}

static void unresolved_name(const char *text)
{
	shell_analysis a = analyze_ok(text);
	bool found = false;
	for (size_t i = 0; i < a.ncmds; i++)
		if (a.cmds[i].unresolved && strstr(a.cmds[i].unresolved_reason, "not static"))
			found = true;
	if (!found) {
		dump(&a);
		fail_msg("%s: want an unresolved command name", text);
	}
	shell_analysis_free(&a);
}

static void test_tracked(void **state)
{
	(void)state;
	resolved("X=rm; $X -rf /", "rm -rf /");
	resolved("X=rm\n${X} -rf /", "rm -rf /");
	resolved("X=rm; Y=$X; \"$Y\" -rf /", "rm -rf /");
	resolved("X=ls; X=rm; $X x", "rm x");
	resolved("X=rm; echo ok && $X y", "rm y");
	resolved("X=rm; cat f | $X z", "rm z");
	resolved("X=; $X rm w", "rm w");
	resolved("X='a b'; echo \"$X\"", "echo a b");
	resolved("X=rm; bash -c \"$X -rf /\"", "rm -rf /");
}

static void test_not_tracked(void **state)
{
	(void)state;
	unresolved_name("$X -rf /");                              /* environment */
	unresolved_name("X=ls; while true; do $X; X=rm; done");  /* loop */
	unresolved_name("X=ls; f() { X=rm; }; f; $X");          /* function */
	unresolved_name("X=ls; { X=rm; }; $X");
	unresolved_name("X=rm | cat; $X");                       /* subshell */
	unresolved_name("false && X=rm; $X");                    /* conditional */
	unresolved_name("X=rm & $X");                            /* background */
	unresolved_name("X=$(id); $X");                          /* not static */
	unresolved_name("X=ls; read X; $X");
	unresolved_name("X=ls; eval X=rm; $X");
	unresolved_name("X=ls; . ./f; $X");
	unresolved_name("X=ls; declare X=rm; $X");
	unresolved_name("X=ls; (( X = 1 )); $X");
	unresolved_name("X=ls; : ${X:=rm}; $X");
	unresolved_name("X=ls; for X in rm; do :; done; $X");
	unresolved_name("X=ls X=rm true; $X");                   /* prefix assignment */
	unresolved_name("X=\"rm -rf\"; $X /");                   /* would be split */
	unresolved_name("IFS=r; X=arm; $X");
	unresolved_name("X=ls; $Y; $X");                         /* unknown command */
	unresolved_name("X=rm; x=$( $X -rf / )");                /* inside $( ) */
	unresolved_name("X=rm; if true; then $X -rf /; fi");     /* inside compound */
}

static void test_alias(void **state)
{
	(void)state;
	shell_analysis a = analyze_ok("shopt -s expand_aliases; alias ls='rm -rf /'");
	assert_cmd(a, "rm -rf /", "alias");
	shell_analysis_free(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tracked),
		cmocka_unit_test(test_not_tracked),
		cmocka_unit_test(test_alias),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
