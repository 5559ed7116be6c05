/* What the shell layer reports for the rt9 local findings: commands run by
 * database clients, make code, runners and interpreters that were not
 * read before (the policy tests judge them; these check what is found and
 * how it was reached). */
#include "helpers.h"

static void check(const char *text, const char *cmd, const char *via)
{
	shell_analysis a = analyze_ok(text);
	assert_cmd(a, cmd, via);
	shell_analysis_free(&a);
}

static void test_database_clients(void **state)
{
	(void)state;
	check("sqlite3 app.db '.shell ls -la'", "ls -la", "sqlite3");
	check("sqlite3 -cmd '.system make test' app.db", "make test", "sqlite3 -cmd");
	check("echo '.system make test' | sqlite3 db", "make test", "sqlite3 stdin");
	check("printf 'select 1;\\n.shell make\\n' | sqlite3 db", "make", "sqlite3 stdin");
	check("sqlite3 db <<< '.shell make'", "make", "sqlite3 stdin");
	check("psql -c '\\! ls'", "ls", "psql -c");
	check("psql --command='\\! ls -l'", "ls -l", "psql -c");
	check("mysql -e 'select 1; system ls -l'", "ls -l", "mysql -e");
	check("mariadb -e '\\! make'", "make", "mariadb -e");
	check("echo '\\! make' > x.sql; psql -f x.sql", "make", "psql, a file written earlier");

	/* SQL and meta-commands that run nothing */
	static const char *const quiet[] = {"sqlite3 app.db 'select 1' '.tables'",
					    "sqlite3 -header app.db '.schema'",
					    "psql -c 'select 1'",
					    "mysql -e 'SELECT system_user()'",
					    "cat dump.sql | psql"};
	for (size_t i = 0; i < ARRAY_SIZE(quiet); i++) {
		shell_analysis a = analyze_ok(quiet[i]);
		if (a.ncmds != (strchr(quiet[i], '|') ? 2u : 1u) || a.unresolved) {
			dump(&a);
			fail_msg("%s: want only its own commands", quiet[i]);
		}
		shell_analysis_free(&a);
	}
}

static void test_make_code(void **state)
{
	(void)state;
	check("make --eval='$(shell touch x)'", "touch x", "make --eval");
	check("make -E 'V := ${shell date}' all", "date", "make --eval");
	check("make --eval='V != git describe'", "git describe", "make --eval");
	check("make 'X=$(shell touch x)' all", "touch x", "$(…)");

	shell_analysis a = analyze_ok("make .SHELLFLAGS='-c ls #' all");
	assert_true(a.unresolved);
	shell_analysis_free(&a);
	a = analyze_ok("make SHELL=/bin/bash .SHELLFLAGS='-eu -o pipefail -c' all");
	assert_false(a.unresolved);
	shell_analysis_free(&a);
}

static void test_runners_and_interpreters(void **state)
{
	(void)state;
	check("toybox rm -rf x", "rm -rf x", "toybox");
	check("rsync --rsync-path='sudo rsync' a h:b", "sudo rsync", "rsync --rsync-path");
	check("ruby -run -e cp -- -r a b", "cp -r a b", "ruby -run");
	check("ruby -r un -e rm -- -f x", "rm -f x", "ruby -run");
	check("julia -e 'run(`make test`)'", "make test", "julia -e");
	check("julia -e 'rm(\"build\"; recursive=true)'", "rm -rf build", "julia -e");
	check("rails runner 'system(\"ls\")'", "ls", "rails runner");
	check("python3 manage.py shell -c 'import os; os.system(\"ls\")'", "ls",
	      "python3 manage.py shell");
	check("GIT_TRACE=/tmp/trace git status", "git", "GIT_TRACE=");

	shell_analysis a = analyze_ok("ruby -run -e httpd . -p 8000");
	assert_int_equal(a.ncmds, 1);
	shell_analysis_free(&a);
	a = analyze_ok("GIT_TRACE=1 git status");
	assert_int_equal(a.ncmds, 1);
	shell_analysis_free(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_database_clients),
		cmocka_unit_test(test_make_code),
		cmocka_unit_test(test_runners_and_interpreters),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
