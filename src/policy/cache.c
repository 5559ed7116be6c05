/* cache: a loaded policy file, kept compiled in the user's own cache
 * directory ($XDG_CACHE_HOME/txbox, else ~/.cache/txbox, else the password
 * database home's .cache/txbox; owned by the user and writable by nobody
 * else) so the next run does not parse its YAML again (libyaml takes ~2 ms
 * for a policy the size of the default).
 *
 * An entry holds the policy file's whole text and the policy serialized as
 * a stream of typed fields. It is used only when the text is byte for byte
 * the file's current text and it was written by this very build of the
 * loader (its defaults included), and it is read with every length and
 * count checked against what is left and against the loader's own limits:
 * a damaged or foreign entry is ignored (the file is parsed).
 *
 * Why an entry can be trusted at all: the text check says nothing about the
 * compiled part, so whoever can write the entry decides the policy. The
 * user's own processes outside every sandbox are trusted (they can edit the
 * policy file itself). A sandboxed command writes the host only through the
 * workspace it is committed to (everything else is read-only or a private
 * tmpfs), so a cache dir is used only when no physical ancestor of it (".."
 * walked from the opened directory: no symlink or path string can hide one)
 * is the run's workspace or holds a `.txbox` (some other workspace, which
 * commands may have written; no command can touch its workspace's own
 * `.txbox`, and commit refuses the name at any depth, so the mark stays).
 * This is decided from the filesystem alone, never from a cached policy (a
 * forged entry would simply leave out whatever would refuse it), and
 * nothing is written into a workspace outside a transaction. A cache dir
 * that fails is skipped for the next candidate; with none left, the file
 * is parsed every run. */
#include "policy/internal.h"
#include "util/cleanup.h"
#include "util/fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CACHE_MAGIC "TXBXPOL5"
#define CACHE_MAX (8u << 20)

/* ---- writing ------------------------------------------------------------ */

typedef struct wbuf {
	char *p;
	size_t len, cap;
	bool oom;
} wbuf;

static void put(wbuf *w, const void *d, size_t n)
{
	if (w->oom)
		return;
	if (w->len + n > w->cap) {
		size_t cap = w->cap ? w->cap : 65536;
		while (cap < w->len + n)
			cap *= 2;
		char *np = realloc(w->p, cap);
		if (!np) {
			w->oom = true;
			return;
		}
		w->p = np;
		w->cap = cap;
	}
	memcpy(w->p + w->len, d, n);
	w->len += n;
}

static void put_u64(wbuf *w, uint64_t v) { put(w, &v, sizeof v); }

static void put_str(wbuf *w, const char *s) /* NULL and "" differ */
{
	if (!s) {
		put_u64(w, UINT64_MAX);
		return;
	}
	size_t n = strlen(s);
	put_u64(w, n);
	put(w, s, n);
}

static void put_strlist(wbuf *w, const strlist *l)
{
	put_u64(w, l->v ? l->n : UINT64_MAX); /* absent (no such key) vs empty */
	for (size_t i = 0; l->v && i < l->n; i++)
		put_str(w, l->v[i]);
}

static void put_strv(wbuf *w, char *const *v)
{
	size_t n = 0;
	while (v && v[n])
		n++;
	put_u64(w, n);
	for (size_t i = 0; i < n; i++)
		put_str(w, v[i]);
}

static void put_pathcond(wbuf *w, const pathcond *c)
{
	put_u64(w, c->set);
	put_u64(w, c->classes);
	put_strlist(w, &c->globs);
}

static void put_match(wbuf *w, const rule_match *m)
{
	const strlist *l[] = {&m->command, &m->command_not, &m->flags, &m->flags_any, &m->flags_none, &m->args,
			      &m->args_all, &m->words, &m->words_all, &m->with, &m->via, &m->text};
	for (size_t i = 0; i < ARRAY_SIZE(l); i++)
		put_strlist(w, l[i]);
	put_u64(w, m->nsubcommands);
	for (size_t i = 0; i < m->nsubcommands; i++)
		put_strlist(w, &m->subcommands[i]);
	put_u64(w, m->icase);
	put_pathcond(w, &m->paths);
	put_pathcond(w, &m->dest);
	put_pathcond(w, &m->redirects);
	put_pathcond(w, &m->reads);
	put_u64(w, m->noptions);
	for (size_t i = 0; i < m->noptions; i++) {
		put_str(w, m->options[i].key);
		put_pathcond(w, &m->options[i].cond);
	}
	put_u64(w, (uint64_t)m->nargs_min);
	put_u64(w, (uint64_t)m->nargs_max);
	put_u64(w, (uint64_t)(int64_t)m->unresolved);
	put_u64(w, m->builtins);
	put_u64(w, m->effect);
}

static void put_effects(wbuf *w, const policy *p)
{
	put_u64(w, p->neffects);
	for (size_t i = 0; i < p->neffects; i++) {
		const effect_rule *e = &p->effects[i];
		put_str(w, e->id);
		put_u64(w, (uint64_t)e->decision);
		put_str(w, e->reason);
		put_str(w, e->suggestion);
		put_strlist(w, &e->paths);
		put_strlist(w, &e->git_config);
		put_u64(w, e->kinds);
		put_u64(w, e->deleted_min);
		put(w, &e->deleted_share, sizeof e->deleted_share);
		put_u64(w, e->git);
		put_u64(w, e->found);
		put_u64(w, e->policy_file);
		put_u64(w, e->line);
	}
}

static void put_policy(wbuf *w, const policy *p)
{
	put_u64(w, (uint64_t)p->unresolved);
	put_u64(w, p->nrules);
	for (size_t i = 0; i < p->nrules; i++) {
		const rule *r = &p->rules[i];
		put_str(w, r->id);
		put_u64(w, (uint64_t)r->decision);
		put_str(w, r->reason);
		put_str(w, r->suggestion);
		put_u64(w, r->line);
		put_match(w, &r->m);
	}
	put_u64(w, p->nhints);
	for (size_t i = 0; i < p->nhints; i++) {
		put_str(w, p->hints[i].name);
		put_strlist(w, &p->hints[i].value_options);
	}
	const policy_sandbox *s = &p->sandbox;
	put_strv(w, s->masked_paths);
	put_strv(w, s->env_deny);
	put_strv(w, s->allowed_sockets);
	put_u64(w, s->network);
	put_u64(w, s->memory_bytes);
	put_u64(w, s->pids);
	put_u64(w, s->cpu_seconds);
	put_u64(w, s->disk_bytes);
	put_u64(w, s->nofile);
	put_u64(w, s->fsize_bytes);
	put(w, &s->timeout_sec, sizeof s->timeout_sec);
	put_u64(w, s->strip_setuid);
	put_effects(w, p);
}

/* The layout of the stream and of what it fills: a cache written by a
 * txbox built differently is not read. */
static uint64_t layout(void)
{
	return (uint64_t)sizeof(policy) << 48 ^ (uint64_t)sizeof(rule) << 32 ^ (uint64_t)sizeof(rule_match) << 16 ^
	       (uint64_t)sizeof(policy_sandbox) ^ POLICY_MAX_LIST;
}

static void entry_name(const char *text, size_t len, char name[40])
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a: names the entry; the text itself is compared */
	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)text[i]) * 1099511628211ull;
	snprintf(name, 40, "policy-%016llx", (unsigned long long)h);
}

/* This build: the loader's compile time (its defaults) and the identity
 * of the running binary (an upgrade is a new file; reproducible builds
 * may share compile times). */
static void build_key(char *buf, size_t size)
{
	struct stat st;
	memset(&st, 0, sizeof st);
	stat("/proc/self/exe", &st);
	snprintf(buf, size, "%s|%llx:%llx:%llx:%lld.%ld:%lld.%ld", policy_loader_build, (unsigned long long)st.st_dev,
		 (unsigned long long)st.st_ino, (unsigned long long)st.st_size, (long long)st.st_mtim.tv_sec,
		 st.st_mtim.tv_nsec, (long long)st.st_ctim.tv_sec, st.st_ctim.tv_nsec);
}

static void put_build(wbuf *w)
{
	char key[256];
	build_key(key, sizeof key);
	put_u64(w, layout());
	put_str(w, key);
}

/* Whether the directory dir_fd is, or lies below, the workspace ws (dev/ino)
 * or any directory holding a `.txbox` (some txbox workspace, or its state):
 * walked physically with "..", so a symlink or a path string cannot hide
 * it. Too deep a tree, or an unreadable ancestor, counts as inside. */
static bool inside_workspace(int dir_fd, const struct stat *ws)
{
	_cleanup_close_ int cur = fcntl(dir_fd, F_DUPFD_CLOEXEC, 0);
	struct stat st, dot;
	for (int depth = 0; cur >= 0 && depth < 256; depth++) {
		if (fstat(cur, &st) < 0)
			return true;
		if (ws && st.st_dev == ws->st_dev && st.st_ino == ws->st_ino)
			return true;
		if (fstatat(cur, ".txbox", &dot, AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT)
			return true;
		int up = openat(cur, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
		struct stat ust;
		if (up < 0 || fstat(up, &ust) < 0) {
			if (up >= 0)
				close(up);
			return true;
		}
		close(cur);
		cur = up;
		if (ust.st_dev == st.st_dev && ust.st_ino == st.st_ino)
			return false; /* the root */
	}
	return true;
}

/* base (an absolute path, created if missing and its parent is safe), if
 * it lies outside every workspace: its txbox subdirectory, ours alone. */
static int open_cache_in(const char *base, const struct stat *ws)
{
	if (!base || base[0] != '/' || strlen(base) >= PATH_MAX)
		return -1;
	_cleanup_close_ int fd = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT) {
		char parent[PATH_MAX];
		snprintf(parent, sizeof parent, "%s", base);
		char *slash = strrchr(parent, '/');
		const char *leaf = base + (slash - parent) + 1;
		*(slash == parent ? slash + 1 : slash) = '\0';
		_cleanup_close_ int pfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (pfd < 0 || !*leaf || inside_workspace(pfd, ws) || mkdirat(pfd, leaf, 0700) < 0)
			return -1;
		fd = openat(pfd, leaf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	}
	if (fd < 0 || inside_workspace(fd, ws))
		return -1;
	if (mkdirat(fd, "txbox", 0700) < 0 && errno != EEXIST)
		return -1;
	int dir = openat(fd, "txbox", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	/* ours alone: nobody else may plant an entry */
	if (dir >= 0 && (fstat(dir, &st) < 0 || st.st_uid != geteuid() || (st.st_mode & 022))) {
		close(dir);
		return -1;
	}
	return dir;
}

int policy_cache_open(int ws_fd, const char *const *bases, size_t n)
{
	struct stat ws;
	if (ws_fd < 0 || fstat(ws_fd, &ws) < 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		int fd = open_cache_in(bases[i], &ws);
		if (fd >= 0)
			return fd;
	}
	return -1;
}

void policy_cache_store(int dir_fd, const char *text, size_t len, const policy *p)
{
	if (dir_fd < 0 || !p || p->builtin)
		return;
	char name[40];
	entry_name(text, len, name);
	wbuf w = {0};
	put(&w, CACHE_MAGIC, 8);
	put_build(&w);
	put_u64(&w, len);
	put(&w, text, len);
	put_policy(&w, p);
	if (!w.oom && w.len <= CACHE_MAX) {
		txbox_error e = TXBOX_ERROR_INIT;
		fs_write_file_atomic(dir_fd, name, w.p, w.len, 0600, &e);
		txbox_error_clear(&e);
	}
	free(w.p);
}

/* ---- reading ------------------------------------------------------------ */

typedef struct rbuf {
	const char *p;
	size_t len, off;
	bool bad;
	arena *mem;
} rbuf;

static bool get(rbuf *r, void *d, size_t n)
{
	if (r->bad || n > r->len - r->off) {
		r->bad = true;
		return false;
	}
	memcpy(d, r->p + r->off, n);
	r->off += n;
	return true;
}

static uint64_t get_u64(rbuf *r)
{
	uint64_t v = 0;
	get(r, &v, sizeof v);
	return v;
}

/* A count, at most max. */
static size_t get_count(rbuf *r, size_t max)
{
	uint64_t v = get_u64(r);
	if (v > max)
		r->bad = true;
	return r->bad ? 0 : (size_t)v;
}

static char *get_str(rbuf *r, bool nullable)
{
	uint64_t n = get_u64(r);
	if (r->bad)
		return NULL;
	if (n == UINT64_MAX) {
		if (!nullable)
			r->bad = true;
		return NULL;
	}
	if (n > POLICY_MAX_STRING * 4 || n > r->len - r->off) {
		r->bad = true;
		return NULL;
	}
	if (memchr(r->p + r->off, '\0', n)) {
		r->bad = true;
		return NULL;
	}
	char *s = arena_alloc(r->mem, n + 1);
	if (!s) {
		r->bad = true;
		return NULL;
	}
	memcpy(s, r->p + r->off, n);
	r->off += n;
	return s;
}

static void get_strlist(rbuf *r, strlist *l)
{
	uint64_t n = get_u64(r);
	if (r->bad || n == UINT64_MAX)
		return; /* absent */
	if (n > POLICY_MAX_LIST) {
		r->bad = true;
		return;
	}
	l->v = arena_calloc(r->mem, (size_t)n + 1, sizeof *l->v);
	if (!l->v) {
		r->bad = true;
		return;
	}
	l->cap = (size_t)n + 1;
	for (size_t i = 0; i < n && !r->bad; i++)
		l->v[l->n++] = get_str(r, false);
}

static char **get_strv(rbuf *r)
{
	size_t n = get_count(r, POLICY_MAX_LIST);
	char **v = r->bad ? NULL : arena_calloc(r->mem, n + 1, sizeof *v);
	if (!v) {
		r->bad = true;
		return NULL;
	}
	for (size_t i = 0; i < n && !r->bad; i++)
		v[i] = get_str(r, false);
	return v;
}

static void get_pathcond(rbuf *r, pathcond *c)
{
	c->set = get_u64(r) != 0;
	c->classes = (unsigned)get_u64(r);
	get_strlist(r, &c->globs);
}

static void get_match(rbuf *r, rule_match *m)
{
	strlist *l[] = {&m->command, &m->command_not, &m->flags, &m->flags_any, &m->flags_none, &m->args,
			&m->args_all, &m->words, &m->words_all, &m->with, &m->via, &m->text};
	for (size_t i = 0; i < ARRAY_SIZE(l); i++)
		get_strlist(r, l[i]);
	size_t ns = get_count(r, POLICY_MAX_LIST);
	if (ns) {
		m->subcommands = arena_calloc(r->mem, ns, sizeof *m->subcommands);
		if (!m->subcommands)
			r->bad = true;
		for (size_t i = 0; i < ns && !r->bad; i++)
			get_strlist(r, &m->subcommands[m->nsubcommands++]);
	}
	m->icase = get_u64(r) != 0;
	get_pathcond(r, &m->paths);
	get_pathcond(r, &m->dest);
	get_pathcond(r, &m->redirects);
	get_pathcond(r, &m->reads);
	size_t no = get_count(r, POLICY_MAX_LIST);
	if (no) {
		m->options = arena_calloc(r->mem, no, sizeof *m->options);
		if (!m->options)
			r->bad = true;
		for (size_t i = 0; i < no && !r->bad; i++) {
			optpath *o = &m->options[m->noptions++];
			o->key = get_str(r, false);
			get_pathcond(r, &o->cond);
		}
	}
	m->nargs_min = (long)(int64_t)get_u64(r);
	m->nargs_max = (long)(int64_t)get_u64(r);
	m->unresolved = (int)(int64_t)get_u64(r);
	m->builtins = (unsigned)get_u64(r);
	uint64_t e = get_u64(r);
	if (e >= EFFECT_COUNT)
		r->bad = true;
	else
		m->effect = (rule_effect)e;
}

static bool decision_ok(uint64_t d) { return d == POLICY_ALLOW || d == POLICY_HOLD || d == POLICY_DENY; }

static void get_effects(rbuf *r, policy *p)
{
	size_t n = get_count(r, POLICY_MAX_RULES);
	p->effects = r->bad ? NULL : arena_calloc(r->mem, n + 1, sizeof *p->effects);
	if (!p->effects)
		r->bad = true;
	for (size_t i = 0; i < n && !r->bad; i++) {
		effect_rule *e = &p->effects[p->neffects++];
		e->id = get_str(r, false);
		uint64_t d = get_u64(r);
		if (!decision_ok(d))
			r->bad = true;
		e->decision = (policy_decision)d;
		e->reason = get_str(r, false);
		e->suggestion = get_str(r, true);
		get_strlist(r, &e->paths);
		get_strlist(r, &e->git_config);
		e->kinds = (unsigned)get_u64(r);
		e->deleted_min = get_u64(r);
		get(r, &e->deleted_share, sizeof e->deleted_share);
		e->git = (unsigned)get_u64(r);
		e->found = (unsigned)get_u64(r);
		e->policy_file = get_u64(r) != 0;
		e->line = (size_t)get_u64(r);
		if (!(e->deleted_share >= 0 && e->deleted_share <= 1))
			r->bad = true;
	}
}

static void get_policy(rbuf *r, policy *p)
{
	uint64_t u = get_u64(r);
	if (!decision_ok(u))
		r->bad = true;
	p->unresolved = (policy_decision)u;
	size_t nr = get_count(r, POLICY_MAX_RULES);
	p->rules = r->bad ? NULL : arena_calloc(r->mem, nr + 1, sizeof *p->rules);
	if (!p->rules)
		r->bad = true;
	for (size_t i = 0; i < nr && !r->bad; i++) {
		rule *ru = &p->rules[p->nrules++];
		ru->id = get_str(r, false);
		uint64_t d = get_u64(r);
		if (!decision_ok(d))
			r->bad = true;
		ru->decision = (policy_decision)d;
		ru->reason = get_str(r, false);
		ru->suggestion = get_str(r, true);
		ru->line = (size_t)get_u64(r);
		get_match(r, &ru->m);
	}
	size_t nh = get_count(r, POLICY_MAX_RULES);
	p->hints = r->bad ? NULL : arena_calloc(r->mem, nh + 1, sizeof *p->hints);
	if (!p->hints)
		r->bad = true;
	for (size_t i = 0; i < nh && !r->bad; i++) {
		cmd_hint *h = &p->hints[p->nhints++];
		h->name = get_str(r, false);
		get_strlist(r, &h->value_options);
	}
	policy_sandbox *s = &p->sandbox;
	s->masked_paths = get_strv(r);
	s->env_deny = get_strv(r);
	s->allowed_sockets = get_strv(r);
	s->network = get_u64(r) != 0;
	s->memory_bytes = get_u64(r);
	s->pids = get_u64(r);
	s->cpu_seconds = get_u64(r);
	s->disk_bytes = get_u64(r);
	s->nofile = get_u64(r);
	s->fsize_bytes = get_u64(r);
	get(r, &s->timeout_sec, sizeof s->timeout_sec);
	s->strip_setuid = get_u64(r) != 0;
	get_effects(r, p);
	if (!r->bad && r->off != r->len)
		r->bad = true; /* trailing bytes: not what we wrote */
}

policy *policy_cache_load(int dir_fd, const char *text, size_t len)
{
	if (dir_fd < 0)
		return NULL;
	char name[40];
	entry_name(text, len, name);
	_cleanup_close_ int fd = openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022) ||
	    st.st_size < 24 || st.st_size > CACHE_MAX)
		return NULL;
	_cleanup_free_ char *buf = malloc((size_t)st.st_size);
	if (!buf || read(fd, buf, (size_t)st.st_size) != st.st_size)
		return NULL;
	rbuf r = {.p = buf, .len = (size_t)st.st_size};
	char magic[8];
	arena tmp = {0};
	r.mem = &tmp;
	bool same = get(&r, magic, 8) && memcmp(magic, CACHE_MAGIC, 8) == 0 && get_u64(&r) == layout();
	char *build = same ? get_str(&r, false) : NULL;
	char key[256];
	build_key(key, sizeof key);
	same = same && build && strcmp(build, key) == 0;
	arena_free(&tmp);
	if (!same || get_u64(&r) != len || r.bad || len > r.len - r.off || memcmp(r.p + r.off, text, len) != 0)
		return NULL; /* another policy text, or another build */
	r.off += len;
	return policy_cache_decode(r.p + r.off, r.len - r.off);
}

policy *policy_cache_decode(const char *blob, size_t len)
{
	policy *p = calloc(1, sizeof *p);
	if (!p)
		return NULL;
	rbuf r = {.p = blob, .len = len, .mem = &p->mem};
	get_policy(&r, p);
	if (r.bad) {
		policy_free(p);
		return NULL;
	}
	return p;
}

int policy_cache_encode(const policy *p, char **blob, size_t *len)
{
	wbuf w = {0};
	put_policy(&w, p);
	if (w.oom) {
		free(w.p);
		return -ENOMEM;
	}
	*blob = w.p;
	*len = w.len;
	return 0;
}
