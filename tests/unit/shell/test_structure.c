/* Command structure: lists, pipelines, compound commands, functions,
 * redirections, here-documents, substitutions. */
#include "helpers.h"

static void test_lists_pipelines(void **state)
{
	(void)state;
	shell_analysis a = analyze_ok("a 1; b 2 & c && d || e\nf | g |& h; ! i");
	const char *want[] = {"a 1", "b 2", "c", "d", "e", "f", "g", "h", "i"};
	assert_int_equal(a.ncmds, 9);
	for (size_t i = 0; i < 9; i++)
		assert_string_equal(joined(&a.cmds[i]), want[i]);
	for (size_t i = 0; i < a.ncmds; i++) {
		assert_null(a.cmds[i].via);
		assert_int_equal(a.cmds[i].depth, 0);
	}
	assert_false(a.unresolved);
	shell_analysis_free(&a);

	a = analyze_ok("a &&\n\n b ||\n c |\n d");
	assert_int_equal(a.ncmds, 4);
	shell_analysis_free(&a);

	a = analyze_ok("time -p ls; time ! ls");
	assert_int_equal(a.ncmds, 2);
	assert_string_equal(joined(&a.cmds[0]), "ls");
	shell_analysis_free(&a);
}

static void test_compound(void **state)
{
	(void)state;
	shell_analysis a = analyze_ok(
		"if a; then b; elif c; then d; else e; fi\n"
		"while f; do g; done; until h; do i; done\n"
		"for x in 1 2 $(j); do k; done; for y; do l; done; for ((n=0; n<$(m); n++)); do o; done\n"
		"select s in a b; do p; done\n"
		"case $v in a|b) q;; (c) r;& *) s ;;& esac\n"
		"( t; u ) ; { v; w; }\n"
		"fn() { x; }; function fm { y; }; function fp() ( z )\n"
		"[[ -f $(aa) && x < y ]]; (( bb = $(cc) ))\n"
		"for q in a; { dd; }\n");
	const char *want[] = {"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m",
			      "o", "p", "q", "r", "s", "t", "u", "v", "w", "x", "y", "z", "aa",
			      "cc", "dd"};
	for (size_t i = 0; i < ARRAY_SIZE(want); i++)
		assert_cmd(a, want[i], "*");
	assert_cmd(a, "j", "$(…)");
	assert_cmd(a, "m", "$(…)");
	assert_cmd(a, "aa", "$(…)");
	assert_cmd(a, "cc", "$(…)");
	assert_no_cmd(a, "bb");
	shell_analysis_free(&a);

	/* nested subshells written "((" */
	a = analyze_ok("((echo a) ; echo b)");
	assert_cmd(a, "echo a", NULL);
	assert_cmd(a, "echo b", NULL);
	shell_analysis_free(&a);

	a = analyze_ok("case x in\n  a)\n    rm -rf /\n    ;;\nesac");
	assert_cmd(a, "rm -rf /", NULL);
	shell_analysis_free(&a);

	a = analyze_ok("coproc cat; echo }{ {x}");
	assert_cmd(a, "cat", NULL);
	assert_cmd(a, "echo }{ {x}", NULL);
	shell_analysis_free(&a);
}

static void test_redirections(void **state)
{
	(void)state;
	shell_analysis a = analyze_ok("cmd <in >out 2>>log &>all &>>all2 >|clob <>rw 2>&1 >&- 3<&0 >&file {fd}>v");
	const shell_cmd *c = &a.cmds[0];
	assert_int_equal(c->argc, 1);
	struct {
		shell_redir_kind k;
		const char *t;
	} want[] = {{SHELL_REDIR_READ, "in"},     {SHELL_REDIR_WRITE, "out"},
		    {SHELL_REDIR_APPEND, "log"},  {SHELL_REDIR_WRITE, "all"},
		    {SHELL_REDIR_APPEND, "all2"}, {SHELL_REDIR_WRITE, "clob"},
		    /* <> opens read-write and creates the file: a write */
		    {SHELL_REDIR_WRITE, "rw"},    {SHELL_REDIR_WRITE, "file"},
		    {SHELL_REDIR_WRITE, "v"}};
	assert_int_equal(c->nredirs, ARRAY_SIZE(want));
	for (size_t i = 0; i < ARRAY_SIZE(want); i++) {
		assert_int_equal(c->redirs[i].kind, want[i].k);
		assert_string_equal(c->redirs[i].target, want[i].t);
	}
	shell_analysis_free(&a);

	/* redirection only, and on compound commands */
	a = analyze_ok("> /etc/passwd; { echo; } > f2; X=1 >> f3");
	assert_int_equal(a.ncmds, 4);
	assert_int_equal(a.cmds[0].argc, 0);
	assert_non_null(a.cmds[0].argv);
	assert_null(a.cmds[0].argv[0]);
	assert_string_equal(a.cmds[0].redirs[0].target, "/etc/passwd");
	assert_string_equal(a.cmds[2].redirs[0].target, "f2");
	assert_int_equal(a.cmds[3].redirs[0].kind, SHELL_REDIR_APPEND);
	shell_analysis_free(&a);

	/* unresolved target */
	a = analyze_ok("echo > $f");
	assert_true(a.cmds[0].redirs[0].unresolved);
	assert_null(a.cmds[0].redirs[0].target);
	assert_true(a.unresolved);
	shell_analysis_free(&a);

	/* a process substitution target is a pipe, not a file */
	a = analyze_ok("tee >(cat) > >(sh) 2> >(logger)");
	assert_int_equal(get_cmd_via(&a, "tee >(cat)", NULL)->nredirs, 0);
	shell_analysis_free(&a);

	/* ~ and $HOME targets */
	a = analyze_ok("echo > ~/.bashrc; echo >> $HOME/.profile");
	assert_string_equal(a.cmds[0].redirs[0].target, "~/.bashrc");
	assert_string_equal(a.cmds[1].redirs[0].target, "~/.profile");
	assert_false(a.unresolved);
	shell_analysis_free(&a);
}

static void test_heredocs(void **state)
{
	(void)state;
	/* bodies are not commands when fed to cat */
	shell_analysis a = analyze_ok("cat <<EOF\nrm -rf /\nEOF\necho after");
	assert_no_cmd(a, "rm -rf /");
	assert_cmd(a, "echo after", NULL);
	shell_analysis_free(&a);

	/* but substitutions in an unquoted body run */
	a = analyze_ok("cat <<EOF\n$(rm -rf /) `id`\nEOF\n");
	assert_cmd(a, "rm -rf /", "$(…)");
	assert_cmd(a, "id", "`…`");
	shell_analysis_free(&a);
	a = analyze_ok("cat <<'EOF'\n$(rm -rf /)\nEOF\n");
	assert_no_cmd(a, "rm -rf /");
	shell_analysis_free(&a);

	/* <<- strips tabs, delimiter quoted in parts */
	a = analyze_ok("bash <<-\"E\"OF\n\trm -rf /tmp/a\n\tEOF\nls");
	assert_cmd(a, "rm -rf /tmp/a", "bash <<");
	assert_cmd(a, "ls", NULL);
	shell_analysis_free(&a);

	/* two here-documents on one line, and a pipeline */
	a = analyze_ok("cat <<A; sh <<B | tee x\na-body\nA\nrm b\nB\necho end");
	assert_cmd(a, "rm b", "sh <<");
	assert_no_cmd(a, "a-body");
	assert_cmd(a, "echo end", NULL);
	shell_analysis_free(&a);

	/* here-document inside $( ) */
	a = analyze_ok("x=$(sh <<EOF\nrm -rf /\nEOF\n)\necho $x");
	assert_cmd(a, "rm -rf /", "sh <<");
	shell_analysis_free(&a);

	/* delimited by end of input (bash accepts it) */
	a = analyze_ok("bash <<EOF\nrm -rf ~");
	assert_cmd(a, "rm -rf ~", "bash <<");
	shell_analysis_free(&a);

	/* here-strings */
	a = analyze_ok("bash <<< 'rm -rf ~'; cat <<< \"$(id)\"; python3 <<< 'import os; os.system(\"ls /\")'");
	assert_cmd(a, "rm -rf ~", "bash <<<");
	assert_cmd(a, "id", "$(…)");
	assert_cmd(a, "ls /", "python3 <<<");
	shell_analysis_free(&a);
}

static void test_substitutions(void **state)
{
	(void)state;
	shell_analysis a = analyze_ok("echo $(a $(b `c`)) \"$(d)\" <(e) >(f) $(( $(g) + 1 ))");
	assert_cmd(a, "a $(b `c`)", "$(…)");
	assert_cmd(a, "b `c`", "$(…)");
	assert_cmd(a, "c", "`…`");
	assert_cmd(a, "d", "$(…)");
	assert_cmd(a, "e", "<(…)");
	assert_cmd(a, "f", ">(…)");
	assert_cmd(a, "g", "$(…)");
	const shell_cmd *c = get_cmd(&a, "c");
	assert_int_equal(c->depth, 3);
	shell_analysis_free(&a);

	/* case and parens inside $( ) */
	a = analyze_ok("echo $(case x in a) rm z;; esac) $( (ls) )");
	assert_cmd(a, "rm z", "$(…)");
	assert_cmd(a, "ls", "$(…)");
	shell_analysis_free(&a);

	/* backquotes with escaped backquotes nest */
	a = analyze_ok("echo `echo \\`id\\``");
	assert_cmd(a, "id", "`…`");
	shell_analysis_free(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lists_pipelines), cmocka_unit_test(test_compound),
		cmocka_unit_test(test_redirections),    cmocka_unit_test(test_heredocs),
		cmocka_unit_test(test_substitutions),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
