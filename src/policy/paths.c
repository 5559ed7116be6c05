/* Lexical path resolution and classification relative to the workspace.
 * No filesystem access: `~` expands against the given home, relative words
 * against the cwd, and `.`/`..` fold textually (so `../../..` from
 * /work/ws is `/`). Symlinks cannot be seen here; rules about `ln -s` to
 * outside paths cover that gap. */
#include "policy/internal.h"
#include "util/cleanup.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
	const char *name;
	unsigned bit;
} class_names[] = {
	{"inside", PC_INSIDE},   {"workspace", PC_WORKSPACE}, {"outside", PC_OUTSIDE},
	{"ancestor", PC_ANCESTOR}, {"home", PC_HOME},         {"system", PC_SYSTEM},
	{"device", PC_DEVICE},   {"network", PC_NETWORK},     {"tmp", PC_TMP},
	{"pseudo", PC_PSEUDO},   {"other", PC_OTHER},         {"unknown", PC_UNKNOWN},
	{"climb", PC_CLIMB},
};

unsigned path_class_from_name(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(class_names); i++)
		if (strcmp(class_names[i].name, name) == 0)
			return class_names[i].bit;
	return 0;
}

const char *path_class_describe(unsigned classes, char *buf, size_t size)
{
	size_t off = 0;
	if (size == 0)
		return buf;
	buf[0] = '\0';
	for (size_t i = 0; i < ARRAY_SIZE(class_names); i++) {
		if (!(classes & class_names[i].bit))
			continue;
		int w = snprintf(buf + off, size - off, "%s%s", off ? ", " : "", class_names[i].name);
		if (w < 0 || (size_t)w >= size - off)
			break;
		off += (size_t)w;
	}
	return buf;
}

/* Fold `.`, `..` and repeated slashes of an absolute path in place. */
static void normalise(char *path)
{
	char *out = path; /* path[0] == '/' */
	const char *in = path;
	size_t olen = 0;
	while (*in) {
		while (*in == '/')
			in++;
		if (!*in)
			break;
		const char *end = strchrnul(in, '/');
		size_t clen = (size_t)(end - in);
		if (clen == 1 && in[0] == '.') {
			/* skip */
		} else if (clen == 2 && in[0] == '.' && in[1] == '.') {
			while (olen > 0 && out[olen - 1] != '/')
				olen--;
			if (olen > 0)
				olen--; /* drop the slash */
		} else {
			out[olen++] = '/';
			memmove(out + olen, in, clen);
			olen += clen;
		}
		in = end;
	}
	if (olen == 0)
		out[olen++] = '/';
	out[olen] = '\0';
}

char *path_resolve(const char *word, const char *cwd, const char *home)
{
	char *s = NULL;
	int r;
	if (word[0] == '~' && word[1] == '+' && (word[2] == '/' || word[2] == '\0')) {
		/* bash's ~+ is $PWD */
		r = asprintf(&s, "%s/%s", cwd && cwd[0] == '/' ? cwd : "/", word + 2);
	} else if (word[0] == '~') {
		const char *rest = strchrnul(word, '/');
		size_t ulen = (size_t)(rest - word) - 1;
		if (ulen == 0) {
			if (!home || home[0] != '/')
				return NULL;
			r = asprintf(&s, "%s/%s", home, rest);
		} else if (ulen == 4 && strncmp(word + 1, "root", 4) == 0) {
			r = asprintf(&s, "/root/%s", rest);
		} else {
			r = asprintf(&s, "/home/%.*s/%s", (int)ulen, word + 1, rest);
		}
	} else if (word[0] == '/') {
		s = strdup(word);
		r = s ? 0 : -1;
	} else {
		r = asprintf(&s, "%s/%s", cwd && cwd[0] == '/' ? cwd : "/", word);
	}
	if (r < 0 || !s)
		return NULL;
	normalise(s);
	return s;
}

/* Is `path` equal to `dir` or below it? */
static bool under(const char *path, const char *dir)
{
	size_t n = strlen(dir);
	if (n == 1 && dir[0] == '/')
		return true;
	return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

static bool strictly_under(const char *path, const char *dir)
{
	return under(path, dir) && strcmp(path, dir) != 0;
}

static const char *const system_dirs[] = {"/etc", "/usr", "/bin", "/boot", "/sbin", "/var",
					  "/opt", "/srv", "/root", "/sys", "/proc"};
static const char *const pseudo_devices[] = {
	"/dev/null",   "/dev/zero",   "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty",
	"/dev/stdin",  "/dev/stdout", "/dev/stderr", "/dev/ptmx",
};

static bool is_system(const char *path)
{
	if (strcmp(path, "/") == 0)
		return true;
	for (size_t i = 0; i < ARRAY_SIZE(system_dirs); i++)
		if (under(path, system_dirs[i]))
			return true;
	/* /lib* : /lib32, /lib64, /libx32 and their contents */
	return strncmp(path, "/lib", 4) == 0;
}

unsigned path_classify(const char *abs, const char *workspace, const char *home, bool glob,
		       bool wild_all)
{
	unsigned c = 0;
	if (strcmp(abs, workspace) == 0)
		return glob ? (PC_INSIDE | (wild_all ? PC_WORKSPACE : 0)) : PC_WORKSPACE;
	if (strictly_under(abs, workspace))
		return PC_INSIDE;
	c |= PC_OUTSIDE;
	if (strictly_under(workspace, abs))
		c |= PC_ANCESTOR;
	if (home && home[0] == '/' && strcmp(home, "/") != 0 &&
	    (under(abs, home) || strictly_under(home, abs)))
		c |= PC_HOME;
	if (under(abs, "/home") || under(abs, "/root"))
		c |= PC_HOME;
	if (under(abs, "/dev")) {
		if (strictly_under(abs, "/dev/tcp") || strictly_under(abs, "/dev/udp")) {
			c |= PC_NETWORK;
		} else if (under(abs, "/dev/shm")) {
			c |= PC_TMP;
		} else if (under(abs, "/dev/fd") && !glob) {
			c |= PC_PSEUDO;
		} else if (under(abs, "/dev/pts") && !glob) {
			c |= PC_PSEUDO;
		} else {
			bool pseudo = false;
			for (size_t i = 0; !glob && i < ARRAY_SIZE(pseudo_devices); i++)
				if (strcmp(abs, pseudo_devices[i]) == 0)
					pseudo = true;
			c |= pseudo ? PC_PSEUDO : PC_DEVICE;
		}
	} else if (under(abs, "/tmp") || under(abs, "/var/tmp")) {
		c |= PC_TMP;
	} else if (is_system(abs)) {
		c |= PC_SYSTEM;
	}
	if (!(c & (PC_ANCESTOR | PC_HOME | PC_SYSTEM | PC_DEVICE | PC_NETWORK | PC_TMP | PC_PSEUDO)))
		c |= PC_OTHER;
	return c;
}

bool path_within(const char *path, const char *dir) { return under(path, dir); }

bool path_is_relative(const char *word)
{
	return word[0] != '/' && (word[0] != '~' || (word[1] == '+' && (word[2] == '/' || !word[2])));
}

static bool is_glob_char(char ch) { return ch == '*' || ch == '?' || ch == '['; }

unsigned path_classify_word(const char *word, bool unresolved, const policy_ctx *ctx,
			    char **resolved)
{
	*resolved = NULL;
	if (unresolved || (!ctx->cwd && path_is_relative(word)))
		return PC_UNKNOWN;
	unsigned alt_classes = 0;
	if (ctx->cwd_alt && path_is_relative(word)) {
		/* a relative path under the other hypothesis too: the union counts */
		policy_ctx other = *ctx;
		other.cwd = ctx->cwd_alt;
		other.cwd_alt = NULL;
		other.cwd_climbed = false;
		char *ignored = NULL;
		alt_classes = path_classify_word(word, false, &other, &ignored);
		free(ignored);
	}
	char *abs = path_resolve(word, ctx->cwd, ctx->home);
	if (!abs)
		return PC_UNKNOWN;
	/* A glob: classify the literal directory in front of the first wildcard
	 * component, as "its contents". */
	char *g = abs;
	while (*g && !is_glob_char(*g))
		g++;
	bool glob = *g != '\0', wild_all = false;
	_cleanup_free_ char *prefix = NULL;
	if (glob) {
		char *comp = g;
		while (comp > abs && comp[-1] != '/')
			comp--;
		const char *cend = strchrnul(comp, '/');
		wild_all = *cend == '\0';
		for (const char *q = comp; q < cend && wild_all; q++)
			if (!strchr("*?.[]!^", *q))
				wild_all = false;
		size_t plen = (size_t)(comp - abs);
		if (plen > 1)
			plen--; /* drop the trailing slash */
		prefix = strndup(abs, plen);
		if (!prefix) {
			free(abs);
			return PC_UNKNOWN;
		}
	}
	unsigned c = path_classify(glob ? prefix : abs, ctx->workspace, ctx->home, glob, wild_all);
	if ((c & PC_OUTSIDE) && path_is_relative(word) && ctx->cwd &&
	    (ctx->cwd_climbed || path_within(ctx->cwd, ctx->workspace)))
		c |= PC_CLIMB;
	*resolved = abs;
	return c | alt_classes;
}
