/* gitobj: a bounded reader of a hostile git object store (see gitobj.h).
 *
 * The bounds, and why each is what it is. All are per store (one git dir,
 * one effect check), so the whole check's cost is bounded too:
 * - GITOBJ_MAX (64 KiB) inflated bytes kept of an object. A commit's
 *   header (tree and parents: 46 + 48 bytes a parent with SHA-1, 71 + 72
 *   with SHA-256) fits with ~900 parents, far beyond real octopus merges
 *   (tens). Larger commits and tags are cut (their header may still be
 *   whole); a delta base must be whole, so deltas over a larger base fail.
 * - DELTA_MAX (2 x GITOBJ_MAX) bytes of delta data: building an object of
 *   at most GITOBJ_MAX takes that much at most with insert ops (one op
 *   byte per 127 literal bytes) and copies as git makes them; a larger
 *   declared delta is refused before anything is allocated.
 * - IN_MAX compressed bytes read for one object: deflate grows incompressible
 *   data by 5 bytes per 16 KiB block at most, plus its header, and the pack
 *   entry's header (size varint, base offset or id) is under 50 bytes.
 * - DELTA_DEPTH_MAX (64) delta links: git's default pack.depth (also for gc
 *   --aggressive since 2.18) is 50; deeper chains (git allows 4095) and
 *   ref-delta cycles end as -ELOOP. Each level holds DELTA_MAX + GITOBJ_MAX
 *   bytes while its base is read: 12 MiB for a whole chain.
 * - INFLATE_BUDGET (100,000) objects inflated: the walk follows at most
 *   WALK_MAX (20,000) objects, each a few delta links deep in practice.
 * - PROBE_BUDGET (4,000,000) index reads (preads) for lookups: 256 packs
 *   x 32 binary-search steps for each of the walk's objects would be far
 *   more (a second or more per million).
 * - PACKS_MAX (256) packs: git repacks beyond gc.autoPackLimit (50); packs
 *   beyond are ignored (their objects unknown).
 * - An index's object count (fan-out[255]) must match its file size (names,
 *   CRCs, offsets, large offsets, two checksums) and the pack's header,
 *   the fan-out must not decrease, and every offset must fall inside the
 *   pack before its trailing checksum: a lookup never reads outside either
 *   file, and a large-offset index beyond its table is corrupt.
 * - Object sizes are varints of at most 64 bits (as git: more is corrupt).
 * - WALK_SET_MAX (200,000) object ids known to the walk (~20 MiB): 20,000
 *   commits each naming up to ~1,300 parents would be 26 million.
 * - LOOSE: only the head of a loose object file is read (IN_MAX bytes). */
#include "tx/gitobj.h"

#include "util/fsutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define OBJ_MAX GITOBJ_MAX
#define DELTA_MAX (2 * OBJ_MAX)
#define IN_MAX (DELTA_MAX + 1024)
#define DELTA_DEPTH_MAX 64
#define INFLATE_BUDGET 100000
#define PROBE_BUDGET 4000000
#define PACKS_MAX 256
#define WALK_MAX 20000
#define WALK_SET_MAX 200000
#define REPACK_MAX_OBJECTS 200000
#define IDX_HEADER (8 + 256 * 4)

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
	if (!outlen)
		return 0; /* an empty object: nothing to inflate */
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

/* Add o (queued when new): 1 added, 0 there, -ENOSPC (WALK_SET_MAX),
 * -ENOMEM. */
static int oidset_add(oidset *s, const gitobj_oid *o)
{
	if (oidset_has(s, o))
		return 0;
	if (s->n >= WALK_SET_MAX)
		return -ENOSPC;
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

/* One pack of the store: its index (v2) and pack, checked to agree. */
typedef struct pack {
	int idx_fd, pack_fd;
	char *name;           /* the index's name, for errors */
	uint32_t fanout[256]; /* fanout[b]: objects whose first byte <= b */
	uint32_t n, nlarge;   /* objects; 8-byte offsets in the index */
	uint64_t pack_end;    /* where the pack's trailing checksum starts */
} pack;

struct gitobj_store {
	const gitobj_io *io;
	char *dir; /* the git dir with its '/' ("" for the workspace) */
	size_t hexlen, rawlen;
	bool rooted; /* seen holds the roots: the walk started */
	oidset seen;
	size_t budget; /* objects pack_object may still inflate */
	size_t probes; /* index reads lookups may still make */
	pack *packs;
	size_t npacks;
	txbox_error refused; /* why the first pack refused was (its objects are unknown) */
	int walk_err;        /* why the walk stopped short (over a bound), or 0 */
};

static void close_fd(int fd)
{
	if (fd >= 0)
		close(fd);
}

static void pack_done(pack *p)
{
	close_fd(p->idx_fd);
	close_fd(p->pack_fd);
	free(p->name);
}

gitobj_store *gitobj_free(gitobj_store *d)
{
	if (!d)
		return NULL;
	for (size_t i = 0; i < d->npacks; i++)
		pack_done(&d->packs[i]);
	free(d->packs);
	free(d->dir);
	oidset_free(&d->seen);
	txbox_error_clear(&d->refused);
	free(d);
	return NULL;
}

static int plain_open(void *ctx, const char *path)
{
	return fs_open_beneath(*(const int *)ctx, path, O_RDONLY | O_NONBLOCK, 0);
}

static void plain_list(void *ctx, const char *path, void (*add)(void *arg, const char *name), void *arg)
{
	int fd = fs_open_beneath(*(const int *)ctx, path, O_RDONLY | O_DIRECTORY, 0);
	if (fd < 0)
		return;
	_cleanup_closedir_ DIR *dir = fdopendir(fd);
	if (!dir) {
		close(fd);
		return;
	}
	for (struct dirent *de; (de = readdir(dir));)
		add(arg, de->d_name);
}

gitobj_io gitobj_io_plain(const int *dirfd) { return (gitobj_io){plain_open, plain_list, (void *)(uintptr_t)dirfd}; }

const char *gitobj_dir(const gitobj_store *d) { return d->dir; }
size_t gitobj_hexlen(const gitobj_store *d) { return d->hexlen; }

static bool pread_all(int fd, void *buf, size_t len, off_t at) { return pread(fd, buf, len, at) == (ssize_t)len; }

static uint32_t be32(const unsigned char *p) { return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]; }

/* Check the v2 index in fd (named name) and fill p's fan-out, n and
 * nlarge: 0 or -EBADMSG. Its size must be exactly what n objects take, so
 * every table read later lies inside it. */
static int idx_check(int fd, const char *name, size_t rawlen, pack *p, txbox_error *err)
{
	unsigned char h[IDX_HEADER];
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return txbox_fail(err, -EBADMSG, "%s: not a regular file", name);
	if (!pread_all(fd, h, sizeof h, 0) || memcmp(h, "\377tOc\0\0\0\2", 8) != 0)
		return txbox_fail(err, -EBADMSG, "%s: not a version 2 pack index", name);
	for (size_t b = 0; b < 256; b++) {
		p->fanout[b] = be32(h + 8 + 4 * b);
		if (b && p->fanout[b] < p->fanout[b - 1])
			return txbox_fail(err, -EBADMSG, "%s: fan-out decreases at %zu", name, b);
	}
	p->n = p->fanout[255];
	/* names, CRCs and 4-byte offsets, then the pack's and its own checksum */
	uint64_t need = IDX_HEADER + (uint64_t)p->n * (rawlen + 8) + 2 * rawlen;
	if ((uint64_t)st.st_size < need || ((uint64_t)st.st_size - need) % 8 ||
	    ((uint64_t)st.st_size - need) / 8 > p->n)
		return txbox_fail(err, -EBADMSG, "%s: %" PRIu32 " objects do not fit its %jd bytes", name, p->n,
				  (intmax_t)st.st_size);
	p->nlarge = (uint32_t)(((uint64_t)st.st_size - need) / 8);
	return 0;
}

/* Check the pack in fd against the index: header, object count, size. */
static int pack_check(int fd, size_t rawlen, pack *p, txbox_error *err)
{
	unsigned char h[12];
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size < 12 + rawlen ||
	    !pread_all(fd, h, sizeof h, 0) || memcmp(h, "PACK", 4) != 0 || be32(h + 4) < 2 || be32(h + 4) > 3)
		return txbox_fail(err, -EBADMSG, "%s: its pack is not a version 2 or 3 pack", p->name);
	if (be32(h + 8) != p->n)
		return txbox_fail(err, -EBADMSG, "%s: its pack holds %" PRIu32 " objects, the index %" PRIu32,
				  p->name, be32(h + 8), p->n);
	p->pack_end = (uint64_t)st.st_size - rawlen;
	return 0;
}

/* Add the pack whose index is dir/objects/pack/name, when it and its pack
 * are there (-ENOENT: not a pack) and agree (else -EBADMSG, err says why). */
static int add_pack(gitobj_store *d, const char *name, txbox_error *err)
{
	size_t nl = strlen(name);
	_cleanup_free_ char *ip = NULL, *pp = NULL;
	if (asprintf(&ip, "%sobjects/pack/%s", d->dir, name) < 0 ||
	    asprintf(&pp, "%sobjects/pack/%.*s.pack", d->dir, (int)nl - 4, name) < 0)
		return -ENOMEM;
	pack p = {.idx_fd = d->io->open(d->io->ctx, ip), .pack_fd = -1, .name = steal_ptr(ip)};
	if (p.idx_fd >= 0)
		p.pack_fd = d->io->open(d->io->ctx, pp);
	int r = p.idx_fd < 0 || p.pack_fd < 0 ? -ENOENT : idx_check(p.idx_fd, p.name, d->rawlen, &p, err);
	if (r == 0)
		r = pack_check(p.pack_fd, d->rawlen, &p, err);
	pack *v = r == 0 ? realloc(d->packs, (d->npacks + 1) * sizeof *v) : NULL;
	if (!v) {
		pack_done(&p);
		return r < 0 ? r : -ENOMEM;
	}
	d->packs = v;
	d->packs[d->npacks++] = p;
	return 0;
}

typedef struct namelist {
	char **v;
	size_t n;
} namelist;

static void names_add(void *arg, const char *name)
{
	namelist *ns = arg;
	size_t nl = strlen(name);
	if (ns->n >= 2 * PACKS_MAX || nl < 5 || strcmp(name + nl - 4, ".idx"))
		return;
	char **v = realloc(ns->v, (ns->n + 1) * sizeof *v);
	if (!v)
		return;
	ns->v = v;
	if ((v[ns->n] = strdup(name)))
		ns->n++;
}

static int strcmp_p(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Open the packs of objects/pack (names from both sides, once each). A
 * pack refused is remembered: an object not found may have been in it. */
static int open_packs(gitobj_store *d)
{
	_cleanup_free_ char *pdir = NULL;
	if (asprintf(&pdir, "%sobjects/pack", d->dir) < 0)
		return -ENOMEM;
	namelist ns = {0};
	d->io->list(d->io->ctx, pdir, names_add, &ns);
	if (ns.n)
		qsort(ns.v, ns.n, sizeof *ns.v, strcmp_p);
	int r = 0;
	for (size_t i = 0; i < ns.n && r != -ENOMEM; i++) {
		if (i && !strcmp(ns.v[i], ns.v[i - 1]))
			continue;
		if (d->npacks >= PACKS_MAX)
			r = txbox_fail(&d->refused, -E2BIG, "more than %d packs", PACKS_MAX);
		else if ((r = add_pack(d, ns.v[i], &d->refused)) == -ENOENT)
			r = 0;
	}
	for (size_t i = 0; i < ns.n; i++)
		free(ns.v[i]);
	free(ns.v);
	return r == -ENOMEM ? r : 0;
}

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
	d->budget = INFLATE_BUDGET;
	d->probes = PROBE_BUDGET;
	int r = open_packs(d);
	if (r < 0)
		return r;
	*out = steal_ptr(d);
	return 0;
}

static void oid_hex(const gitobj_store *d, const gitobj_oid *o, char hex[65])
{
	for (size_t i = 0; i < d->hexlen; i++)
		hex[i] = "0123456789abcdef"[(o->b[i / 2] >> (i % 2 ? 0 : 4)) & 15];
	hex[d->hexlen] = '\0';
}

/* A 4-byte (or, by its top bit, 8-byte) offset of entry i of p, checked
 * to fall inside the pack: the offset, or -errno. */
static int64_t pack_offset(gitobj_store *d, const pack *p, uint32_t i, txbox_error *err)
{
	off_t offs = IDX_HEADER + (off_t)p->n * (off_t)(d->rawlen + 4);
	unsigned char b[8];
	if (!pread_all(p->idx_fd, b, 4, offs + (off_t)i * 4))
		return txbox_fail(err, -EBADMSG, "%s: offset %" PRIu32 " unreadable", p->name, i);
	uint64_t at = be32(b);
	if (at & 0x80000000u) {
		uint32_t large = (uint32_t)at & 0x7fffffffu;
		if (large >= p->nlarge)
			return txbox_fail(err, -EBADMSG, "%s: large offset %" PRIu32 " beyond its table of %" PRIu32,
					  p->name, large, p->nlarge);
		if (!pread_all(p->idx_fd, b, 8, offs + (off_t)p->n * 4 + (off_t)large * 8))
			return txbox_fail(err, -EBADMSG, "%s: large offset %" PRIu32 " unreadable", p->name, large);
		at = (uint64_t)be32(b) << 32 | be32(b + 4);
	}
	if (at < 12 || at >= p->pack_end)
		return txbox_fail(err, -ERANGE, "%s: offset %" PRIu64 " beyond the pack (%" PRIu64 " bytes)", p->name,
				  at, p->pack_end);
	return (int64_t)at;
}

/* Where o is in pack p: its offset, -ENOENT (not listed), or -errno. */
static int64_t pack_find(gitobj_store *d, const pack *p, const gitobj_oid *o, txbox_error *err)
{
	unsigned char name[32];
	uint32_t lo = o->b[0] ? p->fanout[o->b[0] - 1] : 0, hi = p->fanout[o->b[0]];
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (d->probes == 0)
			return txbox_fail(err, -E2BIG, "more than %d index reads", PROBE_BUDGET);
		d->probes--;
		if (!pread_all(p->idx_fd, name, d->rawlen, IDX_HEADER + (off_t)mid * (off_t)d->rawlen))
			return txbox_fail(err, -EBADMSG, "%s: object name %" PRIu32 " unreadable", p->name, mid);
		int c = memcmp(name, o->b, d->rawlen);
		if (c == 0)
			return pack_offset(d, p, mid, err);
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -ENOENT;
}

bool gitobj_in_packs(gitobj_store *d, const gitobj_oid *o)
{
	for (size_t j = 0; j < d->npacks; j++)
		if (pack_find(d, &d->packs[j], o, NULL) >= 0)
			return true;
	return false;
}

int gitobj_exists(gitobj_store *d, const gitobj_oid *o)
{
	if (gitobj_in_packs(d, o))
		return 1;
	char hex[65];
	_cleanup_free_ char *path = NULL;
	oid_hex(d, o, hex);
	if (asprintf(&path, "%sobjects/%.2s/%s", d->dir, hex, hex + 2) < 0)
		return -ENOMEM;
	int fd = d->io->open(d->io->ctx, path);
	if (fd >= 0)
		close(fd);
	return fd >= 0 ? 1 : fd == -ENOENT || fd == -ENOTDIR ? 0 : fd;
}

/* A size varint of a delta's header at dl[*i…]: at most 64 bits. */
static int delta_size(const unsigned char *dl, size_t dn, size_t *i, uint64_t *v)
{
	*v = 0;
	for (unsigned shift = 0; *i < dn && shift < 64; shift += 7) {
		unsigned c = dl[(*i)++];
		*v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80))
			return 0;
	}
	return -EBADMSG;
}

/* Apply git delta data (src size, dst size, copy/insert ops) to base:
 * the result's length in out (OBJ_MAX), or -EBADMSG/-E2BIG. */
static ssize_t delta_apply(const unsigned char *dl, size_t dn, const unsigned char *base, size_t bn,
			   unsigned char *out)
{
	size_t i = 0, o = 0;
	uint64_t src, dst;
	if (delta_size(dl, dn, &i, &src) < 0 || delta_size(dl, dn, &i, &dst) < 0 || src != bn)
		return -EBADMSG;
	if (dst > OBJ_MAX)
		return -E2BIG;
	while (i < dn) {
		unsigned op = dl[i++];
		if (op & 0x80) { /* copy from the base: offset and size, bytes present by bit */
			size_t off = 0, len = 0;
			for (unsigned b = 0; b < 7; b++)
				if (op & (1u << b)) {
					if (i >= dn)
						return -EBADMSG;
					if (b < 4)
						off |= (size_t)dl[i++] << (8 * b);
					else
						len |= (size_t)dl[i++] << (8 * (b - 4));
				}
			if (!len)
				len = 0x10000;
			if (off > bn || len > bn - off || len > dst - o)
				return -EBADMSG;
			memcpy(out + o, base + off, len);
			o += len;
		} else if (op) { /* insert op literal bytes */
			if (op > dn - i || op > dst - o)
				return -EBADMSG;
			memcpy(out + o, dl + i, op);
			o += op, i += op;
		} else
			return -EBADMSG;
	}
	return o == dst ? (ssize_t)o : -EBADMSG;
}

/* A pack entry's header at in[0..n): type, declared size, *h past it. */
static int entry_header(const unsigned char *in, size_t n, size_t *h, uint64_t *size)
{
	unsigned c = in[0];
	int type = (c >> 4) & 7;
	*size = c & 15;
	*h = 1;
	for (unsigned shift = 4; c & 0x80; shift += 7) {
		if (*h >= n || shift >= 64)
			return -EBADMSG; /* git: "bad object header" */
		c = in[(*h)++];
		*size |= (uint64_t)(c & 0x7f) << shift;
	}
	return *h < n ? type : -EBADMSG;
}

static int pack_object(gitobj_store *d, const pack *p, uint64_t at, int depth, unsigned char *out, size_t *len,
		       bool *cut, txbox_error *err);

/* The base of a delta at in[h…] (6: an offset back from at; 7: an object
 * id, in the same pack as git looks for it): its offset, *h past it. */
static int64_t delta_base_at(gitobj_store *d, const pack *p, uint64_t at, int type, const unsigned char *in,
			     size_t n, size_t *h, txbox_error *err)
{
	if (type == 6) {
		uint64_t ofs = 0;
		for (size_t k = 0; *h < n && k < 9; k++) { /* 9 x 7 bits: past 2^63 */
			unsigned c = in[(*h)++];
			ofs = (k ? (ofs + 1) << 7 : 0) | (c & 0x7f);
			if (!(c & 0x80))
				return ofs && ofs <= at - 12 ? (int64_t)(at - ofs)
							     : txbox_fail(err, -ERANGE, "%s: delta at %" PRIu64
										   " names a base before the pack",
									  p->name, at);
		}
		return txbox_fail(err, -EBADMSG, "%s: delta at %" PRIu64 ": bad base offset", p->name, at);
	}
	gitobj_oid o;
	if (n - *h < d->rawlen)
		return txbox_fail(err, -EBADMSG, "%s: delta at %" PRIu64 ": truncated base id", p->name, at);
	memset(&o, 0, sizeof o);
	memcpy(o.b, in + *h, d->rawlen);
	*h += d->rawlen;
	int64_t r = pack_find(d, p, &o, err);
	return r == -ENOENT ? txbox_fail(err, -EBADMSG, "%s: delta at %" PRIu64 ": base not in the pack", p->name, at)
			    : r;
}

/* Read IN_MAX bytes (less at the pack's end) of the entry at `at`. */
static ssize_t entry_read(const pack *p, uint64_t at, unsigned char *in, txbox_error *err)
{
	size_t want = p->pack_end - at < IN_MAX ? (size_t)(p->pack_end - at) : IN_MAX;
	ssize_t n = pread(p->pack_fd, in, want, (off_t)at);
	if (n != (ssize_t)want || n == 0)
		return txbox_fail(err, -EBADMSG, "%s: entry at %" PRIu64 " unreadable", p->name, at);
	return n;
}

/* A delta entry (its data declared dsize bytes at in[h…)): resolve its
 * base, then apply. The compressed input is freed before the base is read,
 * so a chain holds DELTA_MAX + OBJ_MAX bytes a level. */
static int delta_object(gitobj_store *d, const pack *p, uint64_t at, int depth, unsigned char **in, size_t n,
			size_t h, int type, uint64_t dsize, unsigned char *out, size_t *len, txbox_error *err)
{
	if (dsize > DELTA_MAX)
		return txbox_fail(err, -E2BIG, "%s: delta at %" PRIu64 " declares %" PRIu64 " bytes", p->name, at, dsize);
	int64_t bat = delta_base_at(d, p, at, type, *in, n, &h, err);
	if (bat < 0)
		return (int)bat;
	_cleanup_free_ unsigned char *dl = malloc(dsize + 1), *base = NULL;
	if (!dl)
		return -ENOMEM;
	ssize_t dn = z_head(*in + h, n - h, dl, (size_t)dsize);
	if (dn != (ssize_t)dsize)
		return txbox_fail(err, -EBADMSG, "%s: delta at %" PRIu64 " does not inflate to its size", p->name, at);
	free(*in);
	*in = NULL;
	size_t bn = 0;
	bool bcut = false;
	if (!(base = malloc(OBJ_MAX + 1)))
		return -ENOMEM;
	int btype = pack_object(d, p, (uint64_t)bat, depth + 1, base, &bn, &bcut, err);
	if (btype < 0)
		return btype;
	if (bcut)
		return txbox_fail(err, -E2BIG, "%s: delta at %" PRIu64 " over a base of more than %d bytes", p->name, at,
				  OBJ_MAX);
	ssize_t got = delta_apply(dl, (size_t)dn, base, bn, out);
	if (got < 0)
		return txbox_fail(err, (int)got, "%s: delta at %" PRIu64 " does not apply", p->name, at);
	*len = (size_t)got;
	return btype;
}

/* The object at offset at of pack p, through its deltas: its type (1-4)
 * and its content in out (OBJ_MAX bytes, *cut when there was more), or
 * -errno. */
static int pack_object(gitobj_store *d, const pack *p, uint64_t at, int depth, unsigned char *out, size_t *len,
		       bool *cut, txbox_error *err)
{
	*len = 0;
	*cut = false;
	if (depth > DELTA_DEPTH_MAX)
		return txbox_fail(err, -ELOOP, "%s: delta chain deeper than %d (or circular)", p->name, DELTA_DEPTH_MAX);
	if (d->budget == 0)
		return txbox_fail(err, -E2BIG, "more than %d objects inflated", INFLATE_BUDGET);
	d->budget--;
	_cleanup_free_ unsigned char *in = malloc(IN_MAX);
	if (!in)
		return -ENOMEM;
	ssize_t n = entry_read(p, at, in, err);
	size_t h = 0;
	uint64_t size = 0;
	int type = n < 0 ? (int)n : entry_header(in, (size_t)n, &h, &size);
	if (type == 6 || type == 7)
		return delta_object(d, p, at, depth, &in, (size_t)n, h, type, size, out, len, err);
	if (type < 1 || type > 4)
		return n < 0 ? (int)n : txbox_fail(err, -EBADMSG, "%s: entry at %" PRIu64 ": bad header", p->name, at);
	size_t want = size > OBJ_MAX ? OBJ_MAX : (size_t)size;
	ssize_t got = z_head(in + h, (size_t)n - h, out, want);
	if (got != (ssize_t)want)
		return txbox_fail(err, -EBADMSG, "%s: entry at %" PRIu64 " does not inflate to its size", p->name, at);
	*len = want;
	*cut = size > OBJ_MAX;
	return type;
}

/* Object o from the first pack that has it (git searches packs before
 * loose objects): its type, or -errno (-ENOENT: in no pack). */
static int pack_read(gitobj_store *d, const gitobj_oid *o, unsigned char *out, size_t *len, bool *cut,
		     txbox_error *err)
{
	for (size_t i = 0; i < d->npacks; i++) {
		int64_t at = pack_find(d, &d->packs[i], o, err);
		if (at >= 0)
			return pack_object(d, &d->packs[i], (uint64_t)at, 0, out, len, cut, err);
		if (at != -ENOENT)
			return (int)at;
	}
	return -ENOENT;
}

/* fd is a regular file of at most max bytes (its stat in *st): 0, or
 * -errno (-EINVAL: not a regular file, -EFBIG: too large). */
static int regular_within(int fd, uint64_t max, struct stat *st)
{
	if (fstat(fd, st) < 0)
		return -errno;
	if (!S_ISREG(st->st_mode))
		return -EINVAL;
	return (uint64_t)st->st_size > max ? -EFBIG : 0;
}

int gitobj_read_regular(int fd, size_t max, char **out, size_t *len)
{
	*out = NULL;
	*len = 0;
	struct stat st;
	int r = regular_within(fd, max, &st);
	if (r < 0)
		return r;
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

/* "TYPE SIZE\0" at the start of a loose object's n inflated bytes: its
 * type, the declared size, *h past the NUL; or -EBADMSG. */
static int loose_header(const char *t, size_t n, size_t *h, uint64_t *size)
{
	const char *nul = memchr(t, '\0', n < 32 ? n : 32), *sp = nul ? memchr(t, ' ', (size_t)(nul - t)) : NULL;
	if (!sp || sp + 1 == nul || nul - sp > 20 || (sp[1] == '0' && sp + 2 != nul))
		return -EBADMSG;
	*size = 0;
	for (const char *c = sp + 1; c < nul; c++) { /* at most 19 digits: no overflow */
		if (*c < '0' || *c > '9')
			return -EBADMSG;
		*size = *size * 10 + (uint64_t)(*c - '0');
	}
	*h = (size_t)(nul - t) + 1;
	for (int type = GITOBJ_COMMIT; type < _GITOBJ_TYPE_MAX; type++)
		if ((size_t)(sp - t) == strlen(type_table[type]) && !strncmp(t, type_table[type], (size_t)(sp - t)))
			return type;
	return -EBADMSG;
}

/* The same for a loose object ("TYPE SIZE\0" and the content, deflated):
 * only the head of the file is read and inflated. */
static int loose_read(gitobj_store *d, const gitobj_oid *o, unsigned char *out, size_t *len, bool *cut,
		      txbox_error *err)
{
	char hex[65];
	oid_hex(d, o, hex);
	_cleanup_free_ char *path = NULL;
	_cleanup_free_ unsigned char *in = malloc(IN_MAX), *buf = malloc(OBJ_MAX + 32);
	if (!in || !buf || asprintf(&path, "%sobjects/%.2s/%s", d->dir, hex, hex + 2) < 0)
		return -ENOMEM;
	_cleanup_close_ int fd = d->io->open(d->io->ctx, path);
	if (fd < 0)
		return fd == -ENOTDIR || fd == -ENOENT ? -ENOENT : txbox_fail_errno(err, fd, "object %s", hex);
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return txbox_fail(err, -EBADMSG, "object %s: not a regular file", hex);
	ssize_t n = pread(fd, in, IN_MAX, 0), got = n > 0 ? z_head(in, (size_t)n, buf, OBJ_MAX + 32) : -EBADMSG;
	size_t h = 0;
	uint64_t size = 0;
	int type = got < 0 ? (int)got : loose_header((char *)buf, (size_t)got, &h, &size);
	if (type < 0)
		return txbox_fail(err, -EBADMSG, "object %s: not a loose object", hex);
	*len = size > OBJ_MAX ? OBJ_MAX : (size_t)size;
	/* the declared size against what inflated: header + size bytes <= OBJ_MAX + 32 were all produced */
	if ((size_t)got - h < *len || (size <= OBJ_MAX && (size_t)got - h > *len))
		return txbox_fail(err, -EBADMSG, "object %s: not its declared %" PRIu64 " bytes", hex, size);
	memcpy(out, buf + h, *len);
	*cut = size > OBJ_MAX;
	return type;
}

int gitobj_read(gitobj_store *d, const gitobj_oid *o, unsigned char *out, size_t *len, bool *cut,
		txbox_error *err)
{
	*len = 0;
	*cut = false;
	int r = pack_read(d, o, out, len, cut, err);
	if (r == -ENOENT)
		r = loose_read(d, o, out, len, cut, err);
	if (r >= 0)
		out[*len] = '\0';
	char hex[65];
	if (r == -ENOENT && d->refused.message) { /* it may have been in a pack refused */
		oid_hex(d, o, hex);
		return txbox_fail(err, -EBADMSG, "object %s: in no readable pack (%s)", hex, d->refused.message);
	}
	if (r == -ENOENT) {
		oid_hex(d, o, hex);
		return txbox_fail(err, -ENOENT, "object %s: in no pack and not loose", hex);
	}
	return r;
}

int gitobj_idx_all_listed(gitobj_store *d, int fd)
{
	pack p = {.name = (char *)"index"};
	if (idx_check(fd, p.name, d->rawlen, &p, NULL) < 0)
		return -EBADMSG;
	if (p.n > REPACK_MAX_OBJECTS)
		return -E2BIG;
	_cleanup_free_ unsigned char *names = malloc((size_t)p.n * d->rawlen + 1);
	if (!names)
		return -ENOMEM;
	if (!pread_all(fd, names, (size_t)p.n * d->rawlen, IDX_HEADER))
		return -EBADMSG;
	for (uint32_t i = 0; i < p.n; i++) {
		gitobj_oid o;
		memset(&o, 0, sizeof o);
		memcpy(o.b, names + (size_t)i * d->rawlen, d->rawlen);
		if (!gitobj_in_packs(d, &o))
			return 0;
	}
	return 1;
}

/* The object ids a commit or tag header names, in order, checked whole
 * before any is handed on: *n of them at buf (lines "KEY <hex>\n"). */
static int links_scan(const char *buf, bool cut, gitobj_type type, size_t hexlen, size_t *n, const char **first)
{
	const char *first_key = type == GITOBJ_COMMIT ? "tree " : "object ";
	size_t klen = strlen(first_key);
	const char *nl = strchr(buf, '\n');
	if (!nl || (size_t)(nl - buf) != klen + hexlen || strncmp(buf, first_key, klen))
		return cut && !nl ? -E2BIG : -EBADMSG;
	*n = 0;
	*first = nl + 1;
	if (type == GITOBJ_TAG) {
		*first = buf + klen;
		*n = 1;
		return 0;
	}
	for (const char *line = nl + 1;; line = nl + 1) {
		nl = strchr(line, '\n');
		if (!nl) /* no line after the parents: cut there, or malformed */
			return cut ? -E2BIG : -EBADMSG;
		if (strncmp(line, "parent ", 7))
			return 0;
		if ((size_t)(nl - line) != 7 + hexlen)
			return -EBADMSG;
		++*n;
	}
}

int gitobj_links(const unsigned char *buf, size_t len, bool cut, gitobj_type type, size_t hexlen,
		 int (*fn)(void *arg, const gitobj_oid *o), void *arg)
{
	if (type != GITOBJ_COMMIT && type != GITOBJ_TAG)
		return 0; /* a tree or a blob: no commits behind it */
	(void)len; /* buf[len] is NUL: a NUL in the header ends it early, malformed */
	size_t n;
	const char *at;
	int r = links_scan((const char *)buf, cut, type, hexlen, &n, &at);
	for (size_t i = 0; r == 0 && i < n; i++) {
		gitobj_oid o;
		const char *hex = type == GITOBJ_TAG ? at : at + i * (8 + hexlen) + 7;
		if (gitobj_oid_parse(hex, hexlen, &o) < 0)
			return -EBADMSG;
		r = fn(arg, &o);
	}
	return r;
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
	return gitobj_links(buf, len, cut, type, d->hexlen, follow_add, &d->seen);
}

int gitobj_walk_add(gitobj_store *d, const gitobj_oid *o)
{
	d->rooted = true;
	int r = oidset_add(&d->seen, o);
	return r < 0 ? r : 0;
}

static void walk_stop(gitobj_store *d, int r)
{
	d->rooted = true;
	d->seen.qhead = SIZE_MAX;
	d->walk_err = r;
}

void gitobj_walk_fail(gitobj_store *d) { walk_stop(d, -ENOMEM); }

bool gitobj_walk_started(const gitobj_store *d) { return d->rooted; }

static bool all_in(const oidset *s, const gitobj_oid *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!oidset_has(s, &v[i]))
			return false;
	return true;
}

int gitobj_walk_reaches(gitobj_store *d, const gitobj_oid *targets, size_t nt)
{
	oidset *seen = &d->seen;
	/* an object that cannot be read is skipped: what is found through
	 * others is reachable as git reads them */
	while (seen->qhead != SIZE_MAX && !all_in(seen, targets, nt)) {
		if (seen->qhead >= seen->n)
			return 0; /* all read: not reachable */
		if (seen->qhead >= WALK_MAX)
			return -E2BIG;
		int r = follow(d, &seen->queue[seen->qhead++]);
		if (r == -ENOMEM || r == -ENOSPC)
			walk_stop(d, r);
	}
	return seen->qhead == SIZE_MAX ? d->walk_err : 1;
}

/* ---- blob ids ---------------------------------------------------------------
 * SHA-1 (FIPS 180-4) of "blob SIZE\0" + content: the id git gives a file's
 * content. Only for telling whether a file the transaction touched holds
 * what git recorded, never for trust: git's collision-detecting variant is
 * not needed to compare with ids git computed. */

typedef struct sha1_ctx {
	uint32_t h[5];
	uint64_t len;
	unsigned char buf[64];
	size_t n;
} sha1_ctx;

static uint32_t rol32(uint32_t x, unsigned n) { return x << n | x >> (32 - n); }

static void sha1_block(sha1_ctx *c, const unsigned char *p)
{
	uint32_t w[80], a = c->h[0], b = c->h[1], d = c->h[3], e = c->h[4], cc = c->h[2];
	for (int i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
	for (int i = 16; i < 80; i++)
		w[i] = rol32(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
	for (int i = 0; i < 80; i++) {
		uint32_t f, k;
		if (i < 20)
			f = (b & cc) | (~b & d), k = 0x5a827999;
		else if (i < 40)
			f = b ^ cc ^ d, k = 0x6ed9eba1;
		else if (i < 60)
			f = (b & cc) | (b & d) | (cc & d), k = 0x8f1bbcdc;
		else
			f = b ^ cc ^ d, k = 0xca62c1d6;
		uint32_t t = rol32(a, 5) + f + e + k + w[i];
		e = d, d = cc, cc = rol32(b, 30), b = a, a = t;
	}
	c->h[0] += a, c->h[1] += b, c->h[2] += cc, c->h[3] += d, c->h[4] += e;
}

static void sha1_init(sha1_ctx *c)
{
	*c = (sha1_ctx){.h = {0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0}};
}

static void sha1_update(sha1_ctx *c, const void *data, size_t len)
{
	const unsigned char *p = data;
	c->len += len;
	while (len) {
		size_t take = 64 - c->n < len ? 64 - c->n : len;
		memcpy(c->buf + c->n, p, take);
		c->n += take, p += take, len -= take;
		if (c->n == 64) {
			sha1_block(c, c->buf);
			c->n = 0;
		}
	}
}

static void sha1_final(sha1_ctx *c, unsigned char out[20])
{
	uint64_t bits = c->len * 8;
	unsigned char pad = 0x80, zero = 0, lenb[8];
	sha1_update(c, &pad, 1);
	while (c->n != 56)
		sha1_update(c, &zero, 1);
	for (int i = 0; i < 8; i++)
		lenb[i] = (unsigned char)(bits >> (56 - 8 * i));
	sha1_update(c, lenb, 8);
	for (int i = 0; i < 5; i++)
		for (int j = 0; j < 4; j++)
			out[4 * i + j] = (unsigned char)(c->h[i] >> (24 - 8 * j));
}

void gitobj_blob_id_mem(const void *data, size_t len, gitobj_oid *o)
{
	sha1_ctx c;
	char head[32];
	int n = snprintf(head, sizeof head, "blob %zu", len);
	sha1_init(&c);
	sha1_update(&c, head, (size_t)n + 1); /* with its NUL */
	sha1_update(&c, data, len);
	memset(o, 0, sizeof *o);
	sha1_final(&c, o->b);
}

int gitobj_blob_id(int fd, uint64_t max, gitobj_oid *o)
{
	struct stat st;
	int r = regular_within(fd, max, &st);
	if (r < 0)
		return r;
	enum { CHUNK = 65536 };
	_cleanup_free_ unsigned char *buf = malloc(CHUNK);
	if (!buf)
		return -ENOMEM;
	sha1_ctx c;
	char head[32];
	int n = snprintf(head, sizeof head, "blob %" PRIu64, (uint64_t)st.st_size);
	sha1_init(&c);
	sha1_update(&c, head, (size_t)n + 1);
	for (uint64_t left = (uint64_t)st.st_size; left;) {
		ssize_t got = pread(fd, buf, left < CHUNK ? (size_t)left : CHUNK, (off_t)((uint64_t)st.st_size - left));
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return got < 0 ? -errno : -EIO; /* shrank while read: not the size hashed */
		sha1_update(&c, buf, (size_t)got);
		left -= (uint64_t)got;
	}
	memset(o, 0, sizeof *o);
	sha1_final(&c, o->b);
	return 0;
}

/* ---- the index (.git/index, versions 2 to 4) ---------------------------------
 * Entries: ctime, mtime (seconds, nanoseconds), dev, ino, mode, uid, gid,
 * size (32-bit big-endian each), the object id, 16-bit flags (name length,
 * stage, extended), in version 3+ a second flags word when extended, then
 * the path: NUL-terminated and padded to a multiple of 8 (versions 2, 3),
 * or (4) a varint of bytes to drop from the previous path and the rest. */

#define INDEX_PATH_MAX 4096

/* The path of a version 4 entry at p (end: the buffer's end) after prev:
 * its length in out, the bytes used in *used, or -EBADMSG. */
static ssize_t index_v4_path(const unsigned char *p, const unsigned char *end, char *prev, size_t prevlen,
			     size_t *used)
{
	uint64_t drop = 0;
	size_t i = 0;
	/* git's offset varint: each continuation adds one before shifting */
	for (;; i++) {
		if (p + i >= end || i >= 9)
			return -EBADMSG;
		drop = (drop << 7) | (p[i] & 0x7f);
		if (!(p[i] & 0x80))
			break;
		drop++;
	}
	i++;
	if (drop > prevlen)
		return -EBADMSG;
	const unsigned char *nul = memchr(p + i, 0, (size_t)(end - p - (ptrdiff_t)i));
	size_t keep = prevlen - (size_t)drop, add = nul ? (size_t)(nul - p) - i : 0;
	if (!nul || keep + add >= INDEX_PATH_MAX)
		return -EBADMSG;
	memcpy(prev + keep, p + i, add);
	prev[keep + add] = '\0';
	*used = i + add + 1;
	return (ssize_t)(keep + add);
}

int gitobj_index_each(const unsigned char *buf, size_t len, size_t hashlen,
		      int (*fn)(void *arg, const gitobj_index_entry *e), void *arg)
{
	if (len < 12 || memcmp(buf, "DIRC", 4) != 0 || (hashlen != 20 && hashlen != 32))
		return -EBADMSG;
	uint32_t version = be32(buf + 4), count = be32(buf + 8);
	if (version < 2 || version > 4)
		return -EBADMSG;
	const unsigned char *p = buf + 12, *end = buf + len;
	size_t fixed = 40 + hashlen + 2;
	char path[INDEX_PATH_MAX];
	size_t pathlen = 0;
	path[0] = '\0';
	for (uint32_t k = 0; k < count; k++) {
		if ((size_t)(end - p) < fixed)
			return -EBADMSG;
		unsigned flags = (unsigned)p[40 + hashlen] << 8 | p[40 + hashlen + 1];
		size_t head = fixed + ((flags & 0x4000) && version >= 3 ? 2 : 0), used;
		if ((size_t)(end - p) < head)
			return -EBADMSG;
		if (version == 4) {
			ssize_t n = index_v4_path(p + head, end, path, pathlen, &used);
			if (n < 0)
				return (int)n;
			pathlen = (size_t)n;
			used += head;
		} else {
			const unsigned char *nul = memchr(p + head, 0, (size_t)(end - p) - head);
			if (!nul || (size_t)(nul - p) - head >= INDEX_PATH_MAX)
				return -EBADMSG;
			pathlen = (size_t)(nul - p) - head;
			memcpy(path, p + head, pathlen);
			path[pathlen] = '\0';
			used = (head + pathlen + 8) & ~(size_t)7;
			if (used > (size_t)(end - p))
				return -EBADMSG;
		}
		gitobj_index_entry e = {.path = path, .stage = (flags >> 12) & 3, .mode = be32(p + 24),
					.mtime_s = be32(p + 8), .mtime_ns = be32(p + 12), .size = be32(p + 36)};
		memcpy(e.oid.b, p + 40, hashlen);
		int r = fn(arg, &e);
		if (r != 0)
			return r < 0 ? r : 0;
		p += used;
	}
	return 0;
}
