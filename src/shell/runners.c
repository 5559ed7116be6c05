/* Runners: programs that run a command given as their arguments (or in
 * an option of their own): privilege, scheduling and environment
 * wrappers (nice, timeout, taskset, flock, setpriv, …), terminal
 * multiplexers, container exec, parallel. Each handler reports what the
 * runner runs as a further command through uw_inner() / shell text; the
 * walker itself is unwrap.c.
 */
#include "shell/unwrap.h"

#include "util/cleanup.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	return uw_inner(u, 1, "busybox");
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
		{"rsync", "-e", "--rsh"},      {"zip", "-TT", "--unzip-command"},
		{"man", "-P", "--pager"},      {"sort", NULL, "--compress-program"},
		{"xterm", "-e", NULL},         {"uxterm", "-e", NULL},
		{"konsole", "-e", NULL},       {"urxvt", "-e", NULL},
		{"less", NULL, NULL},          {"entr", NULL, NULL},
		{"inotifywait", NULL, NULL},
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
	if (rc == 0 && strcmp(u->name, "entr") == 0)
		rc = after_opts(u, NULL, NULL);
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

/* npx [opts] -c TEXT / npm exec -c TEXT: shell text. Options after the
 * package's name belong to the package. */
static int do_npx(struct uw *u)
{
	size_t k = 1;
	if (strcmp(u->name, "npx") != 0) {
		if (u->n < 2 || !(fis(&u->v[1], "exec") || fis(&u->v[1], "x")))
			return 0;
		k = 2;
	}
	int rc = 0;
	while (k < u->n && rc == 0) {
		struct sh_field val;
		size_t next = k + 1;
		const struct sh_field *f = &u->v[k];
		if (uw_opt_value(u, k, "-c", "--call", &val, &next))
			rc = uw_shell_text(u, &val, "npx -c");
		else if (fis(f, "-p") || fis(f, "--package"))
			next = k + 2;
		else if (f->unres || f->text[0] != '-')
			break;
		k = next;
	}
	return rc;
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

static const struct {
	const char *name;
	uw_fn fn;
} runners[] = {
	{"builtin", do_plain}, {"exec", do_exec}, {"nice", do_nice}, {"nohup", do_plain},
	{"time", do_time}, {"timeout", do_timeout}, {"setsid", do_plain},
	{"stdbuf", do_stdbuf}, {"ionice", do_ionice}, {"flock", do_flock},
	{"chroot", do_chroot}, {"busybox", do_busybox}, {"strace", do_strace},
	{"ltrace", do_strace}, {"taskset", do_taskset}, {"chrt", do_chrt},
	{"unshare", do_unshare}, {"nsenter", do_nsenter}, {"prlimit", do_prlimit},
	{"systemd-run", do_systemd_run}, {"unbuffer", do_plain}, {"fakeroot", do_plain},
	{"torsocks", do_plain}, {"catchsegv", do_plain}, {"proxychains", do_proxychains},
	{"proxychains4", do_proxychains}, {"faketime", do_faketime}, {"caffeinate", do_plain},
	{"firejail", do_plain}, {"valgrind", do_plain}, {"rsync", do_optcmd},
	{"zip", do_optcmd}, {"man", do_optcmd}, {"sort", do_optcmd}, {"xterm", do_optcmd},
	{"uxterm", do_optcmd}, {"konsole", do_optcmd}, {"urxvt", do_optcmd},
	{"entr", do_optcmd}, {"sg", do_sg}, {"setpriv", do_setpriv},
	{"start-stop-daemon", do_start_stop_daemon}, {"docker", do_container_exec},
	{"podman", do_container_exec}, {"nerdctl", do_container_exec}, {"kubectl", do_kubectl},
	{"oc", do_kubectl}, {"parallel", do_parallel}, {"tmux", do_tmux},
	{"screen", do_screen}, {"xvfb-run", do_plain}, {"dbus-launch", do_plain},
	{"chronic", do_plain}, {"npx", do_npx}, {"npm", do_npx}, {"pnpm", do_npx},
	{"dtach", do_dtach}, {"abduco", do_dtach},
};

uw_fn uw_runner(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(runners); i++)
		if (strcmp(runners[i].name, name) == 0)
			return runners[i].fn;
	return NULL;
}
