/* YAML text -> a small node tree with 1-based line:col marks.
 *
 * Why YAML (libyaml): the policy is edited by people, who need comments,
 * readable lists and multi-line strings for reasons and suggestions. libyaml
 * is small, mature, packaged everywhere (Debian: libyaml-0-2) and gives exact
 * marks for every node so each mistake is reported as file:line:col. We use
 * its event parser and build our own tree so hostile input stays bounded:
 * aliases are expanded by copying, against the same node budget as the rest
 * of the file (so "billion laughs" stops at the cap), nesting depth is
 * capped, and only one document is accepted. The tree lives in an arena
 * the caller frees. */
#include "policy/internal.h"
#include "util/cleanup.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

static int push_item(arena *mem, ynode *parent, ynode *child)
{
	if (parent->n == parent->cap) {
		size_t cap = parent->cap ? parent->cap * 2 : 8;
		ynode **items = arena_calloc(mem, cap, sizeof(*items));
		if (!items)
			return -ENOMEM;
		if (parent->n)
			memcpy(items, parent->items, parent->n * sizeof(*items));
		parent->items = items;
		parent->cap = cap;
	}
	parent->items[parent->n++] = child;
	return 0;
}

static ynode *node_new(arena *mem, ynode_type type, yaml_mark_t mark)
{
	ynode *n = arena_alloc(mem, sizeof(*n));
	if (!n)
		return NULL;
	n->type = type;
	n->line = mark.line + 1;
	n->col = mark.column + 1;
	return n;
}

#define MAX_ANCHORS 1024

typedef struct anchor {
	char *name;
	ynode *node; /* owned by the tree */
} anchor;

static ynode *node_copy(arena *mem, const ynode *n, size_t *budget, size_t depth, bool *too_deep)
{
	if (depth > POLICY_MAX_DEPTH) {
		*too_deep = true;
		return NULL;
	}
	if (*budget == 0)
		return NULL;
	(*budget)--;
	ynode *c = arena_alloc(mem, sizeof(*c));
	if (!c)
		return NULL;
	c->type = n->type;
	c->line = n->line;
	c->col = n->col;
	c->plain = n->plain;
	c->len = n->len;
	if (n->value) {
		if (!(c->value = arena_alloc(mem, n->len + 1)))
			return NULL;
		memcpy(c->value, n->value, n->len + 1);
	}
	for (size_t i = 0; i < n->n; i++) {
		ynode *k = node_copy(mem, n->items[i], budget, depth + 1, too_deep);
		if (!k || push_item(mem, c, k) < 0)
			return NULL;
	}
	return c;
}

typedef struct parser_state {
	yaml_parser_t parser;
	bool initialised;
	anchor anchors[MAX_ANCHORS];
	size_t nanchors;
} parser_state;

static void parser_statep(parser_state *s)
{
	if (s->initialised)
		yaml_parser_delete(&s->parser);
	for (size_t i = 0; i < s->nanchors; i++)
		free(s->anchors[i].name);
}

static void eventp(yaml_event_t *e) { yaml_event_delete(e); }

int ytree_parse(const char *name, const char *buf, size_t len, arena *mem, ynode **root, txbox_error *err)
{
	_cleanup_(parser_statep) parser_state ps = {0};
	ynode *stack[POLICY_MAX_DEPTH + 1];
	size_t depth = 0, nodes = 0, documents = 0;
	ynode *top = NULL;
	int r = 0;

	*root = NULL;
	if (len > POLICY_MAX_FILE_BYTES)
		return txbox_fail(err, -EFBIG, "%s:1:1: policy is %zu bytes, over the limit of %d bytes",
				  name, len, POLICY_MAX_FILE_BYTES);
	if (!yaml_parser_initialize(&ps.parser))
		return txbox_fail(err, -ENOMEM, "%s: cannot initialise the YAML parser", name);
	ps.initialised = true;
	yaml_parser_set_input_string(&ps.parser, (const unsigned char *)buf, len);
	yaml_parser_set_encoding(&ps.parser, YAML_UTF8_ENCODING);

	for (;;) {
		_cleanup_(eventp) yaml_event_t ev;
		if (!yaml_parser_parse(&ps.parser, &ev)) {
			memset(&ev, 0, sizeof(ev));
			r = txbox_fail(err, -EINVAL, "%s:%zu:%zu: YAML syntax error: %s%s%s", name,
				       (size_t)ps.parser.problem_mark.line + 1,
				       (size_t)ps.parser.problem_mark.column + 1,
				       ps.parser.problem ? ps.parser.problem : "malformed input",
				       ps.parser.context ? " " : "",
				       ps.parser.context ? ps.parser.context : "");
			goto fail;
		}
		size_t line = ev.start_mark.line + 1, col = ev.start_mark.column + 1;
		ynode *n = NULL;
		switch (ev.type) {
		case YAML_STREAM_END_EVENT:
			*root = top;
			return 0;
		case YAML_DOCUMENT_START_EVENT:
			if (++documents > 1) {
				r = txbox_fail(err, -EINVAL,
					       "%s:%zu:%zu: more than one YAML document; a policy is one document",
					       name, line, col);
				goto fail;
			}
			continue;
		case YAML_ALIAS_EVENT: {
			const anchor *an = NULL;
			for (size_t i = ps.nanchors; i-- > 0 && !an;)
				if (!strcmp(ps.anchors[i].name, (const char *)ev.data.alias.anchor))
					an = &ps.anchors[i];
			if (!an) {
				r = txbox_fail(err, -EINVAL, "%s:%zu:%zu: unknown alias *%s", name, line, col,
					       (const char *)ev.data.alias.anchor);
				goto fail;
			}
			size_t budget = POLICY_MAX_NODES - nodes;
			bool too_deep = false;
			n = node_copy(mem, an->node, &budget, depth, &too_deep);
			if (!n) {
				if (too_deep) {
					r = txbox_fail(err, -E2BIG, "%s:%zu:%zu: alias *%s nests deeper than %d levels",
						       name, line, col, (const char *)ev.data.alias.anchor,
						       POLICY_MAX_DEPTH);
					goto fail;
				}
				if (budget == 0) {
					r = txbox_fail(err, -E2BIG,
						       "%s:%zu:%zu: alias *%s expands past the limit of %d YAML nodes",
						       name, line, col, (const char *)ev.data.alias.anchor,
						       POLICY_MAX_NODES);
					goto fail;
				}
				goto oom;
			}
			nodes = POLICY_MAX_NODES - budget - 1; /* the +1 below counts the root */
			n->line = line;
			n->col = col;
			break;
		}
		case YAML_SCALAR_EVENT:
			n = node_new(mem, YN_SCALAR, ev.start_mark);
			if (!n)
				goto oom;
			n->value = arena_alloc(mem, ev.data.scalar.length + 1);
			if (!n->value)
				goto oom;
			memcpy(n->value, ev.data.scalar.value, ev.data.scalar.length);
			n->value[ev.data.scalar.length] = '\0';
			n->len = ev.data.scalar.length;
			n->plain = ev.data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
			break;
		case YAML_SEQUENCE_START_EVENT:
			n = node_new(mem, YN_SEQ, ev.start_mark);
			if (!n)
				goto oom;
			break;
		case YAML_MAPPING_START_EVENT:
			n = node_new(mem, YN_MAP, ev.start_mark);
			if (!n)
				goto oom;
			break;
		case YAML_SEQUENCE_END_EVENT:
		case YAML_MAPPING_END_EVENT:
			if (depth > 0)
				depth--;
			continue;
		default:
			continue;
		}
		const yaml_char_t *anchor_name = ev.type == YAML_SCALAR_EVENT ? ev.data.scalar.anchor
						 : ev.type == YAML_SEQUENCE_START_EVENT ? ev.data.sequence_start.anchor
						 : ev.type == YAML_MAPPING_START_EVENT ? ev.data.mapping_start.anchor
										      : NULL;
		if (anchor_name) {
			if (ps.nanchors >= MAX_ANCHORS) {
				r = txbox_fail(err, -E2BIG, "%s:%zu:%zu: more than %d anchors", name, line, col,
					       MAX_ANCHORS);
				goto fail;
			}
			char *an = strdup((const char *)anchor_name);
			if (!an)
				goto oom;
			ps.anchors[ps.nanchors].name = an;
			ps.anchors[ps.nanchors++].node = n;
		}
		if (++nodes > POLICY_MAX_NODES) {
			r = txbox_fail(err, -E2BIG, "%s:%zu:%zu: policy has more than %d YAML nodes", name,
				       line, col, POLICY_MAX_NODES);
			goto fail;
		}
		if (depth == 0) {
			if (top) { /* cannot happen with one document, but stay safe */
				r = txbox_fail(err, -EINVAL, "%s:%zu:%zu: more than one top-level node", name,
					       line, col);
				goto fail;
			}
			top = n;
		} else if (push_item(mem, stack[depth - 1], n) < 0) {
			goto oom;
		}
		if (ev.type == YAML_SEQUENCE_START_EVENT || ev.type == YAML_MAPPING_START_EVENT) {
			if (depth >= POLICY_MAX_DEPTH) {
				r = txbox_fail(err, -E2BIG, "%s:%zu:%zu: nesting deeper than %d levels", name,
					       line, col, POLICY_MAX_DEPTH);
				goto fail;
			}
			stack[depth++] = n;
		}
	}
oom:
	r = txbox_fail(err, -ENOMEM, "%s: out of memory while reading the policy", name);
fail:
	return r; /* the partial tree is in mem */
}
