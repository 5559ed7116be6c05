/* gitobj: a bounded reader of a hostile git object store (see gitobj.h).
 * Moved out of tx/effects.c. */
#include "tx/gitobj.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define REACH_MAX_COMMITS 20000
#define OBJ_MAX GITOBJ_MAX
#define DELTA_DEPTH_MAX 64
#define PACK_INFLATE_BUDGET 100000 /* objects inflated from packs per object store opened */
#define LOOSE_MAX (1024u * 1024)
#define PACKS_MAX 256
#define REPACK_MAX_OBJECTS 200000

static const char *const type_table[_GITOBJ_TYPE_MAX] = {
	[GITOBJ_NONE] = "none", [GITOBJ_COMMIT] = "commit", [GITOBJ_TREE] = "tree",
	[GITOBJ_BLOB] = "blob", [GITOBJ_TAG] = "tag",
};

const char *gitobj_type_to_string(gitobj_type t)
{
	return t >= 0 && t < _GITOBJ_TYPE_MAX ? type_table[t] : NULL;
}

/* Inflate the start of a zlib stream: the bytes produced (at most outlen),
 * or -EBADMSG (not zlib, corrupt before anything came out). */
static ssize_t z_head(const unsigned char *in, size_t inlen, unsigned char *out, size_t outlen)
{
	z_stream s;
	memset(&s, 0, sizeof s);
	s.next_in = (unsigned char *)(uintptr_t)in;
	s.avail_in = (uInt)inlen;
	s.next_out = out;
	s.avail_out = (uInt)outlen;
	if (inflateInit(&s) != Z_OK)
		return -ENOMEM;
	int r = inflate(&s, Z_SYNC_FLUSH);
	size_t got = outlen - s.avail_out;
	inflateEnd(&s);
	return r == Z_OK || r == Z_STREAM_END || (r == Z_BUF_ERROR && got) ? (ssize_t)got : -EBADMSG;
}

static int hexval(int c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1; }

int gitobj_oid_parse(const char *s, size_t hexlen, gitobj_oid *o)
{
	memset(o, 0, sizeof *o);
	for (size_t i = 0; i < hexlen; i++) {
		int v = hexval((unsigned char)s[i]);
		if (v < 0)
			return -1;
		o->b[i / 2] = (unsigned char)(o->b[i / 2] << 4 | v);
	}
	return 0;
}

bool gitobj_oid_null(const gitobj_oid *o)
{
	for (size_t i = 0; i < sizeof o->b; i++)
		if (o->b[i])
			return false;
	return true;
}

/* A set of object ids (open addressing), and a queue in insertion order. */
typedef struct oidset {
	gitobj_oid *slot;
	bool *used;
	size_t cap, n;
	gitobj_oid *queue;
	size_t qhead;
} oidset;

static void oidset_free(oidset *s)
{
	free(s->slot);
	free(s->used);
	free(s->queue);
}

static size_t oid_hash(const gitobj_oid *o)
{
	size_t h;
	memcpy(&h, o->b, sizeof h);
	return h;
}

static bool oidset_has(const oidset *s, const gitobj_oid *o)
{
	if (!s->cap)
		return false;
	for (size_t i = oid_hash(o) & (s->cap - 1);; i = (i + 1) & (s->cap - 1)) {
		if (!s->used[i])
			return false;
		if (!memcmp(s->slot[i].b, o->b, sizeof o->b))
			return true;
	}
}

/* Double the table: 0 or -ENOMEM. */
static int oidset_grow(oidset *s)
{
	size_t cap = s->cap ? 2 * s->cap : 256;
	gitobj_oid *slot = calloc(cap, sizeof *slot), *queue = realloc(s->queue, cap * sizeof *queue);
	bool *used = calloc(cap, sizeof *used);
	if (queue)
		s->queue = queue;
	if (!slot || !used || !queue) {
		free(slot);
		free(used);
		return -ENOMEM;
	}
	for (size_t i = 0; i < s->cap; i++)
		if (s->used[i])
			for (size_t j = oid_hash(&s->slot[i]) & (cap - 1);; j = (j + 1) & (cap - 1))
				if (!used[j]) {
					used[j] = true;
					slot[j] = s->slot[i];
					break;
				}
	free(s->slot);
	free(s->used);
	s->slot = slot;
	s->used = used;
	s->cap = cap;
	return 0;
}

/* Add o (queued when new): 1 added, 0 there, -ENOMEM. */
static int oidset_add(oidset *s, const gitobj_oid *o)
{
	if (oidset_has(s, o))
		return 0;
	if (2 * (s->n + 1) > s->cap && oidset_grow(s) < 0)
		return -ENOMEM;
	size_t i = oid_hash(o) & (s->cap - 1);
	while (s->used[i])
		i = (i + 1) & (s->cap - 1);
	s->used[i] = true;
	s->slot[i] = *o;
	s->queue[s->n++] = *o;
	return 1;
}

/* One pack of the store: its index (v2) open. */
typedef struct pack {
	int idx_fd, pack_fd;
	uint32_t n;
} pack;

struct gitobj_store {
	const gitobj_io *io;
	char *dir; /* the git dir with its '/' ("" for the workspace) */
	size_t hexlen, rawlen;
	bool rooted; /* seen holds the roots: the walk started */
	oidset seen;
	size_t budget; /* objects pack_object may still inflate */
	pack *packs;
	size_t npacks;
};

static void close_fd(int fd)
{
	if (fd >= 0)
		close(fd);
}

gitobj_store *gitobj_free(gitobj_store *d)
{
	if (!d)
		return NULL;
	for (size_t i = 0; i < d->npacks; i++) {
		close_fd(d->packs[i].idx_fd);
		close_fd(d->packs[i].pack_fd);
	}
	free(d->packs);
	free(d->dir);
	oidset_free(&d->seen);
	free(d);
	return NULL;
}

const char *gitobj_dir(const gitobj_store *d) { return d->dir; }
size_t gitobj_hexlen(const gitobj_store *d) { return d->hexlen; }

static bool pread_all(int fd, void *buf, size_t len, off_t at) { return pread(fd, buf, len, at) == (ssize_t)len; }

static uint32_t be32(const unsigned char *p) { return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]; }

/* Add the pack whose index is dir/objects/pack/name, if it and its pack
 * are there and the index is a v2 one. */
static void add_pack(gitobj_store *d, const char *name)
{
	size_t nl = strlen(name);
	if (d->npacks >= PACKS_MAX || nl < 5 || strcmp(name + nl - 4, ".idx"))
		return;
	_cleanup_free_ char *ip = NULL, *pp = NULL;
	if (asprintf(&ip, "%sobjects/pack/%s", d->dir, name) < 0 ||
	    asprintf(&pp, "%sobjects/pack/%.*s.pack", d->dir, (int)nl - 4, name) < 0)
		return;
	int fi = d->io->open(d->io->ctx, ip), fp = fi >= 0 ? d->io->open(d->io->ctx, pp) : -1;
	unsigned char h[8 + 1024];
	struct stat st, sp;
	if (fi < 0 || fp < 0 || fstat(fi, &st) < 0 || !S_ISREG(st.st_mode) || fstat(fp, &sp) < 0 ||
	    !S_ISREG(sp.st_mode) || !pread_all(fi, h, sizeof h, 0) || memcmp(h, "\377tOc\0\0\0\2", 8) != 0) {
		close_fd(fi);
		close_fd(fp);
		return;
	}
	pack *v = realloc(d->packs, (d->npacks + 1) * sizeof *v);
	if (!v) {
		close_fd(fi);
		close_fd(fp);
		return;
	}
	d->packs = v;
	d->packs[d->npacks++] = (pack){fi, fp, be32(h + 8 + 255 * 4)};
}

typedef struct namelist {
	char **v;
	size_t n;
} namelist;

static void names_add(void *arg, const char *name)
{
	namelist *ns = arg;
	size_t nl = strlen(name);
	if (ns->n >= 2 * PACKS_MAX || nl < 4 || strcmp(name + nl - 4, ".idx"))
		return;
	char **v = realloc(ns->v, (ns->n + 1) * sizeof *v);
	if (!v)
		return;
	ns->v = v;
	if ((v[ns->n] = strdup(name)))
		ns->n++;
}

static int strcmp_p(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int gitobj_open(const gitobj_io *io, const char *dir, size_t hexlen, gitobj_store **out)
{
	*out = NULL;
	if (hexlen != 40 && hexlen != 64)
		return -EINVAL;
	_cleanup_(gitobj_freep) gitobj_store *d = calloc(1, sizeof *d);
	if (!d || !(d->dir = strdup(dir)))
		return -ENOMEM;
	d->io = io;
	d->hexlen = hexlen;
	d->rawlen = hexlen / 2;
	d->budget = PACK_INFLATE_BUDGET;
	_cleanup_free_ char *pdir = NULL;
	if (asprintf(&pdir, "%sobjects/pack", d->dir) < 0)
		return -ENOMEM;
	namelist ns = {0};
	io->list(io->ctx, pdir, names_add, &ns);
	if (ns.n)
		qsort(ns.v, ns.n, sizeof *ns.v, strcmp_p);
	for (size_t i = 0; i < ns.n; i++)
		if (!i || strcmp(ns.v[i], ns.v[i - 1]))
			add_pack(d, ns.v[i]);
	for (size_t i = 0; i < ns.n; i++)
		free(ns.v[i]);
	free(ns.v);
	*out = steal_ptr(d);
	return 0;
}

/* Where o is in pack p: its offset, or -1. */
static int64_t pack_find(const gitobj_store *d, const pack *p, const gitobj_oid *o)
{
	unsigned char f[4], name[32];
	uint32_t lo = 0, hi;
	if (o->b[0] && pread_all(p->idx_fd, f, 4, 8 + (off_t)(o->b[0] - 1) * 4))
		lo = be32(f);
	if (!pread_all(p->idx_fd, f, 4, 8 + (off_t)o->b[0] * 4))
		return -1;
	hi = be32(f);
	if (hi > p->n || lo > hi)
		return -1;
	off_t names = 8 + 1024;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (!pread_all(p->idx_fd, name, d->rawlen, names + (off_t)mid * (off_t)d->rawlen))
			return -1;
		int c = memcmp(name, o->b, d->rawlen);
		if (c < 0)
			lo = mid + 1;
		else if (c > 0)
			hi = mid;
		else {
			off_t offs = names + (off_t)p->n * (off_t)(d->rawlen + 4);
			unsigned char b[8];
			if (!pread_all(p->idx_fd, b, 4, offs + (off_t)mid * 4))
				return -1;
			uint32_t v = be32(b);
			if (!(v & 0x80000000u))
				return v;
			if (!pread_all(p->idx_fd, b, 8, offs + (off_t)p->n * 4 + (off_t)(v & 0x7fffffffu) * 8))
				return -1;
			return (int64_t)((uint64_t)be32(b) << 32 | be32(b + 4)) & INT64_MAX;
		}
	}
	return -1;
}

bool gitobj_in_packs(const gitobj_store *d, const gitobj_oid *o)
{
	for (size_t j = 0; j < d->npacks; j++)
		if (pack_find(d, &d->packs[j], o) >= 0)
			return true;
	return false;
}

/* Apply git delta data (src size, dst size, copy/insert ops) to base:
 * the result's length in out (OBJ_MAX), or -EIO. */
static ssize_t delta_apply(const unsigned char *dl, size_t dn, const unsigned char *base, size_t bn,
			   unsigned char *out)
{
	size_t i = 0, o = 0, sz[2] = {0, 0};
	for (int k = 0; k < 2; k++)
		for (unsigned shift = 0; i < dn && shift < 64; shift += 7) {
			sz[k] |= (size_t)(dl[i] & 0x7f) << shift;
			if (!(dl[i++] & 0x80))
				break;
		}
	if (sz[0] != bn || sz[1] > OBJ_MAX)
		return -EIO;
	while (i < dn) {
		unsigned op = dl[i++];
		if (op & 0x80) { /* copy from the base: offset and size, bytes present by bit */
			size_t off = 0, len = 0;
			for (unsigned b = 0; b < 7; b++)
				if (op & (1u << b)) {
					if (i >= dn)
						return -EIO;
					if (b < 4)
						off |= (size_t)dl[i++] << (8 * b);
					else
						len |= (size_t)dl[i++] << (8 * (b - 4));
				}
			if (!len)
				len = 0x10000;
			if (off > bn || len > bn - off || len > OBJ_MAX - o)
				return -EIO;
			memcpy(out + o, base + off, len);
			o += len;
		} else if (op) { /* insert op literal bytes */
			if (op > dn - i || op > OBJ_MAX - o)
				return -EIO;
			memcpy(out + o, dl + i, op);
			o += op, i += op;
		} else
			return -EIO;
	}
	return o == sz[1] ? (ssize_t)o : -EIO;
}

static int pack_object(gitobj_store *d, const pack *p, uint64_t at, int depth, unsigned char *out, size_t *len);

/* The base of a delta at in[h…] (type 6: an offset back from at; 7: an
 * object id), resolved into base: its type, *h past the reference. */
static int delta_base(gitobj_store *d, const pack *p, uint64_t at, int type, const unsigned char *in, size_t n,
		      size_t *h, int depth, unsigned char *base, size_t *bn)
{
	if (type == 6) {
		uint64_t ofs = 0;
		for (size_t k = 0; *h < n && k < 10; k++) {
			unsigned c = in[(*h)++];
			ofs = (k ? (ofs + 1) << 7 : 0) | (c & 0x7f);
			if (!(c & 0x80))
				return ofs && ofs <= at ? pack_object(d, p, at - ofs, depth + 1, base, bn) : -EIO;
		}
		return -EIO;
	}
	gitobj_oid o;
	if (n - *h < d->rawlen)
		return -EIO;
	memset(&o, 0, sizeof o);
	memcpy(o.b, in + *h, d->rawlen);
	*h += d->rawlen;
	for (size_t i = 0; i < d->npacks; i++) {
		int64_t bat = pack_find(d, &d->packs[i], &o);
		if (bat >= 0)
			return pack_object(d, &d->packs[i], (uint64_t)bat, depth + 1, base, bn);
	}
	return -ENOENT;
}

/* The object at offset at of pack p, through its deltas: its type (1-4)
 * and its content in out (OBJ_MAX bytes), or -errno (-E2BIG: over the
 * bounds). */
static int pack_object(gitobj_store *d, const pack *p, uint64_t at, int depth, unsigned char *out, size_t *len)
{
	if (depth > DELTA_DEPTH_MAX || d->budget == 0)
		return -E2BIG;
	d->budget--;
	_cleanup_free_ unsigned char *in = malloc(2 * OBJ_MAX), *base = NULL, *dl = NULL;
	if (!in)
		return -ENOMEM;
	ssize_t n = pread(p->pack_fd, in, 2 * OBJ_MAX, (off_t)at);
	if (n <= 0)
		return -EIO;
	int type = (in[0] >> 4) & 7;
	size_t h = 0;
	while (h < (size_t)n && (in[h] & 0x80)) /* the size: a varint the inflation checks */
		h++;
	if (++h >= (size_t)n)
		return -EIO;
	if (type >= 1 && type <= 4) {
		ssize_t got = z_head(in + h, (size_t)n - h, out, OBJ_MAX);
		*len = got > 0 ? (size_t)got : 0;
		return got < 0 ? (int)got : type;
	}
	if (type != 6 && type != 7)
		return -EIO;
	size_t bn = 0;
	if (!(base = malloc(OBJ_MAX)) || !(dl = malloc(OBJ_MAX)))
		return -ENOMEM;
	int btype = delta_base(d, p, at, type, in, (size_t)n, &h, depth, base, &bn);
	if (btype < 0)
		return btype;
	ssize_t dn = z_head(in + h, (size_t)n - h, dl, OBJ_MAX);
	ssize_t got = dn < 0 ? dn : delta_apply(dl, (size_t)dn, base, bn, out);
	*len = got > 0 ? (size_t)got : 0;
	return got < 0 ? (int)got : btype;
}

/* Object o from the first pack that has it (git searches packs before
 * loose objects): its type, or -errno (-ENOENT: in no pack). */
static int pack_read(gitobj_store *d, const gitobj_oid *o, unsigned char *out, size_t *len)
{
	for (size_t i = 0; i < d->npacks; i++) {
		int64_t at = pack_find(d, &d->packs[i], o);
		if (at >= 0)
			return pack_object(d, &d->packs[i], (uint64_t)at, 0, out, len);
	}
	return -ENOENT;
}

int gitobj_read_regular(int fd, size_t max, char **out, size_t *len)
{
	*out = NULL;
	*len = 0;
	struct stat st;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	if ((uint64_t)st.st_size > max)
		return -EFBIG;
	_cleanup_free_ char *buf = malloc((size_t)st.st_size + 1);
	if (!buf)
		return -ENOMEM;
	size_t got = 0;
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO; /* shrank while read */
		got += (size_t)n;
	}
	buf[got] = '\0';
	*out = steal_ptr(buf);
	*len = got;
	return 0;
}

/* The same for a loose object ("TYPE SIZE\0" and the content, deflated). */
static int loose_read(gitobj_store *d, const gitobj_oid *o, unsigned char *out, size_t *len)
{
	char hex[65];
	for (size_t i = 0; i < d->hexlen; i++)
		hex[i] = "0123456789abcdef"[(o->b[i / 2] >> (i % 2 ? 0 : 4)) & 15];
	hex[d->hexlen] = '\0';
	_cleanup_free_ char *path = NULL, *buf = NULL;
	size_t blen = 0;
	if (asprintf(&path, "%sobjects/%.2s/%s", d->dir, hex, hex + 2) < 0)
		return -ENOMEM;
	_cleanup_close_ int fd = d->io->open(d->io->ctx, path);
	if (fd < 0)
		return fd == -ENOTDIR ? -ENOENT : fd;
	int r = gitobj_read_regular(fd, LOOSE_MAX, &buf, &blen);
	if (r < 0)
		return r;
	ssize_t n = z_head((unsigned char *)buf, blen, out, OBJ_MAX);
	unsigned char *nul = n > 0 ? memchr(out, '\0', (size_t)n) : NULL;
	if (!nul)
		return -EIO;
	int type = !strncmp((char *)out, "commit ", 7) ? GITOBJ_COMMIT : !strncmp((char *)out, "tag ", 4) ? GITOBJ_TAG : 0;
	*len = (size_t)(out + n - nul - 1);
	memmove(out, nul + 1, *len);
	return type;
}

int gitobj_read(gitobj_store *d, const gitobj_oid *o, unsigned char *out, size_t *len, bool *cut,
		txbox_error *err)
{
	(void)err;
	*cut = false;
	int r = pack_read(d, o, out, len);
	return r == -ENOENT ? loose_read(d, o, out, len) : r;
}

int gitobj_idx_all_listed(const gitobj_store *d, int fd)
{
	unsigned char h[8 + 1024];
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || !pread_all(fd, h, sizeof h, 0) ||
	    memcmp(h, "\377tOc\0\0\0\2", 8) != 0)
		return 0;
	uint32_t n = be32(h + 8 + 255 * 4);
	if (n > REPACK_MAX_OBJECTS)
		return 0;
	_cleanup_free_ unsigned char *names = malloc((size_t)n * d->rawlen + 1);
	if (!names || !pread_all(fd, names, (size_t)n * d->rawlen, 8 + 1024))
		return 0;
	for (uint32_t i = 0; i < n; i++) {
		gitobj_oid o;
		memset(&o, 0, sizeof o);
		memcpy(o.b, names + (size_t)i * d->rawlen, d->rawlen);
		if (!gitobj_in_packs(d, &o))
			return 0;
	}
	return 1;
}

int gitobj_links(const unsigned char *buf, size_t len, bool cut, gitobj_type type, size_t hexlen,
		 int (*fn)(void *arg, const gitobj_oid *o), void *arg)
{
	(void)len, (void)cut;
	const char *key = type == GITOBJ_COMMIT ? "parent " : type == GITOBJ_TAG ? "object " : NULL;
	if (!key)
		return 0; /* a tree or a blob: no commits behind it */
	for (const char *line = (const char *)buf; line && *line;) {
		const char *nl = strchr(line, '\n');
		if (!nl)
			break; /* cut at OBJ_MAX: the rest unknown */
		if (!strncmp(line, key, 7)) {
			gitobj_oid p;
			if ((size_t)(nl - line) != 7 + hexlen || gitobj_oid_parse(line + 7, hexlen, &p) < 0)
				return -EIO;
			int r = fn(arg, &p);
			if (r < 0)
				return r;
		} else if (strncmp(line, "tree ", 5) && type == GITOBJ_COMMIT)
			return 0; /* the parents come before author */
		line = nl + 1;
	}
	return 0;
}

static int follow_add(void *arg, const gitobj_oid *o)
{
	int r = oidset_add(arg, o);
	return r < 0 ? r : 0;
}

/* Queue what object o leads to: a commit's parents, a tag's object. */
static int follow(gitobj_store *d, const gitobj_oid *o)
{
	_cleanup_free_ unsigned char *buf = malloc(OBJ_MAX + 1);
	size_t len = 0;
	bool cut;
	if (!buf)
		return -ENOMEM;
	int type = gitobj_read(d, o, buf, &len, &cut, NULL);
	if (type < 0)
		return type;
	buf[len] = '\0';
	return gitobj_links(buf, len, cut, type, d->hexlen, follow_add, &d->seen);
}

int gitobj_walk_add(gitobj_store *d, const gitobj_oid *o)
{
	d->rooted = true;
	int r = oidset_add(&d->seen, o);
	return r < 0 ? r : 0;
}

void gitobj_walk_fail(gitobj_store *d)
{
	d->rooted = true;
	d->seen.qhead = SIZE_MAX;
}

bool gitobj_walk_started(const gitobj_store *d) { return d->rooted; }

static bool all_in(const oidset *s, const gitobj_oid *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!oidset_has(s, &v[i]))
			return false;
	return true;
}

bool gitobj_walk_reaches(gitobj_store *d, const gitobj_oid *targets, size_t nt)
{
	oidset *seen = &d->seen;
	bool kept = false;
	/* an object that cannot be read is skipped: what is found through
	 * others is reachable as git reads them */
	while (seen->qhead != SIZE_MAX && !(kept = all_in(seen, targets, nt)) && seen->qhead < seen->n &&
	       seen->qhead < REACH_MAX_COMMITS)
		for (size_t k = 0; k < 64 && seen->qhead < seen->n && seen->qhead < REACH_MAX_COMMITS; k++)
			if (follow(d, &seen->queue[seen->qhead++]) == -ENOMEM) {
				seen->qhead = SIZE_MAX;
				break;
			}
	return kept;
}
