/* tx/gitobj.c: the object store is the sandboxed command's. Hand-made
 * stores (loose objects, packs and indexes written byte by byte here) that
 * are corrupt, truncated, circular or oversized must each end with a
 * clear error (the walk then does not reach: the ref counts as lost),
 * never a crash or memory beyond the module's bounds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "tx/gitobj.h"
#include "util/fsutil.h"

#define HEX 40
#define RAW 20

typedef struct fixture {
	char path[64];
	int fd;
	gitobj_io io;
} fixture;

static int setup(void **state)
{
	fixture *f = calloc(1, sizeof *f);
	strcpy(f->path, "/tmp/test-gitobj-XXXXXX");
	assert_non_null(mkdtemp(f->path));
	f->fd = open(f->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(f->fd >= 0);
	assert_int_equal(mkdirat(f->fd, "objects", 0755), 0);
	assert_int_equal(mkdirat(f->fd, "objects/pack", 0755), 0);
	f->io = gitobj_io_plain(&f->fd);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fixture *f = *state;
	txbox_error e = TXBOX_ERROR_INIT;
	close(f->fd);
	assert_int_equal(fs_remove_tree_at(AT_FDCWD, f->path, &e), 0);
	free(f);
	return 0;
}

/* An object id made up from n (gitobj never hashes: ids are names). */
static gitobj_oid id(unsigned n)
{
	gitobj_oid o;
	memset(&o, 0, sizeof o);
	o.b[0] = (unsigned char)(n >> 16), o.b[1] = (unsigned char)(n >> 8), o.b[2] = (unsigned char)n;
	o.b[3] = 0x42, o.b[19] = 1;
	return o;
}

static void hex(const gitobj_oid *o, char out[HEX + 1])
{
	for (size_t i = 0; i < HEX; i++)
		out[i] = "0123456789abcdef"[(o->b[i / 2] >> (i % 2 ? 0 : 4)) & 15];
	out[HEX] = '\0';
}

static void put(int dfd, const char *path, const void *p, size_t n)
{
	int fd = openat(dfd, path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, p, n), (ssize_t)n);
	close(fd);
}

static unsigned char *deflated(const void *p, size_t n, size_t *out)
{
	uLongf len = compressBound((uLong)n);
	unsigned char *z = malloc(len);
	assert_int_equal(compress(z, &len, p, (uLong)n), Z_OK);
	*out = len;
	return z;
}

/* A commit's text: tree, n parents (ids first..first+n-1), author. */
static char *commit_text(unsigned first, size_t n, size_t *len)
{
	size_t cap = 64 + (n + 1) * (HEX + 8) + 128;
	char *t = malloc(cap), h[HEX + 1];
	gitobj_oid tree = id(0xffff);
	hex(&tree, h);
	size_t at = (size_t)sprintf(t, "tree %s\n", h);
	for (size_t i = 0; i < n; i++) {
		gitobj_oid p = id(first + (unsigned)i);
		hex(&p, h);
		at += (size_t)sprintf(t + at, "parent %s\n", h);
	}
	at += (size_t)sprintf(t + at, "author a <a@x> 0 +0000\ncommitter a <a@x> 0 +0000\n\nm\n");
	*len = at;
	return t;
}

static void put_loose(fixture *f, const gitobj_oid *o, const char *header, const void *body, size_t n)
{
	char h[HEX + 1], dir[16], path[80];
	hex(o, h);
	snprintf(dir, sizeof dir, "objects/%.2s", h);
	snprintf(path, sizeof path, "%s/%s", dir, h + 2);
	mkdirat(f->fd, dir, 0755);
	size_t hl = strlen(header) + 1, zn;
	unsigned char *raw = malloc(hl + n);
	memcpy(raw, header, hl);
	memcpy(raw + hl, body, n);
	unsigned char *z = deflated(raw, hl + n, &zn);
	put(f->fd, path, z, zn);
	free(z);
	free(raw);
}

static void put_commit(fixture *f, const gitobj_oid *o, unsigned first, size_t nparents)
{
	size_t n;
	char *t = commit_text(first, nparents, &n), header[32];
	snprintf(header, sizeof header, "commit %zu", n);
	put_loose(f, o, header, t, n);
	free(t);
}

/* ---- packs written by hand ---------------------------------------------- */

typedef struct packb {
	unsigned char buf[1 << 20];
	size_t n;
	gitobj_oid ids[256];
	uint64_t offs[256];
	size_t count;
} packb;

static void pk_byte(packb *p, unsigned c) { p->buf[p->n++] = (unsigned char)c; }

/* An entry's header: type and declared size (a varint). */
static void pk_header(packb *p, const gitobj_oid *o, int type, uint64_t size)
{
	p->ids[p->count] = *o;
	p->offs[p->count++] = p->n;
	unsigned c = (unsigned)(type << 4) | (size & 15);
	for (size >>= 4; size; size >>= 7) {
		pk_byte(p, c | 0x80);
		c = size & 0x7f;
	}
	pk_byte(p, c);
}

static void pk_data(packb *p, const void *data, size_t n)
{
	size_t zn;
	unsigned char *z = deflated(data, n, &zn);
	memcpy(p->buf + p->n, z, zn);
	p->n += zn;
	free(z);
}

static void pk_whole(packb *p, const gitobj_oid *o, int type, const void *data, size_t n, uint64_t declared)
{
	pk_header(p, o, type, declared);
	pk_data(p, data, n);
}

/* Delta data that builds text (< 128 bytes) whatever its base (src bytes). */
static size_t delta_insert(unsigned char *d, size_t src, const char *text)
{
	size_t n = strlen(text), i = 0;
	d[i++] = (unsigned char)src; /* sizes < 128: one byte each */
	d[i++] = (unsigned char)n;
	d[i++] = (unsigned char)n;
	memcpy(d + i, text, n);
	return i + n;
}

static void pk_ofs_delta(packb *p, const gitobj_oid *o, uint64_t base, const unsigned char *d, size_t dn)
{
	uint64_t at = p->n, ofs = at - base;
	pk_header(p, o, 6, dn);
	unsigned char v[10];
	size_t k = sizeof v;
	v[--k] = ofs & 0x7f;
	while (ofs >>= 7)
		v[--k] = 0x80 | (--ofs & 0x7f);
	memcpy(p->buf + p->n, v + k, sizeof v - k);
	p->n += sizeof v - k;
	pk_data(p, d, dn);
}

static void pk_ref_delta(packb *p, const gitobj_oid *o, const gitobj_oid *base, const unsigned char *d, size_t dn)
{
	pk_header(p, o, 7, dn);
	memcpy(p->buf + p->n, base->b, RAW);
	p->n += RAW;
	pk_data(p, d, dn);
}

static void be32put(unsigned char *b, uint32_t v)
{
	b[0] = (unsigned char)(v >> 24), b[1] = (unsigned char)(v >> 16), b[2] = (unsigned char)(v >> 8);
	b[3] = (unsigned char)v;
}

/* Write objects/pack/pack-t.{pack,idx} (sha1, checksums zero). */
static void pk_write(fixture *f, packb *p)
{
	memcpy(p->buf, "PACK\0\0\0\2", 8);
	be32put(p->buf + 8, (uint32_t)p->count);
	memset(p->buf + p->n, 0, RAW);
	put(f->fd, "objects/pack/pack-t.pack", p->buf, p->n + RAW);
	size_t order[256], n = p->count;
	for (size_t i = 0; i < n; i++)
		order[i] = i;
	for (size_t i = 1; i < n; i++) /* insertion sort by id */
		for (size_t j = i; j && memcmp(p->ids[order[j - 1]].b, p->ids[order[j]].b, RAW) > 0; j--) {
			size_t t = order[j];
			order[j] = order[j - 1], order[j - 1] = t;
		}
	static unsigned char idx[1 << 16];
	size_t at = 8 + 1024;
	memcpy(idx, "\377tOc\0\0\0\2", 8);
	for (unsigned b = 0; b < 256; b++) {
		uint32_t c = 0;
		for (size_t i = 0; i < n; i++)
			c += p->ids[i].b[0] <= b;
		be32put(idx + 8 + 4 * b, c);
	}
	for (size_t i = 0; i < n; i++, at += RAW)
		memcpy(idx + at, p->ids[order[i]].b, RAW);
	memset(idx + at, 0, 4 * n), at += 4 * n; /* CRCs */
	for (size_t i = 0; i < n; i++, at += 4)
		be32put(idx + at, (uint32_t)p->offs[order[i]]);
	memset(idx + at, 0, 2 * RAW), at += 2 * RAW;
	put(f->fd, "objects/pack/pack-t.idx", idx, at);
}

static void patch(fixture *f, const char *path, off_t at, const void *b, size_t n)
{
	int fd = openat(f->fd, path, O_WRONLY | O_CLOEXEC);
	assert_int_equal(pwrite(fd, b, n, at), (ssize_t)n);
	close(fd);
}

/* Set the big-endian 32-bit word at `at` of an index to v. */
static void patch_idx32(fixture *f, off_t at, uint32_t v)
{
	unsigned char b[4];
	be32put(b, v);
	patch(f, "objects/pack/pack-t.idx", at, b, 4);
}

/* Read o: the result, with the error's message required on failure. */
static int read_obj(fixture *f, const gitobj_oid *o, const char *why, bool *cut)
{
	gitobj_store *d;
	assert_int_equal(gitobj_open(&f->io, "", HEX, &d), 0);
	static unsigned char buf[GITOBJ_MAX + 1];
	size_t len;
	bool c;
	txbox_error e = TXBOX_ERROR_INIT;
	int r = gitobj_read(d, o, buf, &len, cut ? cut : &c, &e);
	if (r < 0) {
		assert_non_null(e.message);
		if (why && !strstr(e.message, why))
			fail_msg("error \"%s\" does not say \"%s\"", e.message, why);
	} else
		assert_true(len <= GITOBJ_MAX);
	txbox_error_clear(&e);
	gitobj_free(d);
	return r;
}

/* Does the walk from root reach target? */
static int reaches(fixture *f, const gitobj_oid *root, const gitobj_oid *target)
{
	_cleanup_gitobj_ gitobj_store *d = NULL;
	assert_int_equal(gitobj_open(&f->io, "", HEX, &d), 0);
	assert_int_equal(gitobj_walk_add(d, root), 0);
	return gitobj_walk_reaches(d, target, 1);
}

/* ---- tests -------------------------------------------------------------- */

static int count_link(void *arg, const gitobj_oid *o)
{
	(void)o;
	++*(size_t *)arg;
	return 0;
}

static void test_loose_walk(void **state)
{
	fixture *f = *state;
	gitobj_oid c1 = id(1), c2 = id(2), c3 = id(3), other = id(9);
	put_commit(f, &c1, 0, 0);
	put_commit(f, &c2, 1, 1);
	put_commit(f, &c3, 2, 1);
	assert_int_equal(read_obj(f, &c3, NULL, NULL), GITOBJ_COMMIT);
	assert_int_equal(reaches(f, &c3, &c1), 1);
	assert_int_equal(reaches(f, &c3, &other), 0);
	assert_int_equal(read_obj(f, &other, "not loose", NULL), -ENOENT);
}

static packb *pack_of_commits(void)
{
	packb *p = calloc(1, sizeof *p);
	p->n = 12;
	for (unsigned i = 1; i <= 3; i++) {
		size_t n;
		char *t = commit_text(i - 1, i > 1, &n);
		gitobj_oid o = id(i);
		pk_whole(p, &o, GITOBJ_COMMIT, t, n, n);
		free(t);
	}
	return p;
}

static void test_pack_walk(void **state)
{
	fixture *f = *state;
	packb *p = pack_of_commits();
	pk_write(f, p);
	gitobj_oid c1 = id(1), c3 = id(3);
	assert_int_equal(reaches(f, &c3, &c1), 1);
	free(p);
}

static void test_corrupt_index(void **state)
{
	fixture *f = *state;
	packb *p = pack_of_commits();
	pk_write(f, p);
	gitobj_oid c1 = id(1);
	patch_idx32(f, 8, 7); /* fan-out[0] above fan-out[1] */
	assert_int_equal(read_obj(f, &c1, "fan-out decreases", NULL), -EBADMSG);
	pk_write(f, p);
	for (unsigned k = 1; k < 256; k++) /* more objects than the file holds */
		patch_idx32(f, 8 + 4 * k, 1000);
	assert_int_equal(read_obj(f, &c1, "do not fit", NULL), -EBADMSG);
	free(p);
}

static void test_truncated_pack(void **state)
{
	fixture *f = *state;
	packb *p = pack_of_commits();
	gitobj_oid c3 = id(3), c1 = id(1);
	pk_write(f, p);
	/* the file ends 8 bytes before the last object's deflated data does
	 * (no checksum after it): what inflates is most of the commit */
	int fd = openat(f->fd, "objects/pack/pack-t.pack", O_WRONLY | O_CLOEXEC);
	assert_int_equal(ftruncate(fd, (off_t)p->n - 8), 0);
	close(fd);
	assert_int_equal(read_obj(f, &c3, "does not inflate", NULL), -EBADMSG);
	assert_int_equal(reaches(f, &c3, &c1), 0);
	free(p);
}

static void test_offset_beyond_file(void **state)
{
	fixture *f = *state;
	packb *p = pack_of_commits();
	pk_write(f, p);
	gitobj_oid c1 = id(1);
	/* the offsets follow the header, 3 names and 3 CRCs; c1 sorts first */
	patch_idx32(f, 8 + 1024 + 3 * RAW + 3 * 4, 1000000000);
	assert_int_equal(read_obj(f, &c1, "beyond the pack", NULL), -ERANGE);
	patch_idx32(f, 8 + 1024 + 3 * RAW + 3 * 4, 0x80000005); /* a large offset, and no table */
	assert_int_equal(read_obj(f, &c1, "beyond its table", NULL), -EBADMSG);
	free(p);
}

static void test_delta_cycle(void **state)
{
	fixture *f = *state;
	packb *p = calloc(1, sizeof *p);
	p->n = 12;
	gitobj_oid a = id(1), b = id(2);
	unsigned char d[160];
	size_t dn = delta_insert(d, 10, "tree x\n");
	pk_ref_delta(p, &a, &b, d, dn);
	pk_ref_delta(p, &b, &a, d, dn);
	pk_write(f, p);
	assert_int_equal(read_obj(f, &a, "deeper than", NULL), -ELOOP);
	assert_int_equal(reaches(f, &a, &b), 0);
	free(p);
}

static void test_deep_chain(void **state)
{
	fixture *f = *state;
	packb *p = calloc(1, sizeof *p);
	p->n = 12;
	size_t n;
	char *t = commit_text(0, 0, &n);
	gitobj_oid o = id(1000);
	pk_whole(p, &o, GITOBJ_COMMIT, t, n, n);
	unsigned char d[200];
	for (unsigned i = 1; i <= 80; i++) { /* each builds the same commit again */
		size_t dn = 0; /* source and result: n bytes (n < 2^14: two varint bytes) */
		for (int k = 0; k < 2; k++)
			d[dn++] = (unsigned char)((n & 0x7f) | 0x80), d[dn++] = (unsigned char)(n >> 7);
		d[dn++] = 0x80 | 0x10 | 0x20, d[dn++] = (unsigned char)n, d[dn++] = (unsigned char)(n >> 8); /* copy all */
		gitobj_oid x = id(1000 + i);
		pk_ofs_delta(p, &x, p->offs[p->count - 1], d, dn);
	}
	pk_write(f, p);
	gitobj_oid shallow = id(1000 + 10), deep = id(1000 + 80);
	bool cut;
	assert_int_equal(read_obj(f, &shallow, NULL, &cut), GITOBJ_COMMIT); /* deltas resolve */
	assert_int_equal(read_obj(f, &deep, "deeper than 64", NULL), -ELOOP);
	free(t);
	free(p);
}

static void test_huge_declared_size(void **state)
{
	fixture *f = *state;
	packb *p = calloc(1, sizeof *p);
	p->n = 12;
	size_t n;
	char *t = commit_text(0, 0, &n);
	gitobj_oid big = id(1), delta = id(2), loose = id(3);
	pk_whole(p, &big, GITOBJ_COMMIT, t, n, (uint64_t)1 << 60);
	unsigned char d[160];
	size_t dn = delta_insert(d, 10, "x");
	pk_header(p, &delta, 6, (uint64_t)1 << 40); /* declared 1 TiB of delta data */
	pk_byte(p, 0x10);
	pk_data(p, d, dn);
	pk_write(f, p);
	assert_int_equal(read_obj(f, &big, "does not inflate to its size", NULL), -EBADMSG);
	assert_int_equal(read_obj(f, &delta, "declares 1099511627776 bytes", NULL), -E2BIG);
	put_loose(f, &loose, "commit 9999999999999999999", t, n);
	assert_int_equal(read_obj(f, &loose, "declared", NULL), -EBADMSG);
	put_loose(f, &loose, "commit 99999999999999999999", t, n); /* 20 digits */
	assert_int_equal(read_obj(f, &loose, "not a loose object", NULL), -EBADMSG);
	free(t);
	free(p);
}

static void test_ten_thousand_parents(void **state)
{
	fixture *f = *state;
	gitobj_oid merge = id(60000), first = id(1);
	put_commit(f, &merge, 1, 10000);
	put_commit(f, &first, 0, 0);
	bool cut = false;
	assert_int_equal(read_obj(f, &merge, NULL, &cut), GITOBJ_COMMIT);
	assert_true(cut); /* 480 KiB of header: cut at GITOBJ_MAX */
	_cleanup_gitobj_ gitobj_store *d = NULL;
	assert_int_equal(gitobj_open(&f->io, "", HEX, &d), 0);
	static unsigned char buf[GITOBJ_MAX + 1];
	size_t len;
	assert_int_equal(gitobj_read(d, &merge, buf, &len, &cut, NULL), GITOBJ_COMMIT);
	size_t handed = 0;
	assert_int_equal(gitobj_links(buf, len, cut, GITOBJ_COMMIT, HEX, count_link, &handed), -E2BIG);
	assert_int_equal(handed, 0);
	/* not even its first parent counts as kept: the header is unknown */
	assert_int_equal(reaches(f, &merge, &first), 0);
}

static void test_walk_set_bound(void **state)
{
	fixture *f = *state;
	gitobj_oid root = id(65000), nowhere = id(65001);
	put_commit(f, &root, 50000, 160);
	for (unsigned i = 0; i < 160; i++) { /* each names 1,300 commits never there */
		gitobj_oid c = id(50000 + i);
		put_commit(f, &c, (unsigned)(1 << 16) + i * 1300, 1300);
	}
	assert_int_equal(reaches(f, &root, &nowhere), -ENOSPC);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_loose_walk, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pack_walk, setup, teardown),
		cmocka_unit_test_setup_teardown(test_corrupt_index, setup, teardown),
		cmocka_unit_test_setup_teardown(test_truncated_pack, setup, teardown),
		cmocka_unit_test_setup_teardown(test_offset_beyond_file, setup, teardown),
		cmocka_unit_test_setup_teardown(test_delta_cycle, setup, teardown),
		cmocka_unit_test_setup_teardown(test_deep_chain, setup, teardown),
		cmocka_unit_test_setup_teardown(test_huge_declared_size, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ten_thousand_parents, setup, teardown),
		cmocka_unit_test_setup_teardown(test_walk_set_bound, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
