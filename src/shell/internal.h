/* Internal interface of src/shell/: shared between lexer, word expansion,
 * parser, unwrapping and interpreter-string scanning. Nothing here is
 * exported outside the module. */
#pragma once

#include "shell/shell.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Hard bound on syntactic nesting ((…), {…}, $(…), if/while, ${…}): keeps
 * recursion (and so stack use) bounded whatever the input. */
#define SH_MAX_NEST 100
/* Bounds on brace expansion of one word. */
#define SH_MAX_FIELDS 65536
#define SH_MAX_FIELD_BYTES (4u << 20)

/* ---- growable buffers (buf.c) ----------------------------------------- */

/* Byte buffer; on allocation failure it sets oom and ignores further writes. */
struct sbuf {
	char *s;
	size_t len, cap;
	bool oom;
};

void sbuf_putc(struct sbuf *b, char c);
void sbuf_put(struct sbuf *b, const char *s, size_t n);
void sbuf_puts(struct sbuf *b, const char *s);
/* Returns the NUL-terminated string (ownership to caller) or NULL on OOM. */
char *sbuf_take(struct sbuf *b);
void sbuf_free(struct sbuf *b);

/* Grow *p (array of elsz-byte elements, capacity *cap) to hold need. */
int sh_vec_reserve(void **p, size_t *cap, size_t need, size_t elsz);

/* Word cells: bytes with per-byte flags (quoting, expansion). */
enum {
	CF_QUOTED = 1u << 0, /* quoted/escaped: not special for braces or globs */
	CF_EXP = 1u << 1,    /* raw text of an expansion whose value is unknown */
	CF_HOME = 1u << 2,   /* "~" standing for $HOME / ${HOME} */
	CF_PWD = 1u << 4,    /* with CF_HOME: "~+" standing for $PWD / ${PWD} */
};

struct cells {
	char *c;
	uint8_t *f;
	size_t len, cap;
	bool oom;
};

void cells_add(struct cells *w, char c, uint8_t f);
void cells_addn(struct cells *w, const char *s, size_t n, uint8_t f);
void cells_free(struct cells *w);

/* ---- parse results ------------------------------------------------------ */

/* One argument after expansion (a word may give several through braces). */
struct sh_field {
	char *text;
	bool unres;     /* contains an expansion that cannot be known */
	bool lookalike; /* unquoted Unicode space / zero-width / dash look-alike */
	bool lookalike_q; /* look-alike inside quotes (matters in command names) */
	bool procsub;   /* contains <(…) or >(…) */
	bool env_only;  /* unres only through $NAME / ${NAME} of variables this text never
			 * sets, read in straight-line top-level code, with static text too */
	bool env_values; /* unres only through such variables, static text or not */
	bool glob;      /* an unquoted * or ?, or [ with a later ]: pathname expansion */
	size_t sub_begin, sub_end; /* nodes produced by substitutions inside the word */
};

struct sh_redir_raw {
	int op;        /* enum sh_rop */
	int fd;        /* explicit fd, -1 default, -2 {var} */
	char *target;  /* file or dup target, heredoc delimiter */
	bool unres;
	bool procsub;
	/* here-documents and here-strings */
	bool here;
	bool here_quoted; /* quoted delimiter: body is literal */
	bool here_filled;
	char *body;
	bool body_unres;
	size_t sub_begin, sub_end;
};

struct sh_node {
	struct sh_field *argv;
	size_t argc, cap;
	struct sh_redir_raw **redirs;
	size_t nredirs, rcap;
	char *via;
	unsigned depth;
	unsigned pipe_id, pipe_idx;
	bool stdin_piped;
	bool compound_redirs; /* redirections of a compound command */
	/* NAME=VALUE prefixes whose variable names a command (PAGER, EDITOR,
	 * GIT_SSH_COMMAND, …) or sets up a shell or git (BASH_ENV,
	 * GIT_CONFIG_COUNT, …): what the command may run */
	struct sh_field *env_cmds;
	size_t nenv_cmds;
};

struct sh_nodes {
	struct sh_node *v;
	size_t n, cap;
};

void sh_node_free(struct sh_node *n);
void sh_nodes_free(struct sh_nodes *ns);
void sh_field_free(struct sh_field *f);

/* ---- shared analysis state --------------------------------------------- */

struct sh_ctx {
	size_t max_length;
	unsigned max_depth;
	size_t max_nodes;
	size_t nodes_used;
	unsigned pipe_seq;
	unsigned wrap_nest; /* nested wrapper unwrapping (bounded) */
	size_t loop_bytes;  /* loop body text re-read once per bound value (bounded) */
	char *chdir;        /* directory commands emitted now run in (env -C …), or NULL */
	bool chdir_unres;
	txbox_error *err;
	shell_analysis *out;
	size_t out_cap;
	struct sh_body *bodies; /* here-documents cat/tee copy out (steps.c) */
	size_t nbodies;
};

/* Count n units against max_nodes; fails with -E2BIG. */
int sh_budget(struct sh_ctx *ctx, size_t n);

/* ---- lexer / parser (lexer.c, word.c, parser.c) ------------------------ */

enum sh_tk {
	TK_EOF = 0,
	TK_NEWLINE,
	TK_WORD,
	TK_SEMI,
	TK_AMP,
	TK_AND,
	TK_OR,
	TK_PIPE,
	TK_PIPEAMP,
	TK_LPAREN,
	TK_RPAREN,
	TK_DLPAREN,
	TK_DSEMI,
	TK_SEMIAMP,
	TK_DSEMIAMP,
	TK_REDIR,
};

enum sh_rop {
	R_LT = 0, /* <   */
	R_GT,     /* >   */
	R_DGT,    /* >>  */
	R_CLOBBER,/* >|  */
	R_LTGT,   /* <>  */
	R_AMPGT,  /* &>  */
	R_AMPDGT, /* &>> */
	R_GTAMP,  /* >&  */
	R_LTAMP,  /* <&  */
	R_DLT,    /* <<  */
	R_DLTDASH,/* <<- */
	R_TLT,    /* <<< */
};

/* A word as read from the text, before brace expansion. */
struct sh_word {
	struct cells cells;
	size_t start, end; /* byte span in the parser's text */
	bool unres;
	bool unres_other;  /* an unknown part other than an environment variable's value */
	bool quoted;       /* any quoting character took part */
	bool lookalike;
	bool lookalike_q;  /* look-alike inside quotes */
	bool procsub;
	size_t sub_begin, sub_end;
};

struct sh_tok {
	enum sh_tk t;
	size_t pos;
	struct sh_word w; /* TK_WORD */
	int rop;          /* TK_REDIR */
	int fd;           /* TK_REDIR: -1 none, -2 {var} */
};

struct sh_pending {
	struct sh_redir_raw *r;
	char *delim;
	bool strip_tabs;
};

/* Simple variables assigned earlier in the same text (vars.c). */
struct sh_var {
	char *name;
	char *value; /* NULL: poisoned (assigned in a way we cannot follow) */
};

struct sh_vars {
	struct sh_var *v;
	size_t n, cap;
	bool all_poisoned;
	/* assignments of the current top-level statement, committed when it
	 * turns out to run in the current shell unconditionally */
	struct sh_var *pend;
	size_t npend, pcap;
	/* a loop variable being bound (for NAME in …): set watch_hit when
	 * anything may assign it, even once the rest is poisoned */
	const char *watch;
	size_t watch_len;
	bool watch_hit;
	/* a function or alias may have been defined (definition, alias, source,
	 * eval, a computed command): calling a command may assign anything */
	bool defines;
};

/* A loop variable bound to one word of its static list while the loop body
 * is read (parse_for); value NULL hides an outer binding of the name. */
struct sh_bind {
	const char *name;
	size_t len;
	const char *value;
	const struct sh_bind *up;
	bool pattern; /* value is a pathname pattern of the list: a path it matches, even unquoted */
};

struct sh_parser {
	struct sh_ctx *ctx;
	struct sh_vars *vars; /* NULL: no tracking */
	const struct sh_bind *binds; /* loop variables bound here (innermost first) */
	bool resolve_vars;    /* this text's top level may use known variables */
	unsigned compound;    /* inside compound commands / function bodies */
	unsigned stmt_cmds;   /* commands in the current top-level statement */
	struct sh_nodes *nodes;
	const char *s;
	size_t len, pos;
	const char *via;
	unsigned depth;  /* depth stamped on nodes */
	unsigned *nest;  /* shared syntactic nesting counter */
	bool stdin_piped;
	unsigned pipe_id, pipe_idx;
	struct sh_tok la;
	bool have_la;
	struct sh_pending *pend;
	size_t npend, pcap;
	const char *what; /* "" or e.g. "in `…` " for messages */
};

int sh_fail_at(struct sh_parser *p, size_t pos, int code, const char *msg);
int sh_nest_enter(struct sh_parser *p, size_t pos);
void sh_nest_leave(struct sh_parser *p);

/* vars.c */
/* Value of $name if known (borrowed), else NULL. */
const char *sh_var_get(const struct sh_vars *v, const char *name, size_t len);
void sh_var_poison(struct sh_vars *v, const char *name, size_t len);
/* Nothing in the text so far may have set $name (it is the environment's). */
bool sh_var_untouched(const struct sh_vars *v, const char *name, size_t len);
void sh_var_poison_all(struct sh_vars *v);
/* Add a pending assignment (value NULL: unknown). */
void sh_var_pend(struct sh_vars *v, const char *name, size_t len, const char *value);
/* Commit (ok) or drop (poison) pending assignments. */
void sh_var_settle(struct sh_vars *v, bool ok);
void sh_vars_free(struct sh_vars *v);
/* Poison what running command argv[0] may change in the current shell. */
void sh_var_command(struct sh_vars *v, const struct sh_field *argv, size_t argc);

/* lexer.c */
int sh_peek(struct sh_parser *p, struct sh_tok **out);
void sh_consume(struct sh_parser *p);
void sh_tok_free(struct sh_tok *t);
int sh_read_heredocs(struct sh_parser *p);
/* Scan an arithmetic body starting at p->pos (just after "((" / "$(("):
 * returns 1 and leaves pos after "))" if it is arithmetic, 0 if it must
 * be re-read as nested (…). Substitutions inside are parsed. */
int sh_arith_probe(const char *s, size_t len, size_t pos);

/* word.c */
int sh_read_word(struct sh_parser *p, struct sh_word *w);
void sh_word_free(struct sh_word *w);
/* Arithmetic text: parse substitutions up to the closing "))". */
int sh_read_arith(struct sh_parser *p, struct sh_word *w, size_t open_pos);
/* Here-document body with expansions (unquoted delimiter). */
int sh_expand_body(struct sh_parser *parent, const char *body, size_t len, size_t body_pos,
		   char **out, bool *unres, size_t *sub_begin, size_t *sub_end);
/* Value text of a word without brace expansion (redirection targets,
 * here-strings, assignment values). */
char *sh_word_text(const struct sh_word *w, bool *unres);
/* True if the word is the unquoted literal s. */
bool sh_word_is(const struct sh_word *w, const char *s);
/* Brace-expand w into fields appended to node (count units into budget). */
int sh_word_fields(struct sh_parser *p, const struct sh_word *w, struct sh_node *n);
/* Normalise look-alikes in an argv string given directly (no shell):
 * command word (cmd): any look-alike sets *flag; arguments: a leading
 * Unicode dash becomes '-', Unicode spaces set *flag. */
int sh_normalize_lookalike(char **text, bool cmd, bool *flag);
/* Text of the cells from index from on (assignment values). */
char *sh_word_text_from(const struct sh_word *w, size_t from, bool *unres);
/* Length of the assignment prefix "NAME=" / "NAME+=" / "NAME[...]=" or 0. */
size_t sh_word_assign_len(const struct sh_word *w);

/* parser.c: parse a whole text into nodes appended to ns. */
int sh_parse_text(struct sh_ctx *ctx, struct sh_nodes *ns, const char *s, size_t len,
		  const char *via, unsigned depth, bool stdin_piped);
/* Nested $(…) / <(…) / >(…) starting at p->pos (after the opening paren);
 * leaves p->pos after the closing paren. */
int sh_parse_subst(struct sh_parser *p, const char *via, bool stdin_piped);
/* Backquoted text already unescaped. */
int sh_parse_backquote(struct sh_parser *p, const char *text, size_t len, size_t at);

/* ---- analysis (analyze.c, unwrap.c, interp.c) --------------------------- */

struct sh_stdin {
	bool piped;        /* reads from a pipeline */
	const char *body;  /* here-document / here-string text, or NULL */
	bool body_unres;
	bool here_string;
	bool redirected;   /* from a file */
	bool procsub;      /* from <(…) */
	bool downloaded;   /* pipeline source looks like curl/wget */
	bool decoded;      /* pipeline source looks like base64 -d / xxd -r */
};

/* Emit a command; returns its index in ctx->out or negative error. */
int sh_emit(struct sh_ctx *ctx, const struct sh_field *argv, size_t argc,
	    const struct sh_redir_raw *const *redirs, size_t nredirs,
	    const char *via, unsigned depth);
void sh_mark_unresolved(struct sh_ctx *ctx, int idx, const char *reason);
/* Unresolved only in a way the sandbox contains (shell_cmd.contained),
 * unless it is or becomes unresolved otherwise. */
void sh_mark_contained(struct sh_ctx *ctx, int idx, const char *reason);
/* Unresolved only through the environment's values (shell_cmd.env_only). */
void sh_mark_env(struct sh_ctx *ctx, int idx, const char *reason);

/* Analyse text as shell code (re-parse); syntax errors become unresolved
 * marks on cmd_idx (if >= 0) instead of hard errors; limits stay errors. */
int sh_reparse(struct sh_ctx *ctx, const char *text, size_t len, const char *via,
	       unsigned depth, int cmd_idx, const struct sh_stdin *in);

/* Unwrap one command (emit it and whatever it runs). */
int sh_unwrap(struct sh_ctx *ctx, const struct sh_field *argv, size_t argc,
	      const struct sh_redir_raw *const *redirs, size_t nredirs,
	      const char *via, unsigned depth, const struct sh_stdin *in,
	      const struct sh_nodes *ns);

/* Scan interpreter code (lang: "python", "perl", "ruby", "node", "php",
 * "awk") for commands it runs; marks cmd_idx unresolved where a call's
 * argument is not a literal. */
int sh_interp_scan(struct sh_ctx *ctx, const char *lang, const char *code, size_t len,
		   const char *via, unsigned depth, int cmd_idx);

/* Does NAME (len bytes) name a variable whose value is a command that
 * programs run (PAGER, EDITOR, GIT_SSH_COMMAND, LESSOPEN, …)? */
bool sh_env_names_command(const char *name, size_t len);
/* Analyse the value of such an assignment "NAME=VALUE" as shell text run
 * on behalf of command cmd_idx (marked unresolved when it is not static). */
int sh_env_command(struct sh_ctx *ctx, const struct sh_field *assign, unsigned depth, int cmd_idx);
/* envprefix.c: does NAME set up what a starting shell or git runs
 * (BASH_ENV, ENV, GIT_CONFIG_COUNT / _KEY_n / _VALUE_n, GIT_CONFIG_PARAMETERS)? */
bool sh_env_names_setup(const char *name, size_t len);
/* Judge the NAME=VALUE prefixes kept for command cmd_idx (-1: none, an
 * assignment-only statement): commands they name, startup files, git
 * settings. */
int sh_env_prefix(struct sh_ctx *ctx, const struct sh_field *env, size_t n, unsigned depth,
		  int cmd_idx);

/* word.c: value of a hex digit, or -1. */
int sh_hexval(char c);

/* echo.c: the text `printf FORMAT ARGS…` / `echo [-neE] ARGS…` writes
 * (argv[0] is the command), escapes and format applied; echo without -e
 * gives both readings, bash's and dash's. NULL when out of memory. */
char *sh_printf_text(char *const *argv, size_t argc);
char *sh_echo_text(char *const *argv, size_t argc);

/* clients.c: sqlite3, psql, mysql/mariadb; the shell commands of their
 * command language in text (a script file the line wrote) run. */
bool sh_client_name(const char *name);
int sh_client_script(struct sh_ctx *ctx, const char *name, const char *text, unsigned depth,
		     int cmd_idx);

/* projfile.c: the project files command c reads code from (make:
 * Makefile, npm: package.json, pytest: conftest.py, …), NULL-terminated
 * (at most 4), with their kind of code in *lang; NULL: none. */
const char *const *sh_project_files(const shell_cmd *c, int *lang);
/* Judge the code file (text: its content, NULL if unknown) runs for command
 * idx; script_text: text is one npm script's command line. */
int sh_project_run(struct sh_ctx *ctx, size_t idx, const char *file, const char *text, int lang,
		   bool script_text);

/* steps.c: the static here-document or here-string text command idx
 * (cat, tee) reads, kept so a file it writes has known content. */
struct sh_body {
	size_t idx;
	char *text;
};
int sh_note_body(struct sh_ctx *ctx, int idx, const char *text);
/* Free what the analysis kept beside its output. */
void sh_ctx_release(struct sh_ctx *ctx);

/* steps.c: files written and then run in the same line (after all
 * commands are listed): analyse what runs. */
int sh_written_then_run(struct sh_ctx *ctx);

/* Not static as a whole, but a path ending in a static file name after a
 * '/' ("$DIR/tools/build.py"). */
bool sh_literal_tail(const struct sh_field *f);

/* Basename of a command word. */
const char *sh_basename(const char *s);
