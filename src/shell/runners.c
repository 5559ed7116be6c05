/* Runners: programs that run a command given as their arguments (or in
 * an option of their own): privilege, scheduling and environment
 * wrappers (nice, timeout, taskset, flock, setpriv, …), terminal
 * multiplexers, container exec, parallel, PowerShell, and the runner
 * table (uv run, bundle exec, nix develop -c, fd -x, the dynamic loader,
 * …) read by one walker. Each reports what the runner runs as a further
 * command through uw_inner() / shell text; unwrap.c is the walker that
 * calls them (uw_runner).
 */
#include "shell/unwrap.h"

#include "util/cleanup.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int after_opts(struct uw *u, const char *sarg, const char *const *larg)
{
	bool unk = false;
	size_t i = uw_skip_opts(u, 1, sarg, larg, &unk);
	if (unk) {
		uw_markf(u, "%s: cannot tell which command runs", u->name);
		return 0;
	}
	return uw_inner(u, i, u->name);
}

static int do_nice(struct uw *u)
{
	size_t i = 1;
	while (i < u->n && !u->v[i].unres) {
		const char *a = u->v[i].text;
		if (strcmp(a, "--") == 0) {
			i++;
			break;
		}
		if (strcmp(a, "-n") == 0 || strcmp(a, "--adjustment") == 0) {
			i += 2;
			continue;
		}
		if (a[0] == '-' && a[1] != '\0') {
			i++;
			continue;
		}
		break;
	}
	return uw_inner(u, i, "nice");
}

static int do_timeout(struct uw *u)
{
	static const char *const larg[] = {"signal", "kill-after", NULL};
	bool unk = false;
	size_t i = uw_skip_opts(u, 1, "sk", larg, &unk);
	if (unk) {
		uw_mark(u, "timeout: cannot tell which command runs");
		return 0;
	}
	return uw_inner(u, i + 1, "timeout"); /* skip DURATION */
}

static int do_ionice(struct uw *u)
{
	static const char *const larg[] = {"class", "classdata", "pid", "pgid", "uid", NULL};
	bool unk = false;
	size_t i = uw_skip_opts(u, 1, "cnpPu", larg, &unk);
	if (unk) {
		uw_mark(u, "ionice: cannot tell which command runs");
		return 0;
	}
	if (uw_has_opt(u, 1, i, 'p', "pid") || uw_has_opt(u, 1, i, 'P', "pgid") ||
	    uw_has_opt(u, 1, i, 'u', "uid"))
		return 0;
	return uw_inner(u, i, "ionice");
}

static int do_flock(struct uw *u)
{
	static const char *const larg[] = {"timeout", "wait", "conflict-exit-code", "command", NULL};
	bool unk = false;
	size_t i = uw_skip_opts(u, 1, "wEc", larg, &unk);
	if (unk) {
		uw_mark(u, "flock: cannot tell which command runs");
		return 0;
	}
	/* -c before the file */
	for (size_t k = 1; k + 1 < i; k++)
		if (fis(&u->v[k], "-c") || fis(&u->v[k], "--command"))
			return uw_shell_text(u, &u->v[k + 1], "flock -c");
	for (size_t k = 1; k < i; k++)
		if (!u->v[k].unres && starts_with(u->v[k].text, "--command=")) {
			struct sh_field f = u->v[k];
			f.text = u->v[k].text + 10;
			return uw_shell_text(u, &f, "flock -c");
		}
	i++; /* lock file or fd */
	if (i < u->n && (fis(&u->v[i], "-c") || fis(&u->v[i], "--command"))) {
		if (i + 1 < u->n)
			return uw_shell_text(u, &u->v[i + 1], "flock -c");
		return 0;
	}
	return uw_inner(u, i, "flock");
}

static int do_chroot(struct uw *u)
{
	static const char *const larg[] = {"userspec", "groups", NULL};
	bool unk = false;
	size_t i = uw_skip_opts(u, 1, NULL, larg, &unk);
	if (unk) {
		uw_mark(u, "chroot: cannot tell which command runs");
		return 0;
	}
	return uw_inner(u, i + 1, "chroot");
}

static int do_busybox(struct uw *u)
{
	if (u->n < 2 || (!u->v[1].unres && u->v[1].text[0] == '-'))
		return 0;
	return uw_inner(u, 1, u->name); /* busybox / toybox APPLET ARGS */
}

static int do_time(struct uw *u)
{
	static const char *const larg[] = {"format", "output", NULL};
	return after_opts(u, "fo", larg);
}

static int do_stdbuf(struct uw *u)
{
	static const char *const larg[] = {"input", "output", "error", NULL};
	return after_opts(u, "ioe", larg);
}

static int do_exec(struct uw *u)
{
	return after_opts(u, "a", NULL);
}

static int do_plain(struct uw *u)
{
	return after_opts(u, NULL, NULL);
}

static int do_strace(struct uw *u)
{
	bool unk = false;
	size_t i = uw_skip_opts(u, 1, "eoOpPsSuEabIX", NULL, &unk);
	if (unk) {
		uw_markf(u, "%s: cannot tell which command runs", u->name);
		return 0;
	}
	if (uw_has_opt(u, 1, i, 'p', NULL))
		return 0;
	return uw_inner(u, i, u->name);
}

static int do_taskset(struct uw *u)
{
	bool unk = false;
	size_t i = uw_skip_opts(u, 1, NULL, NULL, &unk);
	if (unk || uw_has_opt(u, 1, i, 'p', "pid"))
		return 0;
	return uw_inner(u, i + 1, "taskset");
}

static int do_chrt(struct uw *u)
{
	bool unk = false;
	size_t i = uw_skip_opts(u, 1, "T P D", NULL, &unk);
	if (unk || uw_has_opt(u, 1, i, 'p', "pid"))
		return 0;
	return uw_inner(u, i + 1, "chrt");
}

static int do_unshare(struct uw *u)
{
	return after_opts(u, "SGRwl", NULL);
}

static int do_nsenter(struct uw *u)
{
	return after_opts(u, "tSGrw", NULL);
}

static int do_prlimit(struct uw *u)
{
	bool unk = false;
	size_t i = uw_skip_opts(u, 1, "po", NULL, &unk);
	if (unk || uw_has_opt(u, 1, i, 'p', "pid"))
		return 0;
	return uw_inner(u, i, "prlimit");
}

static int do_systemd_run(struct uw *u)
{
	static const char *const larg[] = {"property", "setenv", "unit", "uid", "gid", "machine",
					   "host", "description", "slice", "working-directory",
					   "nice", NULL};
	return after_opts(u, "pEuMHd", larg);
}

static int do_faketime(struct uw *u)
{
	bool unk = false;
	size_t i = uw_skip_opts(u, 1, "p", NULL, &unk);
	if (unk)
		return 0;
	return uw_inner(u, i + 1, "faketime");
}

static int do_proxychains(struct uw *u)
{
	return after_opts(u, "f", NULL);
}

/* Options whose value is shell text the program runs. */
static int do_optcmd(struct uw *u)
{
	static const struct {
		const char *cmd, *s, *l;
	} t[] = {
		{"rsync", "-e", "--rsh"},      {"rsync", NULL, "--rsync-path"},
		{"zip", "-TT", "--unzip-command"},
		{"man", "-P", "--pager"},      {"sort", NULL, "--compress-program"},
		{"xterm", "-e", NULL},         {"uxterm", "-e", NULL},
		{"konsole", "-e", NULL},       {"urxvt", "-e", NULL},
		{"less", NULL, NULL},          {"inotifywait", NULL, NULL},
	};
	int rc = 0;
	for (size_t i = 0; i < ARRAY_SIZE(t); i++) {
		if (strcmp(t[i].cmd, u->name) != 0 || (!t[i].s && !t[i].l))
			continue;
		char via[64];
		snprintf(via, sizeof(via), "%s %s", u->name, t[i].s ? t[i].s : t[i].l);
		for (size_t k = 1; k < u->n && rc == 0;) {
			struct sh_field val;
			size_t next = k + 1;
			if (uw_opt_value(u, k, t[i].s, t[i].l, &val, &next))
				rc = uw_shell_text(u, &val, via);
			k = next;
		}
	}
	return rc;
}

/* entr [-acdnprsxz] UTILITY [ARG…]: with -s the utility is shell text
 * ($SHELL -c UTILITY), else the command and its arguments. */
static int do_entr(struct uw *u)
{
	size_t i = 1;
	bool shell = false;
	for (; i < u->n && !u->v[i].unres && u->v[i].text[0] == '-' && u->v[i].text[1]; i++) {
		if (fis(&u->v[i], "--")) {
			i++;
			break;
		}
		shell |= strchr(u->v[i].text, 's') != NULL;
	}
	if (i < u->n && u->v[i].unres) {
		uw_markf(u, "%s: cannot tell which command runs", u->name);
		return 0;
	}
	return shell ? uw_joined_text(u, i, u->n, "entr -s") : uw_inner(u, i, u->name);
}

/* One `cargo --config KEY=VALUE` setting: a runner, linker or rustc
 * wrapper is a command line (a TOML string; an array is not read here). */
static int cargo_setting(struct uw *u, const struct sh_field *f)
{
	static const char *const ends[] = {".runner", ".linker", ".rustc-wrapper",
					   ".rustc-workspace-wrapper", ".rustc", ".rustdoc", NULL};
	const char *eq = strchr(f->text, '=');
	if (!eq)
		return 0; /* a file of settings */
	size_t kl = (size_t)(eq - f->text);
	while (kl && f->text[kl - 1] == ' ')
		kl--;
	bool runs = false;
	for (const char *const *e = ends; *e && !runs; e++)
		runs = kl > strlen(*e) && strncmp(f->text + kl - strlen(*e), *e, strlen(*e)) == 0;
	if (!runs)
		return 0;
	const char *v = eq + 1 + strspn(eq + 1, " ");
	size_t vl = strlen(v);
	if (f->unres || f->lookalike || vl < 2 || !strchr("\"'", v[0]) || v[vl - 1] != v[0] ||
	    memchr(v + 1, v[0], vl - 2)) {
		uw_markf(u, "cargo --config %.*s: the command is not a plain string", (int)kl, f->text);
		return 0;
	}
	struct sh_field g = *f;
	_cleanup_free_ char *t = strndup(v + 1, vl - 2);
	if (!t)
		return txbox_fail(u->ctx->err, -ENOMEM, "shell: out of memory");
	g.text = t;
	return uw_shell_text(u, &g, "cargo --config");
}

/* cargo [--config KEY=VALUE]…: settings that name commands cargo runs. */
static int do_cargo(struct uw *u)
{
	int rc = 0;
	for (size_t k = 1; k < u->n && rc == 0; k++) {
		const struct sh_field *f = &u->v[k];
		if (fis(f, "--"))
			break;
		if (fis(f, "--config") && k + 1 < u->n)
			rc = cargo_setting(u, &u->v[++k]);
		else if (!f->unres && strncmp(f->text, "--config=", 9) == 0) {
			struct sh_field g = *f;
			g.text = f->text + 9;
			rc = cargo_setting(u, &g);
		}
	}
	return rc;
}

/* sg GROUP [-c] COMMAND: the command is shell text. */
static int do_sg(struct uw *u)
{
	size_t i = 1;
	while (i < u->n && !u->v[i].unres && u->v[i].text[0] == '-' && !fis(&u->v[i], "-c"))
		i++;
	if (i < u->n && !fis(&u->v[i], "-c"))
		i++; /* the group */
	if (i < u->n && fis(&u->v[i], "-c"))
		i++;
	return i < u->n ? uw_joined_text(u, i, u->n, "sg") : 0;
}

static int do_setpriv(struct uw *u)
{
	static const char *const larg[] = {"reuid", "regid", "ruid", "rgid", "euid", "egid",
					   "groups", "inh-caps", "ambient-caps", "bounding-set",
					   "securebits", "selinux-label", "apparmor-profile",
					   "pdeathsig", "landlock-access", "landlock-rule", NULL};
	return after_opts(u, NULL, larg);
}

/* start-stop-daemon --start --exec PROG [--startas PROG] -- ARGS */
static int do_start_stop_daemon(struct uw *u)
{
	const struct sh_field *prog = NULL;
	size_t dd = u->n;
	for (size_t k = 1; k < u->n; k++) {
		struct sh_field val;
		size_t next;
		if (fis(&u->v[k], "--")) {
			dd = k + 1;
			break;
		}
		if (uw_opt_value(u, k, "-a", "--startas", &val, &next) ||
		    (!prog && uw_opt_value(u, k, "-x", "--exec", &val, &next)))
			prog = &u->v[next - 1];
	}
	if (!prog)
		return 0;
	struct sh_field *nv = calloc(u->n - (dd < u->n ? dd : u->n) + 2, sizeof(*nv));
	if (!nv)
		return txbox_fail(u->ctx->err, -ENOMEM, "shell: out of memory");
	size_t nn = 0;
	nv[nn] = *prog;
	if (!prog->unres && strchr(prog->text, '=') && prog->text[0] == '-')
		nv[nn].text = strchr(prog->text, '=') + 1;
	nn++;
	for (size_t k = dd; k < u->n; k++)
		nv[nn++] = u->v[k];
	int rc = sh_unwrap(u->ctx, nv, nn, NULL, 0, "start-stop-daemon", u->depth, NULL, u->ns);
	free(nv);
	return rc;
}

/* docker/podman [global options] exec [options] CONTAINER COMMAND… */
static int do_container_exec(struct uw *u)
{
	static const char *const glarg[] = {"host", "context", "config", "log-level", "url",
					    "connection", "root", "runroot", NULL};
	static const char *const larg[] = {"env", "env-file", "user", "workdir", "detach-keys",
					   NULL};
	bool unk = false;
	size_t i = uw_skip_opts(u, 1, "Hcl", glarg, &unk);
	if (unk || i >= u->n)
		return 0;
	if (fis(&u->v[i], "container") && i + 1 < u->n)
		i++;
	if (!fis(&u->v[i], "exec"))
		return 0;
	i = uw_skip_opts(u, i + 1, "euw", larg, &unk);
	if (unk) {
		uw_markf(u, "%s exec: cannot tell which command runs", u->name);
		return 0;
	}
	return uw_inner(u, i + 1, "container exec");
}

/* kubectl/oc exec POD [options] -- COMMAND… */
static int do_kubectl(struct uw *u)
{
	bool exec = false;
	for (size_t k = 1; k < u->n; k++) {
		if (fis(&u->v[k], "exec") || fis(&u->v[k], "debug"))
			exec = true;
		if (exec && fis(&u->v[k], "--"))
			return uw_inner(u, k + 1, "kubectl exec");
	}
	return 0;
}

/* parallel [options] COMMAND ::: ARGS…  (arguments from stdin without :::) */
static int do_parallel(struct uw *u)
{
	static const char *const larg[] = {"jobs", "sshlogin", "arg-file", "delimiter", "colsep",
					   "joblog", "results", "max-args", "max-replace-args",
					   "timeout", "tmpdir", "workdir", "env", NULL};
	bool unk = false;
	size_t i = uw_skip_opts(u, 1, "jSadIENnLlPsC", larg, &unk);
	if (unk) {
		uw_mark(u, "parallel: cannot tell which command runs");
		return 0;
	}
	struct sh_field *nv = calloc(u->n + 2, sizeof(*nv));
	if (!nv)
		return txbox_fail(u->ctx->err, -ENOMEM, "shell: out of memory");
	size_t nn = 0;
	bool sep = false;
	for (size_t k = i; k < u->n; k++) {
		if (!u->v[k].unres && starts_with(u->v[k].text, ":::")) {
			sep = true;
			continue;
		}
		nv[nn++] = u->v[k];
	}
	if (!sep)
		nv[nn++] = (struct sh_field){.text = (char *)"\u2026", .unres = true};
	int rc = nn > (sep ? 0u : 1u) ? sh_unwrap(u->ctx, nv, nn, NULL, 0, "xargs", u->depth, NULL, u->ns)
				      : 0;
	free(nv);
	return rc;
}

/* tmux [options] SUBCOMMAND [options] [shell-command] */
static int do_tmux(struct uw *u)
{
	static const char *const run[] = {"new-session", "new", "new-window", "neww", "split-window",
					  "splitw", "respawn-pane", "respawnp", "respawn-window",
					  "respawnw", "run-shell", "run", "display-popup", "popup",
					  "pipe-pane", "pipep", "if-shell", "if", NULL};
	bool unk = false;
	size_t i = uw_skip_opts(u, 1, "cfLSFT", NULL, &unk);
	if (unk || i >= u->n || u->v[i].unres || !in_list(u->v[i].text, run))
		return 0;
	i = uw_skip_opts(u, i + 1, "cefFnstxylpT", NULL, &unk);
	if (unk) {
		uw_mark(u, "tmux: cannot tell which command runs");
		return 0;
	}
	return i < u->n ? uw_joined_text(u, i, u->n, "tmux") : 0;
}

static int do_screen(struct uw *u)
{
	bool unk = false;
	size_t i = uw_skip_opts(u, 1, "SctTpheX", NULL, &unk);
	if (unk) {
		uw_mark(u, "screen: cannot tell which command runs");
		return 0;
	}
	return uw_inner(u, i, "screen");
}

/* dtach -n|-c|-A|-N SOCKET [opts] CMD…, abduco -c|-n|-A NAME CMD… */
static int do_dtach(struct uw *u)
{
	static const char *const modes[] = {"-n", "-c", "-A", "-N", "-a", NULL};
	if (u->n < 3 || u->v[1].unres || !in_list(u->v[1].text, modes) ||
	    fis(&u->v[1], "-a"))
		return 0;
	bool unk = false;
	size_t i = uw_skip_opts(u, 3, "er", NULL, &unk);
	if (unk) {
		uw_markf(u, "%s: cannot tell which command runs", u->name);
		return 0;
	}
	return uw_inner(u, i, u->name);
}

/* ---- the runner table ------------------------------------------------------
 *
 * Most runners differ only in their options and in where the command
 * starts, so one walker reads them from a table. Each entry gives:
 *   name   basename of the program; a trailing '*' matches any rest
 *          (ld-linux-x86-64.so.2)
 *   sub    subcommands that run a command ("run", "exec|x"); any other
 *          first operand runs none (uv pip install). Options before the
 *          subcommand are read with the same spec (uv --directory D run).
 *          A leading '?' makes it optional: `dotenv run CMD` and
 *          `dotenv CMD` both run CMD.
 *   opts   the options that matter, separated by spaces, each followed by
 *          what its value is (an option not listed is a flag):
 *            =   a value skipped (== two values, === three)
 *            !   shell text the runner runs (nix-shell --run TEXT)
 *            >   the command: its value and every word after it
 *                (nix develop -c CMD ARGS, --coreutils-prog=CMD ARGS)
 *            ;   the command up to a ";" word, then the found path
 *                (fd -x CMD ARGS \;)
 *            ^   a flag after which no command runs (ld.so --list)
 *            +   a flag making the command words shell text (pnpm exec -c)
 *            @   the directory the command runs in (conda run --cwd DIR)
 *   skip   operands before the command (gosu USER, direnv exec DIR)
 *   form   what the operands after the options are
 */
enum runner_form {
	RUN_ARGV,       /* the command and its arguments */
	RUN_TEXT,       /* words joined into shell text (watchexec) */
	RUN_EACH_TEXT,  /* each operand is shell text (hyperfine) */
	RUN_OPTS_ONLY,  /* not a command; only options run one (nix-shell) */
	RUN_AFTER_DASH, /* the command follows "--" (mise exec) */
	_RUN_FORM_MAX,
};

struct runner {
	const char *name, *sub, *opts;
	unsigned skip;
	enum runner_form form;
};

#define UV_OPTS                                                                                   \
	"-p= --python= --with= --with-editable= --with-requirements= --package= --extra= "        \
	"--group= --only-group= --no-group= --no-extra= --env-file= --directory@ --project= "     \
	"--index= --default-index= -i= --index-url= --extra-index-url= -f= --find-links= "        \
	"--config-file= --cache-dir= --color= -P= --upgrade-package= --reinstall-package= "       \
	"--refresh-package= --resolution= --prerelease= --python-platform= --exclude-newer= "     \
	"--link-mode= --keyring-provider= --index-strategy= -C= --config-setting= "               \
	"--no-binary-package= --no-build-package= --allow-insecure-host= --script= --gui-script="
#define CONDA_OPTS                                                                                \
	"-n= --name= -p= --prefix= --cwd@ -a= --attach= --label= -e= --env= -r= --root-prefix="
#define NPX_OPTS "-c! --call! -p= --package= -w= --workspace="
#define NIX_OPTS                                                                                  \
	"-c> --command> --profile= --unset= --keep= -k= --redirect== --override-input== -f= "     \
	"--file= --expr= --arg== --argstr== -I= --include= --option== "                           \
	"--extra-experimental-features= --experimental-features="
#define SETARCH_OPTS "--list^"
#define FD_OPTS                                                                                   \
	"-x; --exec; -X; --exec-batch; -e= --extension= -t= --type= -E= --exclude= -d= "          \
	"--max-depth= --min-depth= --exact-depth= -S= --size= --changed-within= "                 \
	"--changed-before= -o= --owner= --base-directory= --search-path= --path-separator= "      \
	"-j= --threads= --max-results= -c= --color= --ignore-file= --batch-size= --format="
#define LDSO_OPTS                                                                                 \
	"--library-path= --inhibit-rpath= --audit= --preload= --argv0= --glibc-hwcaps-prepend= "  \
	"--glibc-hwcaps-mask= --list^ --verify^ --list-tunables^ --list-diagnostics^ --help^ "    \
	"--version^"
#define HYPERFINE_OPTS                                                                            \
	"-p! --prepare! -s! --setup! -c! --cleanup! --conclude! -w= --warmup= -m= --min-runs= "   \
	"-M= --max-runs= -r= --runs= -L== --parameter-list== -P=== --parameter-scan=== -D= "      \
	"--parameter-step-size= -S= --shell= --style= --sort= -u= --time-unit= "                  \
	"--export-asciidoc= --export-csv= --export-json= --export-markdown= --export-orgmode= "   \
	"--output= --input= -n= --command-name="
#define WATCHEXEC_OPTS                                                                            \
	"-w= --watch= -W= --watch-non-recursive= -e= --exts= -f= --filter= -i= --ignore= "        \
	"--shell= -s= --signal= --stop-signal= --stop-timeout= -d= --debounce= --delay-run= "     \
	"-E= --env= --workdir@ --on-busy-update= --project-origin= --filter-file= "               \
	"--ignore-file= --fs-events= --emit-events-to= --log-file= --color= -j= --filter-prog= "  \
	"--wrap-process= --notify="

#define DOPPLER_OPTS                                                                              \
	"--command! -p= --project= -c= --config= --token= --name-transformer= --mount= "          \
	"--mount-format= --mount-template= --fallback= --scope= --api-host="
#define AWS_VAULT_OPTS                                                                            \
	"-d= --duration= -t= --mfa-token= --region= --prompt= --backend= --keychain= "            \
	"--pass-dir= --pass-cmd= --pass-prefix= --file-dir= --config="
#define RUN0_OPTS                                                                                 \
	"-u= --user= -g= --group= --nice= -D@ --chdir@ --setenv= --unit= --property= "            \
	"--description= --slice= --background= --machine="
#define CPULIMIT_OPTS                                                                             \
	"-l= --limit= -c= --cpu= -s= --signal= -p^ --pid^ -e^ --exe^ -P^ --path^"
#define NUMACTL_OPTS                                                                              \
	"-i= --interleave= -N= --cpunodebind= -m= --membind= -C= --physcpubind= -p= "            \
	"--preferred= -P= --preferred-many= -w= --weighted-interleave= -s^ --show^ -H^ "         \
	"--hardware^ --length= --offset= --shm= --file= --shmmode= --shmid= --dump^ --dump-nodes^"
#define BWRAP_OPTS                                                                                \
	"--bind== --ro-bind== --dev-bind== --bind-try== --ro-bind-try== --dev-bind-try== "        \
	"--symlink== --setenv== --file== --bind-data== --ro-bind-data== --chmod== --unsetenv= "   \
	"--chdir@ --uid= --gid= --hostname= --tmpfs= --dev= --proc= --dir= --remount-ro= "        \
	"--mqueue= --exec-label= --file-label= --lock-file= --sync-fd= --info-fd= "               \
	"--json-status-fd= --block-fd= --userns-block-fd= --userns= --userns2= --pidns= "         \
	"--args= --cap-add= --cap-drop= --seccomp= --add-seccomp-fd= --perms= --size= --argv0="
#define CCACHE_OPTS                                                                               \
	"-M^ -F^ -s^ -z^ -C^ -c^ -o^ -p^ -x^ -X^ -k^ -d^ -V^ -h^ --max-size^ --max-files^ "        \
	"--show-stats^ --zero-stats^ --clear^ --cleanup^ --set-config^ --show-config^ "           \
	"--get-config^ --help^ --version^ --dir^ --print-stats^ --evict-older-than^ "             \
	"--recompress^ --checksum-file^ --trim-dir^ --show-compression^ --show-log-stats^"
#define PERF_OPTS                                                                                 \
	"-e= --event= -o= --output= -F= --freq= -c= --count= --call-graph= -C= --cpu= -r= "       \
	"--repeat= -G= --cgroup= -x= --field-separator= -I= --interval-print= -j= "               \
	"--branch-filter= -p^ --pid^ -t^ --tid^ -u= --uid= -m= --mmap-pages="

static const struct runner runner_table[] = {
	{"coreutils", NULL, "--coreutils-prog> --coreutils-prog-shebang>", 0, RUN_ARGV},
	{"fd", NULL, FD_OPTS, 0, RUN_OPTS_ONLY},
	{"fdfind", NULL, FD_OPTS, 0, RUN_OPTS_ONLY},
	{"ld.so", NULL, LDSO_OPTS, 0, RUN_ARGV},
	{"ld-linux*", NULL, LDSO_OPTS, 0, RUN_ARGV},
	{"ld64.so*", NULL, LDSO_OPTS, 0, RUN_ARGV},
	{"ld-musl-*", NULL, LDSO_OPTS, 0, RUN_ARGV},
	{"uv", "run", UV_OPTS, 0, RUN_ARGV},
	{"poetry", "run", "-C= --directory= -P= --project=", 0, RUN_ARGV},
	{"pipenv", "run", "--python= --pypi-mirror=", 0, RUN_ARGV},
	{"pdm", "run", "-p= --project= --venv=", 0, RUN_ARGV},
	{"hatch", "run", "-e= --env= -p= --project= --data-dir= --cache-dir=", 0, RUN_ARGV},
	{"rye", "run", "--pyproject=", 0, RUN_ARGV},
	{"pixi", "run", "-e= --environment= --manifest-path=", 0, RUN_TEXT},
	{"npx", NULL, NPX_OPTS, 0, RUN_ARGV},
	{"npm", "exec|x", NPX_OPTS, 0, RUN_ARGV},
	{"pnpm", "exec|dlx", "-c+ --shell-mode+ --filter= -F= -C@ --dir@ --resume-from= --reporter=", 0,
	 RUN_ARGV},
	/* dlx fetches a package and runs its bin: the command is judged like npx's */
	{"yarn", "exec|dlx", "--cwd@ -p= --package=", 0, RUN_ARGV},
	{"bundle", "exec", "--gemfile=", 0, RUN_ARGV},
	{"bundler", "exec", "--gemfile=", 0, RUN_ARGV},
	{"conda", "run", CONDA_OPTS, 0, RUN_ARGV},
	{"mamba", "run", CONDA_OPTS, 0, RUN_ARGV},
	{"micromamba", "run", CONDA_OPTS, 0, RUN_ARGV},
	{"mise", "exec|x", "-c! --command! -C@ --cd@ -j= --jobs=", 0, RUN_AFTER_DASH},
	{"rtx", "exec|x", "-c! --command! -C@ --cd@ -j= --jobs=", 0, RUN_AFTER_DASH},
	{"asdf", "exec", NULL, 0, RUN_ARGV},
	{"direnv", "exec", NULL, 1, RUN_ARGV},
	{"nix-shell", NULL,
	 "--run! --command! -A= --attr= -I= --arg== --argstr== --option== -j= --max-jobs=", 0,
	 RUN_OPTS_ONLY},
	{"nix", "develop|shell", NIX_OPTS, 0, RUN_OPTS_ONLY},
	{"gosu", NULL, NULL, 1, RUN_ARGV},
	{"su-exec", NULL, NULL, 1, RUN_ARGV},
	{"s6-setuidgid", NULL, NULL, 1, RUN_ARGV},
	{"chpst", NULL, "-u= -U= -e= -/= -n= -l= -L= -m= -d= -o= -p= -f= -c= -r= -t=", 0, RUN_ARGV},
	{"tini", NULL, "-e= -p=", 0, RUN_ARGV},
	{"dumb-init", NULL, "-r= --rewrite=", 0, RUN_ARGV},
	{"catatonit", NULL, NULL, 0, RUN_ARGV},
	{"systemd-inhibit", NULL, "--what= --who= --why= --mode= --list^", 0, RUN_ARGV},
	{"eatmydata", NULL, NULL, 0, RUN_ARGV},
	{"nocache", NULL, "-n=", 0, RUN_ARGV},
	{"catchsegv", NULL, NULL, 0, RUN_ARGV},
	{"setarch", NULL, SETARCH_OPTS, 1, RUN_ARGV},
	{"linux32", NULL, SETARCH_OPTS, 0, RUN_ARGV},
	{"linux64", NULL, SETARCH_OPTS, 0, RUN_ARGV},
	{"i386", NULL, SETARCH_OPTS, 0, RUN_ARGV},
	{"x86_64", NULL, SETARCH_OPTS, 0, RUN_ARGV},
	{"uname26", NULL, SETARCH_OPTS, 0, RUN_ARGV},
	{"watchexec", NULL, WATCHEXEC_OPTS, 0, RUN_TEXT},
	{"hyperfine", NULL, HYPERFINE_OPTS, 0, RUN_EACH_TEXT},
	{"proot", NULL,
	 "-r= --rootfs= -b= --bind= -m= --mount= -q= --qemu= -w= --pwd= --cwd= -k= "
	 "--kernel-release= -i= --change-id= -v= --verbose= -p= --port=",
	 0, RUN_ARGV},
	{"fakeroot", NULL, "-l= --lib= --faked= -s= -i= -b=", 0, RUN_ARGV},
	/* secrets injected into the environment of a command */
	{"doppler", "run", DOPPLER_OPTS, 0, RUN_ARGV},
	{"op", "run", "--env-file= --account= --config= --session= --encoding=", 0, RUN_ARGV},
	{"aws-vault", "exec", AWS_VAULT_OPTS, 1, RUN_ARGV},
	{"dotenv", "?run", "-e= -v= -c= -p= -f= --file=", 0, RUN_ARGV},
	{"env-cmd", NULL, "-f= --file= -e= --environments= -r= --rc-file= --use-shell+", 0, RUN_ARGV},
	{"infisical", "run", "--env= --path= --projectId= --token= --command! --domain= --tags=", 0,
	 RUN_ARGV},
	{"chamber", "exec", NULL, 0, RUN_AFTER_DASH},
	{"sops", "exec-env|exec-file", "--user= --filename= --output-type= --input-type=", 1,
	 RUN_TEXT},
	{"teller", "run", "-c= --config=", 0, RUN_ARGV},
	/* version managers and build tools running a command in their env */
	{"pyenv", "exec", NULL, 0, RUN_ARGV},
	{"rbenv", "exec", NULL, 0, RUN_ARGV},
	{"nodenv", "exec", NULL, 0, RUN_ARGV},
	{"goenv", "exec", NULL, 0, RUN_ARGV},
	{"jenv", "exec", NULL, 0, RUN_ARGV},
	{"plenv", "exec", NULL, 0, RUN_ARGV},
	{"rustup", "run", NULL, 1, RUN_ARGV},
	{"opam", "exec", "--switch= --root= --cli=", 0, RUN_ARGV},
	{"stack", "exec", "--package= --rts-options= --cwd@ --stack-yaml=", 0, RUN_ARGV},
	{"cabal", "exec", "--project-file= --builddir=", 0, RUN_ARGV},
	{"tox", "exec", "-e= -c= --conf= --root= --workdir= -x= --override=", 0, RUN_AFTER_DASH},
	{"foreman", "run", "-e= --env= -d@ --root@ -f= --procfile=", 0, RUN_ARGV},
	{"honcho", "run", "-e= --env= -d@ --app-root@ -f= --procfile=", 0, RUN_ARGV},
	/* users, limits, sessions, containers sharing the host's files */
	{"pkexec", NULL, "--user=", 0, RUN_ARGV},
	{"run0", NULL, RUN0_OPTS, 0, RUN_ARGV},
	{"envdir", NULL, NULL, 1, RUN_ARGV},
	{"setuidgid", NULL, NULL, 1, RUN_ARGV},
	{"envuidgid", NULL, NULL, 1, RUN_ARGV},
	{"setlock", NULL, NULL, 1, RUN_ARGV},
	{"softlimit", NULL, "-m= -d= -s= -l= -a= -o= -p= -f= -c= -r= -t=", 0, RUN_ARGV},
	{"cpulimit", NULL, CPULIMIT_OPTS, 0, RUN_ARGV},
	{"numactl", NULL, NUMACTL_OPTS, 0, RUN_ARGV},
	{"cgexec", NULL, "-g=", 0, RUN_ARGV},
	{"bwrap", NULL, BWRAP_OPTS, 0, RUN_ARGV},
	{"ccache", NULL, CCACHE_OPTS, 0, RUN_ARGV},
	{"sccache", NULL, "-s^ --show-stats^ -z^ --zero-stats^ --start-server^ --stop-server^", 0,
	 RUN_ARGV},
	{"perf", "stat|record|trace", PERF_OPTS, 0, RUN_ARGV},
	{"heaptrack", NULL, "-o= --output= -p^ --pid^ -a^ --analyze^", 0, RUN_ARGV},
	{"dbus-run-session", NULL, "--config-file= --dbus-daemon=", 0, RUN_ARGV},
	{"ssh-agent", NULL, "-a= -E= -t= -P= -O= -k^", 0, RUN_ARGV},
	{"with-contenv", NULL, NULL, 0, RUN_ARGV},
	{"distrobox", "enter", "-n= --name= -a= --additional-flags=", 0, RUN_AFTER_DASH},
	{"distrobox-enter", NULL, "-n= --name= -a= --additional-flags=", 0, RUN_AFTER_DASH},
	{"toolbox", "run", "-c= --container= -d= --distro= -r= --release=", 0, RUN_ARGV},
};

enum opt_act {
	OPT_FLAG,
	OPT_VALUE,
	OPT_TEXT,
	OPT_ARGV,
	OPT_ARGV_SEMI,
	OPT_STOP,
	OPT_SHELL_MODE,
	OPT_DIR,
	_OPT_ACT_MAX,
};

static const char opt_act_mark[_OPT_ACT_MAX] = {
	[OPT_FLAG] = ' ',      [OPT_VALUE] = '=', [OPT_TEXT] = '!',      [OPT_ARGV] = '>',
	[OPT_ARGV_SEMI] = ';', [OPT_STOP] = '^',  [OPT_SHELL_MODE] = '+', [OPT_DIR] = '@',
};

/* Look the option name (len bytes, dashes included) up in spec: its
 * action and how many words its value has. */
static enum opt_act spec_find(const char *spec, const char *name, size_t len, unsigned *nvals)
{
	*nvals = 0;
	for (const char *p = spec; p && *p;) {
		p += strspn(p, " ");
		size_t tl = strcspn(p, " "), nl = strcspn(p, "=!>;^+@ ");
		if (nl != len || strncmp(p, name, len) != 0) {
			p += tl;
			continue;
		}
		enum opt_act act = OPT_FLAG;
		for (size_t i = nl; i < tl; i++)
			for (enum opt_act a = OPT_VALUE; a < _OPT_ACT_MAX; a++)
				if (p[i] == opt_act_mark[a])
					act = a;
		*nvals = act == OPT_VALUE ? (unsigned)(tl - nl) :
			 (act == OPT_FLAG || act == OPT_STOP || act == OPT_SHELL_MODE) ? 0 : 1;
		return act;
	}
	return OPT_FLAG;
}

/* An option word at k: what it does, its value (*val, attached or the
 * next word) and the word after it and its values (*next). */
static enum opt_act runner_option(const struct uw *u, const char *spec, size_t k,
				  struct sh_field *val, size_t *next)
{
	const char *a = u->v[k].text;
	const char *attached = NULL;
	unsigned nvals = 0;
	enum opt_act act = OPT_FLAG;
	if (a[1] == '-') {
		size_t len = strcspn(a, "=");
		act = spec_find(spec, a, len, &nvals);
		attached = a[len] == '=' ? a + len + 1 : NULL;
	} else {
		for (size_t j = 1; a[j] && act == OPT_FLAG; j++) {
			char name[3] = {'-', a[j], '\0'};
			act = spec_find(spec, name, 2, &nvals);
			attached = nvals && a[j + 1] ? a + j + 1 : NULL;
		}
	}
	*next = k + 1 + nvals - (attached && nvals ? 1 : 0);
	if (nvals == 0)
		return act;
	if (attached) {
		*val = u->v[k];
		val->text = (char *)attached;
	} else if (k + 1 < u->n) {
		*val = u->v[k + 1];
	} else {
		return OPT_FLAG; /* the value is missing: nothing runs */
	}
	return act;
}

/* The command an option names: its value and the words after it (up to a
 * ";" word for `semi`, which also passes the found path: fd -x). */
static int runner_argv(struct uw *u, const struct sh_field *val, size_t from, bool semi,
		       const char *via)
{
	size_t end = from;
	while (end < u->n && !(semi && fis(&u->v[end], ";")))
		end++;
	_cleanup_free_ struct sh_field *nv = calloc(end - from + 2, sizeof(*nv));
	if (!nv)
		return txbox_fail(u->ctx->err, -ENOMEM, "shell: out of memory");
	size_t nn = 0;
	nv[nn++] = *val;
	for (size_t k = from; k < end; k++)
		nv[nn++] = u->v[k];
	if (semi)
		nv[nn++] = (struct sh_field){.text = (char *)"\u2026", .unres = true};
	return sh_unwrap(u->ctx, nv, nn, NULL, 0, via, u->depth, NULL, u->ns);
}

/* Where the walk over options and operands ended. */
struct runner_walk {
	size_t cmd;          /* first word of the command */
	bool dashdash;       /* "--" seen */
	bool stop;           /* nothing runs (or it was already reported) */
	bool shell_mode;     /* the command words are shell text */
	bool dry;            /* only find where things are: run nothing */
	bool moved;          /* an option gave the directory (dir) */
	struct sh_field dir;
};

static int runner_opt(struct uw *u, const struct runner *r, size_t *k, struct runner_walk *w)
{
	struct sh_field val;
	size_t next;
	enum opt_act act = runner_option(u, r->opts, *k, &val, &next);
	char via[64];
	snprintf(via, sizeof(via), "%s %.*s", u->name, (int)strcspn(u->v[*k].text, "="),
		 u->v[*k].text);
	int rc = 0;
	switch (act) {
	case OPT_TEXT:
		rc = w->dry ? 0 : uw_shell_text(u, &val, via);
		break;
	case OPT_ARGV:
	case OPT_ARGV_SEMI:
		rc = w->dry ? 0 : runner_argv(u, &val, next, act == OPT_ARGV_SEMI, via);
		w->stop = true;
		break;
	case OPT_DIR:
		w->dir = val;
		w->moved = true;
		break;
	case OPT_STOP:
		w->stop = true;
		break;
	case OPT_SHELL_MODE:
		w->shell_mode = true;
		break;
	default:
		break;
	}
	*k = next;
	return rc;
}

/* Walk options and operands from word k; operands are skipped for forms
 * whose command is not the first operand. */
static int runner_scan(struct uw *u, const struct runner *r, size_t k, struct runner_walk *w)
{
	unsigned skip = r->skip;
	while (k < u->n && !w->stop) {
		const struct sh_field *f = &u->v[k];
		if (fis(f, "--")) {
			w->dashdash = true;
			k++;
			break;
		}
		if (!f->unres && f->text[0] == '-' && f->text[1]) {
			int rc = runner_opt(u, r, &k, w);
			if (rc < 0)
				return rc;
			continue;
		}
		if (r->form == RUN_EACH_TEXT) {
			int rc = w->dry ? 0 : uw_shell_text(u, f, u->name);
			if (rc < 0)
				return rc;
		} else if (r->form != RUN_OPTS_ONLY && r->form != RUN_AFTER_DASH && !skip) {
			break;
		} else if (skip) {
			skip--;
		}
		k++;
	}
	w->cmd = k;
	return 0;
}

/* The subcommand of a runner with one (uv run): the word after it, or 0
 * when the first operand is another subcommand. */
static size_t runner_sub(struct uw *u, const struct runner *r, struct runner_walk *w)
{
	size_t k = 1;
	while (k < u->n) {
		const struct sh_field *f = &u->v[k];
		if (f->unres || f->text[0] != '-' || !f->text[1])
			break;
		struct sh_field val;
		size_t next;
		if (runner_option(u, r->opts, k, &val, &next) == OPT_DIR) {
			w->dir = val;
			w->moved = true;
		}
		k = next;
	}
	bool optional = r->sub[0] == '?';
	if (k >= u->n || u->v[k].unres)
		return optional ? k : 0;
	const char *s = u->v[k].text;
	size_t len = strlen(s);
	for (const char *p = r->sub + optional; *p;) {
		size_t l = strcspn(p, "|");
		if (l == len && strncmp(p, s, l) == 0)
			return k + 1;
		p += l + (p[l] == '|');
	}
	return optional ? k : 0;
}

/* The walk for real, and what the operands run. */
static int runner_body(struct uw *u, const struct runner *r, size_t k)
{
	struct runner_walk w = {0};
	int rc = runner_scan(u, r, k, &w);
	if (rc < 0 || w.stop)
		return rc;
	switch (r->form) {
	case RUN_ARGV:
		return w.shell_mode ? uw_joined_text(u, w.cmd, u->n, u->name)
				    : uw_inner(u, w.cmd, u->name);
	case RUN_TEXT:
		return uw_joined_text(u, w.cmd, u->n, u->name);
	case RUN_EACH_TEXT:
		for (size_t i = w.cmd; i < u->n && rc == 0; i++)
			rc = uw_shell_text(u, &u->v[i], u->name);
		return rc;
	case RUN_AFTER_DASH:
		return w.dashdash ? uw_inner(u, w.cmd, u->name) : 0;
	default:
		return 0;
	}
}

/* A dry walk first finds a directory option, wherever it is, so that
 * everything the runner runs (options' text included) is judged there. */
static int runner_run(struct uw *u, const struct runner *r)
{
	struct runner_walk w = {.dry = true};
	size_t k = 1;
	if (r->sub && (k = runner_sub(u, r, &w)) == 0)
		return 0;
	int rc = runner_scan(u, r, k, &w);
	if (rc < 0 || !w.moved)
		return rc < 0 ? rc : runner_body(u, r, k);
	char *saved;
	bool saved_unres;
	rc = uw_chdir_push(u->ctx, &w.dir, &saved, &saved_unres);
	if (rc == 0)
		rc = runner_body(u, r, k);
	uw_chdir_pop(u->ctx, saved, saved_unres);
	return rc;
}

static bool runner_name_is(const char *pattern, const char *name)
{
	size_t pl = strlen(pattern);
	if (pl && pattern[pl - 1] == '*')
		return strncmp(pattern, name, pl - 1) == 0;
	return strcmp(pattern, name) == 0;
}

static const struct runner *runner_find(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(runner_table); i++)
		if (runner_name_is(runner_table[i].name, name))
			return &runner_table[i];
	return NULL;
}

/* Handler for every runner of the table: finds its entry again by name. */
static int do_table(struct uw *u)
{
	const struct runner *r = runner_find(u->name);
	return r ? runner_run(u, r) : 0;
}

/* ---- PowerShell -------------------------------------------------------------
 *
 * pwsh / powershell -Command TEXT…: PowerShell, not POSIX shell. Text made
 * only of plain words (`rm -rf ~`, `make test`) means the same to both and
 * is judged as shell text; anything else (cmdlets such as Remove-Item,
 * $variables, script blocks, pipelines of objects) is held: no rule here
 * reads PowerShell. Parameters are case-insensitive and may be shortened.
 */

static bool ps_param(const char *word, const char *full, size_t min)
{
	size_t l = strlen(word);
	return l >= min && l <= strlen(full) && strncasecmp(word, full, l) == 0;
}

static bool ps_plain_word(const char *w)
{
	if (w[0] >= 'A' && w[0] <= 'Z' && strchr(w, '-'))
		return false; /* Verb-Noun: a cmdlet */
	for (; *w; w++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./~:=,+@%-",
			    *w))
			return false;
	return true;
}

static int ps_text(struct uw *u, size_t from)
{
	for (size_t k = from; k < u->n; k++) {
		const struct sh_field *f = &u->v[k];
		if (f->unres || f->lookalike || !f->text[0])
			return uw_joined_text(u, from, u->n, u->name);
		for (const char *w = f->text; *w;) {
			size_t l = strcspn(w, " \t");
			char word[256];
			snprintf(word, sizeof(word), "%.*s", (int)l, w);
			if (l >= sizeof(word) || !ps_plain_word(word)) {
				uw_markf(u, "%s: runs PowerShell text", u->name);
				return 0;
			}
			w += l + strspn(w + l, " \t");
		}
	}
	return uw_joined_text(u, from, u->n, u->name);
}

static int do_pwsh(struct uw *u)
{
	static const char *const valued[] = {"executionpolicy", "workingdirectory", "windowstyle",
					     "outputformat", "inputformat", "configurationname",
					     "custompipename", "settingsfile", "version",
					     "configurationfile", "psconsolefile", NULL};
	static const char *const valued_alias[] = {"ep", "ex", "wd", "w", "o", "of", "if", "v",
						   "settings", "config", NULL};
	for (size_t k = 1; k < u->n; k++) {
		const struct sh_field *f = &u->v[k];
		if (f->unres) {
			uw_markf(u, "%s: cannot tell what it runs", u->name);
			return 0;
		}
		const char *p = f->text + 1;
		if (f->text[0] != '-' || !*p) /* pwsh: a script file; powershell: text */
			return strcmp(u->name, "pwsh") == 0 ? 0 : ps_text(u, k);
		if (ps_param(p, "command", 1))
			return ps_text(u, k + 1);
		if (ps_param(p, "encodedcommand", 1) || strcasecmp(p, "ec") == 0) {
			uw_markf(u, "%s: runs encoded PowerShell text", u->name);
			return 0;
		}
		if (ps_param(p, "file", 1))
			return 0;
		bool takes = false;
		for (size_t i = 0; valued[i] && !takes; i++)
			takes = ps_param(p, valued[i], 2);
		for (size_t i = 0; valued_alias[i] && !takes; i++)
			takes = strcasecmp(p, valued_alias[i]) == 0;
		k += takes;
	}
	return 0;
}

static const struct {
	const char *name;
	uw_fn fn;
} runners[] = {
	{"builtin", do_plain}, {"exec", do_exec}, {"nice", do_nice}, {"nohup", do_plain},
	{"time", do_time}, {"timeout", do_timeout}, {"setsid", do_plain},
	{"stdbuf", do_stdbuf}, {"ionice", do_ionice}, {"flock", do_flock},
	{"chroot", do_chroot}, {"busybox", do_busybox}, {"toybox", do_busybox},
	{"strace", do_strace},
	{"ltrace", do_strace}, {"taskset", do_taskset}, {"chrt", do_chrt},
	{"unshare", do_unshare}, {"nsenter", do_nsenter}, {"prlimit", do_prlimit},
	{"systemd-run", do_systemd_run}, {"unbuffer", do_plain}, 
	{"torsocks", do_plain}, {"proxychains", do_proxychains},
	{"proxychains4", do_proxychains}, {"faketime", do_faketime}, {"caffeinate", do_plain},
	{"firejail", do_plain}, {"valgrind", do_plain}, {"rsync", do_optcmd},
	{"zip", do_optcmd}, {"man", do_optcmd}, {"sort", do_optcmd}, {"xterm", do_optcmd},
	{"uxterm", do_optcmd}, {"konsole", do_optcmd}, {"urxvt", do_optcmd},
	{"entr", do_entr}, {"cargo", do_cargo}, {"sg", do_sg}, {"setpriv", do_setpriv},
	{"start-stop-daemon", do_start_stop_daemon}, {"docker", do_container_exec},
	{"podman", do_container_exec}, {"nerdctl", do_container_exec}, {"kubectl", do_kubectl},
	{"oc", do_kubectl}, {"parallel", do_parallel}, {"tmux", do_tmux},
	{"screen", do_screen}, {"xvfb-run", do_plain}, {"dbus-launch", do_plain},
	{"chronic", do_plain}, {"dtach", do_dtach}, {"abduco", do_dtach},
	{"pwsh", do_pwsh}, {"powershell", do_pwsh}, {"pwsh-preview", do_pwsh},
};

uw_fn uw_runner(const char *name)
{
	if (runner_find(name))
		return do_table;
	for (size_t i = 0; i < ARRAY_SIZE(runners); i++)
		if (strcmp(runners[i].name, name) == 0)
			return runners[i].fn;
	return NULL;
}
