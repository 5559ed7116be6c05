/* sandbox/harden: the last steps before exec inside the sandbox — rlimits,
 * capability drop, no_new_privs, Landlock, seccomp — and the parent-side
 * cgroup limits. (Interface fixed by the core; implementation in
 * seccomp.c, landlock.c, limits.c, caps.c, secrets.c.) */
#pragma once

#include "txbox.h"
#include "util/error.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct harden_opts {
	const char *workspace;         /* absolute path of the workspace view (writable) */
	const char *const *writable;   /* NULL-terminated extra writable paths (/tmp, /dev/null, …) */
	bool network;                  /* host networking granted: do not restrict TCP in Landlock */
	bool in_userns;                /* running inside a user namespace already */
	bool keep_namespaced_caps;     /* root of its own identity-mapped user namespace: its
					* capabilities only reach what that namespace owns,
					* so keep them (root inside behaves like root natively
					* on the workspace, and has no power over the host) */
	bool allow_extra_socket_families; /* policy grants families beyond unix/inet/inet6 */
	/* rlimits; 0 = leave as is */
	uint64_t cpu_seconds, address_space_bytes, nofile, nproc, fsize_bytes;
	bool no_core;                  /* RLIMIT_CORE = 0 (default true) */
	const void *seccomp_bpf;       /* precompiled filter (harden_seccomp_precompile) or NULL */
	size_t seccomp_bpf_len;
	/* Fail-closed reading (secrets_read_layer_start): a Landlock ruleset a helper
	 * fills while the command starts, and a socket on which it says it is
	 * done (one NUL byte) or why it failed (text); EOF alone means it died.
	 * Only when read_layer is set. */
	bool read_layer;
	int read_ruleset, read_ready;
} harden_opts;

/* Compile the seccomp filter for o ahead of time (malloc'ed BPF). */
int harden_seccomp_precompile(const harden_opts *o, void **bpf, size_t *len, txbox_error *err);

/* Called in the sandboxed process right before execve(). Applies, in this
 * order: rlimits, capability drop (all sets, bounding and ambient; when not
 * in a user namespace), PR_SET_NO_NEW_PRIVS, Landlock (when the kernel has
 * it; landlock_abi reported via *abi_out), seccomp. On failure returns a
 * negative code; the caller reports it to the parent and exits. */
int harden_child_apply(const harden_opts *o, int *abi_out, txbox_error *err);

/* Landlock ABI version of this kernel, 0 when absent. */
int landlock_probe_abi(void);

/* ---- secrets ----------------------------------------------------------- */

/* Inside the sandbox's mount namespace, once its view is complete: hide
 * the built-in credential stores in each of the caller's homes ($HOME, the
 * password database's home of the real uid, any home containing the
 * workspace) and where the caller's environment envp moved them
 * (XDG_CONFIG_HOME, KUBECONFIG, ...), every other user's home, the system's
 * secrets, and paths (globs; "~/" in every home of the caller; "!X" keeps
 * a built-in X visible). The workspace and its ancestors are never hidden.
 *
 * With Landlock, reading is fail-closed: a forked helper builds a ruleset
 * letting read and execute only what each directory on the way to a hidden
 * name held when the view was built, minus the hidden names (a file
 * created or renamed in later is unreadable), and makes the masks inside
 * the workspace (mounts). secrets_read_layer_start forks it as init
 * starts (in init's mount namespace, its user namespace's maps written;
 * ws_fd: the workspace opened before the view changed anything); it
 * finds the homes and canonicalises the patterns at once (what the view
 * replaces — /tmp, /dev, /proc, the workspace's path — it either sees
 * as the host has it or not at all, and the walk after the view decides)
 * and waits for
 * secrets_read_layer_view_built (*view_built) before the rest.
 * ho->read_* are set, and each command applies the ruleset
 * (harden_landlock_read_apply) once the helper is done. Without Landlock
 * it does nothing (*view_built = -1): call secrets_mask_paths_by_mounts
 * once the view is built. */
int secrets_read_layer_start(const char *const *paths, const char *home, int ws_fd, const char *workspace,
			     const char *const *envp, harden_opts *ho, int *view_built, txbox_error *err);
/* Before init's first mount: the helper has copied init's mount
 * namespace (it resolves the host's paths there, then comes back). */
void secrets_read_layer_copy_made(int view_built);
int secrets_read_layer_view_built(int *view_built);

/* In the command's child, before it closes its descriptors: move the read
 * layer's two to lowfd and lowfd + 1 (close-on-exec). Returns how many it
 * keeps there (0 or 2). */
int harden_keep_read_layer_fds(harden_opts *o, int lowfd);

/* In the command's child (no_new_privs set): wait until the read layer is
 * complete, then restrict the calling thread with it. No-op without one. */
int harden_landlock_read_apply(const harden_opts *o, txbox_error *err);

/* The fallback: directories become an empty read-only directory, anything
 * else an empty read-only file, at every mount showing it; a store the host
 * replaces by rename or creates while the command runs is not hidden. */
int secrets_mask_paths_by_mounts(const char *const *paths, const char *home, const char *workspace,
				 const char *const *envp, txbox_error *err);

/* Return a new NULL-terminated environment without the variables that
 * carry credentials: names matching a built-in glob or a glob in deny
 * (fnmatch, case-insensitive), and values that hold a URL password, a
 * well-known token, a JWT or a private key. Caller frees with
 * secrets_env_free. */
char **secrets_filter_env(char *const *envp, const char *const *deny, txbox_error *err);
void secrets_env_free(char **env);

/* ---- cgroups (parent side) --------------------------------------------- */

typedef struct limits_cgroup limits_cgroup;

/* Create a cgroup for one transaction with the given limits (cgroup v2 when
 * delegated/writable, else v1 memory+pids, else NULL with mechanism RLIMIT).
 * Never fails hard: on any problem returns NULL and sets *mech = RLIMIT. */
limits_cgroup *limits_cgroup_create(const char *txid, const txbox_limits *lim,
				    txbox_limit_mechanism *mech, txbox_error *warn);
/* Move pid into the cgroup (before it execs anything). */
int limits_cgroup_attach(limits_cgroup *cg, pid_t pid, txbox_error *err);
/* Joining a cgroup v1 by writing another process's pid takes the global
 * threadgroup lock, whose first writer after a quiet spell waits for an RCU
 * grace period (5-20 ms); a thread moving itself by writing "0" to a
 * hierarchy's `tasks` file does not. So the sandbox's init joins v1 by
 * itself: these are the files (allocated paths, at most max; returns how
 * many, none for v2, negative when they cannot all be listed). limits_cgroup_attach_parent_side() does the rest
 * (v2: moving pid from here). */
ssize_t limits_cgroup_self_join_files(const limits_cgroup *cg, char **out, size_t max); /* -ENOMEM */
int limits_cgroup_attach_parent_side(limits_cgroup *cg, pid_t pid, txbox_error *err);
/* After the sandbox ended: which limit was hit, if any ("memory", "pids", "cpu") or NULL. */
const char *limits_cgroup_exceeded(limits_cgroup *cg);
/* Whether the cgroup used up the CPU budget. It counts every process that
 * ever ran in it: the supervisor polls it during the run, since /proc
 * never shows the time of children reaped by nobody (a parent ignoring
 * SIGCHLD). */
bool limits_cgroup_cpu_over(const limits_cgroup *cg);
/* Kill everything left in it and remove it. NULL-safe. */
void limits_cgroup_destroy(limits_cgroup *cg);
/* Remove txbox cgroups left behind by a killed txbox: empty txbox-* cgroups
 * (older than a minute, so a concurrent txbox's fresh one is spared) under
 * the txbox parent of every hierarchy in use. Non-empty ones are left alone.
 * Returns how many were removed, or a negative code. */
int limits_cgroup_reap_stale(txbox_error *err);
