/* libFuzzer target: the git object reader of the effect check (tx/gitobj.c)
 * on a git dir the sandboxed command wrote. The input is split at the
 * marker "=GITOBJ=" into: a line "ROOT TARGET LOOSE" (object ids, 40 or 64
 * hex digits), a pack index, its pack, and a loose object (stored as
 * objects/LO/OSE...). They are written into a temporary git dir, and the
 * walk from ROOT is asked whether it reaches TARGET; TARGET and ROOT are
 * also read directly and the old index checked against the store.
 * It must answer or fail, never crash, hang or grow memory without bound;
 * an object read is never longer than GITOBJ_MAX. Seeds: fuzz/tx/corpus
 * (fuzz/tx/make-seeds.py builds them from real repositories).
 *
 * Deflated bytes defeat a mutator, so two parts may come uncompressed:
 * a pack part starting "RAWPACK\n" holds entries (an id, a header length
 * byte, the entry's header as a pack has it — type, size, delta base —,
 * a 2-byte little-endian data length, the data) from which the pack (data
 * deflated here) and its index (the ids sorted, with their offsets) are
 * built, the index part then ignored; a loose part starting "RAW\n" is
 * deflated here. */
#include "tx/gitobj.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MARK "=GITOBJ="
#define PARTS 4

static int root_fd = -1; /* the temporary git dir, made once per process */

static void put(const char *path, const uint8_t *p, size_t n)
{
	int fd = openat(root_fd, path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		abort();
	if (n && write(fd, p, n) != (ssize_t)n)
		abort();
	close(fd);
}

static void setup(void)
{
	if (root_fd >= 0)
		return;
	char tmpl[] = "/tmp/fuzz-gitobj-XXXXXX";
	if (!mkdtemp(tmpl) || (root_fd = open(tmpl, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 ||
	    mkdirat(root_fd, "objects", 0755) < 0 || mkdirat(root_fd, "objects/pack", 0755) < 0)
		abort();
}

/* Split data at MARK into at most PARTS parts. */
static size_t split(const uint8_t *data, size_t size, const uint8_t **part, size_t *len)
{
	size_t n = 0;
	const uint8_t *p = data, *end = data + size;
	while (n < PARTS - 1) {
		const uint8_t *m = memmem(p, (size_t)(end - p), MARK, strlen(MARK));
		if (!m)
			break;
		part[n] = p, len[n++] = (size_t)(m - p);
		p = m + strlen(MARK);
	}
	part[n] = p, len[n++] = (size_t)(end - p);
	return n;
}

#define RAW_ENTRIES 512

/* Deflate p[0..n) into out (compressBound(n) bytes): its length. */
static size_t deflate_to(const uint8_t *p, size_t n, uint8_t *out)
{
	uLongf len = compressBound((uLong)n);
	return compress(out, &len, p, (uLong)n) == Z_OK ? len : 0;
}

static void be32put(uint8_t *b, uint32_t v)
{
	b[0] = (uint8_t)(v >> 24), b[1] = (uint8_t)(v >> 16), b[2] = (uint8_t)(v >> 8), b[3] = (uint8_t)v;
}

typedef struct raw_entry {
	const uint8_t *id;
	uint32_t off;
} raw_entry;

static size_t raw_rawlen;
static int raw_cmp(const void *a, const void *b)
{
	return memcmp(((const raw_entry *)a)->id, ((const raw_entry *)b)->id, raw_rawlen);
}

/* The index of the n entries e (sorted here) of a pack of npack objects. */
static void raw_index(raw_entry *e, size_t n, size_t rawlen)
{
	raw_rawlen = rawlen;
	qsort(e, n, sizeof *e, raw_cmp);
	size_t size = 8 + 1024 + n * (rawlen + 8) + 2 * rawlen, at = 8 + 1024;
	uint8_t *idx = calloc(1, size);
	memcpy(idx, "\377tOc\0\0\0\2", 8);
	for (size_t b = 0, i = 0; b < 256; b++) {
		while (i < n && e[i].id[0] <= b)
			i++;
		be32put(idx + 8 + 4 * b, (uint32_t)i);
	}
	for (size_t i = 0; i < n; i++, at += rawlen)
		memcpy(idx + at, e[i].id, rawlen);
	at += 4 * n; /* CRCs: zero */
	for (size_t i = 0; i < n; i++, at += 4)
		be32put(idx + at, e[i].off);
	put("objects/pack/pack-a.idx", idx, size);
	free(idx);
}

/* Build the pack and its index from a RAWPACK part (see the top). */
static void raw_pack(const uint8_t *p, size_t n, size_t rawlen)
{
	raw_entry *e = calloc(RAW_ENTRIES, sizeof *e);
	uint8_t *pack = malloc(12 + 2 * n + RAW_ENTRIES * 64 + rawlen);
	size_t at = 12, ne = 0, i = 0;
	while (ne < RAW_ENTRIES && n - i >= rawlen + 1) {
		const uint8_t *id = p + i;
		size_t hl = p[i + rawlen];
		i += rawlen + 1;
		if (n - i < hl + 2)
			break;
		e[ne++] = (raw_entry){id, (uint32_t)at};
		memcpy(pack + at, p + i, hl), at += hl, i += hl;
		size_t dl = (size_t)p[i] | (size_t)p[i + 1] << 8;
		i += 2;
		dl = dl < n - i ? dl : n - i;
		at += deflate_to(p + i, dl, pack + at), i += dl;
	}
	memcpy(pack, "PACK\0\0\0\2", 8);
	be32put(pack + 8, (uint32_t)ne);
	memset(pack + at, 0, rawlen);
	put("objects/pack/pack-a.pack", pack, at + rawlen);
	raw_index(e, ne, rawlen);
	free(pack);
	free(e);
}

static void put_part(const char *path, const uint8_t *p, size_t n, const char *raw)
{
	size_t rl = strlen(raw);
	if (n < rl || memcmp(p, raw, rl)) {
		put(path, p, n);
		return;
	}
	uint8_t *z = malloc(compressBound((uLong)(n - rl)));
	put(path, z, deflate_to(p + rl, n - rl, z));
	free(z);
}

static void check_read(gitobj_store *d, const gitobj_oid *o)
{
	static unsigned char buf[GITOBJ_MAX + 1];
	size_t len = 0;
	bool cut = false;
	txbox_error e = TXBOX_ERROR_INIT;
	int type = gitobj_read(d, o, buf, &len, &cut, &e);
	if (type >= 0 && (len > GITOBJ_MAX || type >= _GITOBJ_TYPE_MAX))
		abort();
	if (type < 0 && type != -ENOMEM && !e.message)
		abort(); /* every error says why */
	txbox_error_clear(&e);
}

static void run(const char *line, size_t hexlen)
{
	gitobj_oid root, target, loose;
	if (gitobj_oid_parse(line, hexlen, &root) < 0 || gitobj_oid_parse(line + hexlen + 1, hexlen, &target) < 0 ||
	    gitobj_oid_parse(line + 2 * (hexlen + 1), hexlen, &loose) < 0)
		return;
	const gitobj_io io = gitobj_io_plain(&root_fd);
	_cleanup_gitobj_ gitobj_store *d = NULL;
	if (gitobj_open(&io, "", hexlen, &d) < 0)
		return;
	check_read(d, &target);
	check_read(d, &root);
	int fd = openat(root_fd, "objects/pack/pack-a.idx", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		if (gitobj_idx_all_listed(d, fd) > 1)
			abort();
		close(fd);
	}
	if (gitobj_walk_add(d, &root) < 0)
		return;
	int reached = gitobj_walk_reaches(d, &target, 1);
	if (reached != 1 && reached != 0 && reached != -E2BIG && reached != -ENOSPC && reached != -ENOMEM)
		abort();
	if (!memcmp(&root, &target, sizeof root) && reached != 1)
		abort(); /* a root is reached without reading anything */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *part[PARTS] = {0};
	size_t len[PARTS] = {0};
	setup();
	size_t n = split(data, size, part, len);
	char line[3 * 65 + 1] = "";
	memcpy(line, part[0], len[0] < sizeof line - 1 ? len[0] : sizeof line - 1);
	size_t hexlen = strspn(line, "0123456789abcdef") == 64 ? 64 : 40;
	gitobj_oid o;
	for (size_t i = 0; i < 3; i++) /* hex only: the loose id names a path */
		if (strlen(line) < 3 * (hexlen + 1) - 1 || gitobj_oid_parse(line + i * (hexlen + 1), hexlen, &o) < 0)
			return 0;
	if (n > 2 && len[2] >= 8 && !memcmp(part[2], "RAWPACK\n", 8))
		raw_pack(part[2] + 8, len[2] - 8, hexlen / 2);
	else {
		put("objects/pack/pack-a.idx", part[1], n > 1 ? len[1] : 0);
		put("objects/pack/pack-a.pack", part[2], n > 2 ? len[2] : 0);
	}
	char dir[16], path[96];
	snprintf(dir, sizeof dir, "objects/%.2s", line + 2 * (hexlen + 1));
	snprintf(path, sizeof path, "%s/%.*s", dir, (int)hexlen - 2, line + 2 * (hexlen + 1) + 2);
	if (mkdirat(root_fd, dir, 0755) < 0 && errno != EEXIST)
		abort();
	put_part(path, part[3], n > 3 ? len[3] : 0, "RAW\n");
	run(line, hexlen);
	unlinkat(root_fd, path, 0);
	unlinkat(root_fd, dir, AT_REMOVEDIR);
	return 0;
}
