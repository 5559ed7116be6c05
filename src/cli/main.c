/* txbox command line: parse arguments, call the API, render the result.
 * The only place (with the other front-ends) that prints or exits. */
#include "txbox.h"

#include "sandbox/harden.h"

#include "util/trace.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#define EXIT_TXBOX_ERROR 125

static const char usage_text[] =
	"usage:\n"
	"  txbox run    [-w DIR] [--policy FILE] [--timeout SEC] [--validate CMD] [LIMITS] [--net] [--json]\n"
	"               [--allow-foreign-workspace] -- COMMAND...\n"
	"  txbox check  [-w DIR] [--policy FILE] [--net] [--json] -- COMMAND...\n"
	"  txbox commit TX [-w DIR] [--json]      commit a held transaction\n"
	"  txbox rollback TX [-w DIR] [--json]    roll back a held transaction\n"
	"  txbox policy check FILE\n"
	"  txbox recover [-w DIR]\n"
	"  txbox version\n"
	"\n"
	"LIMITS: --memory SIZE  --pids N  --cpu SEC  --disk SIZE   (SIZE takes K/M/G suffixes)\n"
	"-w defaults to the current directory ($PWD), or the txbox workspace that holds it; a directory\n"
	"known only by its physical path ($PWD names another) must be a workspace already.\n"
	"A workspace owned by another user is refused unless --allow-foreign-workspace is given\n"
	"(then with --state-dir DIR outside it, on its filesystem).\n"
	"One COMMAND argument is shell text run by /bin/sh -c; several are an argv executed directly.\n"
	"Exit status: 0 committed; the command's status when it failed; 128+N killed by signal N;\n"
	"124 timeout; 125 txbox error; 126 denied by policy; 3 held.\n";

/* Everything txbox prints for people can carry names and text the command
 * chose (paths, git config keys, reasons quoting them). A terminal obeys
 * escape sequences in them (OSC 52 writes the clipboard, others retitle or
 * hide lines), so every message goes out through show(): control bytes,
 * C1 controls, bidirectional overrides and invalid UTF-8 become \xNN or
 * \u{NNNN}; only a chunk's final newline is kept as is. */
static size_t utf8_sequence(const unsigned char *s, size_t n, uint32_t *cp)
{
	size_t len = s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc0 ? 2 : 0;
	if (len == 0 || len > n || s[0] > 0xf4 || s[0] < 0xc2)
		return 0;
	uint32_t v = s[0] & (0x7f >> len);
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		v = (v << 6) | (s[i] & 0x3f);
	}
	static const uint32_t least[] = {0, 0, 0x80, 0x800, 0x10000};
	if (v < least[len] || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
		return 0;
	*cp = v;
	return len;
}

static bool unsafe_code_point(uint32_t cp)
{
	return (cp >= 0x80 && cp <= 0x9f) || (cp >= 0x202a && cp <= 0x202e) ||
	       (cp >= 0x2066 && cp <= 0x2069) || cp == 0x200e || cp == 0x200f || cp == 0x061c;
}

static void show_bytes(FILE *f, const char *text, size_t n)
{
	const unsigned char *s = (const unsigned char *)text;
	for (size_t i = 0; i < n;) {
		unsigned char c = s[i];
		uint32_t cp;
		size_t len;
		if ((c >= 0x20 && c < 0x7f) || c == '\t' || (c == '\n' && i + 1 == n)) {
			fputc(c, f);
			i++;
		} else if (c < 0x80 || !(len = utf8_sequence(s + i, n - i, &cp))) {
			fprintf(f, "\\x%02x", c);
			i++;
		} else if (unsafe_code_point(cp)) {
			fprintf(f, "\\u{%04" PRIx32 "}", cp);
			i += len;
		} else {
			fwrite(s + i, 1, len, f);
			i += len;
		}
	}
}

static void show(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void show(FILE *f, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *text = NULL;
	int n = vasprintf(&text, fmt, ap);
	va_end(ap);
	if (n < 0) {
		fputs("txbox: out of memory formatting a message\n", f);
		return;
	}
	/* The command's output ran on the same terminal and may have left
	 * attributes set (SGR 8 conceals, 30;40 is black on black): reset them
	 * once before txbox's first message so its verdict stays visible. */
	static bool attributes_reset;
	if (!attributes_reset && isatty(fileno(f))) {
		fputs("\033[0m", f);
		attributes_reset = true;
	}
	/* One write: stderr is unbuffered, and a message escaped byte by
	 * byte would cost a system call per character. */
	char *out = NULL;
	size_t outlen = 0;
	FILE *m = open_memstream(&out, &outlen);
	if (m) {
		show_bytes(m, text, (size_t)n);
		if (fclose(m) == 0)
			fwrite(out, 1, outlen, f);
	} else {
		show_bytes(f, text, (size_t)n);
	}
	free(out);
	free(text);
}

static int die_usage(const char *fmt, const char *arg) __attribute__((format(printf, 1, 0)));
static int die_usage(const char *fmt, const char *arg)
{
	char *text = NULL;
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
	int n = asprintf(&text, fmt, arg);
#pragma GCC diagnostic pop
	if (n >= 0)
		show(stderr, "txbox: %s\n", text);
	free(text);
	fputs(usage_text, stderr);
	return EXIT_TXBOX_ERROR;
}

static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s || s[0] == '-')
		return -1;
	uint64_t mul = 1;
	if (*end) {
		switch (*end) {
		case 'k': case 'K': mul = 1024ull; break;
		case 'm': case 'M': mul = 1024ull * 1024; break;
		case 'g': case 'G': mul = 1024ull * 1024 * 1024; break;
		default: return -1;
		}
		end++;
		if (*end == 'i' || *end == 'B' || *end == 'b')
			end++;
		if (*end == 'B')
			end++;
		if (*end)
			return -1;
	}
	if (v > UINT64_MAX / mul)
		return -1;
	*out = v * mul;
	return 0;
}

static int parse_seconds(const char *s, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || *end || !(v > 0) || v > 1e7)
		return -1;
	*out = v;
	return 0;
}

/* A hold or deny came from the effect check (the command was allowed). */
static bool by_effects(const txbox_result *r)
{
	return r->has_effects && r->effects.decision && strcmp(r->effects.decision, "allow") != 0;
}

static void print_effects(const txbox_result *r)
{
	show(stderr, "txbox: effect rule %s: %s\n", r->effects.rule ? r->effects.rule : "?",
		r->effects.reason ? r->effects.reason : "");
	if (r->effects.suggestion && r->effects.suggestion[0])
		show(stderr, "txbox: suggestion: %s\n", r->effects.suggestion);
}

static void print_human(const txbox_result *r)
{
	if (by_effects(r))
		print_effects(r);
	const char *o = txbox_outcome_name(r->outcome);
	switch (r->outcome) {
	case TXBOX_COMMITTED:
		show(stderr, "txbox: committed %s (%zu change%s, %.1f ms)\n", r->tx ? r->tx : "", r->nchanges,
			r->nchanges == 1 ? "" : "s", r->timings.total_ms);
		break;
	case TXBOX_ROLLED_BACK:
		show(stderr, "txbox: rolled back %s: %s", r->tx ? r->tx : "",
			r->rollback_reason ? r->rollback_reason : "?");
		if (r->limit)
			show(stderr, " (%s)", r->limit);
		else if (r->signal)
			show(stderr, " (signal %d)", r->signal);
		else if (r->rollback_reason && !strcmp(r->rollback_reason, "exit_status"))
			show(stderr, " (exit status %d)", r->exit_code);
		else if (r->rollback_reason && !strcmp(r->rollback_reason, "validation"))
			show(stderr, " (validation exit status %d)", r->validation_exit_code);
		if (r->error)
			show(stderr, ": %s", r->error);
		show(stderr, "; the workspace is unchanged\n");
		break;
	case TXBOX_DENIED:
		show(stderr, "txbox: denied by rule %s: %s\n", r->decision.rule ? r->decision.rule : "?",
			r->decision.reason ? r->decision.reason : "");
		if (r->decision.suggestion && r->decision.suggestion[0])
			show(stderr, "txbox: suggestion: %s\n", r->decision.suggestion);
		break;
	case TXBOX_HELD:
		if (!by_effects(r))
			show(stderr, "txbox: held %s by rule %s: %s\n", r->tx ? r->tx : "",
				r->decision.rule ? r->decision.rule : "?",
				r->decision.reason ? r->decision.reason : "");
		else
			show(stderr, "txbox: held %s by its effects\n", r->tx ? r->tx : "");
		show(stderr, "txbox: the changes wait in the transaction; `txbox commit %s` or `txbox rollback %s`\n",
			r->tx ? r->tx : "TX", r->tx ? r->tx : "TX");
		break;
	default:
		show(stderr, "txbox: %s: %s\n", o, r->error ? r->error : "unknown error");
	}
}

static void print_json_line(char *json)
{
	if (!json) {
		show(stderr, "txbox: out of memory rendering JSON\n");
		return;
	}
	fputs(json, stdout);
	fputc('\n', stdout);
	free(json);
}

enum {
	OPT_POLICY = 256,
	OPT_TIMEOUT,
	OPT_VALIDATE,
	OPT_MEMORY,
	OPT_PIDS,
	OPT_CPU,
	OPT_DISK,
	OPT_NET,
	OPT_JSON,
	OPT_STATE_DIR,
	OPT_OUTPUT_LIMIT,
	OPT_ALLOW_FOREIGN,
};

static const struct option run_opts[] = {
	{"workspace", required_argument, NULL, 'w'},
	{"policy", required_argument, NULL, OPT_POLICY},
	{"timeout", required_argument, NULL, OPT_TIMEOUT},
	{"validate", required_argument, NULL, OPT_VALIDATE},
	{"memory", required_argument, NULL, OPT_MEMORY},
	{"pids", required_argument, NULL, OPT_PIDS},
	{"cpu", required_argument, NULL, OPT_CPU},
	{"disk", required_argument, NULL, OPT_DISK},
	{"net", no_argument, NULL, OPT_NET},
	{"json", no_argument, NULL, OPT_JSON},
	{"state-dir", required_argument, NULL, OPT_STATE_DIR},
	{"output-limit", required_argument, NULL, OPT_OUTPUT_LIMIT},
	{"allow-foreign-workspace", no_argument, NULL, OPT_ALLOW_FOREIGN},
	{"help", no_argument, NULL, 'h'},
	{NULL, 0, NULL, 0},
};

typedef struct cli {
	txbox_run_opts run;
	bool json;
} cli;

/* Which options a subcommand takes: the base set, check's (+ --net, which
 * changes the verdict as it does for run), or all of run's. */
typedef enum { OPTS_BASE, OPTS_CHECK, OPTS_RUN } opt_set;

/* Parse options shared by the subcommands; returns optind or -exitcode. */
static int parse_common(int argc, char **argv, cli *c, opt_set set)
{
	optind = 1;
	opterr = 0;
	int ch;
	while ((ch = getopt_long(argc, argv, "+w:h", run_opts, NULL)) != -1) {
		double d;
		uint64_t v;
		if (set != OPTS_RUN && !(set == OPTS_CHECK && ch == OPT_NET) && ch != 'w' && ch != OPT_POLICY &&
		    ch != OPT_JSON && ch != OPT_STATE_DIR && ch != 'h' && ch != '?' && ch != ':')
			return -die_usage("option %s does not apply to this command", argv[optind - 1]);
		switch (ch) {
		case 'w': c->run.workspace = optarg; break;
		case OPT_POLICY: c->run.policy_file = optarg; break;
		case OPT_STATE_DIR: c->run.state_dir = optarg; break;
		case OPT_JSON: c->json = true; break;
		case OPT_NET: c->run.net = true; break;
		case OPT_ALLOW_FOREIGN: c->run.allow_foreign_workspace = true; break;
		case OPT_VALIDATE:
			if (!optarg[0])
				return -die_usage("--validate needs a command%s", "");
			c->run.validate = optarg;
			break;
		case OPT_TIMEOUT:
			if (parse_seconds(optarg, &d) < 0)
				return -die_usage("bad --timeout value '%s' (seconds, > 0)", optarg);
			c->run.timeout_sec = d;
			break;
		case OPT_CPU:
			if (parse_seconds(optarg, &d) < 0)
				return -die_usage("bad --cpu value '%s' (seconds, > 0)", optarg);
			c->run.limits.cpu_seconds = (uint64_t)(d + 0.999);
			break;
		case OPT_MEMORY:
			if (parse_size(optarg, &v) < 0 || !v)
				return -die_usage("bad --memory value '%s' (e.g. 512M)", optarg);
			c->run.limits.memory_bytes = v;
			break;
		case OPT_DISK:
			if (parse_size(optarg, &v) < 0 || !v)
				return -die_usage("bad --disk value '%s' (e.g. 1G)", optarg);
			c->run.limits.disk_bytes = v;
			break;
		case OPT_OUTPUT_LIMIT:
			if (parse_size(optarg, &v) < 0 || !v)
				return -die_usage("bad --output-limit value '%s' (e.g. 1M)", optarg);
			c->run.output_limit = (size_t)v;
			break;
		case OPT_PIDS:
			if (parse_size(optarg, &v) < 0 || !v || v > 4194304)
				return -die_usage("bad --pids value '%s'", optarg);
			c->run.limits.pids = v;
			break;
		case 'h':
			fputs(usage_text, stdout);
			return -0;
		default:
			return -die_usage("unknown or incomplete option %s", argv[optind - 1]);
		}
	}
	return optind;
}

static int cmd_run(int argc, char **argv)
{
	cli c;
	memset(&c, 0, sizeof c);
	txbox_run_opts_init(&c.run);
	int i = parse_common(argc, argv, &c, OPTS_RUN);
	if (i <= 0)
		return -i;
	if (i >= argc)
		return die_usage("run: no command given%s", "");
	if (!c.json) {
		c.run.passthrough_stdout = STDOUT_FILENO;
		c.run.passthrough_stderr = STDERR_FILENO;
	}
	c.run.argv = (const char *const *)argv + i;
	c.run.argc = (size_t)(argc - i);
	txbox_result *res = NULL;
	txbox_error err = TXBOX_ERROR_INIT;
	if (txbox_run(&c.run, &res, &err) < 0) {
		show(stderr, "txbox: error: %s\n", err.message ? err.message : "unknown");
		txbox_error_clear(&err);
		txbox_result_free(res);
		return EXIT_TXBOX_ERROR;
	}
	if (c.json)
		print_json_line(txbox_result_to_json(res));
	if (!c.json || res->outcome == TXBOX_ERROR)
		print_human(res);
	if (res->ran && landlock_probe_abi() <= 0) /* secrets.c: the weaker masks */
		fprintf(stderr, "txbox: note: no Landlock: secrets were hidden by mounts made at the start; "
				"a store the host replaced or created while the command ran was readable\n");
	int status = res->exit_status;
	txbox_result_free(res);
	trace_mark("cli: printed");
	trace_dump(STDERR_FILENO);
	return status;
}

static int cmd_check(int argc, char **argv)
{
	cli c;
	memset(&c, 0, sizeof c);
	txbox_run_opts_init(&c.run);
	int i = parse_common(argc, argv, &c, OPTS_CHECK);
	if (i <= 0)
		return -i;
	if (i >= argc)
		return die_usage("check: no command given%s", "");
	txbox_check_opts co = {
		.workspace = c.run.workspace,
		.policy_file = c.run.policy_file,
		.argv = (const char *const *)argv + i,
		.argc = (size_t)(argc - i),
		.net = c.run.net,
	};
	txbox_decision d;
	txbox_error err = TXBOX_ERROR_INIT;
	if (txbox_check(&co, &d, &err) < 0) {
		show(stderr, "txbox: error: %s\n", err.message ? err.message : "unknown");
		txbox_error_clear(&err);
		return EXIT_TXBOX_ERROR;
	}
	if (c.json) {
		print_json_line(txbox_decision_to_json(&d));
	} else {
		show(stdout, "%s (rule %s)%s\n", d.decision, d.rule ? d.rule : "-", d.unresolved ? " [unresolved]" : "");
		if (d.reason && d.reason[0])
			show(stdout, "reason: %s\n", d.reason);
		if (d.suggestion && d.suggestion[0])
			show(stdout, "suggestion: %s\n", d.suggestion);
		for (size_t k = 0; k < d.ncommands; k++) {
			show(stdout, "  %-5s %-24s", d.commands[k].decision, d.commands[k].rule ? d.commands[k].rule : "-");
			for (char **a = d.commands[k].argv; a && *a; a++)
				show(stdout, " %s", *a);
			show(stdout, "\n");
		}
	}
	int st = !strcmp(d.decision, "deny") ? 126 : !strcmp(d.decision, "hold") ? 3 : 0;
	txbox_decision_free(&d);
	return st;
}

static int cmd_finish(int argc, char **argv, bool commit)
{
	cli c;
	memset(&c, 0, sizeof c);
	txbox_run_opts_init(&c.run);
	/* Accept `txbox commit TX [opts]` and `txbox commit [opts] TX`. */
	const char *id = NULL;
	if (argc >= 2 && argv[1][0] != '-') {
		id = argv[1];
		argv[1] = argv[0];
		argv++;
		argc--;
	}
	int i = parse_common(argc, argv, &c, OPTS_BASE);
	if (i <= 0)
		return -i;
	if (!id && i < argc)
		id = argv[i++];
	if (!id || i < argc)
		return die_usage("%s: give exactly one transaction id", commit ? "commit" : "rollback");
	txbox_result *res = NULL;
	txbox_error err = TXBOX_ERROR_INIT;
	if (txbox_finish_held(c.run.workspace, c.run.state_dir, id, commit, &res, &err) < 0) {
		show(stderr, "txbox: error: %s\n", err.message ? err.message : "unknown");
		txbox_error_clear(&err);
		return EXIT_TXBOX_ERROR;
	}
	if (c.json)
		print_json_line(txbox_result_to_json(res));
	else
		print_human(res);
	int st = res->outcome == TXBOX_COMMITTED ? 0 : res->outcome == TXBOX_ROLLED_BACK ? 0 : 1;
	txbox_result_free(res);
	return st;
}

static int cmd_policy(int argc, char **argv)
{
	if (argc != 3 || strcmp(argv[1], "check") != 0)
		return die_usage("usage: txbox policy check FILE%s", "");
	txbox_error err = TXBOX_ERROR_INIT;
	if (txbox_policy_check(argv[2], &err) < 0) {
		show(stderr, "txbox: %s\n", err.message ? err.message : "invalid policy");
		txbox_error_clear(&err);
		return EXIT_TXBOX_ERROR;
	}
	show(stdout, "%s: ok\n", argv[2]);
	return 0;
}

static int cmd_recover(int argc, char **argv)
{
	cli c;
	memset(&c, 0, sizeof c);
	txbox_run_opts_init(&c.run);
	int i = parse_common(argc, argv, &c, OPTS_BASE);
	if (i <= 0)
		return -i;
	if (i < argc)
		return die_usage("recover: unexpected argument %s", argv[i]);
	txbox_error err = TXBOX_ERROR_INIT;
	int n = txbox_recover(c.run.workspace, c.run.state_dir, &err);
	if (n < 0) {
		show(stderr, "txbox: error: %s\n", err.message ? err.message : "unknown");
		txbox_error_clear(&err);
		return EXIT_TXBOX_ERROR;
	}
	show(stdout, "recovered %d transaction%s\n", n, n == 1 ? "" : "s");
	return 0;
}

int main(int argc, char **argv)
{
	trace_init();
	trace_mark("main");
	/* Deep trees need many directory fds during commit and cleanup. */
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	signal(SIGPIPE, SIG_IGN);
	if (argc < 2)
		return die_usage("no command given%s", "");
	const char *cmd = argv[1];
	argc--;
	argv++;
	if (!strcmp(cmd, "run"))
		return cmd_run(argc, argv);
	if (!strcmp(cmd, "check"))
		return cmd_check(argc, argv);
	if (!strcmp(cmd, "commit"))
		return cmd_finish(argc, argv, true);
	if (!strcmp(cmd, "rollback"))
		return cmd_finish(argc, argv, false);
	if (!strcmp(cmd, "policy"))
		return cmd_policy(argc, argv);
	if (!strcmp(cmd, "recover"))
		return cmd_recover(argc, argv);
	if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
		show(stdout, "txbox 0.1.0\n");
		return 0;
	}
	if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
		fputs(usage_text, stdout);
		return 0;
	}
	return die_usage("unknown command '%s'", cmd);
}
