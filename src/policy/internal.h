/* Internal types of the policy engine, shared by its files:
 *   yamltree.c  YAML text -> small node tree with line:col marks (libyaml)
 *   load.c      node tree -> validated rules and sandbox settings
 *   paths.c     lexical path resolution and classification
 *   cmdview.c   one command's argv normalised for matching (name, flags, operands)
 *   match.c     one rule against one command
 *   builtin.c   built-in detectors (fork bombs, look-alike command names)
 *   decide.c    policy_decide: every command, strictest wins, verdict text
 *   policy.c    lifetime, accessors, the compiled-in default policy */
#pragma once
#include "util/arena.h"

#include "policy/effects.h"
#include "policy/policy.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- limits ------------------------------------------------------------ */

#define POLICY_MAX_FILE_BYTES (1024 * 1024) /* whole policy file */
#define POLICY_MAX_RULES 10000
#define POLICY_MAX_LIST 4096   /* items in one list (globs, flags, paths) */
#define POLICY_MAX_STRING 4096 /* bytes of one scalar */
#define POLICY_MAX_DEPTH 32    /* YAML nesting */
#define POLICY_MAX_NODES 500000
#define POLICY_MAX_ID 64

/* ---- path classes (a path may carry several) ---------------------------- */

enum path_class {
	PC_INSIDE = 1u << 0,    /* strictly inside the workspace */
	PC_WORKSPACE = 1u << 1, /* the workspace root itself (or all of it: `*`) */
	PC_OUTSIDE = 1u << 2,   /* not inside and not the root */
	PC_ANCESTOR = 1u << 3,  /* contains the workspace (/, /work, ..) */
	PC_HOME = 1u << 4,      /* $HOME, inside it, containing it, or another user's home */
	PC_SYSTEM = 1u << 5,    /* /, /etc, /usr, /bin, /boot, /lib*, /sbin, /var, /opt, /srv, /root, /sys, /proc */
	PC_DEVICE = 1u << 6,    /* /dev/... except the harmless pseudo devices */
	PC_NETWORK = 1u << 7,   /* bash's /dev/tcp/... and /dev/udp/... */
	PC_TMP = 1u << 8,       /* /tmp, /var/tmp, /dev/shm */
	PC_PSEUDO = 1u << 9,    /* /dev/null, /dev/zero, /dev/std..., /dev/fd/..., /dev/tty, ... */
	PC_OTHER = 1u << 10,    /* outside and none of the above */
	PC_UNKNOWN = 1u << 11,  /* cannot be resolved statically */
	PC_CLIMB = 1u << 12,    /* outside, reached from the workspace by a relative path (`../x`,
				 * `cd .. && … x`): a neighbour of the workspace, whatever it is */
};

/* Name -> class bit, 0 when unknown. */
unsigned path_class_from_name(const char *name);
/* "inside, outside" style text of a class set, into buf. */
const char *path_class_describe(unsigned classes, char *buf, size_t size);

/* Resolve word (as it would be given to a command) to an absolute, lexically
 * normalised path: `~` against home, relative against cwd, `.`/`..` folded.
 * Returns a malloc'd string, or NULL when it cannot be resolved (e.g. `~`
 * with no home) or on allocation failure. */
char *path_resolve(const char *word, const char *cwd, const char *home);
/* path is dir or below it (both absolute, normalised). */
bool path_within(const char *path, const char *dir);
/* A word resolved against the current directory: not absolute, not `~…`
 * except bash's `~+` ($PWD). */
bool path_is_relative(const char *word);
/* Classify a resolved absolute path. `glob_tail` is set when the word had
 * glob characters: `abs` is then the literal directory prefix and `wild_all`
 * says the wildcard covers all of it (`*`). */
unsigned path_classify(const char *abs, const char *workspace, const char *home, bool glob,
		       bool wild_all);
/* Resolve and classify one word; *resolved gets the malloc'd path (may be NULL).
 * ctx->cwd NULL means the current directory is unknown (after `cd "$x"`). */
unsigned path_classify_word(const char *word, bool unresolved, const policy_ctx *ctx,
			    char **resolved);

/* ---- rules ------------------------------------------------------------- */

typedef struct strlist {
	char **v; /* NULL-terminated; in the policy's arena */
	size_t n, cap;
} strlist;

typedef struct pathcond {
	bool set;
	unsigned classes;
	strlist globs; /* absolute or ~-relative globs on the resolved path */
} pathcond;

typedef struct optpath {
	char *key; /* "of", "--output", "-o" */
	pathcond cond;
} optpath;

enum builtin_check {
	BUILTIN_FORK_BOMB = 1u << 0,        /* line text: a function that runs itself in a pipe/background */
	BUILTIN_NON_ASCII_COMMAND = 1u << 1, /* command name with non-ASCII (look-alike) characters */
	BUILTIN_DIR_PATHSPEC = 1u << 2,     /* a pathspec operand naming a directory (or unknown) */
};

/* Where a rule's harm lands, for deciding whether a word that cannot be
 * resolved is a reason to hold (`effect:` of a rule; one string table in
 * load.c). */
typedef enum rule_effect {
	EFFECT_HOST = 0,  /* outside the workspace on this machine: the sandbox contains it */
	EFFECT_WORKSPACE, /* in the workspace, which is committed */
	EFFECT_REMOTE,    /* through the network or a host socket */
	EFFECT_COUNT,
} rule_effect;

const char *rule_effect_name(rule_effect e);

typedef struct rule_match {
	strlist command, command_not;
	strlist *subcommands; /* alternatives, each a word sequence */
	size_t nsubcommands;
	strlist flags, flags_any, flags_none;
	strlist args, args_all, words, words_all;
	bool icase;
	pathcond paths, dest, redirects, reads;
	optpath *options;
	size_t noptions;
	long nargs_min, nargs_max; /* -1: not set */
	strlist with, via;
	strlist text; /* globs on the whole command line text (icase applies) */
	int unresolved; /* -1: not set */
	unsigned builtins;
	rule_effect effect;
} rule_match;

typedef struct rule {
	char *id;
	policy_decision decision;
	char *reason;
	char *suggestion;
	rule_match m;
	size_t line; /* where it was defined */
} rule;

typedef struct cmd_hint {
	char *name;
	strlist value_options; /* options that consume the next word */
} cmd_hint;

/* One rule of the `effects:` section (effects.c): a predicate on what a
 * transaction actually changed, checked before its commit. */

typedef struct effect_rule {
	char *id;
	policy_decision decision;
	char *reason;
	char *suggestion;
	strlist paths;         /* workspace-relative globs; "!glob" excludes */
	unsigned kinds;        /* bits 1 << txbox_change_kind; 0: any */
	uint64_t deleted_min;  /* 0: not set */
	double deleted_share;  /* of the files in the git index; 0: not set */
	unsigned git;          /* enum effect_git: any of them */
	unsigned found;        /* enum effect_found: any of them */
	strlist git_config;    /* globs on changed git config keys (section[.sub].key) */
	bool policy_file;      /* the --policy file, when inside the workspace */
	size_t line;
} effect_rule;

struct policy {
	rule *rules;
	size_t nrules;
	cmd_hint *hints;
	size_t nhints;
	policy_decision unresolved;
	policy_sandbox sandbox;
	arena mem; /* every string and array above */
	bool builtin; /* static data compiled into the binary (treegen.c): never freed */
	effect_rule *effects; /* the `effects:` section, in file order */
	size_t neffects;
};

/* ---- YAML tree ----------------------------------------------------------- */

typedef enum ynode_type {
	YN_SCALAR = 0,
	YN_SEQ,
	YN_MAP,
} ynode_type;

typedef struct ynode {
	ynode_type type;
	size_t line, col; /* 1-based */
	char *value;      /* scalars: NUL-terminated */
	size_t len;
	bool plain;            /* unquoted scalar */
	struct ynode **items;  /* seq: items; map: key, value, key, value, ... */
	size_t n, cap;
} ynode;

/* Parse buf into *root (NULL for an empty document). Errors name name:line:col. */
/* Parse into a tree allocated in mem (freed with it, also on failure). */
int ytree_parse(const char *name, const char *buf, size_t len, arena *mem, ynode **root, txbox_error *err);

/* ---- loading -------------------------------------------------------------- */

int policy_from_tree(const char *name, const ynode *root, policy **out, txbox_error *err);
void policy_sandbox_set_defaults(policy_sandbox *s, arena *mem);
extern const char policy_default_yaml[];
extern const size_t policy_default_yaml_len;
/* The same policy as a parsed tree (generated by treegen.c at build time). */
/* cache.c: policy files' compiled forms in the user's cache dir (dir_fd
 * from policy_cache_open(), -1: no cache). Open tries the n candidate base
 * dirs (absolute paths; NULL skipped) in turn and takes the first outside
 * the workspace ws_fd and every other workspace. Load returns NULL unless
 * an entry holds exactly this text, was written by this build, and reads
 * back whole and sane. */
int policy_cache_open(int ws_fd, const char *const *bases, size_t n);
policy *policy_cache_load(int dir_fd, const char *text, size_t len);
void policy_cache_store(int dir_fd, const char *text, size_t len, const policy *p);
/* load.c: changes whenever the loader (and its defaults) is rebuilt */
extern const char policy_loader_build[];
/* The serialized form alone (for tests and fuzzing): encode allocates. */
int policy_cache_encode(const policy *p, char **blob, size_t *len);
policy *policy_cache_decode(const char *blob, size_t len);

/* The built-in policy, compiled at build time (treegen.c). */
extern policy *const policy_default_compiled;

/* ---- command view ---------------------------------------------------------- */

typedef struct cmdview cmdview;
struct cmdview {
	const shell_cmd *cmd;
	char **words;       /* normalised argv (look-alike dashes folded, zero-width dropped,
			     * split at Unicode spaces); words[0] is the command as written */
	bool *unknown;      /* per word */
	bool *is_value;     /* per word: the value of an option before it (-C DIR) */
	char *value_of;     /* per word: the short option letter it is the value of, or 0 */
	const cmd_hint *hint; /* the policy's `commands:` entry for this command, or NULL */
	size_t nwords;
	const char *name;   /* basename of words[0] */
	bool name_unknown;
	bool name_non_ascii;
	bool short_flags[256];
	size_t *positional; /* indexes into words */
	bool *pos_unknown;
	size_t npositional;
	bool dashdash; /* a `--` ended the options */
	size_t dashdash_at; /* index of that `--`, else nwords */
	size_t start;       /* index of the command name (after trivial wrappers) */
	bool implicit_unknown_operand; /* xargs / find -exec: operands come from elsewhere */
	const cmdview *operand_source; /* a `find` earlier in the line feeding those operands */
};

int cmdview_init(cmdview *v, const policy *p, const shell_cmd *cmd);
void cmdview_free(cmdview *v);
/* Is the flag spec (or one of its spellings) present: "-x" (short, any grouping), "--long" (exact,
 * `--long=`, or an abbreviation if abbrev), "-word" (find/terraform style: exact,
 * `-word=`, `--word`), "--" (end of options). */
bool cmdview_has_flag(const cmdview *v, const char *spec, bool abbrev);
/* Spellings of one flag or option separated by '|' ("-f|--force"): copies
 * the next one at *p into buf and moves *p on; false at the end. */
bool spelling_next(const char **p, char *buf, size_t size);
/* Value of option key in the command: `key=VAL` (dd style), `--long=VAL`,
 * `--long VAL`, `-xVAL`, `-x VAL`. Iterates with *pos (start at 1). */
const char *cmdview_option_value(const cmdview *v, const char *key, size_t *pos, bool *unknown);
/* The destination is given by an option (cp/mv/ln/install -t DIR, per the
 * command's hint), so the last operand is one more source. */
bool cmdview_target_option(const cmdview *v);

/* ---- matching -------------------------------------------------------------- */

typedef struct match_ctx {
	const policy *p;
	const policy_ctx *ctx;
	const shell_analysis *a;
	const cmdview *views; /* all commands of the line, for `with` */
	size_t nviews;
	size_t self;
	const char *text; /* the whole line */
	/* per-rule caches of line-level facts (index: rule), -1 = not computed:
	 * how many commands of the line match `with`; whether `text` matches */
	long *with_count;
	signed char *text_hit;
} match_ctx;

typedef struct match_result {
	bool matched;
	bool unknown_only; /* a condition held only through words that cannot be resolved */
	const char *unknown_word; /* the first such word (in the command view), or NULL */
	char *detail;      /* malloc'd: the offending word / path, or NULL */
} match_result;

/* Does rule r match command mc->views[mc->self]? Returns <0 on allocation failure. */
int rule_match_cmd(const rule *r, const match_ctx *mc, match_result *res);

/* ---- built-in detectors ----------------------------------------------------- */

bool builtin_fork_bomb(const char *text, size_t len);
/* The same on shell text with quoted strings blanked out (they are data). */
bool builtin_fork_bomb_unquoted(const char *text, size_t len);
bool builtin_non_ascii(const char *s);
/* Fold look-alike characters of one word into words appended to *out:
 * Unicode dashes -> '-', zero-width characters dropped, Unicode spaces split. */
int builtin_normalise_word(const char *w, char ***out, size_t *n, size_t *cap);
