/* Tracking of simple variables within one text: `X=rm; $X -rf /` is seen as
 * `rm -rf /`.
 *
 * A variable is known only when it was assigned by an assignment-only
 * statement at the top level of the text, run unconditionally in the
 * current shell (not in a pipeline, not after && / ||, not in the
 * background, not inside any compound command, function or substitution),
 * with a static value. Anything that may change variables in ways we do not
 * follow poisons them for the rest of the text:
 *   - any other assignment to the name (conditional, in a loop, in a
 *     function, `X=v cmd`, arrays, +=) poisons that name;
 *   - read/declare/typeset/local/export/readonly/printf/mapfile/readarray/
 *     getopts/let/unset/set/source/./eval/cd/pushd/popd/wait, a command whose name is not
 *     static, a function definition, for/select, arithmetic and
 *     ${X=…}/${X:=…} poison all variables; so does assigning IFS.
 * An unquoted known value containing blanks or glob characters is treated
 * as unknown (bash would split or glob it). Variables from the environment
 * are never known.
 */
#include "shell/internal.h"

#include <stdlib.h>
#include <string.h>

#define MAX_VARS 256

static struct sh_var *find(const struct sh_vars *v, const char *name, size_t len)
{
	for (size_t i = 0; i < v->n; i++)
		if (strlen(v->v[i].name) == len && memcmp(v->v[i].name, name, len) == 0)
			return &v->v[i];
	return NULL;
}

static void watch_name(struct sh_vars *v, const char *name, size_t len)
{
	if (v && v->watch &&
	    ((v->watch_len == len && memcmp(v->watch, name, len) == 0) ||
	     (len == 3 && memcmp(name, "IFS", 3) == 0)))
		v->watch_hit = true;
}

static void watch_any(struct sh_vars *v)
{
	if (v && v->watch)
		v->watch_hit = true;
}

const char *sh_var_get(const struct sh_vars *v, const char *name, size_t len)
{
	if (!v || v->all_poisoned)
		return NULL;
	const struct sh_var *x = find(v, name, len);
	return x ? x->value : NULL;
}

bool sh_var_untouched(const struct sh_vars *v, const char *name, size_t len)
{
	if (!v || v->all_poisoned || find(v, name, len))
		return false;
	for (size_t i = 0; i < v->npend; i++)
		if (strlen(v->pend[i].name) == len && memcmp(v->pend[i].name, name, len) == 0)
			return false;
	return true;
}

void sh_var_poison_all(struct sh_vars *v)
{
	watch_any(v);
	if (v)
		v->all_poisoned = true;
}

void sh_var_poison(struct sh_vars *v, const char *name, size_t len)
{
	watch_name(v, name, len);
	if (!v || v->all_poisoned)
		return;
	if (len == 3 && memcmp(name, "IFS", 3) == 0) {
		v->all_poisoned = true;
		return;
	}
	struct sh_var *x = find(v, name, len);
	if (x) {
		free(x->value);
		x->value = NULL;
		return;
	}
	if (v->n >= MAX_VARS ||
	    sh_vec_reserve((void **)&v->v, &v->cap, v->n + 1, sizeof(*v->v)) < 0) {
		v->all_poisoned = true;
		return;
	}
	char *n = strndup(name, len);
	if (!n) {
		v->all_poisoned = true;
		return;
	}
	v->v[v->n++] = (struct sh_var){.name = n, .value = NULL};
}

void sh_var_pend(struct sh_vars *v, const char *name, size_t len, const char *value)
{
	watch_name(v, name, len);
	if (!v || v->all_poisoned)
		return;
	if (v->npend >= MAX_VARS ||
	    sh_vec_reserve((void **)&v->pend, &v->pcap, v->npend + 1, sizeof(*v->pend)) < 0) {
		v->all_poisoned = true;
		return;
	}
	char *n = strndup(name, len);
	char *val = value ? strdup(value) : NULL;
	if (!n || (value && !val)) {
		free(n);
		free(val);
		v->all_poisoned = true;
		return;
	}
	v->pend[v->npend++] = (struct sh_var){.name = n, .value = val};
}

void sh_var_settle(struct sh_vars *v, bool ok)
{
	if (!v)
		return;
	for (size_t i = 0; i < v->npend; i++) {
		struct sh_var *p = &v->pend[i];
		size_t len = strlen(p->name);
		struct sh_var *x = ok ? find(v, p->name, len) : NULL;
		if (!ok || !p->value || (len == 3 && memcmp(p->name, "IFS", 3) == 0)) {
			sh_var_poison(v, p->name, len);
		} else if (x) {
			if (x->value) { /* a poisoned name stays poisoned */
				free(x->value);
				x->value = p->value;
				p->value = NULL;
			}
		} else if (v->n < MAX_VARS &&
			   sh_vec_reserve((void **)&v->v, &v->cap, v->n + 1, sizeof(*v->v)) == 0) {
			v->v[v->n++] = *p;
			p->name = NULL;
			p->value = NULL;
		} else {
			v->all_poisoned = true;
		}
		free(p->name);
		free(p->value);
	}
	v->npend = 0;
}

void sh_vars_free(struct sh_vars *v)
{
	if (!v)
		return;
	sh_var_settle(v, false);
	for (size_t i = 0; i < v->n; i++) {
		free(v->v[i].name);
		free(v->v[i].value);
	}
	free(v->v);
	free(v->pend);
	memset(v, 0, sizeof(*v));
}

void sh_var_command(struct sh_vars *v, const struct sh_field *argv, size_t argc)
{
	static const char *const writers[] = {
		"read", "declare", "typeset", "local", "export", "readonly", "printf", "mapfile",
		"readarray", "getopts", "let", "unset", "set", "source", ".", "eval", "builtin",
		"command", "exec", "enable", "alias", "hash", "trap",
		/* PWD/OLDPWD/DIRSTACK change, `wait -p VAR` assigns */
		"cd", "pushd", "popd", "wait", NULL};
	if (!v || argc == 0)
		return;
	bool writes = argv[0].unres || argv[0].lookalike;
	for (const char *const *w = writers; *w && !writes; w++)
		writes = strcmp(argv[0].text, *w) == 0;
	if (writes) {
		watch_any(v);
		v->all_poisoned = true;
	}
	static const char *const definers[] = {"alias", "source", ".", "eval", "trap", NULL};
	bool defines = argv[0].unres || argv[0].lookalike;
	for (const char *const *w = definers; *w && !defines; w++)
		defines = strcmp(argv[0].text, *w) == 0;
	v->defines = v->defines || defines;
}
