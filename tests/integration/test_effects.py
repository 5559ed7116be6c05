"""The effect check (policy `effects:`): a transaction's actual changes are
judged before its commit, whatever the command text was. The policy used is
tests/security/allow-all.yaml (no command rules: every command reaches the
sandbox) plus the default policy's own effects section, so each default
rule is exercised through the real binary; and what real agent work does
(git commit, dependency installs, formatters, builds, cleaning build
outputs) must still commit."""

import os
import sys
import subprocess

import manifest as mf
from harness import Fail, check, sh, small_ws, test

HERE = os.path.dirname(os.path.abspath(__file__))


def _root(ctx):
    """The source tree: beside this file, or (--as-user runs a copy of the
    suite alone) the tree whose build/src/cli/txbox is under test."""
    for root in (os.path.join(HERE, "..", ".."), os.path.join(os.path.dirname(ctx.txbox), "..", "..", "..")):
        if os.path.exists(os.path.join(root, "policy", "default.yaml")):
            return root
    raise Fail("cannot find policy/default.yaml beside the suite or the binary")
GIT = "git -c user.name=t -c user.email=t@example.com -c init.defaultBranch=main"


def _effects_policy(ctx, where=None):
    """allow-all.yaml + the default policy's effects section, written to
    where (a path) or a fresh directory outside every workspace."""
    root = _root(ctx)
    with open(os.path.join(root, "tests", "security", "allow-all.yaml")) as f:
        base = f.read()
    with open(os.path.join(root, "policy", "default.yaml")) as f:
        default = f.read()
    at = default.find("\neffects:\n")
    if at < 0:
        raise Fail("policy/default.yaml has no effects: section")
    path = where or os.path.join(ctx.mkdtemp("effects-policy"), "policy.yaml")
    with open(path, "w") as f:
        f.write(base + default[at:])
    return path


def _run(ctx, ws, script, policy):
    return ctx.run_json(ws, script, extra=["--policy", policy])


def _effects(r):
    e = r.jget("effects")
    if not isinstance(e, dict):
        raise Fail("result has no effects object: %r\n  %s" % (e, r.where()))
    return e


def _expect_effect(r, decision, rule):
    e = _effects(r)
    check(e.get("decision") == decision and e.get("rule") == rule,
          "effects %r, expected %s by %s\n  %s" % (e, decision, rule, r.where()))
    if decision != "allow":
        check(e.get("reason"), "no reason in %r" % e)


def _denied(ctx, ws, script, policy, rule):
    before = mf.manifest(ws)
    r = _run(ctx, ws, script, policy)
    r.expect(outcome="rolled_back", exit_status=126, rollback_reason="effects")
    _expect_effect(r, "deny", rule)
    lines = mf.diff(before, mf.manifest(ws), dir_mtime=True)
    check(not lines, "a denied effect changed the workspace:\n%s" % "\n".join(lines[:20]))
    return r


def _held(ctx, ws, script, policy, rule):
    """Held: nothing published, the transaction open; rolled back after."""
    before = mf.manifest(ws)
    r = _run(ctx, ws, script, policy)
    r.expect(outcome="held", exit_status=3)
    _expect_effect(r, "hold", rule)
    lines = mf.diff(before, mf.manifest(ws), dir_mtime=True)
    check(not lines, "a held effect changed the workspace:\n%s" % "\n".join(lines[:20]))
    tx = r.jget("tx")
    rb = ctx.run_txbox(["rollback", "-w", ws, tx], cwd=ws)
    check(rb.rc == 0, "rollback of the held transaction failed: %s" % rb.where())
    return r


def _committed(ctx, ws, script, policy):
    r = _run(ctx, ws, script, policy)
    r.expect(outcome="committed", exit_status=0)
    _expect_effect(r, "allow", None)
    return r


def _repo(ctx, files=3):
    """A git repository with `files` tracked files, one commit, a branch
    `topic` with a commit of its own (not merged)."""
    ws = small_ws(ctx)
    os.makedirs(os.path.join(ws, "src"))
    for i in range(files):
        with open(os.path.join(ws, "src", "f%d.c" % i), "w") as f:
            f.write("int f%d;\n" % i)
    sh("%s init -q && %s add -A && %s commit -qm base && %s checkout -qb topic && "
       "echo t > t.txt && %s add t.txt && %s commit -qm topic && %s checkout -q main"
       % ((GIT,) * 7), cwd=ws)
    return ws


@test("effects/git-init-add-commit-commits")
def git_commit_passes(ctx):
    pol = _effects_policy(ctx)
    ws = small_ws(ctx)
    _committed(ctx, ws, "%s init -q && %s add -A && %s commit -qm first" % (GIT, GIT, GIT), pol)
    check(os.path.isdir(os.path.join(ws, ".git", "hooks")), "no .git committed")
    with open(os.path.join(ws, "known.txt"), "a") as f:
        f.write("more\n")
    _committed(ctx, ws, "%s add -A && %s commit -qm second && %s branch feature && %s tag v1"
               % (GIT, GIT, GIT, GIT), pol)


@test("effects/branch-delete-denied")
def branch_delete(ctx):
    pol = _effects_policy(ctx)
    ws = _repo(ctx)
    _denied(ctx, ws, "%s branch -D topic" % GIT, pol, "git-history")
    # packed: the ref is a line of packed-refs; packing itself loses nothing
    _committed(ctx, ws, "%s pack-refs --all" % GIT, pol)
    _denied(ctx, ws, "%s branch -D topic" % GIT, pol, "git-history")
    _denied(ctx, ws, "rm -f .git/packed-refs", pol, "git-history")
    sh("%s rev-parse --verify -q topic" % GIT, cwd=ws)


@test("effects/reflog-and-packs-denied")
def reflog_packs(ctx):
    pol = _effects_policy(ctx)
    ws = _repo(ctx)
    _denied(ctx, ws, "%s reflog expire --expire=now --all" % GIT, pol, "git-history")
    _denied(ctx, ws, ": > .git/logs/HEAD", pol, "git-history")
    _denied(ctx, ws, "rm -rf .git/logs", pol, "git-history")
    sh("%s gc -q" % GIT, cwd=ws)
    _denied(ctx, ws, "rm -f .git/objects/pack/*.pack", pol, "git-history")
    # appending to a reflog (what every commit does) is fine
    _committed(ctx, ws, "echo x >> known.txt && %s commit -qam more" % GIT, pol)


@test("effects/git-hooks-held")
def hooks(ctx):
    pol = _effects_policy(ctx)
    ws = _repo(ctx)
    _held(ctx, ws, "printf '#!/bin/sh\\nid\\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit",
          pol, "git-hooks")
    # a whole new hooks directory (published as one tree) is looked into
    _held(ctx, ws, "rm -rf .git/hooks && mkdir .git/hooks && echo x > .git/hooks/post-checkout", pol,
          "git-hooks")
    _held(ctx, ws, "mkdir -p sub/r && cd sub/r && %s init -q && echo x > .git/hooks/pre-push" % GIT, pol,
          "git-hooks")
    # approving a held transaction commits it
    r = _run(ctx, ws, "echo x > .git/hooks/pre-commit", pol)
    r.expect(outcome="held", exit_status=3)
    c = ctx.run_txbox(["commit", "-w", ws, r.jget("tx")], cwd=ws)
    check(c.rc == 0 and os.path.exists(os.path.join(ws, ".git", "hooks", "pre-commit")),
          "txbox commit of the held transaction did not publish it: %s" % c.where())


@test("effects/git-config-exec-held")
def git_config(ctx):
    pol = _effects_policy(ctx)
    ws = _repo(ctx)
    for cmd in ("git config core.hooksPath /tmp", "git config alias.st '!sh -c id'",
                "git config core.pager 'sh -c id'", "git config credential.helper '!id'",
                "git config diff.x.textconv id", "printf '[core] fsmonitor = id\\n' >> .git/config",
                "git config include.path /tmp/evil", "ln -sf /tmp/elsewhere .git/config"):
        _held(ctx, ws, cmd, pol, "git-config-exec")
    _committed(ctx, ws, "git config user.name someone && git config branch.main.description x", pol)
    _held(ctx, ws, "mkdir lib && echo 'gitdir: /tmp/elsewhere' > lib/.git", pol, "git-dir-redirect")


@test("effects/protected-files-held")
def protected(ctx):
    pol = _effects_policy(ctx)
    ws = small_ws(ctx)
    _held(ctx, ws, "echo TOKEN=1 > .env", pol, "protected-files")
    _held(ctx, ws, "echo x > sub/.env.production", pol, "protected-files")
    _held(ctx, ws, "mkdir -p .github/workflows && echo 'on: push' > .github/workflows/ci.yml", pol,
          "protected-files")
    _held(ctx, ws, "echo 'x:' > .gitlab-ci.yml", pol, "protected-files")
    os.makedirs(os.path.join(ws, ".github", "workflows"))
    with open(os.path.join(ws, ".github", "workflows", "ci.yml"), "w") as f:
        f.write("on: push\n")
    _held(ctx, ws, "rm -rf .github", pol, "protected-files")
    _committed(ctx, ws, "echo x > .envrc.md && echo y > env.txt", pol)


@test("effects/policy-file-in-workspace-held")
def policy_file(ctx):
    ws = small_ws(ctx)
    pol = _effects_policy(ctx, os.path.join(ws, "txbox-policy.yaml"))
    _held(ctx, ws, "echo '# edited' >> txbox-policy.yaml", pol, "policy-file")
    _committed(ctx, ws, "echo x > other.yaml", pol)


@test("effects/mass-delete-held-build-outputs-pass")
def mass_delete(ctx):
    pol = _effects_policy(ctx)
    ws = small_ws(ctx)
    os.makedirs(os.path.join(ws, "lib"))
    for i in range(250):
        with open(os.path.join(ws, "lib", "m%d.py" % i), "w") as f:
            f.write("x = %d\n" % i)
    _held(ctx, ws, "rm -rf lib", pol, "mass-delete")
    _held(ctx, ws, "find lib -name '*.py' -delete", pol, "mass-delete")
    # make producing build outputs, then cleaning them
    _committed(ctx, ws, "mkdir -p build && for i in $(seq 600); do echo $i > build/o$i.o; done", pol)
    _committed(ctx, ws, "rm -rf build", pol)
    check(not os.path.exists(os.path.join(ws, "build")), "build/ not deleted")


@test("effects/deleted-share-of-tracked-held")
def deleted_share(ctx):
    pol = _effects_policy(ctx)
    ws = _repo(ctx, files=50)
    _held(ctx, ws, "rm src/f1*.c src/f2*.c", pol, "mass-delete-share")  # 21 of 53 tracked
    _committed(ctx, ws, "rm src/f1*.c", pol)  # 11: under the minimum


@test("effects/agent-work-commits")
def agent_work(ctx):
    pol = _effects_policy(ctx)
    ws = _repo(ctx, files=40)
    # a dependency install: many new files, no deletes
    _committed(ctx, ws, "mkdir -p node_modules && for p in $(seq 300); do mkdir -p node_modules/p$p/lib && "
               "echo '{}' > node_modules/p$p/package.json && echo x > node_modules/p$p/lib/i.js; done && "
               "echo '{}' > package-lock.json", pol)
    # a formatter rewriting every file (in place and by rename)
    _committed(ctx, ws, "for f in src/*.c; do sed -i 's/int/long/' $f; done && "
               "for f in src/*.c; do cp $f $f.tmp && mv $f.tmp $f && echo >> $f; done", pol)
    _committed(ctx, ws, "%s add -A && %s commit -qm fmt && %s checkout -q topic && %s checkout -q main"
               % (GIT, GIT, GIT, GIT), pol)
    _committed(ctx, ws, "rm -rf node_modules", pol)


@test("effects/no-change-reads-nothing")
def no_change(ctx):
    pol = _effects_policy(ctx)
    ws = small_ws(ctx)
    r = _run(ctx, ws, "true", pol)
    r.expect(outcome="committed", exit_status=0)
    check(r.jget("effects") is None, "a transaction without changes was judged: %r" % r.jget("effects"))
    # the human summary names the effect rule
    p = subprocess.run([ctx.txbox, "run", "-w", ws, "--policy", pol, "--", "echo x > .env"], cwd=ws,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    check(p.returncode == 3 and b"effect rule protected-files" in p.stderr,
          "summary does not name the effect rule: %r" % p.stderr[-400:])


@test("effects/held-then-committed-equals-native")
def held_commit_native(ctx):
    """The effect check must leave the layer as the command left it: a held
    transaction is planned again by `txbox commit TX`, and a directory it
    replaced whole must still replace the old one (not merge with it)."""
    pol = _effects_policy(ctx)
    ws = small_ws(ctx)
    script = "rm -rf sub && mkdir sub && echo z > sub/.env && ln -s .env sub/link && echo y > new.txt"
    native = small_ws(ctx, prefix="native")
    sh(script, cwd=native)
    r = _run(ctx, ws, script, pol)
    r.expect(outcome="held", exit_status=3)
    c = ctx.run_txbox(["commit", "-w", ws, r.jget("tx")], cwd=ws)
    check(c.rc == 0, "txbox commit of the held transaction failed: %s" % c.where())
    lines = mf.diff(mf.manifest(native), mf.manifest(ws), mtime_check=lambda p, e, a: None)  # two runs
    check(not lines, "held then committed differs from running natively:\n%s" % "\n".join(lines[:20]))


@test("effects/commit-plans-once")
def plans_once(ctx):
    """With effect rules the layer is walked once per commit: the plan the
    rules judged is the plan published (TXBOX_TRACE marks each walk). Its
    result, changes included, is the one the same work gets without effect
    rules — stripped setuid bits are already what
    the judged plan says (a bit stripped on an otherwise unchanged file is
    no change)."""
    pol = _effects_policy(ctx)
    root = _root(ctx)
    plain = os.path.join(root, "tests", "security", "allow-all.yaml")
    script = ("echo more >> f1 && chmod u+s f2 && mkdir -p d && chmod g+s d && echo n > d/new && "
              "cp f1 suid && chmod 4755 suid && ln f3 f3b && rm f4")
    results = []
    for policy in (pol, plain):
        ws = small_ws(ctx)
        sh("for i in 1 2 3 4 5; do echo $i > f$i; done && mkdir d && touch -d @1000000 f* d && touch -d @1000000 .",
           cwd=ws)
        env = dict(os.environ, TXBOX_TRACE="1")
        r = ctx.run_json(ws, script, extra=["--policy", policy], env=env)
        r.expect(outcome="committed", exit_status=0)
        walks = r.err.count(b"plan: walking the layer")
        check(walks == 1, "the commit walked the layer %d times, not once (policy %s)\n  %s"
              % (walks, os.path.basename(policy), r.where()))
        results.append(sorted((c.get("path"), c.get("kind"), c.get("note")) for c in r.jget("changes") or []))
        mode = os.lstat(os.path.join(ws, "suid")).st_mode
        check(not mode & 0o6000, "a setuid bit was published: %o" % mode)
    check(results[0] == results[1], "the changes differ with and without effect rules:\n  %r\n  %r"
          % (results[0], results[1]))
    check("f2" not in [p for p, _, _ in results[0]],
          "chmod u+s of an unchanged file is reported though the bit is stripped: %r" % results[0])


def _reason(r):
    return _effects(r).get("reason") or ""


@test("effects/git-redirect-held")
def git_redirect(ctx):
    """A file that sends git to another directory (commondir, alternates)
    is held, and the config of any directory git takes for a git dir (a
    redirect target, a bare repository) is judged like .git/config."""
    pol = _effects_policy(ctx)
    ws = _repo(ctx)
    fsm = "printf '[core]\\n\\tfsmonitor = \"touch pwned; false\"\\n' >> evil/config"
    # the rt3/01a attack whole: a copy of the git dir with a code-running key, then commondir
    _held(ctx, ws, "cp -r .git evil && rm -rf evil/hooks && %s && echo ../evil > .git/commondir" % fsm, pol,
          "git-redirect")
    sh("cp -r .git evil && rm -rf evil/hooks", cwd=ws)  # a directory git may be sent to, already there
    r = _held(ctx, ws, "echo ../evil > .git/commondir", pol, "git-redirect")
    check(".git/commondir" in _reason(r), "the reason does not name .git/commondir: %r" % _reason(r))
    r = _held(ctx, ws, fsm, pol, "git-config-exec")  # its config, no redirect made now
    check("core.fsmonitor" in _reason(r), "the reason does not name the key: %r" % _reason(r))
    _held(ctx, ws, "echo /elsewhere/objects > .git/objects/info/alternates", pol, "git-redirect")
    _held(ctx, ws, "mkdir -p .git/worktrees/w && echo ../.. > .git/worktrees/w/commondir", pol, "git-redirect")
    # a bare repository planted anywhere: `git log` there would run its pager
    _held(ctx, ws, "%s init -q --bare lib/b.git && git config -f lib/b.git/config core.pager 'sh -c id'" % GIT,
          pol, "git-config-exec")
    _committed(ctx, ws, "%s init -q --bare lib/c.git" % GIT, pol)
    sh("%s status" % GIT, cwd=ws)
    check(not os.path.exists(os.path.join(ws, "pwned")), "git ran the planted fsmonitor")


@test("effects/git-objects-rewritten-denied")
def objects_rewritten(ctx):
    """Objects never change: a pack truncated or loose objects overwritten
    is history loss (rt3/01c/01d); their times changing (git freshens an
    object it would write again) is not."""
    pol = _effects_policy(ctx)
    ws = _repo(ctx)
    _denied(ctx, ws, "for o in .git/objects/[0-9a-f][0-9a-f]/*; do chmod u+w $o; echo junk > $o; done", pol,
            "git-history")
    # same size, other bytes
    _denied(ctx, ws, "for o in .git/objects/[0-9a-f][0-9a-f]/*; do chmod u+w $o; "
            "head -c $(stat -c %s $o) /dev/zero > $o.new && mv -f $o.new $o; done", pol, "git-history")
    _denied(ctx, ws, "o=$(ls .git/objects/[0-9a-f][0-9a-f]/* | head -1) && rm -f $o && mkdir $o", pol,
            "git-history")
    _committed(ctx, ws, "touch .git/objects/[0-9a-f][0-9a-f]/*", pol)
    sh("%s gc -q" % GIT, cwd=ws)
    _denied(ctx, ws, "for p in .git/objects/pack/*.pack; do chmod u+w $p; : > $p; done", pol, "git-history")
    _denied(ctx, ws, "rm -f .git/objects/pack/*.idx", pol, "git-history")
    _committed(ctx, ws, "touch .git/objects/pack/*", pol)
    sh("%s fsck --no-progress && %s log --oneline topic" % (GIT, GIT), cwd=ws)


@test("effects/ref-no-longer-a-ref-denied")
def ref_kind(ctx):
    """A ref turned into a directory (and dropped from packed-refs), or
    into junk, is a ref deleted (rt3/01e)."""
    pol = _effects_policy(ctx)
    ws = _repo(ctx)
    r = _denied(ctx, ws, "rm -f .git/refs/heads/topic && mkdir .git/refs/heads/topic", pol, "git-history")
    check(".git/refs/heads/topic" in _reason(r), "the reason does not name the ref: %r" % _reason(r))
    _denied(ctx, ws, "echo junk > .git/refs/heads/topic", pol, "git-history")
    _denied(ctx, ws, "rm -f .git/refs/heads/topic && ln -s main .git/refs/heads/topic", pol, "git-history")
    sh("%s pack-refs --all" % GIT, cwd=ws)
    r = _denied(ctx, ws, "mkdir .git/refs/heads/topic && sed -i '/refs\\/heads\\/topic/d' .git/packed-refs", pol,
                "git-history")
    check(".git/packed-refs (refs/heads/topic)" in _reason(r), "the reason does not name the ref: %r" % _reason(r))
    # a ref moved, a branch made, a symbolic ref: refs all the same
    _committed(ctx, ws, "%s checkout -qb side && echo s > s && %s add s && %s commit -qm s && "
               "%s symbolic-ref refs/heads/alias refs/heads/side" % (GIT, GIT, GIT, GIT), pol)
    sh("%s rev-parse --verify -q topic" % GIT, cwd=ws)


@test("effects/git-config-allow-list")
def config_allow_list(ctx):
    """Keys not known to be data are held, with the key named (rt3/01g/h);
    what agents do to git config commits."""
    pol = _effects_policy(ctx)
    ws = _repo(ctx)
    for key in ("lfs.customtransfer.x.path", "lfs.extension.y.smudge", "imap.tunnel", "instaweb.httpd",
                "help.browser", "diff.guitool"):
        r = _held(ctx, ws, "git config %s 'sh -c id'" % key, pol, "git-config-exec")
        check(key in _reason(r), "the reason does not name %s: %r" % (key, _reason(r)))
    _committed(ctx, ws, "git config user.name someone && git config user.email s@example.com && "
               "git config pull.rebase false && git config init.defaultBranch main && "
               "git remote add origin https://example.com/r.git && git config branch.main.remote origin && "
               "git config branch.main.merge refs/heads/main && git config advice.detachedHead false", pol)
    src = small_ws(ctx, prefix="upstream")
    sh("%s init -q && %s add -A && %s commit -qm up" % (GIT, GIT, GIT), cwd=src)
    _committed(ctx, ws, "%s clone -q %s clone && %s clone -q --bare %s bare.git && "
               "cd clone && %s checkout -qb feat && %s branch -q --set-upstream-to=origin/main && "
               "%s remote rename origin up" % (GIT, src, GIT, src, GIT, GIT, GIT), pol)
    _committed(ctx, ws, "mkdir n && cd n && %s init -q && echo x > x && %s add x && %s commit -qm x" % (GIT, GIT, GIT),
               pol)
    # a user's git config in the workspace (HOME=$WS/…) is judged the same way
    _held(ctx, ws, "mkdir -p home && printf '[core]\\n\\tfsmonitor = id\\n' > home/.gitconfig", pol,
          "git-config-exec")
    _committed(ctx, ws, "mkdir -p home && printf '[user]\\n\\tname = x\\n' > home/.gitconfig", pol)


def _remote_repo(ctx):
    """A repository whose remote `origin` the user pushes to, with a
    remote-tracking branch origin/main."""
    ws = _repo(ctx)
    sh("%s remote add origin https://github.com/u/r.git && %s update-ref refs/remotes/origin/main HEAD && "
       "%s update-ref refs/remotes/origin/topic topic" % (GIT, GIT, GIT), cwd=ws)
    return ws


@test("effects/git-config-redirect-held")
def config_redirect(ctx):
    """A config change that sends an existing remote's pushes, fetches or
    credentials elsewhere is held, its reason naming the key and the old
    and new values (rt4/13)."""
    pol = _effects_policy(ctx)
    ws = _remote_repo(ctx)
    evil = "https://evil.example/x.git"
    for cmd, key, old in (
            ("git remote set-url origin %s" % evil, "remote.origin.url", "https://github.com/u/r.git"),
            ("git config remote.origin.pushurl %s" % evil, "remote.origin.pushurl", "(unset)"),
            ("git remote remove origin && git remote add origin %s" % evil, "remote.origin.url", "github.com"),
            ("git config --add remote.origin.url %s" % evil, "remote.origin.url", "github.com"),
            ("git config --unset remote.origin.url", "remote.origin.url", "github.com"),
            ("git config url.https://evil.example/.insteadOf https://github.com/", "url.https://evil.example/.insteadof",
             "(unset)"),
            ("git config url.https://evil.example/.pushInsteadOf https://github.com/",
             "url.https://evil.example/.pushinsteadof", "(unset)"),
            ("git config http.proxy http://evil.example:8080", "http.proxy", "(unset)"),
            ("git config http.sslVerify false", "http.sslverify", "(unset)"),
            ("git config http.https://github.com/.extraHeader 'X-Evil: https://evil.example'",
             "http.https://github.com/.extraheader", "(unset)"),
            ("git config http.sslCAInfo /tmp/evil.pem && git config http.evil.example.x 1", "http.sslcainfo", "(unset)"),
            ("git config http.cookieFile /tmp/evil-cookies", "http.cookiefile", "(unset)"),
            ("git config lfs.url https://evil.example/lfs", "lfs.url", "(unset)"),
            ("git remote add fork %s && git config branch.main.pushRemote fork" % evil, "branch.main.pushremote",
             "(unset)"),
            ("git config remote.pushDefault %s" % evil, "remote.pushdefault", "(unset)"),
            ("git remote add fork %s && git branch -q --set-upstream-to=origin/main && "
             "git config branch.main.remote fork" % evil, "branch.main.remote", "(unset)"),
            ("printf '[remote \"origin\"]\n\turl = %s\n' > .git/config.new && cat .git/config >> .git/config.new"
             " && mv .git/config.new .git/config" % evil, "remote.origin.url", "github.com")):
        r = _held(ctx, ws, cmd, pol, "git-config-redirect")
        reason = _reason(r)
        check(key in reason and old in reason, "the reason does not name %s and %s: %r" % (key, old, reason))
    # a remote removed, or a config gone, may come back as new with another url
    _held(ctx, ws, "git remote remove origin", pol, "git-config-redirect")
    _held(ctx, ws, "rm .git/config", pol, "git-config-redirect")
    # a repository whose HEAD is a symlink is still one (not a new clone)
    sh("mv .git/HEAD .git/HEAD.real && ln -s refs/heads/main .git/HEAD", cwd=ws)
    _held(ctx, ws, "git remote set-url origin %s" % evil, pol, "git-config-redirect")
    sh("rm .git/HEAD && mv .git/HEAD.real .git/HEAD", cwd=ws)
    # a linked worktree's config.worktree adds to the repository's remotes
    sh("%s config extensions.worktreeConfig true && %s worktree add -q ../wt-%s 2>/dev/null"
       % (GIT, GIT, os.path.basename(ws)), cwd=ws)
    _held(ctx, ws, "git config --worktree remote.origin.pushurl %s" % evil, pol, "git-config-redirect")
    _held(ctx, ws, "d=$(ls .git/worktrees) && printf '[remote \"origin\"]\n\tpushurl = %s\n' "
          "> .git/worktrees/$d/config.worktree" % evil, pol, "git-config-redirect")
    # a remote added in one transaction is no place to send main in the next
    _committed(ctx, ws, "git remote add fork %s" % evil, pol)
    for cmd in ("git config remote.pushDefault fork", "git config branch.main.pushRemote fork",
                "git branch -q --set-upstream-to=origin/main && git config branch.main.remote fork"):
        _held(ctx, ws, cmd, pol, "git-config-redirect")
    # git-lfs takes lfs.url from the tree too
    _held(ctx, ws, "printf '[lfs]\\n\\turl = %s\\n' > .lfsconfig" % evil, pol, "protected-files")
    # a user's config in the workspace (HOME=$WS/...) rewrites every repository's URLs
    _held(ctx, ws, "mkdir -p home && printf '[url \"%s\"]\n\tinsteadOf = https://github.com/\n' > home/.gitconfig"
          % evil, pol, "git-config-redirect")


@test("effects/git-config-remote-work-commits")
def config_remote_work(ctx):
    """What agents do with remotes still commits: a new remote, a clone,
    a rename, an upstream on an existing remote, user.*, removing one."""
    pol = _effects_policy(ctx)
    ws = _remote_repo(ctx)
    for cmd in ("git config user.name someone && git config user.email s@example.com",
                "git branch -q --set-upstream-to=origin/main && git config branch.topic.remote origin",
                "git checkout -q topic && git branch -q --set-upstream-to=origin/topic && git checkout -q main",
                "git remote rename origin up && git branch -q --set-upstream-to=up/main",
                "git config branch.main.pushRemote up",
                "git remote add upstream https://example.com/up.git",
                "%s init -q sub && cd sub && git remote add origin https://example.com/s.git && "
                "git config branch.main.remote origin" % GIT):
        _committed(ctx, ws, cmd, pol)
    src = small_ws(ctx, prefix="upstream")
    sh("%s init -q && %s add -A && %s commit -qm up" % (GIT, GIT, GIT), cwd=src)
    _committed(ctx, ws, "%s clone -q %s clone && cd clone && %s branch -q --set-upstream-to=origin/main"
               % (GIT, src, GIT), pol)


@test("effects/ci-and-autorun-files-held")
def ci_autorun(ctx):
    """Files CI services or local tools run by themselves (rt3/01i/j/m)."""
    pol = _effects_policy(ctx)
    ws = small_ws(ctx)
    for path in (".github/actions/build/action.yml", ".github/dependabot.yml", ".github/CODEOWNERS",
                 ".circleci/config.yml", "azure-pipelines.yml", ".travis.yml", "Jenkinsfile", ".gitlab-ci.yml",
                 ".vscode/tasks.json", "app/.vscode/settings.json", ".devcontainer/devcontainer.json",
                 ".pre-commit-config.yaml", "lefthook.yml", ".husky/pre-commit", ".envrc", "sub/.envrc",
                 "home/.bashrc", "home/.ssh/authorized_keys"):
        r = _held(ctx, ws, "mkdir -p \"$(dirname %s)\" && echo x > %s" % (path, path), pol, "protected-files")
        check(path in _reason(r), "the reason does not name %s: %r" % (path, _reason(r)))
    _committed(ctx, ws, "mkdir -p docs/.github-notes node_modules/p/.github && echo x > docs/.github-notes/a && "
               "echo x > node_modules/p/.github/ci.yml && echo x > .vscode.md && echo x > Jenkins.md", pol)


@test("effects/mass-emptying-held")
def mass_emptying(ctx):
    """Emptying files destroys them like deleting does (rt3/01l)."""
    pol = _effects_policy(ctx)
    ws = small_ws(ctx)
    os.makedirs(os.path.join(ws, "lib"))
    for i in range(250):
        with open(os.path.join(ws, "lib", "m%d.py" % i), "w") as f:
            f.write("value = %d  # a line of code\n" % i)
    r = _held(ctx, ws, "for f in lib/*.py; do : > $f; done", pol, "mass-delete")
    check("250" in _reason(r), "the reason does not count the files: %r" % _reason(r))
    _held(ctx, ws, "for f in lib/*.py; do echo > $f; done", pol, "mass-delete")  # cut to a byte
    _held(ctx, ws, "for f in lib/*.py; do rm $f && mkdir $f; done", pol, "mass-delete")  # replaced
    # rewriting them all (a formatter, a rename) is work, not loss
    _committed(ctx, ws, "for f in lib/*.py; do sed -i 's/  # a line of code/  # code/' $f; done", pol)
    # a share of what git tracks
    rw = _repo(ctx, files=50)
    _held(ctx, rw, "for f in src/f1*.c src/f2*.c; do : > $f; done", pol, "mass-delete-share")


@test("effects/reason-shows-no-control-characters")
def reason_printable(ctx):
    """A reason names what the command made: a name carrying an escape
    sequence is shown with \\xNN, not written to the terminal (rt3/02a)."""
    pol = _effects_policy(ctx)
    ws = small_ws(ctx)
    r = _held(ctx, ws, "printf x > \"$(printf '.env.\\033]52;c;SGk=\\007')\"", pol, "protected-files")
    reason = _reason(r)
    check("\x1b" not in reason and "\x07" not in reason and "\\x1b]52;c;SGk=\\x07" in reason,
          "the reason carries control characters: %r" % reason)
    d = "\"$(printf 'a\\033]0;t\\007')\""
    p = subprocess.run([ctx.txbox, "run", "-w", ws, "--policy", pol, "--", "mkdir %s && printf x > %s/.env" % (d, d)],
                       cwd=ws, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    check(p.returncode == 3 and b"\x1b" not in p.stderr, "the summary carries an escape: %r" % p.stderr[-400:])
    tx = [w for w in p.stderr.decode("utf-8", "replace").split() if w[:2] == "20" and "-" in w]
    if tx:
        ctx.run_txbox(["rollback", "-w", ws, tx[0]], cwd=ws)


@test("effects/stash-entry-lost-held-apply-passes")
def stash(ctx):
    """The stash is the user's uncommitted work, judged like a branch: an
    entry gone whose commit nothing keeps is held, one (rt7 I63: the only
    entry's files removed) or several (rt3/01o), by drop, clear, rm or a
    pop of a stash an earlier command made; `git stash apply` keeps the
    entry, and a stash made and popped in one command loses nothing."""
    pol = _effects_policy(ctx)
    ws = _repo(ctx)
    sh("echo w1 >> known.txt && %s stash -q" % GIT, cwd=ws)
    for line in ("rm -f .git/refs/stash .git/logs/refs/stash", "rm -f .git/refs/stash", "%s stash drop -q" % GIT,
                 "%s stash pop -q" % GIT):
        _held(ctx, ws, line, pol, "git-objects")
    _committed(ctx, ws, "%s stash apply -q && %s checkout -q -- known.txt" % (GIT, GIT), pol)
    _committed(ctx, ws, "echo w2 >> known.txt && %s stash -q && %s stash pop -q && %s stash -q" % ((GIT,) * 3), pol)
    _committed(ctx, ws, "echo w3 >> known.txt && %s stash -q" % GIT, pol)
    _held(ctx, ws, "%s stash clear" % GIT, pol, "git-objects")
    _held(ctx, ws, "%s stash drop -q stash@{1}" % GIT, pol, "git-objects")
    check(sh("%s stash list" % GIT, cwd=ws).stdout.count(b"\n") == 3, "stash entries were lost")


@test("effects/git-config-destroys-held")
def config_destroys(ctx):
    """Settings that make the next plain `git push`/`fetch` delete or
    overwrite work, or that break the repository, are held by value (rt5
    §2.1, §2.4); what clone, init and remote add write still commits."""
    pol = _effects_policy(ctx)
    ws = _remote_repo(ctx)
    for cmd, shown in (
            ("git config --add remote.origin.push :refs/heads/main", "remote.origin.push=:refs/heads/main"),
            ("git config --add remote.origin.push +refs/heads/*:refs/heads/*", "remote.origin.push=+refs"),
            ("git config remote.origin.mirror true", "remote.origin.mirror=true"),
            ("printf '[remote \"origin\"]\\n\\tmirror\\n' >> .git/config", "remote.origin.mirror=true"),
            ("git config --add remote.origin.fetch +refs/*:refs/*", "remote.origin.fetch=+refs/*:refs/*"),
            ("git config --add remote.origin.fetch +refs/heads/*:refs/heads/*", "remote.origin.fetch="),
            ("git config fetch.pruneTags true", "fetch.prunetags=true"),
            ("git config core.bare true", "core.bare=true"),
            ("git config extensions.objectFormat sha256", "extensions.objectformat=sha256"),
            ("git config core.repositoryFormatVersion 1", "core.repositoryformatversion=1"),
            ("git config core.logAllRefUpdates false", "core.logallrefupdates=false"),
            ("git config gc.reflogExpire now", "gc.reflogexpire=now"),
            ("git config core.sparseCheckout true", "core.sparsecheckout=true"),
            ("git config index.sparse yes", "index.sparse=yes")):
        r = _held(ctx, ws, cmd, pol, "git-config-destroys")
        check(shown is None or shown in _reason(r), "the reason does not show %s: %r" % (shown, _reason(r)))
    # a fetch refspec into local branches set earlier: turning pruning on is the change
    sh("%s config --add remote.origin.fetch +refs/heads/*:refs/heads/*" % GIT, cwd=ws)
    _held(ctx, ws, "git config fetch.prune true", pol, "git-config-destroys")
    _held(ctx, ws, "git config remote.origin.prune true", pol, "git-config-destroys")
    sh("%s config --unset remote.origin.fetch 'refs/heads/\\*:refs/heads'" % GIT, cwd=ws)
    # data settings and the usual remote work commit
    _committed(ctx, ws, "git config fetch.prune true && git config core.logAllRefUpdates true && "
               "git config --add remote.origin.push refs/heads/main:refs/heads/main && "
               "git remote add up https://example.com/up.git && git config gc.reflogExpire never", pol)
    src = small_ws(ctx, prefix="upstream")
    sh("%s init -q && %s add -A && %s commit -qm up" % (GIT, GIT, GIT), cwd=src)
    _committed(ctx, ws, "%s clone -q %s c1 && %s clone -q --bare %s c2.git && %s init -q --object-format=sha256 c3"
               % (GIT, src, GIT, src, GIT), pol)


@test("effects/git-history-hidden-held")
def history_hidden(ctx):
    """History hidden without a ref deleted: grafts, `git replace`,
    alternates removed; a sparse checkout that deletes the tree on the
    next checkout (rt5 §2.3, §2.4)."""
    pol = _effects_policy(ctx)
    ws = _repo(ctx)
    for cmd in ("mkdir -p .git/info && git rev-parse HEAD > .git/info/grafts",
                "%s replace HEAD topic" % GIT,
                "mkdir -p .git/info && echo /nothing > .git/info/sparse-checkout"):
        r = _held(ctx, ws, cmd, pol, "git-history-hidden")
    src = small_ws(ctx, prefix="upstream")
    sh("%s init -q && %s add -A && %s commit -qm up" % (GIT, GIT, GIT), cwd=src)
    sh("%s clone -q --shared %s shared" % (GIT, src), cwd=ws)
    _held(ctx, ws, "rm shared/.git/objects/info/alternates", pol, "git-history-hidden")


@test("effects/bare-repository-by-content")
def bare_repo(ctx):
    """A git dir is told by its content (HEAD, objects, refs), not by a
    `.git` in its name: a bare repository in the workspace, or a workspace
    that is one, has its refs, reflogs, hooks and config judged (rt5 §2.2)."""
    pol = _effects_policy(ctx)
    ws = _repo(ctx)
    sh("%s clone -q --bare . store && %s clone -q --bare . other.git" % (GIT, GIT), cwd=ws)
    _denied(ctx, ws, "rm store/refs/heads/topic 2>/dev/null; git --git-dir=store update-ref -d refs/heads/topic",
            pol, "git-history")
    _denied(ctx, ws, "git --git-dir=other.git update-ref -d refs/heads/topic", pol, "git-history")
    _held(ctx, ws, "echo id > store/hooks/pre-receive", pol, "git-hooks")
    _held(ctx, ws, "git --git-dir=store config remote.origin.mirror true", pol, "git-config-destroys")
    _held(ctx, ws, "git --git-dir=store replace main topic", pol, "git-history-hidden")
    # the workspace itself a bare repository
    bare = small_ws(ctx, prefix="bare")
    sh("rm -rf known.txt sub && %s clone -q --bare %s ." % (GIT, ws), cwd=bare)
    _denied(ctx, bare, "git --git-dir=. branch -D topic", pol, "git-history")
    _held(ctx, bare, "echo id > hooks/post-update", pol, "git-hooks")
    # work in it still commits
    _committed(ctx, bare, "git --git-dir=. branch new main && git --git-dir=. config user.name x", pol)


@test("effects/content-cut-counts-by-bytes")
def content_cut(ctx):
    """A file cut down counts as the share of its bytes removed: cutting
    every file to just over a tenth (the old cut-off) is still a mass
    emptying (rt5 §2.6); a refactor that moves code between files is not."""
    pol = _effects_policy(ctx)
    ws = small_ws(ctx)
    os.makedirs(os.path.join(ws, "lib"))
    for i in range(250):
        with open(os.path.join(ws, "lib", "m%d.py" % i), "w") as f:
            f.write("".join("line %d of module %d\n" % (j, i) for j in range(100)))
    # keep 11-12 % of each file (head -n 12 of 100 lines)
    r = _held(ctx, ws, "for f in lib/*.py; do head -n 12 $f > $f.t && cat $f.t > $f && rm $f.t; done", pol,
              "mass-delete")
    check("250" in _reason(r), "the reason does not count the files: %r" % _reason(r))
    # half of each file: 125 files' worth, under 200
    _committed(ctx, ws, "for f in lib/m1*.py lib/m2*.py; do head -n 50 $f > $f.t && cat $f.t > $f && rm $f.t; done",
               pol)
    # a refactor: a quarter of the code of 40 of 50 tracked files moved into a new one
    rw = _repo(ctx, files=50)
    sh("for f in src/*.c; do for i in $(seq 20); do echo \"int x$i;\" >> $f; done; done && "
       "%s commit -qam grow" % GIT, cwd=rw)
    _committed(ctx, rw, "for f in src/f1*.c src/f2*.c src/f3*.c src/f4*.c; do head -n 5 $f > $f.t && "
               "cat $f.t >> src/moved.c && tail -n +6 $f > $f.t && cat $f.t > $f && rm $f.t; done", pol)
    # cut the same files to a line each: most of the tracked content gone
    _held(ctx, rw, "for f in src/f1*.c src/f2*.c src/f3*.c src/f4*.c; do head -n 1 $f > $f.t && cat $f.t > $f; "
          "rm $f.t; done", pol, "mass-delete-share")


@test("effects/self-running-project-files-held")
def self_running(ctx):
    """Project files an editor or tool runs code from when the user opens
    the folder or runs the tool (rt5 §2.5) are held; a virtualenv, whose
    own .pth files import its modules, still commits."""
    pol = _effects_policy(ctx)
    ws = small_ws(ctx)
    for path in ("app.code-workspace", ".cargo/config.toml", "crates/a/.cargo/config", ".yarnrc.yml", ".npmrc",
                 "web/.npmrc", ".zed/settings.json", ".zed/tasks.json", "mise.toml", ".mise.toml",
                 "mise.local.toml", ".config/mise/config.toml", "repo/.hg/hgrc",
                 "home/.local/lib/python3.11/site-packages/evil.pth",
                 "home/.local/lib/python3.11/site-packages/sitecustomize.py"):
        r = _held(ctx, ws, "mkdir -p \"$(dirname %s)\" && echo 'import os' > %s" % (path, path), pol,
                  "protected-files")
        check(path in _reason(r), "the reason does not name %s: %r" % (path, _reason(r)))
    _committed(ctx, ws, "python3 -m venv .venv && echo x > npmrc.md && echo x > cargo.toml", pol)
    check(os.path.exists(os.path.join(ws, ".venv", "bin", "python3")), "the venv was not committed")


@test("effects/merged-ref-delete-commits")
def merged_ref_delete(ctx):
    """A ref deleted whose commits a branch, tag or HEAD still reaches
    loses no history: `git branch -d` of a merged branch and `git tag -d`
    of a lightweight tag commit, loose or packed; an unmerged branch, an
    annotated tag (its tag object) and a ref kept only by a remote-tracking
    ref are still denied; `git gc` is held with a true reason, not denied."""
    pol = _effects_policy(ctx)
    for packed in (False, True):
        ws = _repo(ctx)
        sh("%s commit -q --allow-empty -m c && %s merge -q --no-ff -m merge topic && %s branch ff topic && "
           "%s checkout -qb side && %s commit -q --allow-empty -m s && %s checkout -q main && "
           "%s tag light HEAD~1 && %s tag -a -m ann annotated HEAD && "
           "%s update-ref refs/remotes/origin/side side" % ((GIT,) * 9), cwd=ws)
        if packed:
            sh("%s gc -q" % GIT, cwd=ws)
        _committed(ctx, ws, "%s branch -d topic" % GIT, pol)
        _committed(ctx, ws, "%s branch -D ff && %s tag -d light" % (GIT, GIT), pol)
        _denied(ctx, ws, "%s branch -D side" % GIT, pol, "git-history")
        _denied(ctx, ws, "%s tag -d annotated" % GIT, pol, "git-history")
    # a repack deletes objects it lists elsewhere: held, saying so
    ws = _repo(ctx)
    sh("%s gc -q && %s commit -q --allow-empty -m more" % (GIT, GIT), cwd=ws)
    r = _held(ctx, ws, "%s gc -q" % GIT, pol, "git-objects")
    check("repacked" in _reason(r), "the reason does not say repacked: %r" % _reason(r))
    _denied(ctx, ws, "%s branch -D topic && %s reflog expire --expire-unreachable=now --all && %s gc -q --prune=now"
            % (GIT, GIT, GIT), pol, "git-history")


@test("effects/agent-and-tool-start-files-held")
def tool_start_files(ctx):
    """Files an AI agent, editor, interpreter, debugger, toolchain or build
    tool started in the folder runs code from by itself (rt7 I38-I42) are
    held; ordinary builds and edits beside them, and the instruction files
    agents read as text, still commit."""
    pol = _effects_policy(ctx)
    ws = small_ws(ctx)
    for path in (".claude/settings.json", "svc/.claude/settings.local.json", ".mcp.json", ".cursor/mcp.json",
                 ".cursor/hooks.json", ".vscode/mcp.json", ".gemini/settings.json", ".codex/config.toml",
                 "opencode.json", ".opencode/plugin/x.js", ".nvim.lua", ".exrc", "lib/.vimrc", ".dir-locals.el",
                 ".Rprofile", "r/.Renviron", ".irbrc", ".pdbrc", ".pythonrc.py", ".gdbinit", ".lldbinit", ".ghci",
                 "rust-toolchain.toml", "rust-toolchain", ".yarnrc", ".yarn/releases/yarn-4.1.0.cjs",
                 ".pnpmfile.cjs", "bunfig.toml", ".mvn/jvm.config", ".mvn/extensions.xml",
                 ".mvn/wrapper/maven-wrapper.properties", "Directory.Build.props", "src/Directory.Build.targets",
                 ".bazelrc", "tools/bazel", "gradle/wrapper/gradle-wrapper.properties"):
        r = _held(ctx, ws, "mkdir -p \"$(dirname %s)\" && echo 'x' > %s" % (path, path), pol, "protected-files")
        check(path in _reason(r), "the reason does not name %s: %r" % (path, _reason(r)))
    # builds write outputs, not these sources; agents' instruction files are text
    _committed(ctx, ws, "mkdir -p .claude/commands build/classes target/debug .gradle obj bazel-out && "
               "mkdir -p home/.codex/sessions home/.claude/projects/p && echo x > home/.codex/sessions/s.jsonl && "
               "echo x > home/.claude/projects/p/s.jsonl && "
               "echo x > AGENTS.md && echo x > CLAUDE.md && echo x > .claude/commands/review.md && "
               "echo x > build/classes/A.class && echo x > target/debug/app && echo x > .gradle/cache && "
               "echo x > obj/project.assets.json && echo x > bazel-out/x && echo x > build.gradle && "
               "echo x > pom.xml && echo x > app.csproj && echo x > Cargo.toml && echo x > rprofile.md", pol)


def _tagged_repo(ctx):
    """_repo plus tag v1 on a commit only the tag reaches (its branch
    deleted, the reflogs expired: the tag is the only way back)."""
    ws = _repo(ctx)
    sh("%s checkout -qb rel && %s commit -q --allow-empty -m release && %s tag v1 && %s checkout -q main && "
       "%s branch -qD rel && %s reflog expire --expire=now --all" % ((GIT,) * 6), cwd=ws)
    return ws


@test("effects/tag-moved-off-its-commit-denied")
def tag_moved(ctx):
    """Tags have no reflog: moving one (`git tag -f`, `update-ref`, an
    edited packed-refs line, a loose ref added over a packed one) loses
    the commit only it reached, as a deleted tag does (rt7 I37). A tag
    moved along history, and a branch moved by commit --amend, reset or
    rebase (its reflog keeps the old value), still commit."""
    pol = _effects_policy(ctx)
    ws = _tagged_repo(ctx)
    for line in ("%s tag -f v1 main" % GIT, "%s update-ref refs/tags/v1 main" % GIT,
                 "%s tag -a -f -m moved v1 main" % GIT, "git rev-parse main > .git/refs/tags/v1"):
        r = _denied(ctx, ws, line, pol, "git-history")
        check("refs/tags/v1" in _reason(r), "the reason does not name the tag: %r" % _reason(r))
    sh("%s pack-refs --all" % GIT, cwd=ws)
    _denied(ctx, ws, "%s tag -f v1 main" % GIT, pol, "git-history")  # a loose ref over the packed line
    _denied(ctx, ws, "sed -i \"s#^[0-9a-f]* refs/tags/v1\\$#$(git rev-parse main) refs/tags/v1#\" .git/packed-refs",
            pol, "git-history")
    # a reflog line the command wrote keeps nothing when dated long ago
    # (git expires it at the next gc)
    _denied(ctx, ws, "o=$(git rev-parse v1) && n=$(git rev-parse main) && git update-ref refs/tags/v1 $n && "
            "mkdir -p .git/logs/refs/tags && printf '%s %s t <t@example.com> 0 +0000\\tmoved\\n' $o $n "
            "> .git/logs/refs/tags/v1", pol, "git-history")
    check(b"release" in sh("%s log -1 --format=%%s v1" % GIT, cwd=ws).stdout, "the tag moved")
    # what keeps the old value: history (a tag moved forward) or a reflog
    _committed(ctx, ws, "%s tag base main && %s commit -q --allow-empty -m next && %s tag -f base main"
               % (GIT, GIT, GIT), pol)
    _committed(ctx, ws, "%s commit -q --amend --allow-empty -m amended && %s reset -q --hard HEAD~1" % (GIT, GIT),
               pol)
    _committed(ctx, ws, "%s checkout -q topic && %s rebase -q main && %s checkout -q main" % (GIT, GIT, GIT), pol)
    _committed(ctx, ws, "%s pack-refs --all && %s commit -q --allow-empty -m after-pack" % (GIT, GIT), pol)
    # a tag with a reflog (git writes the move, dated now) keeps its old value there
    _committed(ctx, ws, "%s update-ref --create-reflog refs/tags/v1 main" % GIT, pol)


def _edited_repo(ctx):
    """_repo with uncommitted edits to src/f1.c and src/f2.c (not staged)."""
    ws = _repo(ctx)
    for i in (1, 2):
        with open(os.path.join(ws, "src", "f%d.c" % i), "w") as f:
            f.write("int f%d = %d; /* uncommitted edit */\n" % (i, i))
    return ws


@test("effects/uncommitted-work-discarded-held")
def work_discarded(ctx):
    """rt9 N10-N12: a tracked file with edits git never recorded (its
    content is not the index's blob) deleted, or reverted to a version git
    has, loses them: held whatever the spelling (git rm -f, checkout --,
    restore --source=HEAD, find -newer -delete, rm, add then checkout
    HEAD). Editing it again, formatting it, moving it, committing or
    stashing the edits, and discarding a clean file still commit."""
    pol = _effects_policy(ctx)
    ws = _edited_repo(ctx)
    for line, n in (("%s rm -qf src/f1.c" % GIT, 1), ("%s checkout -- src" % GIT, 2),
                    ("%s checkout -q HEAD -- src" % GIT, 2),
                    ("%s restore --source=HEAD --staged --worktree src" % GIT, 2),
                    ("find src -name '*.c' -newer .git/index -delete", 2), ("rm src/f2.c", 1),
                    ("%s add src/f1.c && %s checkout HEAD -- src/f1.c" % (GIT, GIT), 1),
                    ("mkdir -p old && mv src/f1.c old/ && rm -r old", 1), ("rm -r src", 2)):
        r = _held(ctx, ws, line, pol, "work-discarded")
        check("(%d file%s)" % (n, "" if n == 1 else "s") in _reason(r) and "src/f" in _reason(r),
              "%s: the reason does not name %d file(s): %r" % (line, n, _reason(r)))
    # the edits change again, move, or are recorded; a clean file is discarded
    _committed(ctx, ws, "%s checkout -- src/f0.c && %s rm -q src/f0.c" % (GIT, GIT), pol)
    _committed(ctx, ws, "echo '/* more */' >> src/f1.c && sed -i 's/int/long/' src/*.c", pol)
    _committed(ctx, ws, "%s mv src/f1.c src/g1.c && mv src/f2.c src/g2.c" % GIT, pol)
    _committed(ctx, ws, "%s add -A && %s stash -q && %s checkout -q topic" % ((GIT,) * 3), pol)
    _committed(ctx, ws, "%s checkout -q main && %s stash apply -q && %s commit -qam work" % ((GIT,) * 3), pol)
    check(b"long f1" in sh("%s show HEAD:src/g1.c" % GIT, cwd=ws).stdout, "the edits were not committed")


def _node_tool(ws, version):
    """An npm package tarball pkgs/tool-VERSION.tgz (a `tool` command)."""
    import io
    import tarfile
    os.makedirs(os.path.join(ws, "pkgs"), exist_ok=True)
    with tarfile.open(os.path.join(ws, "pkgs", "tool-%s.tgz" % version), "w:gz") as t:
        for name, text in (("package/package.json", '{"name":"tool","version":"%s","bin":{"tool":"cli.js"}}\n'
                            % version), ("package/cli.js", "#!/usr/bin/env node\nconsole.log('%s')\n" % version)):
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(text), 0o755
            t.addfile(info, io.BytesIO(text.encode()))


def _wheel(ws):
    """A wheel pkgs/pyt-1.0-py3-none-any.whl with a console script."""
    import base64
    import hashlib
    import zipfile
    files = {"pyt/__init__.py": "def main():\n    print(1)\n",
             "pyt-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: pyt\nVersion: 1.0\n",
             "pyt-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: t\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
             "pyt-1.0.dist-info/entry_points.txt": "[console_scripts]\npyt = pyt:main\n"}
    record = []
    with zipfile.ZipFile(os.path.join(ws, "pkgs", "pyt-1.0-py3-none-any.whl"), "w") as z:
        for name, text in files.items():
            z.writestr(name, text)
            digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
            record.append("%s,sha256=%s,%d" % (name, digest, len(text)))
        z.writestr("pyt-1.0.dist-info/RECORD", "\n".join(record + ["pyt-1.0.dist-info/RECORD,,"]) + "\n")


@test("effects/dependency-code-held-installs-pass", needs=("npm", "python3"))
def dependency_code(ctx):
    """rt9 N31: code planted in an installed dependency tree git ignores,
    where the next command runs it (node_modules/.bin and the file its
    link names, a virtualenv's bin/, site-packages .pth and sitecustomize),
    is held when no installer record of that tree changed; `npm install`
    (node_modules/.package-lock.json) and `pip install` (a dist-info) of
    the same files, and recreating the venv, commit."""
    pol = _effects_policy(ctx)
    ws = _repo(ctx)
    with open(os.path.join(ws, ".gitignore"), "w") as f:
        f.write("node_modules/\n.venv/\npkgs/\n")
    _node_tool(ws, "1.0.0")
    _node_tool(ws, "1.0.1")
    _wheel(ws)
    # the interpreter running the tests, never a version manager's shim
    # (pyenv's rehashes after pip install and fails on its read-only dir)
    py = sys.executable
    sh("npm install --offline --no-audit --no-fund --no-save --cache pkgs/.npm -s ./pkgs/tool-1.0.0.tgz && "
       "%s -m venv --without-pip .venv && mkdir -p node_modules/.bin && "
       "printf '#!/bin/sh\\n' > node_modules/.bin/jest && chmod +x node_modules/.bin/jest && "
       "for d in .venv/lib/python3*/site-packages; do echo /nowhere > $d/x.pth; done && "
       "mkdir -p svc/venv/bin && echo 'VIRTUAL_ENV=x' > svc/venv/bin/activate" % py, cwd=ws)
    check(os.path.islink(os.path.join(ws, "node_modules", ".bin", "tool")), "npm made no .bin link")
    site = sh("echo .venv/lib/python3*/site-packages", cwd=ws).stdout.decode().strip()
    for line, path in (("printf 'touch PWNED\\n' >> node_modules/.bin/jest", "node_modules/.bin/jest"),
                       ("printf '#!/bin/sh\\ntouch PWNED\\n' > node_modules/.bin/tool", "node_modules/tool/cli.js"),
                       ("printf 'touch PWNED\\n' >> .venv/bin/activate", ".venv/bin/activate"),
                       ("echo 'import os' > %s/sitecustomize.py" % site, "sitecustomize.py"),
                       ("echo 'import os' >> %s/x.pth" % site, "x.pth"),
                       # a virtualenv known by its activate script or name alone (rt9 r14, r32)
                       ("echo 'touch PWNED' >> svc/venv/bin/activate", "svc/venv/bin/activate"),
                       ("mkdir -p svc/venv/lib/python3.11/site-packages && "
                        "echo 'import os' > svc/venv/lib/python3.11/site-packages/sitecustomize.py",
                        "svc/venv/lib/python3.11/site-packages/sitecustomize.py")):
        r = _held(ctx, ws, line, pol, "autorun-code")
        check(path in _reason(r), "%s: the reason does not name %s: %r" % (line, path, _reason(r)))
    _committed(ctx, ws, "npm install --offline --no-audit --no-fund --no-save --cache pkgs/.npm -s ./pkgs/tool-1.0.1.tgz",
               pol)
    check(b"1.0.1" in sh("cat node_modules/tool/cli.js", cwd=ws).stdout, "npm did not upgrade the package")
    _committed(ctx, ws, "%s -m pip --python .venv/bin/python install -q --no-index pkgs/pyt-1.0-py3-none-any.whl"
               % py, pol)
    check(os.path.exists(os.path.join(ws, ".venv", "bin", "pyt")), "pip installed no script")
    _committed(ctx, ws, "%s -m venv --clear --without-pip .venv" % py, pol)


@test("effects/npm-lifecycle-script-held")
def lifecycle_script(ctx):
    """rt9 N33: a package.json scripts hook npm runs by itself (prepare,
    postinstall, pretest of `npm test`, ...) added or changed is held,
    whatever its JSON spelling (escapes, a duplicate key); other scripts,
    names that only start with pre/post, and other fields commit."""
    pol = _effects_policy(ctx)
    ws = _repo(ctx)
    base = '{\n  "name": "x",\n  "version": "1.0.0",\n  "scripts": {\n    "test": "node t.js"%s\n  }%s\n}\n'
    with open(os.path.join(ws, "package.json"), "w") as f:
        f.write(base % (', "postinstall": "node setup.js"', ""))
    sh("%s add package.json && %s commit -qm pkg" % (GIT, GIT), cwd=ws)

    def write(scripts, tail=""):
        return "cat > package.json <<'EOF'\n%sEOF" % (base % (scripts, tail))
    for scripts, tail, name in ((', "prepare": "touch PWNED"', "", "prepare"),
                                (', "pretest": "touch PWNED"', "", "pretest"),
                                (', "postinstall": "node setup.js; touch PWNED"', "", "postinstall"),
                                (', "post\\u0069nstall": "touch PWNED"', "", "postinstall"),
                                (', "lint": "eslint .", "prelint": "touch PWNED"', "", "prelint"),
                                ("", ',\n  "scripts": {"install": "touch PWNED"}', "install")):
        r = _held(ctx, ws, write(scripts, tail), pol, "autorun-code")
        check("scripts.%s" % name in _reason(r), "the reason does not name %s: %r" % (name, _reason(r)))
    _committed(ctx, ws, write(', "postinstall": "node setup.js", "build": "tsc", "prettier": "prettier -w .", '
                              '"posts": "node posts.js"', ',\n  "dependencies": {"left-pad": "1.3.0"}'), pol)
    _committed(ctx, ws, "sed -i 's/1.0.0/1.1.0/; s/\"postinstall\": \"node setup.js\", //' package.json", pol)


@test("effects/test-autorun-held-test-edits-pass")
def test_autorun(ctx):
    """rt9 N32: conftest.py is test code and commits, fixtures starting
    processes too; held only when code pytest runs at start (import time,
    a start hook such as pytest_configure) gained a call that runs a
    program or dynamic code, or a pytest config's addopts gained `-p`."""
    pol = _effects_policy(ctx)
    ws = _repo(ctx)
    for line, path in (("printf 'import os\\nos.system(\"touch PWNED\")\\n' > conftest.py", "conftest.py"),
                       ("mkdir -p tests/unit && printf 'import subprocess\\n\\ndef pytest_configure(config):\\n"
                        "    subprocess.run([\"touch\", \"PWNED\"])\\n' > tests/unit/conftest.py", "tests/unit/conftest.py"),
                       ("printf 'if True:\\n    exec(open(\"p\").read())\\n' > conftest.py", "conftest.py"),
                       ("printf '[pytest]\\naddopts = -q -p evilplug\\n' > pytest.ini", "pytest.ini"),
                       ("printf '[tool.pytest.ini_options]\\naddopts = \"-p evilplug\"\\n' > pyproject.toml",
                        "pyproject.toml")):
        r = _held(ctx, ws, line, pol, "autorun-code")
        check(path in _reason(r), "%s: the reason does not name %s: %r" % (line, path, _reason(r)))
    _committed(ctx, ws, "mkdir -p tests && printf 'import subprocess\\nimport pytest\\n\\n\\n@pytest.fixture\\n"
               "def server():\\n    p = subprocess.Popen([\"sleep\", \"1\"])\\n    yield p\\n    p.kill()\\n' "
               "> tests/conftest.py && printf 'def test_x(server):\\n    assert server\\n' > tests/test_x.py && "
               "printf '[pytest]\\naddopts = -q --tb=short\\n' > pytest.ini", pol)
    _committed(ctx, ws, "printf '\\n\\n@pytest.fixture(autouse=True)\\ndef env(monkeypatch):\\n"
               "    monkeypatch.setenv(\"X\", \"1\")\\n' >> tests/conftest.py", pol)


@test("effects/more-ci-and-agent-files-held")
def more_ci(ctx):
    """rt9 N34/N35: what cloud build, deploy and workspace services run
    from the tree, and aider's config (test-cmd, lint-cmd), are held."""
    pol = _effects_policy(ctx)
    ws = small_ws(ctx)
    for path in (".gitpod.yml", "buildspec.yml", "cloudbuild.yaml", "netlify.toml", "vercel.json", "appspec.yml",
                 ".drone.yaml", ".cirrus.yml", ".semaphore/semaphore.yml", "codemagic.yaml", "bitrise.yml",
                 ".idx/dev.nix", ".replit", ".aider.conf.yml", "svc/.aider.conf.yml"):
        r = _held(ctx, ws, "mkdir -p \"$(dirname %s)\" && echo 'x: 1' > %s" % (path, path), pol, "protected-files")
        check(path in _reason(r), "the reason does not name %s: %r" % (path, _reason(r)))
    _committed(ctx, ws, "echo x > netlify.md && echo x > aider.md && mkdir -p docs && echo x > docs/vercel.md", pol)


@test("effects/exclude-hiding-tracked-paths-held")
def exclude_hides(ctx):
    """rt9 N36: .git/info/exclude is never committed nor reviewed; a
    pattern added that covers a tracked path makes git status and `git add
    -A` skip new files there: held. Output patterns pass."""
    pol = _effects_policy(ctx)
    ws = _repo(ctx)
    for pat in ("src/", "*.c", "/src", "src/*.c", "**/f1.c", "\\\\src"):
        r = _held(ctx, ws, "printf '%%s\\n' '%s' >> .git/info/exclude" % pat, pol, "git-tracked-hidden")
        check("covers the tracked src/f" in _reason(r), "%s: the reason names no tracked path: %r" % (pat, _reason(r)))
    _committed(ctx, ws, "printf 'build/\\n*.log\\n/out\\n!src/\\n# src/\\ndist/*.c\\n' >> .git/info/exclude", pol)
    _committed(ctx, ws, "mkdir -p build && echo x > build/a.o && %s status --short" % GIT, pol)
