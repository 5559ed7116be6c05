/* Growable byte buffers, word cells and node storage for the shell parser. */
#include "shell/internal.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int sh_vec_reserve(void **p, size_t *cap, size_t need, size_t elsz)
{
	if (need <= *cap)
		return 0;
	size_t ncap = *cap ? *cap : 8;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2)
			return -ENOMEM;
		ncap *= 2;
	}
	if (ncap > SIZE_MAX / elsz)
		return -ENOMEM;
	void *n = realloc(*p, ncap * elsz);
	if (!n)
		return -ENOMEM;
	*p = n;
	*cap = ncap;
	return 0;
}

void sbuf_put(struct sbuf *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (n > SIZE_MAX - b->len - 1 ||
	    sh_vec_reserve((void **)&b->s, &b->cap, b->len + n + 1, 1) < 0) {
		b->oom = true;
		return;
	}
	if (n)
		memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
}

void sbuf_putc(struct sbuf *b, char c)
{
	sbuf_put(b, &c, 1);
}

void sbuf_puts(struct sbuf *b, const char *s)
{
	sbuf_put(b, s, strlen(s));
}

char *sbuf_take(struct sbuf *b)
{
	if (b->oom) {
		sbuf_free(b);
		return NULL;
	}
	if (!b->s)
		return strdup("");
	char *s = b->s;
	b->s = NULL;
	b->len = b->cap = 0;
	return s;
}

void sbuf_free(struct sbuf *b)
{
	free(b->s);
	b->s = NULL;
	b->len = b->cap = 0;
}

void cells_addn(struct cells *w, const char *s, size_t n, uint8_t f)
{
	if (w->oom || n == 0)
		return;
	size_t cap = w->cap;
	if (n > SIZE_MAX - w->len - 1) {
		w->oom = true;
		return;
	}
	if (sh_vec_reserve((void **)&w->c, &cap, w->len + n + 1, 1) < 0) {
		w->oom = true;
		return;
	}
	size_t fcap = w->cap;
	if (sh_vec_reserve((void **)&w->f, &fcap, w->len + n + 1, 1) < 0) {
		w->oom = true;
		return;
	}
	w->cap = cap < fcap ? cap : fcap;
	memcpy(w->c + w->len, s, n);
	memset(w->f + w->len, f, n);
	w->len += n;
	w->c[w->len] = '\0';
}

void cells_add(struct cells *w, char c, uint8_t f)
{
	cells_addn(w, &c, 1, f);
}

void cells_free(struct cells *w)
{
	free(w->c);
	free(w->f);
	w->c = NULL;
	w->f = NULL;
	w->len = w->cap = 0;
}

void sh_field_free(struct sh_field *f)
{
	free(f->text);
	f->text = NULL;
}

void sh_node_free(struct sh_node *n)
{
	for (size_t i = 0; i < n->argc; i++)
		sh_field_free(&n->argv[i]);
	free(n->argv);
	for (size_t i = 0; i < n->nredirs; i++) {
		free(n->redirs[i]->target);
		free(n->redirs[i]->body);
		free(n->redirs[i]);
	}
	free(n->redirs);
	for (size_t i = 0; i < n->nenv_cmds; i++)
		sh_field_free(&n->env_cmds[i]);
	free(n->env_cmds);
	free(n->via);
	memset(n, 0, sizeof(*n));
}

void sh_nodes_free(struct sh_nodes *ns)
{
	for (size_t i = 0; i < ns->n; i++)
		sh_node_free(&ns->v[i]);
	free(ns->v);
	ns->v = NULL;
	ns->n = ns->cap = 0;
}

const char *sh_basename(const char *s)
{
	const char *b = strrchr(s, '/');
	return b ? b + 1 : s;
}
