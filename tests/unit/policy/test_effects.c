/* Effect rules: loading (errors as file:line:col), globs, the git config
 * reader, and decisions on tables of change lists (default policy and
 * small ones), also after a round trip through the compiled-policy cache. */
#include "policy/effects.h"
#include "policy/internal.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static policy *load(const char *text)
{
	policy *p = NULL;
	txbox_error err = TXBOX_ERROR_INIT;
	if (policy_load_buffer("t.yaml", text, strlen(text), &p, &err) < 0)
		fail_msg("policy did not load: %s", err.message);
	return p;
}

static void expect_error(const char *text, const char *needle)
{
	policy *p = NULL;
	txbox_error err = TXBOX_ERROR_INIT;
	if (policy_load_buffer("t.yaml", text, strlen(text), &p, &err) == 0) {
		policy_free(p);
		fail_msg("policy loaded but should fail (%s):\n%s", needle, text);
	}
	if (!strstr(err.message, needle))
		fail_msg("error '%s' does not contain '%s'", err.message, needle);
	txbox_error_clear(&err);
}

static void test_load_errors(void **state)
{
	(void)state;
	expect_error("version: 1\neffects: {a: 1}\n", "t.yaml:2:10: effects must be a list");
	expect_error("version: 1\neffects:\n  - id: x\n    decision: hold\n    reason: r\n", "t.yaml:3:5: effect rule x needs a match");
	expect_error("version: 1\neffects:\n  - {id: x, decision: maybe, reason: r, match: {deleted_min: 1}}\n",
		     "t.yaml:3:23: decision must be allow, hold or deny");
	expect_error("version: 1\neffects:\n  - {id: x, decision: hold, reason: r, match: {git: [refs-gone]}}\n",
		     "t.yaml:3:54: match.git: unknown value 'refs-gone'");
	expect_error("version: 1\neffects:\n  - {id: x, decision: hold, reason: r, match: {kinds: moved}}\n",
		     "match.kinds: unknown value 'moved'");
	expect_error("version: 1\neffects:\n  - {id: x, decision: hold, reason: r, match: {deleted_share: 1.5}}\n",
		     "t.yaml:3:63: match.deleted_share must be a number above 0 and at most 1");
	expect_error("version: 1\neffects:\n  - {id: x, decision: hold, reason: r, match: {paths: [/etc/x]}}\n",
		     "must be relative to the workspace");
	expect_error("version: 1\neffects:\n  - {id: x, decision: hold, reason: r, match: {paths: [\"a/../b\"]}}\n",
		     "without '..'");
	expect_error("version: 1\neffects:\n  - {id: x, decision: hold, reason: r, match: {paths: [\"!a\"]}}\n",
		     "only exclusions");
	expect_error("version: 1\neffects:\n  - {id: x, decision: hold, reason: r, match: {size: 1}}\n",
		     "unknown key 'size' in an effect's match");
	expect_error("version: 1\neffects:\n  - {id: x, decision: hold, reason: r, match: {deleted_min: 1}}\n"
		     "  - {id: x, decision: deny, reason: r, match: {deleted_min: 2}}\n",
		     "t.yaml:4:10: duplicate effect rule id 'x' (first defined at line 3)");
	expect_error("version: 1\neffects:\n  - {id: x, decision: hold, reason: r, match: {deleted_min: 0}}\n",
		     "deleted_min must be at least 1");
}

static void test_globs(void **state)
{
	(void)state;
	static const struct {
		const char *glob, *path;
		bool match;
	} t[] = {
		{".env", ".env", true},
		{".env", "a/b/.env", true},
		{".env.*", "srv/.env.local", true},
		{".env", ".envrc", false},
		{".github/workflows/**", ".github/workflows/ci.yml", true},
		{".github/workflows/**", ".github/workflows/a/b.yml", true},
		{".github/workflows/**", "x/.github/workflows/ci.yml", false},
		{"**/.git/hooks/**", ".git/hooks/pre-commit", true},
		{"**/.git/hooks/**", "sub/.git/hooks/post-checkout", true},
		{"**/.git/hooks/**", ".git/hooksx/a", false},
		{"!**/hooks/*.sample", ".git/hooks/a.sample", true}, /* raw glob of an exclusion, without '!' below */
		{"build/**", "build/a/b.o", true},
		{"build/**", "src/build/a", false},
		{"**", "any/thing", true},
		{"*.o", "deep/dir/x.o", true},
	};
	for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
		const char *g = t[i].glob[0] == '!' ? t[i].glob + 1 : t[i].glob;
		if (effect_glob_match(g, t[i].path) != t[i].match)
			fail_msg("glob %s on %s: expected %d", g, t[i].path, t[i].match);
	}
}

/* ---- git config ---- */

static char *changed(const char *old, const char *new_)
{
	gitconfig_entry *a, *b;
	size_t na, nb, nk;
	char **keys;
	assert_int_equal(gitconfig_parse(old, strlen(old), &a, &na), 0);
	assert_int_equal(gitconfig_parse(new_, strlen(new_), &b, &nb), 0);
	assert_int_equal(gitconfig_changed_keys(a, na, b, nb, &keys, &nk), 0);
	char *out = calloc(1, 4096);
	for (size_t i = 0; i < nk; i++) {
		strcat(out, i ? " " : "");
		strcat(out, keys[i]);
		free(keys[i]);
	}
	free(keys);
	gitconfig_free(a, na);
	gitconfig_free(b, nb);
	return out;
}

static void expect_changed(const char *old, const char *new_, const char *keys)
{
	char *got = changed(old, new_);
	if (strcmp(got, keys))
		fail_msg("changed keys '%s', expected '%s'\nold:\n%s\nnew:\n%s", got, keys, old, new_);
	free(got);
}

/* gitconfig_redirect on old -> new: the "key old -> new" it names, or "". */
static char *redirect_as(const char *old, const char *new_, enum gitconfig_role role)
{
	gitconfig_entry *a, *b;
	size_t na, nb, nk;
	char **keys, *what = NULL;
	assert_int_equal(gitconfig_parse(old, strlen(old), &a, &na), 0);
	assert_int_equal(gitconfig_parse(new_, strlen(new_), &b, &nb), 0);
	assert_int_equal(gitconfig_changed_keys(a, na, b, nb, &keys, &nk), 0);
	int r = gitconfig_redirect(a, na, b, nb, (const char *const *)keys, nk, role, &what);
	assert_true(r == 0 || r == 1);
	assert_true((r == 1) == (what != NULL));
	for (size_t i = 0; i < nk; i++)
		free(keys[i]);
	free(keys);
	gitconfig_free(a, na);
	gitconfig_free(b, nb);
	return what ? what : strdup("");
}

static char *redirect(const char *old, const char *new_)
{
	return redirect_as(old, new_, *old ? GITCONFIG_REPO : GITCONFIG_NEW_REPO);
}

#define ORIGIN "[remote \"origin\"]\n\turl = https://github.com/u/r.git\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n"
#define EVIL "https://evil.example/x.git"

static void test_gitconfig_redirect_overlay(void **state)
{
	(void)state;
	/* config.worktree or a user's config: the remotes are elsewhere */
	static const char *const held[] = {"[remote \"origin\"]\n\tpushurl = " EVIL "\n",
					   "[branch \"main\"]\n\tpushRemote = fork\n",
					   "[remote]\n\tpushDefault = fork\n"};
	for (size_t i = 0; i < sizeof held / sizeof *held; i++) {
		char *got = redirect_as("", held[i], GITCONFIG_OVERLAY);
		if (!*got)
			fail_msg("overlay config not held:\n%s", held[i]);
		free(got);
		got = redirect_as("", held[i], GITCONFIG_NEW_REPO);
		assert_string_equal(got, "");
		free(got);
	}
	char *got = redirect_as("", "[user]\n\tname = x\n", GITCONFIG_OVERLAY);
	assert_string_equal(got, "");
	free(got);
}

static void test_gitconfig_redirect(void **state)
{
	(void)state;
	static const struct {
		const char *old, *new_, *what; /* what: "" for none */
	} cases[] = {
		{ORIGIN, "[remote \"origin\"]\n\turl = " EVIL "\n",
		 "remote.origin.url https://github.com/u/r.git -> " EVIL},
		{ORIGIN, "[Remote \"origin\"]\n\tURL = " EVIL "\n\tfetch = x\n",
		 "remote.origin.url https://github.com/u/r.git -> " EVIL},
		{ORIGIN, ORIGIN "\tpushurl = " EVIL "\n", "remote.origin.pushurl (unset) -> " EVIL},
		{ORIGIN, ORIGIN "\turl = " EVIL "\n", "remote.origin.url https://github.com/u/r.git -> " EVIL},
		{ORIGIN, "[remote \"origin\"]\n\tfetch = x\n", "remote.origin.url https://github.com/u/r.git -> (unset)"},
		{ORIGIN, ORIGIN "[url \"https://e/\"]\n\tinsteadOf = https://github.com/\n",
		 "url.https://e/.insteadof (unset) -> https://github.com/"},
		{"", "[url \"https://e/\"]\n\tpushInsteadOf = g\n", "url.https://e/.pushinsteadof (unset) -> g"},
		{"", "[http]\n\tproxy = http://e\n", "http.proxy (unset) -> http://e"},
		{ORIGIN, ORIGIN "[http \"https://github.com/\"]\n\textraHeader = a\\tb\n",
		 "http.https://github.com/.extraheader (unset) -> a?b"},
		{ORIGIN, ORIGIN "[lfs]\n\turl = https://e\n", "lfs.url (unset) -> https://e"},
		{"[submodule \"s\"]\n\turl = a\n", "[submodule \"s\"]\n\turl = b\n", "submodule.s.url a -> b"},
		{ORIGIN, ORIGIN "[remote \"f\"]\n\turl = " EVIL "\n[remote]\n\tpushDefault = f\n",
		 "remote.pushdefault (unset) -> f"},
		{ORIGIN, ORIGIN "[branch \"main\"]\n\tremote = " EVIL "\n",
		 "branch.main.remote (unset) -> " EVIL},
		{ORIGIN "[remote \"f\"]\n\turl = " EVIL "\n", ORIGIN "[remote \"f\"]\n\turl = " EVIL
		 "\n[branch \"main\"]\n\tpushRemote = f\n", "branch.main.pushremote (unset) -> f"},
		/* git takes the last value in file order: every one is judged */
		{ORIGIN, ORIGIN "[branch \"main\"]\n\tremote = origin\n\tremote = " EVIL "\n",
		 "branch.main.remote (unset) -> " EVIL},
		{ORIGIN, ORIGIN "[branch \"main\"]\n\tremote = " EVIL "\n\tremote = origin\n",
		 "branch.main.remote (unset) -> " EVIL},
		/* what agents do */
		{ORIGIN, ORIGIN "[remote \"up\"]\n\turl = https://e/up.git\n", ""},
		{ORIGIN, "[remote \"up\"]\n\turl = https://github.com/u/r.git\n[branch \"main\"]\n\tremote = up\n", ""},
		{ORIGIN, ORIGIN "[branch \"main\"]\n\tremote = origin\n\tmerge = refs/heads/main\n", ""},
		{ORIGIN, ORIGIN "[branch \"main\"]\n\tremote = .\n", ""},
		{ORIGIN, "", "remote.origin.url https://github.com/u/r.git -> (unset)"},
		{ORIGIN, "[remote \"up\"]\n\turl = https://github.com/u/r.git\n", ""},
		{ORIGIN, "[remote \"up\"]\n\turl = https://github.com/u/r.git\n\tpushurl = " EVIL "\n",
		 "remote.origin.url https://github.com/u/r.git -> (unset)"},
		{ORIGIN, ORIGIN "[user]\n\tname = x\n", ""},
		{"", ORIGIN "[branch \"main\"]\n\tremote = origin\n", ""},
		{"[core]\n\tbare = false\n", "[core]\n\tbare = false\n[remote \"o\"]\n\turl = a\n[branch \"m\"]\n\tremote = o\n",
		 ""},
		{"[submodule \"s\"]\n\turl = a\n", "", ""},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char *got = redirect(cases[i].old, cases[i].new_);
		if (strcmp(got, cases[i].what))
			fail_msg("case %zu: redirect '%s', expected '%s'\nold:\n%s\nnew:\n%s", i, got, cases[i].what,
				 cases[i].old, cases[i].new_);
		free(got);
	}
}

static void test_gitconfig(void **state)
{
	(void)state;
	const char *base = "[core]\n\trepositoryformatversion = 0\n\tbare = false\n";
	expect_changed(base, base, "");
	expect_changed(base, "[core]\n\tbare = false\n  repositoryformatversion=0 # same\n", "");
	expect_changed(base, "[core] hooksPath = /tmp/h\n\tbare = false\n\trepositoryformatversion = 0\n",
		       "core.hookspath");
	expect_changed("", "[CORE]\n\tPAGER = less\n", "core.pager");
	expect_changed("", "[alias \"Co\"]\n\tx = !sh\n[alias]\n\tst = !evil\n", "alias.Co.x alias.st");
	expect_changed("", "[Filter.Lfs]\n\tclean = x\n", "filter.lfs.clean");
	expect_changed("[credential]\n\thelper = store\n", "[credential]\n\thelper = \"st\\\nore\"\n", "");
	expect_changed("[credential]\n\thelper = store\n", "[credential]\n\thelper = store ; c\n\thelper = x\n",
		       "credential.helper");
	expect_changed("[core]\n\tfsmonitor = a\n", "", "core.fsmonitor");
	expect_changed("[diff \"a\\\"b\"]\n\ttextconv = t\n", "", "diff.a\"b.textconv");
	expect_changed("[x]\n\tflag\n", "[x]\n\tflag =\n", "x.flag");
	static const char *const bad[] = {"key = x\n", "[core\n", "[core]\n\t1x = y\n", "[core]\n\tx = \"open\n",
					  "[core]\n\tx y\n", "[a \"b\" c]\n", "[]\n", "[core]\n\tx = \\q\n"};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		gitconfig_entry *e;
		size_t n;
		if (gitconfig_parse(bad[i], strlen(bad[i]), &e, &n) != -EINVAL)
			fail_msg("accepted a config git refuses: %s", bad[i]);
	}
}

/* ---- decisions ---- */

typedef struct tcase {
	const char *name;
	effect_change ch[8];
	uint64_t tracked;
	unsigned git;
	const char *keys[4];
	bool unreadable;
	const char *expect; /* "allow" or "hold:rule" / "deny:rule" */
} tcase;

static void run_case(const policy *p, const tcase *c, const effect_change *many, size_t nmany)
{
	size_t n = 0, nk = 0;
	while (n < 8 && c->ch[n].path)
		n++;
	while (nk < 4 && c->keys[nk])
		nk++;
	effect_facts f = {.changes = many ? many : c->ch, .nchanges = many ? nmany : n, .tracked = c->tracked,
			  .git = c->git, .config_keys = c->keys, .nconfig_keys = nk,
			  .config_unreadable = c->unreadable, .policy_rel = "conf/policy.yaml"};
	effect_verdict v;
	assert_int_equal(policy_effects_check(p, &f, &v), 0);
	char got[128];
	if (v.decision == POLICY_ALLOW && !v.rule)
		snprintf(got, sizeof got, "allow");
	else
		snprintf(got, sizeof got, "%s:%s", policy_decision_name(v.decision), v.rule);
	if (strcmp(got, c->expect))
		fail_msg("%s: got %s (%s), expected %s", c->name, got, v.reason ? v.reason : "", c->expect);
	if (v.decision != POLICY_ALLOW && !v.reason)
		fail_msg("%s: no reason", c->name);
	effect_verdict_free(&v);
}

#define A TXBOX_CHANGE_ADDED
#define M TXBOX_CHANGE_MODIFIED
#define D TXBOX_CHANGE_DELETED
#define T TXBOX_CHANGE_METADATA

static const tcase default_cases[] = {
	{"plain edit", {{"src/a.c", M, false, false}}, 0, 0, {NULL}, false, "allow"},
	{"commit", {{".git/refs/heads/main", M, false, false}, {".git/logs/HEAD", M, false, false}, {".git/index", M, false, false},
		    {".git/objects/ab/cdef", A, false, false}}, 10, 0, {NULL}, false, "allow"},
	{"git init samples", {{".git", A, true, false}, {".git/hooks", A, true, false}, {".git/hooks/pre-commit.sample", A, false, false},
			      {".git/config", A, false, false}}, 0, 0, {"core.bare", "core.filemode"}, false, "allow"},
	{"hook added", {{".git/hooks/pre-commit", A, false, false}}, 0, 0, {NULL}, false, "hold:git-hooks"},
	{"hook chmod", {{"sub/.git/hooks/post-checkout", T, false, false}}, 0, 0, {NULL}, false, "hold:git-hooks"},
	{"hook deleted", {{".git/hooks/pre-commit", D, false, false}}, 0, 0, {NULL}, false, "allow"},
	{"submodule hook", {{".git/modules/lib/hooks/pre-push", A, false, false}}, 0, 0, {NULL}, false, "hold:git-hooks"},
	{"refs deleted", {{".git/refs/heads/x", D, false, false}}, 0, EFFECT_GIT_REFS_DELETED, {NULL}, false,
	 "deny:git-history"},
	{"reflog", {{".git/logs/HEAD", M, false, false}}, 0, EFFECT_GIT_REFLOG_DELETED, {NULL}, false, "deny:git-history"},
	{"packs", {{".git/objects/pack/p.pack", D, false, false}}, 0, EFFECT_GIT_PACKS_DELETED, {NULL}, false,
	 "deny:git-history"},
	{"prune", {{".git/objects/ab/cd", D, false, false}}, 0, EFFECT_GIT_OBJECTS_DELETED, {NULL}, false, "hold:git-objects"},
	{"hooksPath", {{".git/config", M, false, false}}, 0, 0, {"core.hookspath"}, false, "hold:git-config-exec"},
	{"alias", {{".git/config", M, false, false}}, 0, 0, {"user.name", "alias.co"}, false, "hold:git-config-exec"},
	{"textconv", {{".git/config", M, false, false}}, 0, 0, {"diff.pdf.textconv"}, false, "hold:git-config-exec"},
	{"includeIf", {{".git/config", M, false, false}}, 0, 0, {"includeIf.gitdir:~/.path"}, false,
	 "hold:git-config-exec"},
	{"harmless config", {{".git/config", M, false, false}}, 0, 0, {"user.email", "branch.main.remote"}, false, "allow"},
	{"unreadable config", {{".git/config", M, false, false}}, 0, 0, {NULL}, true, "hold:git-config-exec"},
	{".env", {{"app/.env", A, false, false}}, 0, 0, {NULL}, false, "hold:protected-files"},
	{".env.local", {{".env.local", D, false, false}}, 0, 0, {NULL}, false, "hold:protected-files"},
	{"workflow", {{".github/workflows/ci.yml", M, false, false}}, 0, 0, {NULL}, false, "hold:protected-files"},
	{"gitlab", {{".gitlab-ci.yml", A, false, false}}, 0, 0, {NULL}, false, "hold:protected-files"},
	{"envrc", {{".envrc", A, false, false}}, 0, 0, {NULL}, false, "hold:protected-files"},
	{"envrc.md", {{"docs/.envrc.md", A, false, false}}, 0, 0, {NULL}, false, "allow"},
	{"composite action", {{".github/actions/a/action.yml", A, false, false}}, 0, 0, {NULL}, false,
	 "hold:protected-files"},
	{"circleci", {{".circleci/config.yml", M, false, false}}, 0, 0, {NULL}, false, "hold:protected-files"},
	{"jenkins", {{"Jenkinsfile", A, false, false}}, 0, 0, {NULL}, false, "hold:protected-files"},
	{"vscode task", {{"app/.vscode/tasks.json", A, false, false}}, 0, 0, {NULL}, false, "hold:protected-files"},
	{"devcontainer", {{".devcontainer/devcontainer.json", A, false, false}}, 0, 0, {NULL}, false,
	 "hold:protected-files"},
	{"husky", {{".husky/pre-commit", M, false, false}}, 0, 0, {NULL}, false, "hold:protected-files"},
	{"vendored .github", {{"node_modules/p/.github/ci.yml", A, false, false}}, 0, 0, {NULL}, false, "allow"},
	{".env made a directory", {{".env", TXBOX_CHANGE_TYPE_CHANGED, true, true}}, 0, 0, {NULL}, false,
	 "hold:protected-files"},
	{"policy cache in the workspace", {{".cache/txbox/policy-00ff", M, false, false}}, 0, 0, {NULL}, false,
	 "hold:protected-files"},
	{"rc file of a home inside", {{"home/.bashrc", M, false, false}}, 0, 0, {NULL}, false, "hold:protected-files"},
	{"commondir", {{".git/commondir", A, false, false}}, 0, 0, {NULL}, false, "hold:git-redirect"},
	{"worktree gitdir", {{".git/worktrees/w/gitdir", M, false, false}}, 0, 0, {NULL}, false, "hold:git-redirect"},
	{"alternates", {{"sub/.git/objects/info/alternates", A, false, false}}, 0, 0, {NULL}, false,
	 "hold:git-redirect"},
	{"commondir deleted", {{".git/worktrees/w/commondir", D, false, false}}, 0, 0, {NULL}, false, "allow"},
	{"stash cleared", {{".git/logs/refs/stash", D, false, false}}, 0, EFFECT_GIT_STASH_DROPPED, {NULL}, false,
	 "hold:git-objects"},
	{"objects rewritten", {{".git/objects/ab/cd", M, false, false}}, 0, EFFECT_GIT_OBJECTS_REWRITTEN, {NULL}, false,
	 "deny:git-history"},
	{"lfs program", {{".git/config", M, false, false}}, 0, 0, {"lfs.customtransfer.x.path"}, false,
	 "hold:git-config-exec"},
	{"imap tunnel", {{".git/config", M, false, false}}, 0, 0, {"user.name", "imap.tunnel"}, false,
	 "hold:git-config-exec"},
	{"clone keys", {{"c/.git/config", A, false, false}}, 0, 0,
	 {"core.bare", "remote.origin.url", "remote.origin.fetch", "branch.main.merge"}, false, "allow"},
	{"remote helper", {{".git/config", M, false, false}}, 0, 0, {"remote.origin.vcs"}, false, "hold:git-config-exec"},
	{"policy file", {{"conf/policy.yaml", M, false, false}}, 0, 0, {NULL}, false, "hold:policy-file"},
	{"other yaml", {{"conf/other.yaml", M, false, false}}, 0, 0, {NULL}, false, "allow"},
	{"deny beats hold", {{".env", A, false, false}, {".git/refs/tags/v1", D, false, false}}, 0, EFFECT_GIT_REFS_DELETED,
	 {NULL}, false, "deny:git-history"},
	{"dir itself", {{".github/workflows", A, true, false}}, 0, 0, {NULL}, false, "allow"},
	{".git file", {{"lib/.git", A, false, false}}, 0, 0, {NULL}, false, "hold:git-dir-redirect"},
	{".git symlink", {{".git", TXBOX_CHANGE_TYPE_CHANGED, false, false}}, 0, 0, {NULL}, false, "hold:git-dir-redirect"},
};

static void test_default_rules(void **state)
{
	(void)state;
	policy *p = NULL;
	txbox_error err = TXBOX_ERROR_INIT;
	assert_int_equal(policy_load_default(&p, &err), 0);
	for (size_t i = 0; i < sizeof default_cases / sizeof *default_cases; i++)
		run_case(p, &default_cases[i], NULL, 0);
	policy_free(p);
}

/* n deleted files under dir (one level). */
static effect_change *deletions(const char *dir, size_t n)
{
	effect_change *v = calloc(n, sizeof *v);
	for (size_t i = 0; i < n; i++) {
		char *s = NULL;
		assert_true(asprintf(&s, "%s/f%zu", dir, i) > 0);
		v[i] = (effect_change){s, D, false, false};
	}
	return v;
}

static void free_changes(effect_change *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free((char *)v[i].path);
	free(v);
}

static void test_mass_delete(void **state)
{
	(void)state;
	policy *p = NULL;
	txbox_error err = TXBOX_ERROR_INIT;
	assert_int_equal(policy_load_default(&p, &err), 0);
	effect_change *src = deletions("src", 250), *bld = deletions("build", 5000), *nm = deletions("x/node_modules/y", 900);
	tcase c = {.name = "250 sources", .expect = "hold:mass-delete"};
	run_case(p, &c, src, 250);
	c = (tcase){.name = "199 sources", .expect = "allow"};
	run_case(p, &c, src, 199);
	c = (tcase){.name = "build dir", .expect = "allow"};
	run_case(p, &c, bld, 5000);
	c = (tcase){.name = "node_modules", .expect = "allow"};
	run_case(p, &c, nm, 900);
	c = (tcase){.name = "40 of 100 tracked", .tracked = 100, .expect = "hold:mass-delete-share"};
	run_case(p, &c, src, 40);
	c = (tcase){.name = "19 of 30 tracked (under the minimum)", .tracked = 30, .expect = "allow"};
	run_case(p, &c, src, 19);
	c = (tcase){.name = "40 of 1000 tracked", .tracked = 1000, .expect = "allow"};
	run_case(p, &c, src, 40);
	c = (tcase){.name = "40, no git", .expect = "allow"};
	run_case(p, &c, src, 40);
	/* emptied files count as deleted; merely modified ones do not */
	for (size_t i = 0; i < 250; i++)
		src[i].kind = M;
	c = (tcase){.name = "250 modified", .expect = "allow"};
	run_case(p, &c, src, 250);
	for (size_t i = 0; i < 250; i++)
		src[i].destroyed = true;
	c = (tcase){.name = "250 emptied", .expect = "hold:mass-delete"};
	run_case(p, &c, src, 250);
	c = (tcase){.name = "40 of 100 tracked emptied", .tracked = 100, .expect = "hold:mass-delete-share"};
	run_case(p, &c, src, 40);
	free_changes(src, 250);
	free_changes(bld, 5000);
	free_changes(nm, 900);
	policy_free(p);
}

static const char custom[] = "version: 1\n"
			     "effects:\n"
			     "  - {id: lock, decision: deny, reason: no lockfile edits, suggestion: s,\n"
			     "     match: {paths: [\"*.lock\", \"!vendor/**\"], kinds: [modified, deleted]}}\n"
			     "  - {id: tags, decision: hold, reason: r, match: {git: [refs-deleted]}}\n"
			     "  - {id: note, decision: allow, reason: noted, match: {paths: [NOTES]}}\n";

static const tcase custom_cases[] = {
	{"lock modified", {{"a/Cargo.lock", M, false, false}}, 0, 0, {NULL}, false, "deny:lock"},
	{"lock added", {{"a/Cargo.lock", A, false, false}}, 0, 0, {NULL}, false, "allow"},
	{"vendored lock", {{"vendor/x/y.lock", D, false, false}}, 0, 0, {NULL}, false, "allow"},
	{"refs", {{"x", M, false, false}}, 0, EFFECT_GIT_REFS_DELETED, {NULL}, false, "hold:tags"},
	{"reflog only", {{"x", M, false, false}}, 0, EFFECT_GIT_REFLOG_DELETED, {NULL}, false, "allow"},
	{"allow rule", {{"NOTES", M, false, false}}, 0, 0, {NULL}, false, "allow:note"},
};

static void test_custom_rules(void **state)
{
	(void)state;
	policy *p = load(custom);
	for (size_t i = 0; i < sizeof custom_cases / sizeof *custom_cases; i++)
		run_case(p, &custom_cases[i], NULL, 0);
	/* the same rules after the compiled-policy cache */
	char *blob;
	size_t len;
	assert_int_equal(policy_cache_encode(p, &blob, &len), 0);
	policy *q = policy_cache_decode(blob, len);
	assert_non_null(q);
	assert_int_equal(q->neffects, 3);
	for (size_t i = 0; i < sizeof custom_cases / sizeof *custom_cases; i++)
		run_case(q, &custom_cases[i], NULL, 0);
	free(blob);
	policy_free(q);
	policy_free(p);
}

/* A reason names what the command made, with control characters escaped. */
static void test_reason_printable(void **state)
{
	(void)state;
	policy *p = load("version: 1\neffects:\n  - {id: x, decision: hold, reason: r, match: {paths: [\"*\"]}}\n"
			 "  - {id: k, decision: hold, reason: r, match: {git_config: [\"*\", \"!user.*\"]}}\n");
	static const struct {
		const char *path, *shown;
	} t[] = {
		{"a\x1b]52;c;SGk=\x07", "r (a\\x1b]52;c;SGk=\\x07)"},
		{"caf\xc3\xa9\r", "r (caf\xc3\xa9\\x0d)"},                 /* UTF-8 kept, CR escaped */
		{"c1\xc2\x9b" "1m", "r (c1\\xc2\\x9b1m)"},                    /* U+009B (CSI) escaped */
		{"bad\xff\xe2\x82", "r (bad\\xff\\xe2\\x82)"},            /* invalid UTF-8 escaped */
	};
	for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
		effect_change ch = {t[i].path, A, false, false};
		effect_facts f = {.changes = &ch, .nchanges = 1};
		effect_verdict v;
		assert_int_equal(policy_effects_check(p, &f, &v), 0);
		assert_string_equal(v.reason, t[i].shown);
		effect_verdict_free(&v);
	}
	/* git_config with exclusions: an allow-list */
	const char *ok[] = {"user.name", "USER.email"}, *bad[] = {"user.name", "imap.tunnel"};
	effect_change ch = {".git/config", M, false, false};
	effect_facts f = {.changes = &ch, .nchanges = 1, .config_keys = ok, .nconfig_keys = 2};
	effect_verdict v;
	assert_int_equal(policy_effects_check(p, &f, &v), 0);
	assert_string_equal(v.rule, "x"); /* the path rule only */
	effect_verdict_free(&v);
	policy_free(p);
	p = load("version: 1\neffects:\n  - {id: k, decision: hold, reason: r, match: {git_config: [\"*\", \"!user.*\"]}}\n");
	assert_int_equal(policy_effects_check(p, &f, &v), 0);
	assert_null(v.rule);
	effect_verdict_free(&v);
	f.config_keys = bad;
	assert_int_equal(policy_effects_check(p, &f, &v), 0);
	assert_string_equal(v.reason, "r (git config imap.tunnel)");
	effect_verdict_free(&v);
	policy_free(p);
}

static void test_limit(void **state)
{
	(void)state;
	policy *p = load(custom);
	effect_facts f = {.incomplete = true};
	effect_verdict v;
	assert_int_equal(policy_effects_check(p, &f, &v), 0);
	assert_int_equal(v.decision, POLICY_HOLD);
	assert_string_equal(v.rule, "effects-limit");
	effect_verdict_free(&v);
	policy_free(p);
	/* no effect rules: nothing to gather */
	p = load("version: 1\n");
	assert_int_equal(policy_effects_needs(p), 0);
	policy_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_load_errors),   cmocka_unit_test(test_globs),
		cmocka_unit_test(test_gitconfig),     cmocka_unit_test(test_default_rules),
		cmocka_unit_test(test_mass_delete),   cmocka_unit_test(test_custom_rules),
		cmocka_unit_test(test_limit),         cmocka_unit_test(test_reason_printable),
		cmocka_unit_test(test_gitconfig_redirect),  cmocka_unit_test(test_gitconfig_redirect_overlay),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
