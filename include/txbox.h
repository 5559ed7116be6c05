/* txbox — transactional sandbox for autonomous coding agents.
 *
 * Public C API. Front-ends (CLI, MCP server, agent loop) and embedders call
 * only what is declared here. Every call is headless: nothing prompts.
 *
 * Conventions: functions return 0 (or a non-negative value) on success and a
 * negative errno-style code on failure, filling the caller's txbox_error with
 * an allocated message that names the problem. Results are heap objects owned
 * by the caller and released with their *_free function. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- errors ------------------------------------------------------------ */

typedef struct txbox_error {
	int code;      /* negative errno-style; 0 = no error */
	char *message; /* allocated, human readable, names the problem */
} txbox_error;

#define TXBOX_ERROR_INIT {0, NULL}

void txbox_error_clear(txbox_error *err);

/* ---- limits ------------------------------------------------------------ */

typedef enum txbox_limit_mechanism {
	TXBOX_LIMITS_RLIMIT = 0,
	TXBOX_LIMITS_CGROUP1,
	TXBOX_LIMITS_CGROUP2,
} txbox_limit_mechanism;

/* 0 means "use the policy's value / no limit". */
typedef struct txbox_limits {
	uint64_t memory_bytes;
	uint64_t pids;
	uint64_t cpu_seconds;
	uint64_t disk_bytes;
} txbox_limits;

/* ---- run --------------------------------------------------------------- */

typedef struct txbox_run_opts {
	const char *workspace;   /* NULL: current directory */
	const char *state_dir;   /* NULL: WORKSPACE/.txbox */
	const char *policy_file; /* NULL: built-in default policy */
	/* argc == 1: shell text run by /bin/sh -c; argc > 1: argv executed directly. */
	const char *const *argv;
	size_t argc;
	double timeout_sec;   /* <= 0: no timeout */
	const char *validate; /* optional shell text, run after the command in the same view */
	size_t output_limit;  /* bytes captured per stream; 0: 1 MiB */
	int passthrough_stdout; /* fd to copy the command's stdout to live, or -1 */
	int passthrough_stderr; /* fd to copy the command's stderr to live, or -1 */
	txbox_limits limits;    /* overrides of the policy's limits */
	bool net;               /* grant host networking */
	bool skip_policy;       /* classify nothing (embedders that classified already) */
	/* Run in a workspace owned by another user (refused otherwise: its owner
	 * controls its content). state_dir must then be set: the caller's own,
	 * outside the workspace. */
	bool allow_foreign_workspace;
} txbox_run_opts;

void txbox_run_opts_init(txbox_run_opts *opts);

typedef enum txbox_outcome {
	TXBOX_COMMITTED = 0,
	TXBOX_ROLLED_BACK,
	TXBOX_DENIED,
	TXBOX_HELD,
	TXBOX_CONFLICT,
	TXBOX_ERROR,
} txbox_outcome;

typedef enum txbox_change_kind {
	TXBOX_CHANGE_ADDED = 0,
	TXBOX_CHANGE_MODIFIED,
	TXBOX_CHANGE_DELETED,
	TXBOX_CHANGE_TYPE_CHANGED,
	TXBOX_CHANGE_METADATA,
} txbox_change_kind;

typedef struct txbox_change {
	char *path; /* relative to the workspace; raw bytes (may be invalid UTF-8) */
	txbox_change_kind kind;
	const char *note; /* static string or NULL: how the change was published, when not as made */
} txbox_change;

typedef struct txbox_cmd_verdict {
	char **argv; /* NULL-terminated */
	char *decision;
	char *rule;
} txbox_cmd_verdict;

typedef struct txbox_decision {
	char *decision; /* "allow" | "hold" | "deny" */
	char *rule;
	char *reason;
	char *suggestion;
	txbox_cmd_verdict *commands;
	size_t ncommands;
	bool unresolved;
} txbox_decision;

/* The effect check: the transaction's actual changes judged by the
 * policy's `effects:` rules before its commit. */
typedef struct txbox_effects {
	char *decision; /* "allow" | "hold" | "deny" */
	char *rule;     /* NULL when no rule matched */
	char *reason;
	char *suggestion;
} txbox_effects;

typedef struct txbox_timings {
	double policy_ms, snapshot_ms, exec_ms, finish_ms, total_ms;
} txbox_timings;

typedef struct txbox_result {
	char *tx; /* transaction id, NULL when nothing was started */
	txbox_outcome outcome;
	txbox_decision decision;
	bool has_decision;
	bool ran;          /* the command was started */
	int exit_code;     /* valid when ran and !signaled */
	int signal;        /* 0 = none */
	bool has_validation;
	int validation_exit_code; /* -1 when not run */
	const char *rollback_reason; /* static string or NULL */
	const char *limit;           /* static string or NULL */
	char *stdout_buf;
	size_t stdout_len;
	bool stdout_truncated;
	char *stderr_buf;
	size_t stderr_len;
	bool stderr_truncated;
	txbox_change *changes;
	size_t nchanges;
	txbox_timings timings;
	txbox_limits limits;
	txbox_limit_mechanism limit_mechanism;
	bool network_host;
	char *error; /* message when outcome == TXBOX_ERROR or a rollback was forced by an error */
	int exit_status; /* what `txbox run` exits with (DESIGN.md section 3) */
	bool has_effects; /* the effect check ran (there were changes to judge) */
	txbox_effects effects;
} txbox_result;

/* Run one command as a transaction. Returns 0 when a result was produced
 * (whatever its outcome; even outcome == TXBOX_ERROR carries a result), or a
 * negative code with err set when not even a result could be made. */
int txbox_run(const txbox_run_opts *opts, txbox_result **out, txbox_error *err);

void txbox_result_free(txbox_result *res);

/* Render as the result JSON of DESIGN.md section 3. Invalid UTF-8 bytes in
 * strings are written as lone surrogates \udcXX (Python's "surrogateescape"),
 * so names round-trip byte for byte. Returns NULL on allocation failure. */
char *txbox_result_to_json(const txbox_result *res);

const char *txbox_outcome_name(txbox_outcome o);
const char *txbox_change_kind_name(txbox_change_kind k);

/* ---- check (classification only; never executes) ------------------------ */

typedef struct txbox_check_opts {
	const char *workspace;   /* NULL: current directory */
	const char *policy_file; /* NULL: built-in default */
	const char *const *argv;
	size_t argc;
	bool net; /* judge as `run --net` would: host networking granted */
} txbox_check_opts;

int txbox_check(const txbox_check_opts *opts, txbox_decision *out, txbox_error *err);
void txbox_decision_free(txbox_decision *d);
char *txbox_decision_to_json(const txbox_decision *d);

/* Validate a policy file; 0 when valid, else err names file:line:col. */
int txbox_policy_check(const char *path, txbox_error *err);

/* ---- held transactions ----------------------------------------------- */

/* Commit (commit = true) or roll back a transaction left open by a hold
 * decision. The result carries the outcome and, for a commit, the changes. */
int txbox_finish_held(const char *workspace, const char *state_dir, const char *txid, bool commit,
		      txbox_result **out, txbox_error *err);

/* ---- maintenance ------------------------------------------------------- */

/* Roll back transactions left behind by a killed txbox and finish or undo
 * interrupted commits. Returns the number of transactions recovered. */
int txbox_recover(const char *workspace, const char *state_dir, txbox_error *err);

#ifdef __cplusplus
}
#endif
