/* sandbox/: run a command isolated over a prepared overlay layer.
 *
 * The parent (txbox) clones pid 1 of new mount/PID/IPC/UTS(/net)(/user)
 * namespaces. That init builds the view (mounts.c): host read-only, the
 * workspace as an overlay at its own path, .txbox hidden, private /tmp,
 * fresh /proc, minimal /dev; then runs the command and the optional
 * validation command (init.c) and reports their statuses. The parent
 * captures output (capture.c), enforces the timeout and kills the whole
 * namespace on any exit path. */
#pragma once

#include "sandbox/harden.h"
#include "txbox.h"
#include "util/error.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The one gid a root-mode command's user namespace leaves unmapped (every
 * other uid and gid maps to itself): its capabilities do not reach an
 * inode of that group. txbox's lock files use it (tx/lock.h). 0xefffffff:
 * above every subordinate-id range useradd hands out, below systemd's
 * and NFS's special ids (nobody 65534, nfsnobody 4294967294) and outside
 * systemd's foreign-image range (0x7fff0000-0x7fffffff). */
#define SANDBOX_UNMAPPED_GID 4026531839u
/* gid_map lines: every id below it and above it (up to 4294967294). */
#define SANDBOX_GID_MAP "0 0 4026531839\n4026531840 4026531840 268435455\n"

typedef struct sandbox_spec {
	const char *workspace;    /* absolute canonical path of the workspace */
	const char *cwd;          /* absolute path inside the view to start in */
	const char *state_name;   /* the state dir's name inside the workspace (hidden in the view)... */
	const char *state_path;   /* ...or its absolute path when outside (then state_name is NULL) */
	const char *const *argv;  /* NULL-terminated */
	const char *shell_text;   /* argv are the words of this literal shell text (shell_literal_argv):
				   * if they cannot be exec'ed, /bin/sh -c runs it instead; or NULL */
	const char *validate;     /* shell text or NULL */
	const char *const *validate_argv; /* its words when it is literal (like shell_text), or NULL */
	char *const *envp;        /* the caller's environment, unfiltered: the supervisor filters it
				   * (secrets_filter_env with env_deny) while init builds the view,
				   * and sends init the result with the go-ahead */
	const char *const *env_deny; /* the policy's env_deny globs (NULL-terminated or NULL) */
	double timeout_sec;       /* <= 0: none */
	size_t output_limit;
	int passthrough_stdout, passthrough_stderr;
	bool network;             /* share the host network namespace */
	bool netns_from_supervisor; /* set by sandbox_start: the supervisor makes the network namespace
				     * (root: it can; init joins it with the go-ahead) */
	bool use_userns;          /* new user namespace (rootless, or hardening) */
	const char *const *masked_paths; /* NULL-terminated or NULL */
	const char *const *allowed_sockets; /* host Unix sockets kept reachable, by inode (unixguard.c;
					     * NULL-terminated or NULL) */
	const char *home;
	harden_opts harden;
	txbox_limits limits;
} sandbox_spec;

typedef struct sandbox_outcome {
	bool started;             /* the command was executed */
	int exit_code;            /* when started and !signal */
	int signal;
	bool validation_ran;
	int validation_exit;      /* exit code or 128+sig */
	bool timed_out;
	const char *limit;        /* "memory", "pids", "cpu", "output" or NULL */
	char limit_detail[256];   /* "could not be measured: …" when the limit was not measurable */
	txbox_limit_mechanism mechanism;
	char *out, *err;
	size_t out_len, err_len;
	bool out_truncated, err_truncated;
	double exec_ms;
	/* Init, once it has reported, exits (tearing down its namespaces) while
	 * the caller commits: sandbox_reap() waits for it and removes the
	 * cgroup. sandbox_outcome_free() reaps too. */
	pid_t init_pid;           /* 0 when already reaped */
	int init_pidfd;
	limits_cgroup *cgroup;
} sandbox_outcome;

/* The transaction's layer, known once the snapshot is taken. */
typedef struct sandbox_layer {
	const char *rel;          /* its dir relative to the state dir: "tx/<id>/layers/0" */
	int upper_fd;             /* the upper dir, for measuring the disk limit (or -1) */
	bool hide_state_by_whiteout; /* the upper holds a whiteout for .txbox (else a tmpfs hides it) */
	const char *txid;         /* names the cgroup */
	/* called once when the command has been started, to do work that can
	 * wait (deleting a spare's old layer) while the command runs; or NULL */
	void (*while_running)(void *arg);
	void *while_running_arg;
} sandbox_layer;

/* A sandbox is started before the layer exists: its init builds the parts
 * of the view that do not need it (private /tmp, /run, /dev, /proc, the
 * loopback interface) while the caller classifies the command and takes
 * the snapshot; sandbox_run_layer() hands it the layer, starts the command
 * and supervises it to the end. sandbox_abort() kills it unused (a denied
 * command, a failed snapshot). The spec must outlive the sandbox. */
typedef struct sandbox sandbox;
int sandbox_start(const sandbox_spec *spec, sandbox **out, txbox_error *err);
/* Returns 0 when the sandbox ran (whatever the command did), negative with
 * err set when it could not be set up. Frees sb either way. */
int sandbox_run_layer(sandbox *sb, const sandbox_layer *layer, sandbox_outcome *out, txbox_error *err);
void sandbox_abort(sandbox *sb);
void sandbox_outcome_free(sandbox_outcome *o);
/* Wait for the sandbox's init to be gone and remove its cgroup (idempotent). */
void sandbox_reap(sandbox_outcome *o);

/* ---- internal pieces (one file each) ---------------------------------- */

/* mounts.c: inside the new namespaces, build the view in three steps:
 * what needs no layer; once the layer exists, the overlay, masks and
 * socket covers; then the read-only pass (seal). Each returns 0 or -errno
 * with msg filled. */
typedef struct mounts_view {
	int ws_fd, state_fd;
	bool var_tmp;
	int read_layer_view_built; /* the read layer's helper waits for a word here, or -1 */
} mounts_view;
int mounts_view_begin(const sandbox_spec *spec, mounts_view *v, char *msg, size_t msglen);
int mounts_view_finish(const sandbox_spec *spec, mounts_view *v, const char *layer_rel, bool hide_by_whiteout,
		       char *msg, size_t msglen);
/* Last: the host read-only, the writable places writable again, chdir. */
int mounts_view_seal(const sandbox_spec *spec, mounts_view *v, char *msg, size_t msglen);
/* unshare(CLONE_NEWNET) and bring its loopback up: 0 or -errno. */
int mounts_new_netns(void);

/* userns.c: write uid/gid maps for child pid (identity map of the caller). */
int userns_write_maps(pid_t pid, uid_t uid, gid_t gid, txbox_error *err);
