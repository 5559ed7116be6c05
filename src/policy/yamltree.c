/* YAML text -> a small node tree with 1-based line:col marks.
 *
 * Why YAML (libyaml): the policy is edited by people, who need comments,
 * readable lists and multi-line strings for reasons and suggestions. libyaml
 * is small, mature, packaged everywhere (Debian: libyaml-0-2) and gives exact
 * marks for every node so each mistake is reported as file:line:col. We use
 * its event parser and build our own tree so hostile input stays bounded:
 * aliases (and so "billion laughs" expansion) are refused, nesting depth and
 * node count are capped, and only one document is accepted. */
#include "policy/internal.h"
#include "util/cleanup.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

void ytree_free(ynode *n)
{
	if (!n)
		return;
	for (size_t i = 0; i < n->n; i++)
		ytree_free(n->items[i]);
	free(n->items);
	free(n->value);
	free(n);
}

static int push_item(ynode *parent, ynode *child)
{
	if (parent->n == parent->cap) {
		size_t cap = parent->cap ? parent->cap * 2 : 8;
		ynode **items = realloc(parent->items, cap * sizeof(*items));
		if (!items)
			return -ENOMEM;
		parent->items = items;
		parent->cap = cap;
	}
	parent->items[parent->n++] = child;
	return 0;
}

static ynode *node_new(ynode_type type, yaml_mark_t mark)
{
	ynode *n = calloc(1, sizeof(*n));
	if (!n)
		return NULL;
	n->type = type;
	n->line = mark.line + 1;
	n->col = mark.column + 1;
	return n;
}

typedef struct parser_state {
	yaml_parser_t parser;
	bool initialised;
} parser_state;

static void parser_statep(parser_state *s)
{
	if (s->initialised)
		yaml_parser_delete(&s->parser);
}

static void eventp(yaml_event_t *e) { yaml_event_delete(e); }

int ytree_parse(const char *name, const char *buf, size_t len, ynode **root, txbox_error *err)
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
		case YAML_ALIAS_EVENT:
			r = txbox_fail(err, -EINVAL,
				       "%s:%zu:%zu: YAML aliases (*%s) are not supported in a policy", name,
				       line, col, (const char *)ev.data.alias.anchor);
			goto fail;
		case YAML_SCALAR_EVENT:
			n = node_new(YN_SCALAR, ev.start_mark);
			if (!n)
				goto oom;
			n->value = malloc(ev.data.scalar.length + 1);
			if (!n->value) {
				free(n);
				goto oom;
			}
			memcpy(n->value, ev.data.scalar.value, ev.data.scalar.length);
			n->value[ev.data.scalar.length] = '\0';
			n->len = ev.data.scalar.length;
			n->plain = ev.data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
			break;
		case YAML_SEQUENCE_START_EVENT:
			n = node_new(YN_SEQ, ev.start_mark);
			if (!n)
				goto oom;
			break;
		case YAML_MAPPING_START_EVENT:
			n = node_new(YN_MAP, ev.start_mark);
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
		if (++nodes > POLICY_MAX_NODES) {
			ytree_free(n);
			r = txbox_fail(err, -E2BIG, "%s:%zu:%zu: policy has more than %d YAML nodes", name,
				       line, col, POLICY_MAX_NODES);
			goto fail;
		}
		if (depth == 0) {
			if (top) { /* cannot happen with one document, but stay safe */
				ytree_free(n);
				continue;
			}
			top = n;
		} else if (push_item(stack[depth - 1], n) < 0) {
			ytree_free(n);
			goto oom;
		}
		if (n->type != YN_SCALAR) {
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
	ytree_free(top);
	return r;
}
