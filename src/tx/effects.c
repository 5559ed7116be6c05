/* effects: the facts the policy's effect rules judge (policy/effects.h),
 * gathered from a commit plan before anything is journaled.
 *
 * Cost follows the changes, never the workspace: the plan's ops; the
 * entries beneath a directory the commit moves or deletes whole (the new
 * tree in the layer, the old one in the workspace); and, only for the few
 * git files a rule looks at (config, packed-refs, reflogs), their old and
 * new contents, bounded. Everything read is the command's (hostile): never
 * followed through a symlink, never read unless a regular file, sizes
 * capped; what cannot be read counts against the transaction. */
#include "tx/tx.h"

#include "policy/effects.h"
#include "tx/gitobj.h"
#include "util/cleanup.h"
#include "util/fsutil.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define EFFECTS_MAX_ENTRIES 1000000
#define PACKED_REFS_MAX (64u * 1024 * 1024)

typedef struct scan {
	int ws_fd, upper_fd;
	effect_change *v;
	float *lost;  /* per change: effect_facts.lost */
	size_t n, cap;
	char **alias; /* NULL, or one (or NULL) per change: effect_facts.aliases */
	bool incomplete;
	txbox_error *err;
} scan;

static void scan_free(scan *s)
{
	for (size_t i = 0; i < s->n; i++)
		free((char *)s->v[i].path);
	free(s->lost);
	if (s->alias)
		for (size_t i = 0; i < s->n; i++)
			free(s->alias[i]);
	free(s->alias);
	free(s->v);
}

static int scan_add(scan *s, char *path, txbox_change_kind kind, bool dir)
{
	if (!path)
		return txbox_fail(s->err, -ENOMEM, "out of memory");
	if (s->n >= EFFECTS_MAX_ENTRIES) {
		s->incomplete = true;
		free(path);
		return 0;
	}
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 64;
		effect_change *v = realloc(s->v, cap * sizeof *v);
		if (v)
			s->v = v;
		float *lost = v ? realloc(s->lost, cap * sizeof *lost) : NULL;
		if (!lost) {
			free(path);
			return txbox_fail(s->err, -ENOMEM, "out of memory");
		}
		s->lost = lost;
		s->cap = cap;
	}
	s->lost[s->n] = 0;
	s->v[s->n++] = (effect_change){path, kind, dir, false};
	return 0;
}

/* lstat of path beneath fd, never through a symlink: 0 or -errno. */
static int stat_beneath(int fd, const char *path, struct stat *st)
{
	_cleanup_close_ int f = fs_open_beneath(fd, path, O_PATH, 0);
	if (f < 0)
		return f;
	return fstat(f, st) < 0 ? -errno : 0;
}

static bool exists_beneath(int fd, const char *path)
{
	struct stat st;
	int r = stat_beneath(fd, path, &st);
	return r != -ENOENT && r != -ENOTDIR; /* unreadable: assume it is there */
}

/* The share of a regular file's bytes that is gone though its name
 * stays: 1 when emptied or replaced by another type, (old - new) / old
 * when cut down. Counted as that much of a deletion: a fixed cut-off (a
 * tenth, a half) is a size an attacker keeps just above. */
static float content_lost(const struct stat *old, const struct stat *now)
{
	if (!S_ISREG(old->st_mode) || old->st_size <= 0)
		return 0;
	if (!S_ISREG(now->st_mode) || now->st_size <= 0)
		return 1;
	if (now->st_size >= old->st_size)
		return 0;
	return (float)((double)(old->st_size - now->st_size) / (double)old->st_size);
}

/* Set change i's share lost (and destroyed: all of it). */
static void set_lost(scan *s, size_t i, float lost)
{
	s->lost[i] = lost;
	s->v[i].destroyed = lost >= 1;
}

/* List everything beneath the directory s->v[first] (in root_fd), as kind.
 * other_fd >= 0: an entry also there is no effect of that kind (deleted:
 * still present; added: replaced, so modified). */
static int expand_dir(scan *s, int root_fd, size_t first, txbox_change_kind kind, int other_fd)
{
	for (size_t i = first; i < s->n && !s->incomplete; i++) {
		if (!s->v[i].dir)
			continue;
		int fd = fs_open_beneath(root_fd, s->v[i].path, O_RDONLY | O_DIRECTORY, 0);
		if (fd < 0)
			return txbox_fail_errno(s->err, fd, "listing %s for the effect check", s->v[i].path);
		_cleanup_closedir_ DIR *d = fdopendir(fd);
		if (!d) {
			close(fd);
			return txbox_fail_errno(s->err, -errno, "listing %s for the effect check", s->v[i].path);
		}
		for (struct dirent *de; (de = readdir(d));) {
			if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
				continue;
			struct stat st;
			st.st_mode = de->d_type == DT_DIR ? S_IFDIR : S_IFREG;
			if (de->d_type != DT_DIR && de->d_type != DT_REG && de->d_type != DT_LNK &&
			    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
				return txbox_fail_errno(s->err, -errno, "stat of %s/%s", s->v[i].path, de->d_name);
			if (S_ISCHR(st.st_mode) && st.st_rdev == 0)
				continue; /* an overlay whiteout: nothing */
			char *path = NULL;
			if (asprintf(&path, "%s/%s", s->v[i].path, de->d_name) < 0)
				path = NULL;
			txbox_change_kind k = kind;
			struct stat other, now;
			int o = path && other_fd >= 0 ? stat_beneath(other_fd, path, &other) : -ENOENT;
			if (o != -ENOENT && o != -ENOTDIR) { /* also there (unreadable: assumed so) */
				if (kind == TXBOX_CHANGE_DELETED) {
					free(path);
					continue;
				}
				k = TXBOX_CHANGE_MODIFIED;
			}
			float lost = k == TXBOX_CHANGE_MODIFIED && o == 0 &&
						     fstatat(dirfd(d), de->d_name, &now, AT_SYMLINK_NOFOLLOW) == 0
					     ? content_lost(&other, &now)
					     : 0;
			int r = scan_add(s, path, k, S_ISDIR(st.st_mode));
			if (r < 0)
				return r;
			if (s->n && !s->incomplete)
				set_lost(s, s->n - 1, lost);
		}
	}
	return 0;
}

/* One plan op: the entry, and what a whole-tree PUT or DELETE carries. */
static int scan_op(scan *s, const plan_op *o)
{
	bool new_dir = o->kind == PLAN_PUT && S_ISDIR(o->new_st.st_mode);
	bool old_dir = o->existed && S_ISDIR(o->old_st.st_mode) && (o->kind == PLAN_PUT || o->kind == PLAN_DELETE);
	size_t at = s->n;
	int r = scan_add(s, strdup(o->path), o->change, o->kind == PLAN_DELETE ? old_dir : S_ISDIR(o->new_st.st_mode));
	if (r < 0 || s->incomplete)
		return r;
	if (o->existed && (o->change == TXBOX_CHANGE_MODIFIED || o->change == TXBOX_CHANGE_TYPE_CHANGED))
		set_lost(s, at, content_lost(&o->old_st, &o->new_st));
	if (new_dir) /* the whole new tree; over an old directory, names it had are modified */
		r = expand_dir(s, s->upper_fd, at, TXBOX_CHANGE_ADDED, old_dir ? s->ws_fd : -1);
	if (r == 0 && old_dir) { /* the old tree, less what the new one has again */
		size_t again = s->n;
		if ((r = scan_add(s, strdup(o->path), TXBOX_CHANGE_DELETED, true)) == 0 && !s->incomplete)
			r = expand_dir(s, s->ws_fd, again, TXBOX_CHANGE_DELETED, new_dir ? s->upper_fd : -1);
	}
	return r;
}

static int scan_plan(scan *s, const plan *p)
{
	for (size_t i = 0; i < p->n && !s->incomplete; i++) {
		if (!p->ops[i].report || !p->ops[i].path[0])
			continue;
		int r = scan_op(s, &p->ops[i]);
		if (r < 0)
			return r;
	}
	for (size_t i = 0; i < p->n_also && !s->incomplete; i++) {
		int r = scan_add(s, strdup(p->also_changed[i]), p->also_kind[i], false);
		if (r < 0)
			return r;
	}
	return 0;
}

typedef struct strvec {
	char **v;
	size_t n;
} strvec;

static void strv_free(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/* Move the n strings of src (a malloc'd array, freed) to the end of d. */
static int strvec_take(strvec *d, char **src, size_t n)
{
	char **v = realloc(d->v, (d->n + n + 1) * sizeof *v);
	if (!v) {
		strv_free(src, n);
		return -ENOMEM;
	}
	d->v = v;
	if (n) /* src is NULL when there is nothing */
		memcpy(d->v + d->n, src, n * sizeof *src);
	d->n += n;
	d->v[d->n] = NULL;
	free(src);
	return 0;
}

/* ---- reading the old and new versions of one file ---------------------- */

/* The whole regular file path beneath fd, at most max bytes: 0, -ENOENT
 * (absent), or another -errno (a symlink, a FIFO, too large, unreadable). */
static int read_small(int fd, const char *path, size_t max, char **out, size_t *len)
{
	*out = NULL;
	*len = 0;
	_cleanup_close_ int f = fs_open_beneath(fd, path, O_RDONLY | O_NONBLOCK, 0);
	if (f < 0)
		return f == -ENOTDIR ? -ENOENT : f;
	return gitobj_read_regular(f, max, out, len);
}

/* Is the old file a prefix of the new one (an append-only change)? With
 * whole, are they equal? Unreadable: no. */
static bool old_is_prefix(int old_fd, int new_fd, const char *path, bool whole)
{
	_cleanup_close_ int a = fs_open_beneath(old_fd, path, O_RDONLY | O_NONBLOCK, 0);
	_cleanup_close_ int b = fs_open_beneath(new_fd, path, O_RDONLY | O_NONBLOCK, 0);
	struct stat sa, sb;
	if (a < 0 || b < 0 || fstat(a, &sa) < 0 || fstat(b, &sb) < 0 || !S_ISREG(sa.st_mode) ||
	    !S_ISREG(sb.st_mode) || sb.st_size < sa.st_size || (whole && sb.st_size != sa.st_size))
		return false;
	enum { CHUNK = 65536 };
	_cleanup_free_ char *ba = malloc(2 * CHUNK);
	if (!ba)
		return false;
	char *bb = ba + CHUNK;
	for (off_t left = sa.st_size; left > 0;) {
		size_t want = left < CHUNK ? (size_t)left : CHUNK;
		ssize_t x = read(a, ba, want), y = read(b, bb, (size_t)x > 0 ? (size_t)x : 1);
		if (x <= 0 || y != x || memcmp(ba, bb, (size_t)x) != 0)
			return false;
		left -= x;
	}
	return true;
}

/* ---- git ---------------------------------------------------------------- */

static int strcmp_p(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The ref names of a packed-refs text, sorted (NULL-terminated). */
static char **packed_ref_names(char *text, size_t *n)
{
	size_t cap = 16;
	char **v = malloc(cap * sizeof *v);
	*n = 0;
	for (char *line = text, *next; v && line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		char *sp = strchr(line, ' ');
		if (line[0] == '#' || line[0] == '^' || !sp)
			continue;
		if (*n + 1 >= cap) {
			char **w = realloc(v, (cap *= 2) * sizeof *v);
			if (!w) {
				free(v);
				return NULL;
			}
			v = w;
		}
		v[(*n)++] = sp + 1;
	}
	if (v) {
		v[*n] = NULL;
		qsort(v, *n, sizeof *v, strcmp_p);
	}
	return v;
}

static const effect_change *find_change(const scan *s, const effect_change *const *sorted, const char *path)
{
	size_t lo = 0, hi = s->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = strcmp(sorted[mid]->path, path);
		if (!c)
			return sorted[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static int change_ptr_cmp(const void *a, const void *b)
{
	return strcmp((*(const effect_change *const *)a)->path, (*(const effect_change *const *)b)->path);
}

typedef struct gitscan {
	scan *s;
	const effect_change **sorted; /* the changes by path */
	unsigned bits;
	char **where; /* [EFFECT_GIT_KINDS]: the first path of each bit (owned by the caller) */
	gitobj_io io;        /* the git files as they are after the commit */
	gitobj_store *odb; /* the object store last opened (odb_for) */
	bool where_repacked; /* where[] of objects-deleted names a repacked one */
	/* the last directories tested for being a git dir, and the answers */
	char *memo[4];
	bool memo_git[4];
	unsigned memo_next;
} gitscan;

static void gitscan_done(gitscan *g)
{
	gitobj_free(g->odb);
	for (size_t i = 0; i < sizeof g->memo / sizeof *g->memo; i++)
		free(g->memo[i]);
}

/* The transaction did `bit` (enum effect_git) to path. */
static void git_hit(gitscan *g, unsigned bit, const char *path)
{
	g->bits |= bit;
	size_t i = (size_t)__builtin_ctz(bit);
	if (!g->where[i])
		g->where[i] = strdup(path); /* out of memory: the reason names no path */
}

/* Is there an entry at path after the commit? */
static bool exists_after(const gitscan *g, const char *path)
{
	const effect_change *c = find_change(g->s, g->sorted, path);
	if (c)
		return c->kind != TXBOX_CHANGE_DELETED;
	return exists_beneath(g->s->ws_fd, path);
}

/* Is the directory path[0..len) (a prefix ending in '/', or "" for the
 * workspace) a git dir by its content: HEAD, objects and refs in it,
 * before or after the commit? A bare repository needs no `.git` in its
 * name. */
static bool git_dir_content(gitscan *g, const char *path, size_t len)
{
	for (size_t i = 0; i < sizeof g->memo / sizeof *g->memo; i++)
		if (g->memo[i] && strlen(g->memo[i]) == len && !strncmp(g->memo[i], path, len))
			return g->memo_git[i];
	static const char *const need[] = {"HEAD", "objects", "refs"};
	bool git = true;
	for (size_t i = 0; i < 3 && git; i++) {
		_cleanup_free_ char *p = NULL;
		if (asprintf(&p, "%.*s%s", (int)len, path, need[i]) < 0)
			return true; /* out of memory: the stricter answer */
		git = exists_after(g, p) || exists_beneath(g->s->ws_fd, p);
	}
	unsigned m = g->memo_next++ % (sizeof g->memo / sizeof *g->memo);
	free(g->memo[m]);
	g->memo[m] = strndup(path, len);
	g->memo_git[m] = git;
	return git;
}

static bool git_part(const char *p)
{
	static const char *const parts[] = {"refs", "logs", "objects", "packed-refs", "shallow", "config",
					    "config.worktree", "hooks", "info", "commondir", "gitdir"};
	for (size_t i = 0; i < sizeof parts / sizeof *parts; i++) {
		size_t n = strlen(parts[i]);
		if (!strncmp(p, parts[i], n) && (p[n] == '/' || !p[n]))
			return true;
	}
	return false;
}

/* Where path is inside a git directory: *rest (within path) is what
 * follows the git dir, *dirlen the length of the path before it (the git
 * dir and its '/'). The git dir is the last `.git` component (with
 * .git/modules/… and .git/worktrees/… beneath it), else (g not NULL) the
 * deepest directory that is one by its content (git_dir_content). False:
 * not in one. */
static bool git_split(gitscan *g, const char *path, size_t *dirlen, const char **rest)
{
	const char *git = NULL;
	for (const char *p = path; p; p = strchr(p, '/'), p = p ? p + 1 : NULL)
		if (!strncmp(p, ".git/", 5))
			git = p;
	/* the first known part after the last .git component starts the rest */
	for (const char *p = git ? git + 5 : NULL; p && *p; p = strchr(p, '/'), p = p ? p + 1 : NULL)
		if (git_part(p)) {
			*dirlen = (size_t)(p - path);
			*rest = p;
			return true;
		}
	if (git || !g)
		return false;
	const char *found = NULL;
	for (const char *p = path; p && *p; p = strchr(p, '/'), p = p ? p + 1 : NULL)
		if (git_part(p) && git_dir_content(g, path, (size_t)(p - path)))
			found = p;
	if (!found)
		return false;
	*dirlen = (size_t)(found - path);
	*rest = found;
	return true;
}

/* The length (40 or 64) of the object id ref text t starts with, ending
 * its line; 0: none (a symbolic ref, junk). */
static size_t ref_hex(const char *t)
{
	size_t n = strspn(t, "0123456789abcdef");
	return (n == 40 || n == 64) && (!t[n] || isspace((unsigned char)t[n])) ? n : 0;
}

/* What git's files backend reads as a ref: an object id (40 or 64 hex
 * digits) ending the line, or a symbolic ref. */
static bool ref_text(const char *t) { return !strncmp(t, "ref:", 4) || ref_hex(t); }

#define REF_MAX 4096

/* Is path a ref after the commit: a regular file holding one? */
static bool ref_after(const gitscan *g, const char *path)
{
	const effect_change *c = find_change(g->s, g->sorted, path);
	if (c && c->kind == TXBOX_CHANGE_DELETED)
		return false;
	_cleanup_free_ char *text = NULL;
	size_t len;
	return read_small(c ? g->s->upper_fd : g->s->ws_fd, path, REF_MAX, &text, &len) == 0 &&
	       strlen(text) == len && ref_text(text);
}

/* Read packed-refs of one git dir from the workspace (old) or the
 * transaction's result (new); absent: no names. */
static int packed_refs(const gitscan *g, const char *path, bool after, char **text, char ***names, size_t *n)
{
	int fd = g->s->ws_fd;
	*names = NULL;
	*n = 0;
	if (after) {
		const effect_change *c = find_change(g->s, g->sorted, path);
		if (c && c->kind == TXBOX_CHANGE_DELETED)
			return 0;
		fd = c ? g->s->upper_fd : g->s->ws_fd;
	}
	size_t len;
	int r = read_small(fd, path, PACKED_REFS_MAX, text, &len);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	*names = packed_ref_names(*text, n);
	return *names ? 0 : -ENOMEM;
}

static bool prefix_of(const char *s, const char *prefix) { return !strncmp(s, prefix, strlen(prefix)); }

/* A remote-tracking ref or its reflog: a copy of what a remote holds,
 * which `git remote rename`/`remove` and `git fetch --prune` delete as a
 * matter of course; the objects stay (their deletion is judged). */
static bool remote_tracking(const char *rest)
{
	return prefix_of(rest, "refs/remotes/") || prefix_of(rest, "logs/refs/remotes/");
}

static bool old_ref_kept(gitscan *g, const char *path, size_t dirlen, const char *old);
static bool left_value_kept(gitscan *g, const char *path, size_t dirlen, const char *name, const char *old,
			    const char *now);

/* The line of packed-refs text (its newlines made NULs) that name ends. */
static const char *packed_line(const char *text, const char *name)
{
	const char *p = name;
	while (p > text && p[-1] != '\0')
		p--;
	return p;
}

/* packed-refs changed: a name it loses that no loose ref keeps, and whose
 * commit no branch, tag or HEAD still reaches, is deleted. */
static int packed_refs_lost(gitscan *g, const char *path, size_t dirlen)
{
	_cleanup_free_ char *ot = NULL, *nt = NULL;
	_cleanup_free_ char **on = NULL, **nn = NULL;
	size_t no, nnew;
	if (packed_refs(g, path, false, &ot, &on, &no) < 0 || packed_refs(g, path, true, &nt, &nn, &nnew) < 0) {
		git_hit(g, EFFECT_GIT_REFS_DELETED, path); /* unreadable: taken as lost */
		return 0;
	}
	for (size_t i = 0; i < no; i++) {
		if (!strcmp(on[i], "refs/stash") || remote_tracking(on[i]))
			continue;
		char **kept = nnew ? bsearch(&on[i], nn, nnew, sizeof *nn, strcmp_p) : NULL;
		_cleanup_free_ char *loose = NULL, *what = NULL;
		if (asprintf(&loose, "%.*s%s", (int)dirlen, path, on[i]) < 0)
			return -ENOMEM;
		/* a loose ref after the commit shadows the line (one added is
		 * judged as a loose ref), and one before shadowed it */
		if (ref_after(g, loose) || (kept && exists_beneath(g->s->ws_fd, loose)))
			continue;
		const char *old = packed_line(ot, on[i]);
		if (kept ? left_value_kept(g, path, dirlen, on[i], old, packed_line(nt, *kept))
			 : old_ref_kept(g, path, dirlen, old))
			continue;
		if (asprintf(&what, "%s (%s%s)", path, on[i], kept ? " moved" : "") < 0)
			return -ENOMEM;
		git_hit(g, EFFECT_GIT_REFS_DELETED, what);
		return 0;
	}
	return 0;
}

/* A loose ref deleted: still there if the new packed-refs has it, with
 * the value it had or one that keeps it (left_value_kept). */
static bool loose_ref_kept(gitscan *g, const char *path, size_t dirlen, const char *name)
{
	_cleanup_free_ char *packed = NULL, *text = NULL, *old = NULL;
	_cleanup_free_ char **names = NULL;
	size_t n, len;
	if (asprintf(&packed, "%.*spacked-refs", (int)dirlen, path) < 0)
		return false;
	const effect_change *c = find_change(g->s, g->sorted, packed);
	if (!c || c->kind == TXBOX_CHANGE_DELETED) /* not repacked now: the packed value is an older one */
		return false;
	if (packed_refs(g, packed, true, &text, &names, &n) < 0 || !names)
		return false;
	char **hit = n ? bsearch(&name, names, n, sizeof *names, strcmp_p) : NULL;
	if (!hit || read_small(g->s->ws_fd, path, REF_MAX, &old, &len) < 0 || strlen(old) != len)
		return false;
	return left_value_kept(g, path, dirlen, name, old, packed_line(text, *hit));
}


static bool suffix_of(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);
	return a >= b && !strcmp(s + a - b, suffix);
}

/* A loose object (objects/XX/…) or a pack or its index: immutable once
 * written (git only ever adds them, or deletes them when unreachable or
 * repacked; freshening one changes its times only). */
static bool object_file(const char *rest)
{
	if (prefix_of(rest, "objects/pack/"))
		return suffix_of(rest, ".pack") || suffix_of(rest, ".idx");
	return prefix_of(rest, "objects/") && !prefix_of(rest, "objects/info/");
}

/* The kind a git file's change has: a directory standing where a regular
 * file was is that file replaced; other directories are no effect (what
 * is in them is listed). -1: none. */
static int git_file_kind(const gitscan *g, const effect_change *c)
{
	if (!c->dir)
		return (int)c->kind;
	struct stat st;
	if (c->kind == TXBOX_CHANGE_ADDED || c->kind == TXBOX_CHANGE_DELETED ||
	    stat_beneath(g->s->ws_fd, c->path, &st) < 0 || !S_ISREG(st.st_mode))
		return -1;
	return TXBOX_CHANGE_TYPE_CHANGED;
}

#define REFLOG_MAX (64u * 1024 * 1024)

/* Lines of the stash reflog beneath fd (one per entry); absent: 0;
 * unreadable: SIZE_MAX on the old side reads as everything lost. */
static size_t stash_entries(int fd, const char *log, size_t unreadable)
{
	_cleanup_free_ char *text = NULL;
	size_t len, n = 0;
	int r = read_small(fd, log, REFLOG_MAX, &text, &len);
	if (r < 0)
		return r == -ENOENT ? 0 : unreadable;
	for (size_t i = 0; i < len; i++)
		n += text[i] == '\n';
	return n + (len && text[len - 1] != '\n');
}

static bool reflog_commits_kept(gitscan *g, const char *path, size_t dirlen);

/* The stash (refs/stash and its reflog, one entry a line) is the user's
 * uncommitted work, judged like a branch: an entry gone (`git stash drop`,
 * `clear`, the files removed; also `pop`, whose commit nothing keeps
 * either: its changes are in the work tree, which is not told from a
 * drop) is a loss unless every commit the stash recorded stays reachable.
 * `git stash apply` keeps the entry. */
static int stash_change(gitscan *g, const char *path, size_t dirlen)
{
	_cleanup_free_ char *ref = NULL, *log = NULL;
	if (asprintf(&ref, "%.*srefs/stash", (int)dirlen, path) < 0 ||
	    asprintf(&log, "%.*slogs/refs/stash", (int)dirlen, path) < 0)
		return -ENOMEM;
	size_t before = stash_entries(g->s->ws_fd, log, SIZE_MAX), after = 0;
	const effect_change *c = find_change(g->s, g->sorted, log);
	if (ref_after(g, ref) && !(c && c->kind == TXBOX_CHANGE_DELETED))
		after = stash_entries(c ? g->s->upper_fd : g->s->ws_fd, log, 0);
	if (before > after && !reflog_commits_kept(g, log, dirlen))
		git_hit(g, EFFECT_GIT_STASH_DROPPED, log);
	return 0;
}

/* ---- git objects: do a ref's commits stay reachable? ---------------------
 * A branch deleted after it was merged (`git branch -d`), or a tag whose
 * commit a branch still has, loses no commit. Telling that needs commit
 * objects, read from a hostile repository by tx/gitobj.c (bounded;
 * anything unreadable: unknown, so the ref counts as lost); the walk is
 * from the surviving branches, tags and HEAD, gathered here. */

#define REACH_MAX_REFS 10000

/* Open path as it is after the commit (the layer's version when the
 * transaction changed it), never through a symlink; -ENOENT: none. */
static int open_after(const gitscan *g, const char *path)
{
	const effect_change *c = find_change(g->s, g->sorted, path);
	if (c && c->kind == TXBOX_CHANGE_DELETED)
		return -ENOENT;
	return fs_open_beneath(c ? g->s->upper_fd : g->s->ws_fd, path, O_RDONLY | O_NONBLOCK, 0);
}

static int io_open(void *ctx, const char *path) { return open_after(ctx, path); }

/* The names of both (what the layer deleted does not open). */
static void io_list(void *ctx, const char *path, void (*add)(void *arg, const char *name), void *arg)
{
	const gitscan *g = ctx;
	gitobj_io ws = gitobj_io_plain(&g->s->ws_fd), upper = gitobj_io_plain(&g->s->upper_fd);
	ws.list(ws.ctx, path, add, arg);
	upper.list(upper.ctx, path, add, arg);
}

/* Add the object id of ref text t (after the commit), if it is one. */
static int add_root(gitobj_store *roots, const char *t, size_t hexlen)
{
	gitobj_oid o;
	if (strlen(t) < hexlen || gitobj_oid_parse(t, hexlen, &o) < 0 || (t[hexlen] && !isspace((unsigned char)t[hexlen])))
		return 0;
	return gitobj_walk_add(roots, &o);
}

/* The loose refs beneath rel (a directory of the workspace), as they are
 * after the commit; *budget bounds the entries read. */
static int roots_walk(gitscan *g, const char *rel, int depth, size_t *budget, gitobj_store *roots, size_t hexlen)
{
	int dfd = fs_open_beneath(g->s->ws_fd, rel, O_RDONLY | O_DIRECTORY, 0);
	if (dfd < 0)
		return 0;
	_cleanup_closedir_ DIR *dir = fdopendir(dfd);
	if (!dir) {
		close(dfd);
		return 0;
	}
	int r = 0;
	for (struct dirent *de; r == 0 && (de = readdir(dir)) && *budget; --*budget) {
		_cleanup_free_ char *p = NULL, *text = NULL;
		size_t len;
		if (de->d_name[0] == '.' || asprintf(&p, "%s/%s", rel, de->d_name) < 0)
			continue;
		if (de->d_type == DT_DIR && depth < 16)
			r = roots_walk(g, p, depth + 1, budget, roots, hexlen);
		else if (ref_after(g, p) && read_small(find_change(g->s, g->sorted, p) ? g->s->upper_fd : g->s->ws_fd, p,
						      REF_MAX, &text, &len) == 0)
			r = add_root(roots, text, hexlen);
	}
	return r;
}

/* The roots of what git keeps after the commit: HEAD, the branches and
 * tags (loose and packed, peeled tags too). Not remote-tracking refs nor
 * the stash: a command deletes those freely, so they keep nothing. */
static int reach_roots(gitscan *g, const char *dir, size_t hexlen, gitobj_store *roots)
{
	_cleanup_free_ char *head = NULL, *packed = NULL, *text = NULL, *heads = NULL, *tags = NULL;
	size_t len, budget = REACH_MAX_REFS;
	int r = 0;
	if (asprintf(&head, "%sHEAD", dir) < 0 || asprintf(&packed, "%spacked-refs", dir) < 0 ||
	    asprintf(&heads, "%srefs/heads", dir) < 0 || asprintf(&tags, "%srefs/tags", dir) < 0)
		return -ENOMEM;
	if (ref_after(g, head) && read_small(find_change(g->s, g->sorted, head) ? g->s->upper_fd : g->s->ws_fd, head,
					     REF_MAX, &text, &len) == 0)
		r = add_root(roots, text, hexlen); /* detached; a symbolic HEAD names a branch below */
	_cleanup_close_ int pf = open_after(g, packed);
	struct stat st;
	_cleanup_fclose_ FILE *f = pf >= 0 && fstat(pf, &st) == 0 && S_ISREG(st.st_mode) ? fdopen(pf, "r") : NULL;
	if (f)
		pf = -1;
	char line[4096];
	bool shadowed = false; /* a loose ref names the line's ref: its value is the loose one */
	while (r == 0 && f && budget-- && fgets(line, sizeof line, f)) {
		const char *name = line + hexlen + 1;
		if (line[0] == '^') { /* the peeled value of the line before */
			if (!shadowed)
				r = add_root(roots, line + 1, hexlen);
			continue;
		}
		shadowed = false;
		if (strlen(line) <= hexlen + 1 || !(prefix_of(name, "refs/heads/") || prefix_of(name, "refs/tags/")))
			continue;
		_cleanup_free_ char *loose = NULL;
		if (asprintf(&loose, "%s%.*s", dir, (int)strcspn(name, "\n"), name) < 0)
			return -ENOMEM;
		shadowed = ref_after(g, loose);
		if (!shadowed)
			r = add_root(roots, line, hexlen);
	}
	budget = REACH_MAX_REFS;
	if (r == 0)
		r = roots_walk(g, heads, 0, &budget, roots, hexlen);
	if (r == 0)
		r = roots_walk(g, tags, 0, &budget, roots, hexlen);
	for (size_t i = 0; r == 0 && i < g->s->n; i++) { /* branches and tags the layer added */
		const effect_change *c = &g->s->v[i];
		const char *rest = c->path + strlen(dir);
		_cleanup_free_ char *t = NULL;
		if (c->kind != TXBOX_CHANGE_ADDED || c->dir || strncmp(c->path, dir, strlen(dir)) ||
		    !(prefix_of(rest, "refs/heads/") || prefix_of(rest, "refs/tags/")))
			continue;
		if (read_small(g->s->upper_fd, c->path, REF_MAX, &t, &len) == 0)
			r = add_root(roots, t, hexlen);
	}
	return r;
}

/* The object store of git dir path[0..dirlen) after the commit, kept
 * open for the next question about the same dir; NULL: none (out of
 * memory). */
static gitobj_store *odb_for(gitscan *g, const char *path, size_t dirlen, size_t hexlen)
{
	gitobj_store *d = g->odb;
	if (d && strlen(gitobj_dir(d)) == dirlen && !strncmp(gitobj_dir(d), path, dirlen) && gitobj_hexlen(d) == hexlen)
		return d;
	g->odb = gitobj_free(d);
	_cleanup_free_ char *dir = strndup(path, dirlen);
	if (dir && gitobj_open(&g->io, dir, hexlen, &g->odb) < 0)
		g->odb = NULL;
	return g->odb;
}

/* Do the commits (or tags) targets stay reachable after the commit from
 * the branches, tags and HEAD of the git dir path[0..dirlen)? Unknown
 * (a walk over its bound, out of memory): no. */
static bool commits_kept(gitscan *g, const char *path, size_t dirlen, const gitobj_oid *targets, size_t nt, size_t hexlen)
{
	gitobj_store *d = odb_for(g, path, dirlen, hexlen);
	if (!d)
		return false;
	if (!gitobj_walk_started(d) && reach_roots(g, gitobj_dir(d), hexlen, d) < 0) /* one walk per git dir */
		gitobj_walk_fail(d); /* out of memory: nothing known */
	return gitobj_walk_reaches(d, targets, nt) == 1;
}

/* The object id ending the ref text t (40 or 64 hex digits): 0, or -1. */
static int ref_oid(const char *t, gitobj_oid *o, size_t *hexlen)
{
	size_t n = strspn(t, "0123456789abcdef");
	if ((n != 40 && n != 64) || (t[n] && !isspace((unsigned char)t[n])))
		return -1;
	*hexlen = n;
	return gitobj_oid_parse(t, n, o);
}

/* A ref the transaction deleted (or made no ref) held text old: does
 * what it named stay reachable? A symbolic ref names no commit of its own. */
static bool old_ref_kept(gitscan *g, const char *path, size_t dirlen, const char *old)
{
	gitobj_oid o;
	size_t hexlen;
	if (!strncmp(old, "ref:", 4))
		return true;
	return ref_oid(old, &o, &hexlen) == 0 && commits_kept(g, path, dirlen, &o, 1, hexlen);
}

/* A loose ref the transaction deleted: does its old value stay reachable? */
static bool loose_commits_kept(gitscan *g, const char *path, size_t dirlen)
{
	_cleanup_free_ char *text = NULL;
	size_t len;
	return read_small(g->s->ws_fd, path, REF_MAX, &text, &len) == 0 && strlen(text) == len &&
	       old_ref_kept(g, path, dirlen, text);
}

#define REFLOG_IDS_MAX 4096

/* A reflog deleted with its ref (`git branch -d`): do the commits of all
 * its entries (the new value of each line) stay reachable? */
static bool reflog_commits_kept(gitscan *g, const char *path, size_t dirlen)
{
	_cleanup_free_ char *text = NULL;
	_cleanup_free_ gitobj_oid *ids = NULL;
	size_t len, n = 0, hexlen = 0;
	if (read_small(g->s->ws_fd, path, REFLOG_MAX, &text, &len) < 0 || strlen(text) != len)
		return false;
	for (char *line = text; *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : line + strlen(line)) {
		gitobj_oid old, now;
		size_t h;
		if (ref_oid(line, &old, &h) < 0 || ref_oid(line + h + 1, &now, &hexlen) < 0 || h != hexlen)
			return false; /* not what git writes */
		if (gitobj_oid_null(&now))
			continue;
		if (n == REFLOG_IDS_MAX)
			return false;
		gitobj_oid *v = n % 64 ? ids : realloc(ids, (n + 64) * sizeof *v);
		if (!v)
			return false;
		ids = v;
		ids[n++] = now;
	}
	return n == 0 || commits_kept(g, path, dirlen, ids, n, hexlen);
}

/* Is every object of the old index idx (a path of the workspace) listed
 * by a pack of the store d? */
static bool idx_listed(const gitscan *g, gitobj_store *d, const char *idx)
{
	_cleanup_close_ int fd = fs_open_beneath(g->s->ws_fd, idx, O_RDONLY | O_NONBLOCK, 0);
	return fd >= 0 && gitobj_idx_all_listed(d, fd) == 1;
}

/* A loose object or a pack deleted (rest: objects/XX/… or
 * objects/pack/pack-ID.{pack,idx}): is every object it held listed by a
 * pack there after the commit (`git gc`, `git repack`)? The new pack's
 * content is not verified (that would mean inflating and hashing every
 * object through its deltas), so a repack is still held, not allowed:
 * what is known is that no object id went missing. */
static bool objects_repacked(gitscan *g, const char *path, size_t dirlen, const char *rest)
{
	char hex[65];
	size_t hexlen = 0;
	if (prefix_of(rest, "objects/pack/pack-")) {
		const char *id = rest + strlen("objects/pack/pack-");
		hexlen = strspn(id, "0123456789abcdef");
	} else if (strlen(rest) == 8 + 2 + 1 + 38 || strlen(rest) == 8 + 2 + 1 + 62) {
		hexlen = strlen(rest) - 9;
		snprintf(hex, sizeof hex, "%.2s%s", rest + 8, rest + 11);
	}
	if (hexlen != 40 && hexlen != 64)
		return false;
	gitobj_store *d = odb_for(g, path, dirlen, hexlen);
	if (!d)
		return false;
	if (!prefix_of(rest, "objects/pack/")) {
		gitobj_oid o;
		return gitobj_oid_parse(hex, hexlen, &o) == 0 && gitobj_in_packs(d, &o);
	}
	_cleanup_free_ char *idx = NULL;
	if (asprintf(&idx, "%.*s%.*s.idx", (int)dirlen, path, (int)(strrchr(rest, '.') - rest), rest) < 0)
		return false;
	return idx_listed(g, d, idx);
}

/* Is ref name of the git dir path[0..dirlen) gone after the commit, as
 * a loose ref and from packed-refs? (A reflog deleted with its ref is
 * judged by the commits it recorded.) */
static bool ref_gone(gitscan *g, const char *path, size_t dirlen, const char *name)
{
	_cleanup_free_ char *loose = NULL, *packed = NULL, *text = NULL;
	_cleanup_free_ char **names = NULL;
	size_t n;
	if (asprintf(&loose, "%.*s%s", (int)dirlen, path, name) < 0 ||
	    asprintf(&packed, "%.*spacked-refs", (int)dirlen, path) < 0 || ref_after(g, loose) ||
	    packed_refs(g, packed, true, &text, &names, &n) < 0)
		return false;
	return !n || !bsearch(&name, names, n, sizeof *names, strcmp_p);
}

#define REFLOG_TAIL 65536
/* git expires a reflog entry whose commit is unreachable 30 days after the
 * time the line states (gc.reflogExpireUnreachable); a line git writes for
 * an update states now, one the command wrote may state 1970 */
#define REFLOG_FRESH_SECONDS (24 * 3600)

/* Is the reflog line at line ("OLD NEW NAME <EMAIL> SECONDS TZ[\tMSG]")
 * dated no earlier than since? */
static bool reflog_line_fresh(const char *line, long long since)
{
	size_t end = strcspn(line, "\t\n");
	const char *gt = NULL;
	for (size_t i = end; i-- > 0 && !gt;)
		gt = line[i] == '>' ? line + i : NULL;
	char *after;
	errno = 0;
	long long t = gt ? strtoll(gt + 1, &after, 10) : -1;
	return gt && after != gt + 1 && !errno && t >= since;
}

/* Does the reflog of ref name (of the git dir path[0..dirlen)) after the
 * commit record object id hex[0..hexlen) as the old or new value of a line
 * dated in the last day? Its last 64 KiB are read: git appends "OLD NEW
 * ..." for each update, so the value a ref just left ends the file. */
static bool reflog_records(const gitscan *g, const char *path, size_t dirlen, const char *name, const char *hex,
			   size_t hexlen)
{
	_cleanup_free_ char *log = NULL, *buf = malloc(REFLOG_TAIL + 1);
	struct stat st;
	if (!buf || asprintf(&log, "%.*slogs/%s", (int)dirlen, path, name) < 0)
		return false;
	_cleanup_close_ int fd = open_after(g, log);
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return false;
	off_t at = st.st_size > REFLOG_TAIL ? st.st_size - REFLOG_TAIL : 0;
	ssize_t got = pread(fd, buf, REFLOG_TAIL, at);
	if (got <= 0)
		return false;
	buf[got] = '\0';
	char *line = buf;
	if (at > 0) /* the first line read may be cut */
		line = strchr(buf, '\n') ? strchr(buf, '\n') + 1 : buf + got;
	long long since = (long long)time(NULL) - REFLOG_FRESH_SECONDS;
	for (; *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : line + strlen(line))
		if (ref_hex(line) == hexlen && ref_hex(line + hexlen + 1) == hexlen &&
		    (!strncmp(line, hex, hexlen) || !strncmp(line + hexlen + 1, hex, hexlen)) &&
		    reflog_line_fresh(line, since))
			return true;
	return false;
}

/* A ref that stays a ref left the value old for now (ref texts; now NULL:
 * unknown): is what old named kept? By the ref's reflog, which records the
 * move (a branch moved by `commit --amend`, `reset` or `rebase`: git keeps
 * that entry 30 days once unreachable), or by a branch, tag or HEAD
 * reaching it. Tags have no reflog: a tag moved off the commit only it
 * reached (`git tag -f`) loses that commit, as if deleted. */
static bool left_value_kept(gitscan *g, const char *path, size_t dirlen, const char *name, const char *old,
			    const char *now)
{
	size_t h = ref_hex(old);
	if (!h) /* a symbolic ref names no commit of its own; junk named none */
		return true;
	if (now && ref_hex(now) == h && !strncmp(old, now, h))
		return true;
	return reflog_records(g, path, dirlen, name, old, h) || old_ref_kept(g, path, dirlen, old);
}

/* A loose ref (refs/..., not the stash or a remote-tracking ref) changed:
 * gone or no longer a ref, and not kept in a rewritten packed-refs, its
 * value is lost unless reachable; still a ref, the value it left (its own,
 * or the packed one a ref added now shadows) is judged by left_value_kept. */
static int loose_ref_change(gitscan *g, const effect_change *c, int kind, size_t dirlen, const char *rest)
{
	_cleanup_free_ char *old = NULL, *now = NULL, *ptext = NULL, *packed = NULL, *what = NULL;
	_cleanup_free_ char **pnames = NULL;
	size_t len, n;
	if (kind == TXBOX_CHANGE_METADATA)
		return 0;
	if (!ref_after(g, c->path)) {
		if (kind != TXBOX_CHANGE_ADDED && !loose_ref_kept(g, c->path, dirlen, rest) &&
		    !loose_commits_kept(g, c->path, dirlen))
			git_hit(g, EFFECT_GIT_REFS_DELETED, c->path);
		return 0;
	}
	if (kind == TXBOX_CHANGE_ADDED) {
		if (asprintf(&packed, "%.*spacked-refs", (int)dirlen, c->path) < 0)
			return -ENOMEM;
		if (packed_refs(g, packed, false, &ptext, &pnames, &n) < 0) /* unreadable: nothing known lost */
			return 0;
		char **hit = n ? bsearch(&rest, pnames, n, sizeof *pnames, strcmp_p) : NULL;
		if (!hit || !(old = strdup(packed_line(ptext, *hit))))
			return hit ? -ENOMEM : 0;
	} else if (read_small(g->s->ws_fd, c->path, REF_MAX, &old, &len) < 0 || strlen(old) != len) {
		return 0; /* not a ref before (a directory: its refs are judged one by one) */
	}
	if (read_small(g->s->upper_fd, c->path, REF_MAX, &now, &len) < 0)
		now = NULL;
	if (left_value_kept(g, c->path, dirlen, rest, old, now))
		return 0;
	if (asprintf(&what, "%s (moved off a commit nothing else keeps)", c->path) < 0)
		return -ENOMEM;
	git_hit(g, EFFECT_GIT_REFS_DELETED, what);
	return 0;
}

static int exclude_change(gitscan *g, const effect_change *c, size_t dirlen);

/* The history effects of one changed file. */
static int git_change(gitscan *g, const effect_change *c)
{
	size_t dirlen;
	const char *rest;
	int kind = git_file_kind(g, c);
	if (kind < 0 || !git_split(g, c->path, &dirlen, &rest))
		return 0;
	if (!strcmp(rest, "shallow"))
		git_hit(g, EFFECT_GIT_SHALLOW_CHANGED, c->path);
	if (!strcmp(rest, "info/exclude"))
		return exclude_change(g, c, dirlen);
	bool stash = !strcmp(rest, "refs/stash") || !strcmp(rest, "logs/refs/stash");
	/* nothing was there to lose, but a loose ref added may shadow a packed one */
	if (kind == TXBOX_CHANGE_ADDED && (stash || !prefix_of(rest, "refs/")))
		return 0;
	bool deleted = kind == TXBOX_CHANGE_DELETED;
	if (stash)
		return kind == TXBOX_CHANGE_METADATA ? 0 : stash_change(g, c->path, dirlen);
	if (remote_tracking(rest))
		return 0;
	if (prefix_of(rest, "refs/")) {
		if (loose_ref_change(g, c, kind, dirlen, rest) < 0)
			return -ENOMEM;
	} else if (!strcmp(rest, "packed-refs")) {
		if (packed_refs_lost(g, c->path, dirlen) < 0)
			return -ENOMEM;
	} else if (prefix_of(rest, "logs/")) {
		if (kind != TXBOX_CHANGE_METADATA &&
		    (kind != TXBOX_CHANGE_MODIFIED || !old_is_prefix(g->s->ws_fd, g->s->upper_fd, c->path, false)) &&
		    !(deleted && ref_gone(g, c->path, dirlen, rest + 5) && reflog_commits_kept(g, c->path, dirlen)))
			git_hit(g, EFFECT_GIT_REFLOG_DELETED, c->path);
	} else if (object_file(rest)) {
		if (deleted && objects_repacked(g, c->path, dirlen, rest)) {
			_cleanup_free_ char *what = NULL;
			if (asprintf(&what, "%s, repacked: every object it held is listed by a pack kept or added, "
					    "whose content is not verified",
				     c->path) < 0)
				return -ENOMEM;
			g->where_repacked |= !(g->bits & EFFECT_GIT_OBJECTS_DELETED);
			git_hit(g, EFFECT_GIT_OBJECTS_DELETED, what);
		} else if (deleted) {
			unsigned bit = prefix_of(rest, "objects/pack/") ? EFFECT_GIT_PACKS_DELETED : EFFECT_GIT_OBJECTS_DELETED;
			char **where = &g->where[__builtin_ctz(EFFECT_GIT_OBJECTS_DELETED)];
			if (bit == EFFECT_GIT_OBJECTS_DELETED && g->where_repacked) { /* name one lost, not repacked */
				free(*where);
				*where = NULL;
				g->where_repacked = false;
			}
			git_hit(g, bit, c->path);
		}
		else if (kind == TXBOX_CHANGE_TYPE_CHANGED ||
			 (kind == TXBOX_CHANGE_MODIFIED && !old_is_prefix(g->s->ws_fd, g->s->upper_fd, c->path, true)))
			git_hit(g, EFFECT_GIT_OBJECTS_REWRITTEN, c->path);
	}
	return 0;
}

/* ---- git config ---------------------------------------------------------- */

typedef struct keyset {
	strvec keys;   /* keys whose values changed */
	strvec values; /* KEY=VALUE gained */
	bool unreadable;
} keyset;

static void keyset_free(keyset *k)
{
	strv_free(k->keys.v, k->keys.n);
	strv_free(k->values.v, k->values.n);
}

static int config_version(int fd, const char *path, bool present, gitconfig_entry **e, size_t *n)
{
	*e = NULL;
	*n = 0;
	if (!present)
		return 0;
	_cleanup_free_ char *text = NULL;
	size_t len;
	int r = read_small(fd, path, GITCONFIG_MAX_BYTES, &text, &len);
	if (r == -ENOENT)
		return 0;
	return r < 0 ? r : gitconfig_parse(text, len, e, n);
}

/* Does dir (with its '/', or "") hold name after the commit? */
static bool sibling_after(const gitscan *g, const char *dir, size_t dirlen, const char *name)
{
	_cleanup_free_ char *path = NULL;
	if (asprintf(&path, "%.*s%s", (int)dirlen, dir, name) < 0)
		return true; /* out of memory: the stricter answer */
	return exists_after(g, path);
}

/* Does git read path as a config? Inside a `.git`, or in any directory
 * git takes for a git dir or a common dir (`objects` and `refs` in it, or
 * a `commondir` file): a gitfile, a `commondir`, a bare repository or
 * GIT_DIR can point git at any directory of the workspace, and git then
 * reads that directory's config. And a user's (`.gitconfig`,
 * `.config/git/config`): a home may lie in the workspace (HOME=$WS/…). */
static bool git_config_file(gitscan *g, const char *path)
{
	size_t dirlen;
	const char *rest;
	if (git_split(g, path, &dirlen, &rest) && (!strcmp(rest, "config") || !strcmp(rest, "config.worktree")))
		return true;
	const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
	if (!strcmp(base, ".gitconfig") || !strcmp(path, ".config/git/config") || suffix_of(path, "/.config/git/config"))
		return true;
	if (strcmp(base, "config") && strcmp(base, "config.worktree"))
		return false;
	size_t n = (size_t)(base - path);
	return (sibling_after(g, path, n, "objects") && sibling_after(g, path, n, "refs")) ||
	       sibling_after(g, path, n, "commondir");
}

/* A repository's own config (`config` beside HEAD, objects and refs, not
 * a user's), new when that HEAD was not in the workspace: a clone or an
 * init, not a config deleted by one transaction and remade by the next.
 * Any other config (config.worktree, a user's) is merged with one whose
 * remotes it can redirect. */
static enum gitconfig_role config_role(const gitscan *g, const char *path)
{
	const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
	size_t n = (size_t)(base - path);
	if (strcmp(base, "config") || !strcmp(path, ".config/git/config") || suffix_of(path, "/.config/git/config"))
		return GITCONFIG_OVERLAY;
	_cleanup_free_ char *head = NULL;
	if (asprintf(&head, "%.*sHEAD", (int)n, path) < 0)
		return GITCONFIG_REPO; /* out of memory: the stricter answer */
	/* any HEAD (a symlink, junk, unreadable) was a repository */
	return exists_beneath(g->s->ws_fd, head) ? GITCONFIG_REPO : GITCONFIG_NEW_REPO;
}

/* Note the first redirect of an existing remote, by key and values, and
 * the values the keys gained. */
static int config_values(gitscan *g, const char *path, const gitconfig_entry *a, size_t na,
			 const gitconfig_entry *b, size_t nb, char **keys, size_t nk, keyset *k)
{
	_cleanup_free_ char *what = NULL;
	enum gitconfig_role role = config_role(g, path);
	int r = gitconfig_redirect(a, na, b, nb, (const char *const *)keys, nk, role, &what);
	if (r > 0)
		git_hit(g, EFFECT_GIT_REMOTE_REDIRECTED, what);
	char **vals = NULL;
	size_t nv = 0;
	if (r >= 0)
		r = gitconfig_gained(a, na, b, nb, (const char *const *)keys, nk, role, &vals, &nv);
	return r < 0 ? r : strvec_take(&k->values, vals, nv);
}

/* One changed git config file: the keys whose values differ. */
static int config_change(gitscan *g, const effect_change *c, keyset *k)
{
	const scan *s = g->s;
	if (c->dir || !git_config_file(g, c->path))
		return 0;
	gitconfig_entry *a = NULL, *b = NULL;
	size_t na = 0, nb = 0;
	int r = config_version(s->ws_fd, c->path, c->kind != TXBOX_CHANGE_ADDED, &a, &na);
	if (r < 0 && r != -ENOMEM) { /* an old config git could not read: compare with none */
		a = NULL;
		na = 0;
		r = 0;
	}
	if (r == 0)
		r = config_version(s->upper_fd, c->path, c->kind != TXBOX_CHANGE_DELETED, &b, &nb);
	char **keys = NULL;
	size_t nk = 0;
	if (r == 0)
		r = gitconfig_changed_keys(a, na, b, nb, &keys, &nk);
	if (r == 0)
		r = config_values(g, c->path, a, na, b, nb, keys, nk, k);
	gitconfig_free(a, na);
	gitconfig_free(b, nb);
	if (r < 0 && r != -ENOMEM) {
		k->unreadable = true;
		r = 0;
	}
	if (r < 0) {
		strv_free(keys, nk);
		return r;
	}
	return strvec_take(&k->keys, keys, nk);
}

/* ---- uncommitted work discarded -------------------------------------------
 * A tracked file whose content before the transaction was not the blob the
 * index records had edits git never saw: deleting it (`git rm -f`, `find
 * -delete`), or rewriting it to a version git has (`git checkout -- f`,
 * `git restore --source=HEAD`), loses them for good. Rewriting it to other
 * new content is work (the agent's tools, formatters). Only the files the
 * transaction deleted or rewrote are looked up in the index (read once per
 * work tree) and hashed (bounded), and a file whose size and mtime are the
 * index's is taken as clean without reading it, as git does. */

#define WORK_INDEX_MAX (256u * 1024 * 1024)
#define WORK_HASH_MAX (256u * 1024 * 1024) /* a larger file is not judged */

typedef struct worktree {
	gitscan *g;
	const char *root; /* the work tree: "" or "DIR/" */
	size_t rootlen;
	const effect_change **cand; /* deleted or rewritten beneath root, by path */
	size_t n, at;
	gitobj_store *before; /* the object store as it was (workspace only) */
	int ws_io_fd;
	gitobj_io ws_io;
	bool stash_saved; /* the transaction made a stash entry in this repository */
	struct timespec index_mtime; /* an entry not older was "racily clean" when written */
	size_t lost;
	char *first;
	/* added regular files by size (for moves), built on first need */
	struct added { off_t size; const char *path; } *added;
	size_t nadded;
	bool added_done;
	int err;
} worktree;

/* Blob id of path beneath fd: 0, or -errno (not a regular file, too large). */
static int blob_at(int fd, const char *path, gitobj_oid *o, struct stat *st)
{
	_cleanup_close_ int f = fs_open_beneath(fd, path, O_RDONLY | O_NONBLOCK, 0);
	if (f < 0)
		return f;
	if (st && fstat(f, st) < 0)
		return -errno;
	return gitobj_blob_id(f, WORK_HASH_MAX, o);
}

static int added_cmp(const void *a, const void *b)
{
	off_t x = ((const struct added *)a)->size, y = ((const struct added *)b)->size;
	return (x > y) - (x < y);
}

/* Did the transaction add a regular file holding old (of size size): the
 * file moved (`git mv`, `mv`), its edits with it? */
static bool moved(worktree *w, const gitobj_oid *old, off_t size)
{
	const scan *s = w->g->s;
	if (!w->added_done) {
		w->added_done = true;
		w->added = calloc(s->n + 1, sizeof *w->added);
		for (size_t i = 0; w->added && i < s->n; i++) {
			struct stat st;
			if (s->v[i].kind != TXBOX_CHANGE_ADDED || s->v[i].dir ||
			    stat_beneath(s->upper_fd, s->v[i].path, &st) < 0 || !S_ISREG(st.st_mode))
				continue;
			w->added[w->nadded++] = (struct added){st.st_size, s->v[i].path};
		}
		if (w->added)
			qsort(w->added, w->nadded, sizeof *w->added, added_cmp);
	}
	struct added key = {size, NULL};
	struct added *hit = w->nadded ? bsearch(&key, w->added, w->nadded, sizeof key, added_cmp) : NULL;
	while (hit && hit > w->added && hit[-1].size == size)
		hit--;
	for (; hit && hit < w->added + w->nadded && hit->size == size; hit++) {
		gitobj_oid now;
		if (blob_at(s->upper_fd, hit->path, &now, NULL) == 0 && !memcmp(now.b, old->b, 20))
			return true;
	}
	return false;
}

/* Is the old content (blob old) saved by the transaction: a stash entry
 * made now, whose objects hold it (`git stash`)? */
static bool saved(worktree *w, const gitobj_oid *old)
{
	if (!w->stash_saved)
		return false;
	_cleanup_free_ char *dir = NULL;
	if (asprintf(&dir, "%s.git/", w->root) < 0)
		return false;
	gitobj_store *after = odb_for(w->g, dir, strlen(dir), 40);
	return after && gitobj_exists(after, old) == 1;
}

/* Candidate c (tracked as entry e) lost edits? */
static bool discarded(worktree *w, const effect_change *c, const gitobj_index_entry *e)
{
	const scan *s = w->g->s;
	struct stat old;
	gitobj_oid was, now;
	_cleanup_close_ int f = fs_open_beneath(s->ws_fd, c->path, O_RDONLY | O_NONBLOCK, 0);
	if (f < 0 || fstat(f, &old) < 0 || !S_ISREG(old.st_mode))
		return false;
	/* git's stat data: unchanged since git recorded it, unless the entry
	 * is as new as the index (a file changed in the same tick: "racy") */
	bool racy = (uint64_t)e->mtime_s > (uint64_t)w->index_mtime.tv_sec ||
		    ((uint64_t)e->mtime_s == (uint64_t)w->index_mtime.tv_sec && e->mtime_ns >= w->index_mtime.tv_nsec);
	if (!racy && (uint32_t)old.st_size == e->size && (uint32_t)old.st_mtim.tv_sec == e->mtime_s &&
	    (uint32_t)old.st_mtim.tv_nsec == e->mtime_ns)
		return false;
	if (gitobj_blob_id(f, WORK_HASH_MAX, &was) < 0 || !memcmp(was.b, e->oid.b, 20))
		return false; /* too large to judge, or clean */
	struct stat st;
	int r = c->kind == TXBOX_CHANGE_DELETED ? -ENOENT : blob_at(s->upper_fd, c->path, &now, &st);
	if (r == 0) { /* rewritten: lost only when reverted to a version git has */
		if (memcmp(now.b, e->oid.b, 20) != 0 && (!w->before || gitobj_exists(w->before, &now) != 1))
			return false;
	} else if (r == -EFBIG)
		return false;
	else if (moved(w, &was, old.st_size)) /* deleted, or no longer a regular file */
		return false;
	return !saved(w, &was);
}

static int work_entry(void *arg, const gitobj_index_entry *e)
{
	worktree *w = arg;
	if (e->stage != 0 || (e->mode & 0170000) != 0100000)
		return 0; /* a conflict, a symlink, a submodule: not a file's edits */
	while (w->at < w->n) {
		const effect_change *c = w->cand[w->at];
		int cmp = strcmp(c->path + w->rootlen, e->path);
		if (cmp > 0)
			return 0;
		w->at++;
		if (cmp < 0)
			continue;
		if (!discarded(w, c, e))
			return 0;
		if (!w->lost++ && !(w->first = strdup(c->path)))
			return -ENOMEM;
		return 0;
	}
	return 1; /* every candidate seen */
}

/* A deleted or rewritten file outside a git dir, whose content may have
 * been a tracked file's. */
static bool work_candidate(const effect_change *c)
{
	if ((c->dir && !c->destroyed) || c->kind == TXBOX_CHANGE_ADDED || c->kind == TXBOX_CHANGE_METADATA)
		return false;
	return strncmp(c->path, ".git/", 5) && !strstr(c->path, "/.git/") && strcmp(c->path, ".git");
}

/* The length of the work tree prefix of path ("DIR/" holding a `.git`
 * directory; 0 for the workspace's own), or -1: in none. */
static ssize_t work_root(const scan *s, const char *path)
{
	for (const char *slash = strrchr(path, '/');; slash = slash > path ? memrchr(path, '/', (size_t)(slash - path)) : NULL) {
		size_t len = slash ? (size_t)(slash - path) + 1 : 0;
		_cleanup_free_ char *git = NULL;
		struct stat st;
		if (asprintf(&git, "%.*s.git", (int)len, path) < 0)
			return -1;
		if (stat_beneath(s->ws_fd, git, &st) == 0 && S_ISDIR(st.st_mode))
			return (ssize_t)len;
		if (!slash)
			return -1;
	}
}

/* Leave out of w->cand the files rewritten to content the repository did
 * not have (an edit, a formatter: the common case), so that a transaction
 * that only edits never reads the index: what is left may have been
 * discarded (deleted, reverted). True: some are left. */
static bool work_rewrites_kept(worktree *w)
{
	size_t keep = 0;
	for (size_t i = 0; i < w->n; i++) {
		const effect_change *c = w->cand[i];
		gitobj_oid now;
		int r = w->before && c->kind != TXBOX_CHANGE_DELETED ? blob_at(w->g->s->upper_fd, c->path, &now, NULL) : -1;
		if (r == -EFBIG || (r == 0 && gitobj_exists(w->before, &now) != 1))
			continue;
		w->cand[keep++] = c;
	}
	w->n = keep;
	return keep > 0;
}

/* A SHA-256 repository (extensions.objectformat): not judged (its ids are
 * not SHA-1 blob ids). */
static bool sha256_repo(const scan *s, const char *root)
{
	_cleanup_free_ char *path = NULL, *text = NULL;
	gitconfig_entry *e = NULL;
	size_t len, n = 0;
	bool sha256 = false;
	if (asprintf(&path, "%s.git/config", root) < 0 || read_small(s->ws_fd, path, GITCONFIG_MAX_BYTES, &text, &len) < 0 ||
	    gitconfig_parse(text, len, &e, &n) < 0)
		return false;
	for (size_t i = 0; i < n; i++)
		sha256 |= !strcmp(e[i].key, "extensions.objectformat") && e[i].value && !strcasecmp(e[i].value, "sha256");
	gitconfig_free(e, n);
	return sha256;
}

/* The candidates w->cand beneath work tree w->root, against its index as
 * it was before the transaction (none, or one git cannot read: nothing is
 * known tracked). */
static int work_tree_check(worktree *w)
{
	gitscan *g = w->g;
	_cleanup_free_ char *index = NULL, *dir = NULL, *stash = NULL, *stash_log = NULL;
	_cleanup_free_ unsigned char *buf = NULL;
	size_t len;
	if (asprintf(&dir, "%s.git/", w->root) < 0 || asprintf(&index, "%sindex", dir) < 0 ||
	    asprintf(&stash, "%srefs/stash", dir) < 0 || asprintf(&stash_log, "%slogs/refs/stash", dir) < 0)
		return -ENOMEM;
	if (sha256_repo(g->s, w->root))
		return 0;
	w->ws_io_fd = g->s->ws_fd;
	w->ws_io = gitobj_io_plain(&w->ws_io_fd);
	if (gitobj_open(&w->ws_io, dir, 40, &w->before) < 0)
		w->before = NULL; /* no object known: only a revert to the index's blob counts */
	int r = 0;
	struct stat st;
	if (work_rewrites_kept(w) && stat_beneath(g->s->ws_fd, index, &st) == 0 &&
	    read_small(g->s->ws_fd, index, WORK_INDEX_MAX, (char **)&buf, &len) == 0) {
		w->index_mtime = st.st_mtim;
		const effect_change *c = find_change(g->s, g->sorted, stash_log);
		w->stash_saved = c && c->kind != TXBOX_CHANGE_DELETED && ref_after(g, stash);
		r = gitobj_index_each(buf, len, 20, work_entry, w);
	}
	w->before = gitobj_free(w->before);
	return r == -ENOMEM ? r : 0;
}

/* Tracked files whose uncommitted edits the transaction discarded: the
 * first, and how many (EFFECT_GIT_WORK_DISCARDED). */
static int work_discarded(gitscan *g)
{
	const scan *s = g->s;
	_cleanup_free_ const effect_change **cand = calloc(s->n + 1, sizeof *cand);
	_cleanup_free_ ssize_t *rootlen = calloc(s->n + 1, sizeof *rootlen);
	_cleanup_free_ char *memo = NULL, *first = NULL;
	size_t n = 0, lost = 0;
	ssize_t memo_root = -1;
	if (!cand || !rootlen)
		return -ENOMEM;
	for (size_t i = 0; i < s->n; i++) { /* by path, so each work tree's candidates are in index order */
		const effect_change *c = g->sorted[i];
		if (!work_candidate(c))
			continue;
		const char *slash = strrchr(c->path, '/');
		size_t dirlen = slash ? (size_t)(slash - c->path) : 0;
		if (!memo || strlen(memo) != dirlen || strncmp(memo, c->path, dirlen)) {
			free(memo);
			if (!(memo = strndup(c->path, dirlen)))
				return -ENOMEM;
			memo_root = work_root(s, c->path);
		}
		if (memo_root < 0)
			continue;
		rootlen[n] = memo_root;
		cand[n++] = c;
	}
	for (size_t i = 0; i < n; i++) { /* each work tree once: its candidates, in order */
		if (rootlen[i] < 0)
			continue;
		ssize_t rl = rootlen[i];
		_cleanup_free_ char *root = strndup(cand[i]->path, (size_t)rl);
		_cleanup_free_ const effect_change **mine = calloc(n - i + 1, sizeof *mine);
		if (!root || !mine)
			return -ENOMEM;
		worktree w = {.g = g, .root = root, .rootlen = (size_t)rl, .cand = mine};
		for (size_t j = i; j < n; j++)
			if (rootlen[j] == rl && !strncmp(cand[j]->path, root, (size_t)rl)) {
				mine[w.n++] = cand[j];
				rootlen[j] = -1;
			}
		int r = work_tree_check(&w);
		free(w.added);
		if (w.lost && !first)
			first = steal_ptr(w.first);
		free(w.first);
		lost += w.lost;
		if (r < 0)
			return r;
	}
	if (!lost)
		return 0;
	_cleanup_free_ char *what = NULL;
	if (asprintf(&what, "%s (%zu file%s)", first ? first : "?", lost, lost == 1 ? "" : "s") < 0)
		return -ENOMEM;
	git_hit(g, EFFECT_GIT_WORK_DISCARDED, what);
	return 0;
}

/* ---- .git/info/exclude hiding tracked paths (rt9 N36) ----------------------
 * exclude is the repository's own ignore file, never committed or
 * reviewed: a pattern added there that covers a tracked path (`src/`,
 * `*.py`) makes git status and `git add -A` skip every new file created
 * there, so work (or what was planted) goes unseen. A pattern for build
 * outputs covers nothing tracked and passes. Matching follows gitignore:
 * a pattern without '/' (but a trailing one) matches any component, one
 * with '/' the path from the work tree's root, a trailing '/' only
 * directories; '!' lines un-ignore and are no additions. */

#define EXCLUDE_MAX (1024u * 1024)
#define EXCLUDE_PATTERNS_MAX 64

typedef struct pattern {
	char *glob;
	bool anchored, dir_only;
} pattern;

typedef struct hidden {
	pattern v[EXCLUDE_PATTERNS_MAX];
	size_t n;
	char *what; /* "PATTERN covers PATH" of the first */
} hidden;

/* The patterns of text (its newlines made NULs), as pointers into it in a
 * malloc'd array (*v): comments, blank and '!' lines left out. */
static size_t exclude_lines(char *text, char ***v)
{
	size_t n = 0, lines = 1;
	for (const char *p = text; (p = strchr(p, '\n')); p++)
		lines++;
	if (!(*v = calloc(lines, sizeof **v)))
		return 0;
	for (char *line = text, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		size_t len = strlen(line);
		while (len && (line[len - 1] == ' ' || line[len - 1] == '\r') && !(len > 1 && line[len - 2] == '\\'))
			line[--len] = '\0';
		if (!len || line[0] == '#' || line[0] == '!')
			continue;
		(*v)[n++] = line;
	}
	return n;
}

static bool pattern_covers(const pattern *p, const char *path)
{
	char buf[4096]; /* an index path is shorter (gitobj_index_each) */
	size_t len = strlen(path);
	if (len >= sizeof buf)
		return true; /* cannot happen: the stricter answer */
	memcpy(buf, path, len + 1);
	int flags = p->anchored && !strstr(p->glob, "**") ? FNM_PATHNAME : 0;
	for (char *comp = buf;;) {
		char *slash = strchr(comp, '/');
		if (slash)
			*slash = '\0'; /* buf is now the prefix up to this component, comp its name */
		bool m = fnmatch(p->glob, p->anchored ? buf : comp, flags) == 0;
		if (m && (slash || !p->dir_only))
			return true;
		if (!slash)
			return false;
		*slash = '/';
		comp = slash + 1;
	}
}

static int hidden_entry(void *arg, const gitobj_index_entry *e)
{
	hidden *h = arg;
	for (size_t i = 0; i < h->n; i++)
		if (pattern_covers(&h->v[i], e->path)) {
			if (asprintf(&h->what, "%s covers the tracked %s", h->v[i].glob, e->path) < 0)
				return -ENOMEM;
			return 1;
		}
	return 0;
}

/* info/exclude of the git dir path[0..dirlen) (a `.git/` of a work tree)
 * changed: does a pattern it gained cover a path the index tracks? */
static int exclude_change(gitscan *g, const effect_change *c, size_t dirlen)
{
	if (c->kind != TXBOX_CHANGE_ADDED && c->kind != TXBOX_CHANGE_MODIFIED)
		return 0;
	if (dirlen < 5 || strncmp(c->path + dirlen - 5, ".git/", 5))
		return 0; /* a bare repository has no work tree to hide */
	_cleanup_free_ char *old = NULL, *now = NULL, *index = NULL;
	_cleanup_free_ unsigned char *buf = NULL;
	size_t len;
	if (read_small(g->s->upper_fd, c->path, EXCLUDE_MAX, &now, &len) < 0) {
		git_hit(g, EFFECT_GIT_TRACKED_HIDDEN, c->path); /* git reads what we cannot: unknown */
		return 0;
	}
	if (c->kind == TXBOX_CHANGE_MODIFIED && read_small(g->s->ws_fd, c->path, EXCLUDE_MAX, &old, &len) < 0)
		old = NULL;
	_cleanup_free_ char **was = NULL, **add = NULL;
	size_t nwas = old ? exclude_lines(old, &was) : 0;
	size_t nadd = exclude_lines(now, &add);
	if ((old && !was) || !add)
		return -ENOMEM;
	if (nwas)
		qsort(was, nwas, sizeof *was, strcmp_p);
	hidden h = {0};
	for (size_t i = 0; i < nadd; i++) {
		if (nwas && bsearch(&add[i], was, nwas, sizeof *was, strcmp_p))
			continue;
		if (h.n == EXCLUDE_PATTERNS_MAX) { /* more than can be checked: unknown */
			git_hit(g, EFFECT_GIT_TRACKED_HIDDEN, c->path);
			return 0;
		}
		char *glob = add[i] + (add[i][0] == '\\');
		size_t gl = strlen(glob);
		pattern *p = &h.v[h.n++];
		p->dir_only = gl > 1 && glob[gl - 1] == '/';
		if (p->dir_only)
			glob[--gl] = '\0';
		p->anchored = strchr(glob, '/') != NULL;
		p->glob = glob + (glob[0] == '/');
	}
	if (!h.n || asprintf(&index, "%.*sindex", (int)dirlen, c->path) < 0 ||
	    read_small(g->s->ws_fd, index, WORK_INDEX_MAX, (char **)&buf, &len) < 0)
		return 0;
	int r = gitobj_index_each(buf, len, 20, hidden_entry, &h);
	if (h.what)
		git_hit(g, EFFECT_GIT_TRACKED_HIDDEN, h.what);
	free(h.what);
	return r == -ENOMEM ? r : 0;
}

/* ---- what a changed file runs next (match.found) ------------------------- */

#define FOUND_TEXT_MAX (4u * 1024 * 1024)

typedef struct foundscan {
	gitscan *g;
	unsigned bits;
	char *where[EFFECT_FOUND_KINDS]; /* owned by the caller */
	/* the targets of node_modules/.bin symlinks of the last root read */
	char *bin_root;
	char **bin_targets;
	size_t nbin;
} foundscan;

static void found_hit(foundscan *f, unsigned bit, const char *path)
{
	f->bits |= bit;
	size_t i = (size_t)__builtin_ctz(bit);
	if (!f->where[i])
		f->where[i] = strdup(path); /* out of memory: the reason names no path */
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

/* The scripts of package.json path as it was (after: as it is now). */
static int scripts_of(const scan *s, const char *path, bool after, gitconfig_entry **e, size_t *n)
{
	_cleanup_free_ char *text = NULL;
	size_t len;
	*e = NULL;
	*n = 0;
	int r = read_small(after ? s->upper_fd : s->ws_fd, path, FOUND_TEXT_MAX, &text, &len);
	if (r < 0)
		return r;
	return pkgjson_scripts(text, len, e, n);
}

/* rt9 N33: a package.json whose lifecycle hooks gained or changed a
 * command. One npm cannot parse runs nothing; an old one that cannot be
 * read is compared as none. */
static int lifecycle_change(foundscan *f, const effect_change *c)
{
	gitconfig_entry *a = NULL, *b = NULL;
	size_t na = 0, nb = 0;
	const char *name;
	if (c->kind != TXBOX_CHANGE_MODIFIED && c->kind != TXBOX_CHANGE_ADDED)
		return 0;
	int r = scripts_of(f->g->s, c->path, true, &b, &nb);
	if (r == 0 && c->kind == TXBOX_CHANGE_MODIFIED && scripts_of(f->g->s, c->path, false, &a, &na) == -ENOMEM)
		r = -ENOMEM;
	if (r == 0 && pkgjson_hook_changed(a, na, b, nb, &name) > 0) {
		_cleanup_free_ char *what = NULL;
		if (asprintf(&what, "%s (scripts.%s)", c->path, name) < 0)
			r = -ENOMEM;
		else
			found_hit(f, EFFECT_FOUND_LIFECYCLE_SCRIPT, what);
	}
	gitconfig_free(a, na);
	gitconfig_free(b, nb);
	return r == -ENOMEM ? r : 0;
}

/* Did the transaction change an installer's record beneath root (one of
 * names, with root prefixed; a name ending in '/' is a directory prefix,
 * "*" in it any one component)? */
static bool installer_ran(const scan *s, const char *root, size_t rootlen, const char *const *names)
{
	for (size_t i = 0; i < s->n; i++) {
		const char *p = s->v[i].path;
		if (strncmp(p, root, rootlen))
			continue;
		for (size_t k = 0; names[k]; k++)
			if (effect_glob_match(names[k], p + rootlen))
				return true;
	}
	return false;
}

static const char *const node_installers[] = {"node_modules/.package-lock.json", "node_modules/.modules.yaml",
					      "node_modules/.yarn-state.yml", "node_modules/.yarn-integrity", NULL};
static const char *const venv_installers[] = {"pyvenv.cfg", "lib/*/site-packages/*.dist-info/**",
					      "lib/*/site-packages/*.egg-info/**", NULL};

/* The files node_modules/.bin (of root, with its '/') links to, read once
 * per root: what `npx jest` or a package script runs. */
static void bin_targets(foundscan *f, const char *root, size_t rootlen)
{
	if (f->bin_root && strlen(f->bin_root) == rootlen && !strncmp(f->bin_root, root, rootlen))
		return;
	strv_free(f->bin_targets, f->nbin);
	f->bin_targets = NULL;
	f->nbin = 0;
	free(f->bin_root);
	if (!(f->bin_root = strndup(root, rootlen)))
		return;
	_cleanup_free_ char *bin = NULL;
	if (asprintf(&bin, "%snode_modules/.bin", f->bin_root) < 0)
		return;
	int dfd = fs_open_beneath(f->g->s->ws_fd, bin, O_RDONLY | O_DIRECTORY, 0);
	_cleanup_closedir_ DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
	if (!d) {
		if (dfd >= 0)
			close(dfd);
		return;
	}
	size_t budget = 10000;
	for (struct dirent *de; (de = readdir(d)) && budget--;) {
		char link[1024];
		ssize_t n = de->d_type == DT_LNK ? readlinkat(dirfd(d), de->d_name, link, sizeof link - 1) : -1;
		if (n <= 0 || strncmp(link, "../", 3) || strstr(link + 3, "../"))
			continue; /* only a package's own file beside .bin */
		link[n] = '\0';
		char **v = realloc(f->bin_targets, (f->nbin + 1) * sizeof *v);
		if (!v)
			return;
		f->bin_targets = v;
		if (asprintf(&v[f->nbin], "%snode_modules/%s", f->bin_root, link + 3) >= 0)
			f->nbin++;
	}
}

/* Is path[0..rootlen) (with its '/') a virtualenv: its pyvenv.cfg, or
 * the bin/activate a shell sources, or named as one (.venv, venv)? */
static bool venv_root(const scan *s, const char *path, size_t rootlen)
{
	static const char *const marks[] = {"pyvenv.cfg", "bin/activate"};
	for (size_t i = 0; i < 2; i++) {
		_cleanup_free_ char *p = NULL;
		if (asprintf(&p, "%.*s%s", (int)rootlen, path, marks[i]) < 0 || exists_beneath(s->ws_fd, p))
			return true;
	}
	size_t start = rootlen > 1 ? rootlen - 1 : 0;
	while (start > 0 && path[start - 1] != '/')
		start--;
	size_t len = rootlen ? rootlen - 1 - start : 0;
	return (len == 5 && !strncmp(path + start, ".venv", 5)) || (len == 4 && !strncmp(path + start, "venv", 4));
}

/* rt9 N31: an existing file of an installed dependency tree that runs as a
 * command (node_modules/.bin and what its links name; a virtualenv's bin/)
 * or at every interpreter start (site-packages *.pth, sitecustomize,
 * usercustomize) changed with no installer record of that tree changed.
 * Files added are an install's (npm, pip); changed by hand they are code
 * planted where no review looks (the trees are ignored by git). */
static void dependency_change(foundscan *f, const effect_change *c)
{
	const scan *s = f->g->s;
	if (c->dir || c->kind == TXBOX_CHANGE_DELETED || c->kind == TXBOX_CHANGE_METADATA)
		return;
	const char *nm = strstr(c->path, "node_modules/");
	while (nm && nm != c->path && nm[-1] != '/')
		nm = strstr(nm + 1, "node_modules/");
	if (nm) {
		size_t rootlen = (size_t)(nm - c->path);
		bool runs = !strncmp(nm, "node_modules/.bin/", 18) && !strchr(nm + 18, '/');
		if (!runs) {
			bin_targets(f, c->path, rootlen);
			for (size_t i = 0; i < f->nbin && !runs; i++)
				runs = !strcmp(f->bin_targets[i], c->path);
		}
		/* a new entry may be any package manager's (bun, yarn berry): only changes */
		if (runs && c->kind != TXBOX_CHANGE_ADDED && !installer_ran(s, c->path, rootlen, node_installers))
			found_hit(f, EFFECT_FOUND_DEPENDENCY_CODE, c->path);
		return;
	}
	/* ROOT/bin/NAME or ROOT/lib/PY/site-packages/NAME of a virtualenv (ROOT/pyvenv.cfg) */
	for (const char *p = c->path; p; p = strchr(p, '/'), p = p ? p + 1 : NULL) {
		const char *rest = NULL;
		if (!strncmp(p, "bin/", 4) && !strchr(p + 4, '/'))
			rest = p;
		else if (!strncmp(p, "lib/", 4) && (effect_glob_match("lib/*/site-packages/*.pth", p) ||
						     effect_glob_match("lib/*/site-packages/sitecustomize.py", p) ||
						     effect_glob_match("lib/*/site-packages/usercustomize.py", p)))
			rest = p;
		if (!rest)
			continue;
		size_t rootlen = (size_t)(rest - c->path);
		if (!venv_root(s, c->path, rootlen))
			continue;
		if (!installer_ran(s, c->path, rootlen, venv_installers))
			found_hit(f, EFFECT_FOUND_DEPENDENCY_CODE, c->path);
		return;
	}
}

/* Calls that run a program or code built at run time. */
static const char *const autorun_calls[] = {"os.system(", "os.popen(", "subprocess.", "os.exec", "os.spawn",
					    "os.posix_spawn", "pty.spawn(", "exec(", "eval(", "__import__(",
					    "importlib.import_module(", "ctypes.", "Popen(", NULL};
/* pytest calls these on every run, before any test is selected. */
static const char *const pytest_start_hooks[] = {"pytest_configure", "pytest_sessionstart", "pytest_load_initial_conftests",
						 "pytest_cmdline_", "pytest_plugin_registered", "pytest_collect",
						 "pytest_addoption", "pytest_report_header", "pytest_unconfigure",
						 "pytest_sessionfinish", NULL};

static size_t count_calls(const char *line)
{
	size_t n = 0;
	for (size_t i = 0; autorun_calls[i]; i++)
		for (const char *p = strstr(line, autorun_calls[i]); p; p = strstr(p + 1, autorun_calls[i]))
			n += p == line || !(isalnum((unsigned char)p[-1]) || p[-1] == '_');
	return n;
}

/* The calls of autorun_calls in the code of a conftest.py that runs when
 * pytest starts: at import (outside any function body; a class body runs
 * too) or in a start hook's body. A scan by indentation, not a parser: a
 * bar against planted commands, never a proof of their absence. */
static size_t conftest_autorun(char *text)
{
	size_t n = 0;
	long def_indent = -1; /* the indentation of the function whose body we are in, or -1 */
	bool hook = false;
	for (char *line = text, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		size_t indent = strspn(line, " \t");
		const char *code = line + indent;
		if (!*code || *code == '#')
			continue;
		if (def_indent >= 0 && (long)indent <= def_indent)
			def_indent = -1;
		if (def_indent < 0 && (!strncmp(code, "def ", 4) || !strncmp(code, "async def ", 10))) {
			const char *name = code + (code[0] == 'a' ? 10 : 4);
			name += strspn(name, " \t");
			def_indent = (long)indent;
			hook = false;
			for (size_t i = 0; pytest_start_hooks[i] && !hook; i++)
				hook = !strncmp(name, pytest_start_hooks[i], strlen(pytest_start_hooks[i]));
			continue;
		}
		if (def_indent < 0 || hook)
			n += count_calls(code);
	}
	return n;
}

/* Plugins a pytest config loads by name: `-p NAME` on an addopts line. */
static size_t pytest_plugins(char *text)
{
	size_t n = 0;
	for (char *line = text, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (!strstr(line, "addopts"))
			continue;
		for (const char *p = strstr(line, "-p"); p; p = strstr(p + 1, "-p"))
			n += (p == line || strchr(" \t'\"=[,", p[-1])) && (strchr(" \t=", p[2]) || isalpha((unsigned char)p[2]));
	}
	return n;
}

/* rt9 N32: code pytest runs by itself at start. conftest.py is test code,
 * as ordinary as any test (a fixture may well start a server): held only
 * when what runs at import or in a start hook gained a program-running or
 * dynamic-code call; a pytest config only when its addopts gained `-p`. */
static int test_autorun_change(foundscan *f, const effect_change *c, bool conftest)
{
	if (c->dir || (c->kind != TXBOX_CHANGE_MODIFIED && c->kind != TXBOX_CHANGE_ADDED))
		return 0;
	_cleanup_free_ char *old = NULL, *now = NULL;
	size_t len;
	if (read_small(f->g->s->upper_fd, c->path, FOUND_TEXT_MAX, &now, &len) < 0)
		return 0;
	if (c->kind == TXBOX_CHANGE_MODIFIED && read_small(f->g->s->ws_fd, c->path, FOUND_TEXT_MAX, &old, &len) < 0)
		old = NULL;
	size_t before = old ? (conftest ? conftest_autorun(old) : pytest_plugins(old)) : 0;
	size_t after = conftest ? conftest_autorun(now) : pytest_plugins(now);
	if (after > before)
		found_hit(f, EFFECT_FOUND_TEST_AUTORUN, c->path);
	return 0;
}

static int found_change(foundscan *f, const effect_change *c)
{
	if (c->dir)
		return 0;
	const char *base = base_name(c->path);
	bool deps = strstr(c->path, "node_modules/") != NULL;
	if (!strcmp(base, "package.json") && !deps)
		return lifecycle_change(f, c);
	if (!strcmp(base, "conftest.py") && !deps)
		return test_autorun_change(f, c, true);
	if (!deps && (!strcmp(base, "pytest.ini") || !strcmp(base, ".pytest.ini") || !strcmp(base, "setup.cfg") ||
		      !strcmp(base, "tox.ini") || !strcmp(base, "pyproject.toml")))
		return test_autorun_change(f, c, false);
	dependency_change(f, c);
	return 0;
}

/* ---- the check ------------------------------------------------------------- */

/* Files in the workspace's git index before the transaction (its header:
 * "DIRC", version, entry count); 0: none or unreadable. */
static uint64_t git_tracked(int ws_fd)
{
	_cleanup_close_ int fd = fs_open_beneath(ws_fd, ".git/index", O_RDONLY | O_NONBLOCK, 0);
	unsigned char h[12];
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || pread(fd, h, sizeof h, 0) != (ssize_t)sizeof h ||
	    memcmp(h, "DIRC", 4) != 0)
		return 0;
	return (uint64_t)h[8] << 24 | (uint64_t)h[9] << 16 | (uint64_t)h[10] << 8 | h[11];
}

/* A change inside a git dir known by its content, not by a `.git` name
 * (a bare repository): path rules see it also as if that dir were named
 * `.git` (DIR/.git/REST, .git/REST for the workspace itself), so the rules
 * on hooks, grafts or replace refs hold for any repository. */
static int git_alias(gitscan *g, size_t i)
{
	const effect_change *c = &g->s->v[i];
	size_t dirlen;
	const char *rest;
	if (!strncmp(c->path, ".git/", 5) || strstr(c->path, "/.git/") || !git_split(g, c->path, &dirlen, &rest))
		return 0;
	char *alias;
	if (asprintf(&alias, "%.*s.git/%s", (int)dirlen, c->path, rest) < 0)
		return -ENOMEM;
	g->s->alias[i] = alias;
	return 0;
}

/* The facts of match.found, each changed file judged once. */
static int gather_found(gitscan *g, effect_facts *facts, char **where)
{
	foundscan f = {.g = g};
	int r = 0;
	for (size_t i = 0; i < g->s->n && r == 0; i++)
		r = found_change(&f, &g->s->v[i]);
	free(f.bin_root);
	strv_free(f.bin_targets, f.nbin);
	facts->found = f.bits;
	for (size_t i = 0; i < EFFECT_FOUND_KINDS; i++)
		facts->found_path[i] = where[i] = f.where[i];
	return r;
}

static int gather(scan *s, unsigned need, effect_facts *f, keyset *k, char **where, char **fwhere)
{
	_cleanup_free_ const effect_change **sorted = calloc(s->n + 1, sizeof *sorted);
	if (!sorted)
		return txbox_fail(s->err, -ENOMEM, "out of memory");
	for (size_t i = 0; i < s->n; i++)
		sorted[i] = &s->v[i];
	qsort(sorted, s->n, sizeof *sorted, change_ptr_cmp);
	if (!(s->alias = calloc(s->n + 1, sizeof *s->alias)))
		return txbox_fail(s->err, -ENOMEM, "out of memory");
	f->aliases = (const char *const *)s->alias;
	gitscan g = {.s = s, .sorted = sorted, .where = where};
	g.io = (gitobj_io){io_open, io_list, &g};
	int r = 0;
	for (size_t i = 0; i < s->n && r == 0; i++) {
		r = git_alias(&g, i);
		if (r == 0 && (need & EFFECT_NEED_GIT))
			r = git_change(&g, &s->v[i]);
		if (r == 0 && (need & (EFFECT_NEED_CONFIG | EFFECT_NEED_GIT)))
			r = config_change(&g, &s->v[i], k);
	}
	if (r == 0 && (need & EFFECT_NEED_GIT))
		r = work_discarded(&g);
	if (r == 0 && (need & EFFECT_NEED_FOUND))
		r = gather_found(&g, f, fwhere);
	gitscan_done(&g);
	if (r < 0)
		return txbox_fail(s->err, r, "out of memory");
	f->git = g.bits;
	for (size_t i = 0; i < EFFECT_GIT_KINDS; i++)
		f->git_path[i] = where[i];
	f->config_keys = (const char *const *)k->keys.v;
	f->nconfig_keys = k->keys.n;
	f->config_values = (const char *const *)k->values.v;
	f->nconfig_values = k->values.n;
	f->config_unreadable = k->unreadable;
	return 0;
}

int tx_effects_check(int ws_fd, int upper_fd, const plan *p, const struct policy *pol, const char *policy_rel,
		     effect_verdict *out, txbox_error *err)
{
	memset(out, 0, sizeof *out);
	out->decision = POLICY_ALLOW;
	unsigned need = policy_effects_needs(pol);
	if (!need || p->n == 0)
		return 0; /* nothing to judge, nothing read */
	scan s = {.ws_fd = ws_fd, .upper_fd = upper_fd, .err = err};
	keyset k = {0};
	char *where[EFFECT_GIT_KINDS] = {0}, *fwhere[EFFECT_FOUND_KINDS] = {0};
	effect_facts f = {.policy_rel = policy_rel};
	int r = scan_plan(&s, p);
	if (r == 0)
		r = gather(&s, need, &f, &k, where, fwhere);
	if (r == 0) {
		f.changes = s.v;
		f.nchanges = s.n;
		f.lost = s.lost;
		f.incomplete = s.incomplete;
		bool deletes = false;
		for (size_t i = 0; i < s.n && !deletes; i++)
			deletes = s.v[i].kind == TXBOX_CHANGE_DELETED || s.lost[i] > 0;
		if ((need & EFFECT_NEED_TRACKED) && deletes)
			f.tracked = git_tracked(ws_fd);
		if (policy_effects_check(pol, &f, out) < 0)
			r = txbox_fail(err, -ENOMEM, "out of memory");
	}
	keyset_free(&k);
	for (size_t i = 0; i < EFFECT_GIT_KINDS; i++)
		free(where[i]);
	for (size_t i = 0; i < EFFECT_FOUND_KINDS; i++)
		free(fwhere[i]);
	scan_free(&s);
	if (r < 0)
		return txbox_error_prefix(err, "checking the transaction's effects");
	return 1;
}
