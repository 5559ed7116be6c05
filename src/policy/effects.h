/* effects: the `effects:` section of a policy, checked against what a
 * transaction actually changed (its layer), whatever the command text was.
 * Pure: the caller (tx/effects.c) gathers the facts from the layer and the
 * workspace; this file only decides. Also the bounded git config reader
 * those facts need (hostile input). */
#pragma once

#include "policy/policy.h"
#include "txbox.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What a transaction did to git history (match.git of an effect rule). */
enum effect_git {
	/* a ref gone: loose file deleted or no longer a regular file holding a
	 * ref, packed-refs line lost; or moved off a commit that nothing (not
	 * its reflog, no branch, tag or HEAD) keeps */
	EFFECT_GIT_REFS_DELETED = 1u << 0,
	EFFECT_GIT_REFLOG_DELETED = 1u << 1, /* a reflog deleted, truncated or rewritten */
	EFFECT_GIT_PACKS_DELETED = 1u << 2,  /* a pack or its index (objects/pack/NAME.{pack,idx}) deleted */
	EFFECT_GIT_OBJECTS_DELETED = 1u << 3, /* loose objects deleted */
	EFFECT_GIT_SHALLOW_CHANGED = 1u << 4, /* .git/shallow added, changed or deleted */
	/* a loose object, pack or pack index whose content changed or that is
	 * no longer a regular file: objects are immutable, so it is loss */
	EFFECT_GIT_OBJECTS_REWRITTEN = 1u << 5,
	/* a stash entry gone (drop, clear, pop, the files removed) while
	 * a commit the stash recorded is reachable from no branch, tag or HEAD */
	EFFECT_GIT_STASH_DROPPED = 1u << 6,
	/* a config change that sends an existing remote's fetches, pushes or
	 * credentials elsewhere (gitconfig_redirect) */
	EFFECT_GIT_REMOTE_REDIRECTED = 1u << 7,
	/* a tracked file with edits git had not recorded (its content before
	 * the transaction was not the index's blob) deleted, or rewritten to a
	 * version git had recorded (the index's blob, or any object of the
	 * repository: `git checkout -- f`, `git restore --source=HEAD`),
	 * unless those edits were saved (a stash made now holds their blob)
	 * or moved (a file added now holds them) */
	EFFECT_GIT_WORK_DISCARDED = 1u << 8,
	/* .git/info/exclude gained a pattern that covers a tracked path
	 * (git status and `git add -A` then skip what is created there) */
	EFFECT_GIT_TRACKED_HIDDEN = 1u << 9,
};
#define EFFECT_GIT_KINDS 10

/* What a changed file's content does when a tool runs next (match.found of
 * an effect rule): judged from the old and new content, bounded. */
enum effect_found {
	/* an existing file of an installed dependency tree that runs as a
	 * command or at interpreter start (node_modules/.bin files, a
	 * virtualenv's bin/ scripts, site-packages *.pth and
	 * sitecustomize/usercustomize) changed while no installer record of
	 * that tree changed with it (npm's node_modules/.package-lock.json,
	 * pnpm's .modules.yaml, yarn's state, a dist-info RECORD, pyvenv.cfg; a
	 * virtualenv is known by pyvenv.cfg, bin/activate or its name) */
	EFFECT_FOUND_DEPENDENCY_CODE = 1u << 0,
	/* a package.json `scripts` lifecycle hook (pre*, post*, prepare,
	 * install, ...) added or changed: npm runs it by itself */
	EFFECT_FOUND_LIFECYCLE_SCRIPT = 1u << 1,
	/* a conftest.py whose code run at import or by pytest's start hooks
	 * gained a call that runs a program or dynamic code, or a pytest
	 * config (pytest.ini, setup.cfg, tox.ini, pyproject.toml) whose
	 * addopts gained `-p` (a plugin loaded by name) */
	EFFECT_FOUND_TEST_AUTORUN = 1u << 2,
};
#define EFFECT_FOUND_KINDS 3

/* One changed entry at file granularity (a directory moved whole by the
 * commit is listed with everything beneath it). */
typedef struct effect_change {
	const char *path; /* workspace-relative */
	txbox_change_kind kind;
	bool dir;
	/* A regular file whose content is gone though its name stays: replaced
	 * by another type, or emptied. Counted with the deletions (deleted_min,
	 * deleted_share); a file cut down counts by effect_facts.lost. */
	bool destroyed;
} effect_change;

typedef struct effect_facts {
	const effect_change *changes;
	size_t nchanges;
	/* NULL, or for each change NULL or, inside a git dir known by its
	 * content (a bare repository), its path as if that dir were named
	 * `.git`: path rules match that instead */
	const char *const *aliases;
	/* NULL, or for each change the share of its bytes gone though its
	 * name stays (0..1; 1 when destroyed): a file cut down counts as that
	 * much of a deletion for deleted_min/deleted_share */
	const float *lost;
	bool incomplete;       /* the change list was cut at its limit: path rules cannot be trusted */
	uint64_t tracked;      /* files in the git index; 0: unknown (no git) */
	unsigned git;          /* enum effect_git seen */
	/* for each bit of git: the first file that showed it (for
	 * remote-redirected: the key and its old and new value), or NULL */
	const char *git_path[EFFECT_GIT_KINDS];
	unsigned found;        /* enum effect_found seen */
	const char *found_path[EFFECT_FOUND_KINDS]; /* the first file of each, or NULL */
	const char *const *config_keys; /* git config keys added, changed or removed */
	size_t nconfig_keys;
	/* KEY=VALUE for each value a changed key gained (gitconfig_gained),
	 * matched by git_config globs that have a '=' */
	const char *const *config_values;
	size_t nconfig_values;
	bool config_unreadable; /* a changed git config could not be read or parsed */
	const char *policy_rel; /* the --policy file relative to the workspace, or NULL */
} effect_facts;

/* Which facts the policy's rules look at (the rest need not be gathered). */
enum {
	EFFECT_NEED_CHANGES = 1u << 0,
	EFFECT_NEED_TRACKED = 1u << 1,
	EFFECT_NEED_GIT = 1u << 2,
	EFFECT_NEED_CONFIG = 1u << 3,
	EFFECT_NEED_FOUND = 1u << 4,
};
unsigned policy_effects_needs(const policy *p);

typedef struct effect_verdict {
	policy_decision decision;
	char *rule;       /* NULL when no rule matched */
	char *reason;     /* the rule's reason and what matched */
	char *suggestion;
} effect_verdict;

/* The strictest matching rule decides (the first in file order among
 * equals); no match: allow. Returns -ENOMEM only. */
int policy_effects_check(const policy *p, const effect_facts *f, effect_verdict *out);
void effect_verdict_free(effect_verdict *v);

/* Does a workspace-relative path match an effects glob? A glob without '/'
 * matches the last component at any depth; `**` matches any number of
 * components (also none). */
bool effect_glob_match(const char *glob, const char *path);

/* ---- git config (the subset of git's syntax that it accepts) ---- */

typedef struct gitconfig_entry {
	char *key;   /* section[.subsection].name: section and name lowercased */
	char *value; /* NULL: a bare key (boolean true) */
} gitconfig_entry;

#define GITCONFIG_MAX_BYTES (1024 * 1024)
/* -EINVAL: not a config git would read; -E2BIG: over the limit; -ENOMEM. */
int gitconfig_parse(const char *buf, size_t len, gitconfig_entry **out, size_t *n);
void gitconfig_free(gitconfig_entry *e, size_t n);
/* The distinct keys whose set of values differs between a and b (sorted
 * in place): NULL-terminated, malloc'd strings in one malloc'd array. */
int gitconfig_changed_keys(gitconfig_entry *a, size_t na, gitconfig_entry *b, size_t nb, char ***keys,
			   size_t *nkeys);

/* Does the change from config a to b (both sorted by
 * gitconfig_changed_keys, which gave keys) redirect an existing remote:
 * url/pushurl of a remote changed, or removed but not renamed, url.*.insteadOf or
 * pushInsteadOf, http transport keys (proxy, TLS, extra headers,
 * cookies), lfs urls, a submodule's url changed, or a branch or
 * remote.pushDefault made to name a remote other than the one it named
 * or the default one (origin or remote.pushDefault), compared by urls so
 * that a rename keeps them? A new repository's config redirects nothing
 * but by insteadOf and transport keys. 1 with *what
 * (malloc'd: "key old -> new", printable), 0, or -ENOMEM. */
enum gitconfig_role {
	GITCONFIG_REPO,     /* a repository's own config */
	GITCONFIG_NEW_REPO, /* the config of a repository the change made (clone, init) */
	/* a config git merges with a repository's (config.worktree, a user's):
	 * the remotes it names are defined elsewhere, so every redirecting
	 * key is held */
	GITCONFIG_OVERLAY,
};
int gitconfig_redirect(const gitconfig_entry *a, size_t na, const gitconfig_entry *b, size_t nb,
		       const char *const *keys, size_t nkeys, enum gitconfig_role role, char **what);

/* The values each changed key gained from config a to b (both sorted by
 * gitconfig_changed_keys), as "KEY=VALUE" (a bare key: "KEY=true"), for
 * git_config globs with '='; turning pruning on (fetch.prune,
 * remote.NAME.prune) also counts the fetch refspecs it covers as gained.
 * For a GITCONFIG_NEW_REPO only remote.* and fetch.* keys. NULL-terminated,
 * malloc'd; 0 or -ENOMEM. */
int gitconfig_gained(const gitconfig_entry *a, size_t na, const gitconfig_entry *b, size_t nb,
		     const char *const *keys, size_t nkeys, enum gitconfig_role role, char ***vals, size_t *nvals);

/* ---- package.json (a bounded JSON reader) ---- */

/* The string members of the top-level "scripts" object of a package.json
 * text (as JSON.parse: the last of duplicate keys wins; escapes decoded;
 * a leading byte-order mark skipped), as entries (key: the script name).
 * -EINVAL: not JSON with an object at the top; -E2BIG: nested deeper than
 * 128 or over 10,000 scripts; -ENOMEM. */
int pkgjson_scripts(const char *buf, size_t len, gitconfig_entry **out, size_t *n);
/* Did a script npm runs by itself (install, prepare, dependencies, a
 * pre/post hook of a lifecycle event or of another script) gain or change
 * its command from scripts a to b? 1 with *name (in b), or 0. */
int pkgjson_hook_changed(const gitconfig_entry *a, size_t na, const gitconfig_entry *b, size_t nb, const char **name);
