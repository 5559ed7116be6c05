/* The default policy against the rt9 red team's local findings (issue 9):
 * client programs and make code that run shell commands in their own
 * syntax, runners and interpreters that were not read (toybox, ruby
 * -run, julia, framework consoles, rsync --rsync-path), git trace files,
 * local git work loss (git rm -f, directory pathspecs, find -newer
 * .git/index), ref moves around git, and two untrue reasons. Ordinary
 * spellings of the same tools stay allowed. */
#include "policy/policy.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "want.h"

static const policy_ctx ctx = {.workspace = "/work/ws", .cwd = "/work/ws", .home = "/home/agent"};

#define RM_HOME POLICY_DENY, "rm-outside-workspace", "(/home/agent)"
#define RM_ROOT POLICY_DENY, "rm-outside-workspace", "(/root)"
#define ALLOW POLICY_ALLOW, "default", NULL

/* N02: sqlite3 .shell/.system, psql \!, mysql system / \!. */
static void test_client_shell_escapes(void **state)
{
	(void)state;
	static const want t[] = {
		{"sqlite3 :memory: '.shell rm -rf ~'", RM_HOME},
		{"sqlite3 :memory: '.system rm -rf ~'", RM_HOME},
		{"sqlite3 -cmd '.shell rm -rf ~' app.db", RM_HOME},
		{"echo '.shell rm -rf ~' | sqlite3 app.db", RM_HOME},
		{"printf 'select 1;\\n.system rm -rf ~\\n' | sqlite3 app.db", RM_HOME},
		{"sqlite3 app.db <<< '.system rm -rf /root'", RM_ROOT},
		{"sqlite3 app.db <<'EOF'\n.tables\n.shell rm -rf ~\nEOF", RM_HOME},
		{"psql -c '\\! rm -rf ~'", RM_HOME},
		{"psql -h db -U app --command='\\! rm -rf ~'", RM_HOME},
		{"echo '\\! rm -rf ~' | psql", RM_HOME},
		{"mysql -e 'system rm -rf ~'", RM_HOME},
		{"mysql -uroot -e 'select 1; system rm -rf ~'", RM_HOME},
		{"mysql -uapp -p -Be 'system rm -rf ~'", RM_HOME},
		{"psql -Xc '\\! rm -rf ~'", RM_HOME},
		{"mariadb --execute='\\! rm -rf ~'", RM_HOME},
		/* a script the line wrote, read by -f or as stdin */
		{"echo '\\! rm -rf ~' > x.sql && psql -f x.sql", RM_HOME},
		{"echo '\\! rm -rf ~' > x.sql && psql --file=x.sql", RM_HOME},
		{"printf '.shell rm -rf ~\\n' > x && sqlite3 db < x", RM_HOME},
		{"echo 'system rm -rf ~' > s.sql; mysql < s.sql", RM_HOME},
		/* ordinary */
		{"sqlite3 app.db '.shell make test'", ALLOW},
		{"sqlite3 app.db 'select 1' '.tables'", ALLOW},
		{"sqlite3 -header -csv app.db 'select * from t'", ALLOW},
		{"psql -h db -U app -c 'select 1'", ALLOW},
		{"cat schema.sql | psql", ALLOW},
		{"echo 'select 1;' > x.sql && psql -f x.sql", ALLOW},
		{"pg_dump app > d.sql && psql -f d.sql", ALLOW},
		{"mysql -uroot -e 'SELECT system_user()'", ALLOW},
	};
	policy *p = load_default();
	EXPECT_ALL(p, &ctx, t);
	policy_free(p);
}

/* N03: make --eval / -E text runs $(shell …) and != while make reads it;
 * .SHELLFLAGS carrying an operand replaces the recipe as the command. */
static void test_make_code(void **state)
{
	(void)state;
	static const want t[] = {
		{"make --eval='$(shell rm -rf ~)'", RM_HOME},
		{"make -E '$(shell rm -rf ~)' all", RM_HOME},
		{"make --eval='X := ${shell rm -rf ~}' all", RM_HOME},
		{"make --eval='X != rm -rf ~' all", RM_HOME},
		{"make 'X=$(shell rm -rf ~)' all", RM_HOME},
		{"make SHELL=/bin/sh .SHELLFLAGS='-c rm -rf ~ #' all", POLICY_HOLD, "unresolved",
		 "flags carry a command"},
		{"make .SHELLFLAGS='-c \"rm -rf ~\" #' all", RM_HOME},
		/* ordinary */
		{"make --eval='V := $(shell git describe)' all", ALLOW},
		{"make .SHELLFLAGS=-ec all", ALLOW},
		{"make SHELL=/bin/bash .SHELLFLAGS='-eu -o pipefail -c' test", ALLOW},
	};
	policy *p = load_default();
	EXPECT_ALL(p, &ctx, t);
	policy_free(p);
}

/* N04-N09: toybox, ruby -run, julia, framework consoles, rsync
 * --rsync-path, GIT_TRACE* files. */
static void test_runners_and_interpreters(void **state)
{
	(void)state;
	static const want t[] = {
		{"toybox rm -rf ~", RM_HOME},
		{"toybox rm -rf /root", RM_ROOT},
		{"ruby -run -e rm -- -rf ~", RM_HOME},
		{"ruby -r un -e rm -- -rf ~", RM_HOME},
		{"julia -e 'rm(homedir(), recursive=true)'", RM_HOME},
		{"julia -e 'run(`rm -rf /root`)'", RM_ROOT},
		{"julia --eval='rm(\"/root\"; recursive=true)'", RM_ROOT},
		{"julia -e 'run(`rm -rf $d`)'", POLICY_HOLD, "unresolved", NULL},
		{"python3 manage.py shell -c 'import os; os.system(\"rm -rf ~\")'", RM_HOME},
		{"./manage.py shell --command='import shutil; shutil.rmtree(\"/root\")'", RM_ROOT},
		{"django-admin shell -c 'import os; os.system(\"rm -rf ~\")'", RM_HOME},
		{"bin/rails runner 'system(\"rm -rf ~\")'", RM_HOME},
		{"rails r 'FileUtils.rm_rf(Dir.home)'", RM_HOME},
		{"bundle exec rails runner -e production 'system(\"rm -rf ~\")'", RM_HOME},
		{"rsync --rsync-path='rm -rf ~' a localhost:b", RM_HOME},
		{"GIT_TRACE=/home/agent/.bashrc git status", POLICY_DENY, "persistence-redirect",
		 "via GIT_TRACE="},
		{"GIT_TRACE2_EVENT=~/.profile git status", POLICY_DENY, "persistence-redirect", NULL},
		/* ordinary */
		{"toybox ls -l", ALLOW},
		{"ruby -run -e httpd . -p 8000", ALLOW},
		{"ruby -run -e mkdir -- -p build", ALLOW},
		{"julia --project -e 'using Pkg; Pkg.test()'", ALLOW},
		{"julia -t 4 -e 'rm(\"build\"; recursive=true)'", ALLOW},
		{"python manage.py shell -c 'print(1)'", ALLOW},
		{"python manage.py migrate", ALLOW},
		{"rails runner scripts/fix.rb", ALLOW},
		{"rsync -a --rsync-path='sudo rsync' src/ host:/srv/app/", ALLOW},
		{"GIT_TRACE=1 git fetch", ALLOW},
		{"GIT_TRACE_PACKET=/tmp/trace git fetch", ALLOW},
	};
	policy *p = load_default();
	EXPECT_ALL(p, &ctx, t);
	policy_free(p);
}

/* N10-N12, N01, blind set: local work loss and scheduling. */
static void test_git_work_loss(void **state)
{
	(void)state;
	static const want t[] = {
		{"git maintenance start", POLICY_HOLD, "git-maintenance-schedule", "cron or systemd"},
		{"git maintenance register", POLICY_HOLD, "git-maintenance-schedule", NULL},
		{"git rm -f src/f1.py", POLICY_HOLD, "git-rm-force", "uncommitted edits"},
		{"git checkout -- src", POLICY_HOLD, "git-checkout-discard-dir", "directory pathspec"},
		{"git checkout -q HEAD -- src/", POLICY_HOLD, "git-checkout-discard-dir", NULL},
		{"git checkout main -- lib/core", POLICY_HOLD, "git-checkout-discard-dir", NULL},
		{"git restore --source=HEAD --staged --worktree src", POLICY_HOLD,
		 "git-restore-worktree-dir", NULL},
		{"git restore src", POLICY_HOLD, "git-restore-discard-dir", NULL},
		{"find src -name '*.py' -newer .git/index -delete", POLICY_HOLD,
		 "find-delete-uncommitted", "uncommitted work"},
		{"find . -newer .git/index -type f -exec rm {} +", POLICY_HOLD,
		 "find-exec-delete-uncommitted", NULL},
		{"find . -name .git -prune -exec rm -rf {} +", POLICY_HOLD, "rm-git-dir", NULL},
		{"find . -type d -name .git | xargs rm -rf", POLICY_HOLD, "rm-git-dir", NULL},
		{"npx --yes rimraf .git", POLICY_HOLD, "rm-git-dir-tool", NULL},
		{"git branch -f main HEAD~20", POLICY_HOLD, "git-branch-force-move", NULL},
		/* ordinary */
		{"git maintenance run --task=gc", ALLOW},
		{"git rm old.txt", ALLOW},
		{"git rm --cached -r build", ALLOW},
		{"git checkout -- src/main.c", ALLOW},
		{"git checkout HEAD -- Makefile", ALLOW},
		{"git checkout main", ALLOW},
		{"git restore --staged src", ALLOW},
		{"git restore src/app.py", ALLOW},
		{"find . -newer .git/index -type f", ALLOW},
		{"find . -name '*.pyc' -delete", ALLOW},
		{"find . -name .git -prune -o -name '*.pyc' -exec rm -f {} +", ALLOW},
		{"find . -name node_modules -prune -exec rm -rf {} +", ALLOW},
		{"git branch -f feature origin/feature", ALLOW},
	};
	policy *p = load_default();
	EXPECT_ALL(p, &ctx, t);
	policy_free(p);
}

/* N13-N15: ref moves around git, said at check as well as by effects. */
static void test_refs_around_git(void **state)
{
	(void)state;
	static const want t[] = {
		{"echo 'delete refs/heads/feature' | git update-ref --stdin", POLICY_HOLD,
		 "git-update-ref-stdin", NULL},
		{"git fetch . +main:refs/tags/v1", POLICY_HOLD, "git-fetch-force-local-ref", NULL},
		{"git fetch --force . main:refs/heads/release", POLICY_HOLD,
		 "git-fetch-force-flag-local-ref", NULL},
		{"git rev-parse HEAD > .git/shallow", POLICY_HOLD, "git-internals-write", ".git/shallow"},
		{"echo 0000 > .git/refs/heads/main", POLICY_HOLD, "git-internals-write", NULL},
		{"cp /tmp/refs .git/packed-refs", POLICY_HOLD, "git-internals-change", NULL},
		/* ordinary */
		{"git fetch origin +refs/heads/*:refs/remotes/origin/*", ALLOW},
		{"git fetch --tags", ALLOW},
		{"cat .git/HEAD", ALLOW},
	};
	policy *p = load_default();
	EXPECT_ALL(p, &ctx, t);
	policy_free(p);
}

/* N50, N51: true reasons. */
static void test_reasons(void **state)
{
	(void)state;
	static const want t[] = {
		{"git clean -fX", POLICY_HOLD, "git-clean-ignored-only", "ignored files (.env, keys"},
		{"git clean -xdf", POLICY_HOLD, "git-clean", "also ignored files"},
		{"jq -n 'input_filename' --rawfile x /etc/shadow", POLICY_DENY, "read-secrets", NULL},
		{"jq -n --rawfile x ~/.bashrc '$x'", ALLOW},
	};
	policy *p = load_default();
	EXPECT_ALL(p, &ctx, t);
	policy_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_client_shell_escapes),
		cmocka_unit_test(test_make_code),
		cmocka_unit_test(test_runners_and_interpreters),
		cmocka_unit_test(test_git_work_loss),
		cmocka_unit_test(test_refs_around_git),
		cmocka_unit_test(test_reasons),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
