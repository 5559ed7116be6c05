/* The default policy against the fourth blind adversarial set (issue 9):
 * each class it got through is closed by a mechanism, checked here under
 * several spellings, and the benign neighbours of each stay allowed. */
#include "policy/policy.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static const policy_ctx ctx = {.workspace = "/work/ws", .cwd = "/work/ws", .home = "/home/agent"};

typedef struct {
	const char *line;
	policy_decision dec;
	const char *rule;
	const char *reason; /* a part of the reason, or NULL */
} want;

/* Is the verdict, its rule and (a part of) its reason as expected? Every
 * line is checked and printed when it is not, so a run lists them all. */
static bool expect(const policy *p, const policy_ctx *c, const want *w)
{
	policy_verdict v;
	txbox_error err = TXBOX_ERROR_INIT;
	const char *argv[] = {w->line};
	if (policy_decide(p, c, argv, 1, &v, &err) < 0)
		fail_msg("%s", err.message);
	bool ok = v.decision == w->dec && strcmp(v.rule, w->rule) == 0 &&
		  (!w->reason || strstr(v.reason, w->reason));
	if (!ok)
		print_error("%s (network %d): got %s/%s (%s), want %s/%s (%s)\n", w->line, c->network,
			    policy_decision_name(v.decision), v.rule, v.reason,
			    policy_decision_name(w->dec), w->rule, w->reason ? w->reason : "");
	policy_verdict_free(&v);
	return ok;
}

static void expect_all(const policy *p, const policy_ctx *c, const want *t, size_t n)
{
	size_t bad = 0;
	for (size_t i = 0; i < n; i++)
		bad += !expect(p, c, &t[i]);
	if (bad)
		fail_msg("%zu of %zu lines judged otherwise", bad, n);
}

static policy *load_default(void)
{
	policy *p = NULL;
	txbox_error err = TXBOX_ERROR_INIT;
	if (policy_load_default(&p, &err) < 0)
		fail_msg("%s", err.message);
	return p;
}

#define EXPECT_ALL(p, c, table) expect_all(p, c, table, sizeof(table) / sizeof(*(table)))

/* Tools that force-reset a branch or change git for every repository. */
static void test_git_resets_and_global_config(void **state)
{
	(void)state;
	static const want t[] = {
		{"git checkout -B main origin/main", POLICY_HOLD, "git-branch-force-reset", "force-resets"},
		{"git switch -C main origin/main", POLICY_HOLD, "git-branch-force-reset", NULL},
		{"git switch --force-create main HEAD~3", POLICY_HOLD, "git-branch-force-reset", NULL},
		{"git co -B release v1.0", POLICY_HOLD, "git-branch-force-reset", NULL},
		{"git config --global url.\"https://evil.example/\".insteadOf https://github.com/",
		 POLICY_HOLD, "git-url-rewrite", "insteadOf"},
		{"git config url.git@evil:.pushInsteadOf git@github.com:", POLICY_HOLD, "git-url-rewrite", NULL},
		{"git config --global alias.st 'reset --hard'", POLICY_HOLD, "git-config-global-alias",
		 "outside the workspace"},
		{"git config --system --add alias.co checkout", POLICY_HOLD, "git-config-global-alias", NULL},
		/* neighbours that stay allowed */
		{"git switch -C \"$branch\"", POLICY_ALLOW, "default", NULL},
		{"git checkout -b feature origin/main", POLICY_ALLOW, "default", NULL},
		{"git config --global user.email ci@example.com", POLICY_ALLOW, "default", NULL},
		{"git config --global --get alias.st", POLICY_ALLOW, "default", NULL},
		{"git config --global --unset url.x.insteadOf", POLICY_ALLOW, "default", NULL},
		{"git config alias.st status", POLICY_ALLOW, "default", NULL},
	};
	policy *p = load_default();
	EXPECT_ALL(p, &ctx, t);
	policy_free(p);
}

/* Package runners run a bin by name: rimraf & co. are deleters like rm. */
static void test_package_runner_deleters(void **state)
{
	(void)state;
	static const want t[] = {
		{"npm exec -- rimraf ~/", POLICY_DENY, "rm-outside-workspace", "rimraf ~/ (via npm)"},
		{"npm x rimraf ~/", POLICY_DENY, "rm-outside-workspace", NULL},
		{"npx rimraf /etc", POLICY_DENY, "rm-outside-workspace", NULL},
		{"yarn dlx rimraf ~/", POLICY_DENY, "rm-outside-workspace", "via yarn"},
		{"pnpm dlx del-cli ~/Documents", POLICY_DENY, "rm-outside-workspace", NULL},
		{"npm exec --package=rimraf -- rimraf ../../", POLICY_DENY, "rm-outside-workspace", NULL},
		{"npx rimraf .", POLICY_HOLD, "rm-tool-workspace-root", NULL},
		{"npx rimraf ../other", POLICY_HOLD, "rm-outside-other", NULL},
		{"npx rimraf dist coverage", POLICY_ALLOW, "default", NULL},
		{"pnpm dlx create-vite app", POLICY_ALLOW, "default", NULL},
	};
	policy *p = load_default();
	EXPECT_ALL(p, &ctx, t);
	policy_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_git_resets_and_global_config),
		cmocka_unit_test(test_package_runner_deleters),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
