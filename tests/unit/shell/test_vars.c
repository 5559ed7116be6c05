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

/* for/select NAME in WORDS: the body is judged once per static word, with
 * the variable bound; anything else leaves it unknown. */
static void test_loop_binding(void **state)
{
	(void)state;
	resolved("for X in rm; do $X -rf /; done", "rm -rf /");
	resolved("for d in /dev/sda /dev/sdb; do dd if=/dev/zero of=$d; done", "dd if=/dev/zero of=/dev/sda");
	resolved("for d in /dev/sda /dev/sdb; do dd if=/dev/zero of=$d; done", "dd if=/dev/zero of=/dev/sdb");
	resolved("for d in /dev/sd{a,b}\ndo\n dd of=\"${d}\"\ndone", "dd of=/dev/sdb");
	resolved("select d in /etc /usr; do rm -rf \"$d\"; break; done", "rm -rf /usr");
	resolved("select d in x; do rm -rf \"/$d\"; done", "rm -rf /"); /* a reply not listed: "" */
	resolved("for d in /etc; do for f in passwd; do rm \"$d/$f\"; done; done", "rm /etc/passwd");
	resolved("for d in a; do echo $(rm -rf $d); done", "rm -rf a");
	resolved("for d in x; do bash -c \"rm -rf $d\"; done", "rm -rf x");
	unresolved_name("for X in $L; do $X; done");             /* list not static */
	/* a pathname pattern is bound as itself, a pattern (quoted or not) */
	resolved("for f in tests/*.sh; do bash \"$f\" || exit 1; done", "bash tests/*.sh");
	resolved("for f in tests/*.sh; do bash $f; done", "bash tests/*.sh");
	resolved("for f in a b/*.sh; do sh \"$f\"; done", "sh b/*.sh");
	shell_analysis a = analyze_ok("for X in *; do $X; done");
	assert_true(a.ncmds == 1 && a.cmds[0].unresolved);
	assert_non_null(strstr(a.cmds[0].unresolved_reason, "pathname pattern"));
	shell_analysis_free(&a);
	a = analyze_ok("for f in *.sh; do bash \"$f\"; done");
	assert_false(a.unresolved);
	shell_analysis_free(&a);
	unresolved_name("for X; do $X; done");                   /* "$@" */
	unresolved_name("for X in rm; do X=ls; $X; done");       /* assigned in the body */
	unresolved_name("for X in rm; do read X; $X; done");
	unresolved_name("for X in rm; do for X in $Y; do $X; done; done"); /* inner hides it */
	unresolved_name("f() { X=ls; }; for X in rm; do f; $X; done");  /* a function may assign */
	unresolved_name("function f { X=ls; }; for X in rm; do f; $X; done");
	unresolved_name("alias f='X=ls'; for X in rm; do f; $X; done");
	unresolved_name(". ./lib.sh; for X in rm; do f; $X; done");     /* may define f */
	unresolved_name("eval \"$DEF\"; for X in rm; do f; $X; done");
	/* while read NAME from a static here-string: one value per line */
	resolved("while read X; do $X -rf /; done <<< rm", "rm -rf /");
	resolved("while read -r d; do dd of=$d; done <<< $'/dev/sda\\n/dev/sdb'", "dd of=/dev/sdb");
	resolved("while read d; do echo \"$d\"; done <<< \"$(rm -rf /x)\"", "rm -rf /x");
	unresolved_name("while read X; do $X; done <<< \"$L\"");          /* not static */
	unresolved_name("while read X; do $X; done < list");              /* a file */
	unresolved_name("while read X; do X=ls; $X; done <<< rm");        /* assigned in the body */
	unresolved_name("while read X; do $X; done <<< ' rm'");           /* IFS may keep blanks */
	unresolved_name("while read X; do $X; done <<< 'r\\m'");          /* backslash without -r */
	unresolved_name("while read X Y; do $X; done <<< rm");            /* more than one name */
	/* ... or from a static here-document ending its line */
	resolved("while read X; do $X -rf /; done <<EOF\nrm\nEOF", "rm -rf /");
	resolved("while read -r d; do dd of=$d; done <<'E'\n/dev/sda\n/dev/sdb\nE\n", "dd of=/dev/sdb");
	resolved("while read -r d; do dd of=$d; done <<-E\n\t/dev/sda\n\tE", "dd of=/dev/sda");
	resolved("while read X; do $X -rf /; done <<EOF\nrm\nEOF\necho after", "rm -rf /");
	unresolved_name("while read X; do $X; done <<EOF\n$(echo rm)\nEOF");  /* not static */
	unresolved_name("while read X; do $X; done <<EOF\n$L\nEOF");
	unresolved_name("while read X; do $X; done <<EOF; echo\nrm\nEOF");   /* line goes on */
	unresolved_name("while read X; do $X; done <<EOF\n rm\nEOF");        /* IFS may keep blanks */
	unresolved_name("while read X; do $X; done 3<<EOF\nrm\nEOF");        /* not stdin */
	unresolved_name("for X in rm; do :; done; $X");          /* not after the loop */
	unresolved_name("for X in 'rm -rf'; do $X /; done");     /* would be split */
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
		cmocka_unit_test(test_loop_binding),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
