/* policy/: classify commands against a policy: allow | hold | deny,
 * with the rule, the reason and a suggestion. Also carries the sandbox
 * settings a policy grants (masked secrets, environment filter, limits,
 * network). Pure apart from reading the policy file.
 * (Interface fixed by the core; implementation in src/policy/.) */
#pragma once

#include "shell/shell.h"
#include "util/error.h"

#include <stdbool.h>
#include <stdint.h>

typedef enum policy_decision {
	POLICY_ALLOW = 0,
	POLICY_HOLD = 1,
	POLICY_DENY = 2,
} policy_decision;

const char *policy_decision_name(policy_decision d);

/* Sandbox settings carried by a policy (section `sandbox:` of the file). */
typedef struct policy_sandbox {
	char **masked_paths;    /* NULL-terminated; "~/" expanded against HOME by the caller */
	char **env_deny;        /* NULL-terminated glob patterns of environment variable names */
	char **allowed_sockets; /* NULL-terminated host Unix socket paths the command may reach */
	bool network;           /* host networking granted */
	uint64_t memory_bytes, pids, cpu_seconds, disk_bytes, nofile, fsize_bytes; /* 0 = none */
	double timeout_sec;     /* 0 = none */
	bool strip_setuid;      /* strip setuid/setgid and security.capability on commit (default true) */
} policy_sandbox;

typedef struct policy policy;

typedef struct policy_ctx {
	const char *workspace; /* absolute, canonical */
	const char *cwd;       /* absolute; where relative paths start */
	const char *home;      /* $HOME, may be NULL */
	const char *cwd_alt;   /* set by policy_decide itself: where relative paths start if
				* the last `cd` did not take effect (callers leave it NULL) */
	bool cwd_climbed;      /* set by policy_decide itself: cwd was reached from the workspace
				* by a relative `cd` (cd ..) and is outside it */
	/* What the sandbox will let this run reach besides the workspace (or'ed
	 * with the policy's own `sandbox:` grants): a word that cannot be
	 * resolved is a reason to hold only where its effect could escape. */
	bool network;      /* host networking granted (--net) */
	bool host_sockets; /* some host Unix socket is reachable */
} policy_ctx;

typedef struct policy_cmd_verdict {
	char **argv;           /* NULL-terminated copy */
	policy_decision decision;
	char *rule;            /* id of the rule that decided, or "default" / "unresolved" */
} policy_cmd_verdict;

typedef struct policy_verdict {
	policy_decision decision; /* the strictest over all commands */
	char *rule;
	char *reason;
	char *suggestion;
	policy_cmd_verdict *cmds;
	size_t ncmds;
	bool unresolved;
} policy_verdict;

/* Load and validate; errors name file:line:col. */
int policy_load_file(const char *path, policy **out, txbox_error *err);
/* The same for a run in the workspace ws_fd, keeping the compiled policy in
 * the user's cache dir ($XDG_CACHE_HOME/txbox, ~/.cache/txbox, or the
 * password database home's; never one inside any workspace, which a
 * sandboxed command could forge): the next load of the very same text by
 * the same build skips YAML parsing. */
int policy_load_file_in(const char *path, int ws_fd, policy **out, txbox_error *err);
int policy_load_buffer(const char *name, const char *buf, size_t len, policy **out, txbox_error *err);
/* The built-in default policy (compiled into the binary). */
int policy_load_default(policy **out, txbox_error *err);
void policy_free(policy *p);

const policy_sandbox *policy_get_sandbox(const policy *p);

/* Classify shell text (argc == 1) or a direct argv (argc > 1). */
int policy_decide(const policy *p, const policy_ctx *ctx, const char *const *argv, size_t argc,
		  policy_verdict *out, txbox_error *err);
void policy_verdict_free(policy_verdict *v);
