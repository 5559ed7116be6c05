"""The state dir is trusted only when it is the caller's own, and a
workspace is never reached through a symlink inside another workspace
(docs/ARCHITECTURE.md, "Trust"). Whatever is planted in a state dir —
by another user who owns the workspace or the state dir, or by anyone
writing where txbox reads — is refused with an error naming the path,
never applied, followed, written through or waited on."""

import os
import pwd
import shutil
import stat
import subprocess

from harness import Skip, check, rmtree_force, small_ws, test, which

TEST_USER = "txbox-test"
TXID = "20260101-000000-deadbeef"
META = 2  # plan_kind PLAN_META in the journal


def _user():
    try:
        return pwd.getpwnam(TEST_USER)
    except KeyError:
        raise Skip("no user %s" % TEST_USER)


def _chown_tree(path, uid, gid):
    os.lchown(path, uid, gid)
    for root, dirs, files in os.walk(path):
        for n in dirs + files:
            os.lchown(os.path.join(root, n), uid, gid)


def _journal_meta(rel, ino, mode, uid, gid):
    """A journal whose reversal gives rel (inode ino) the mode and owner."""
    return "txbox-journal 1\n%d 1 %d %d %o %d %d 0 0 0 0 %s\n" % (
        META, ino, ino, mode, uid, gid, rel.encode().hex())


def _plant_tx(txs, txid=TXID, state="applying 1\n", journal=None):
    """A transaction directory as txbox makes it, with a chosen state and journal."""
    d = os.path.join(txs, txid)
    os.makedirs(os.path.join(d, "displaced"))
    os.makedirs(os.path.join(d, "layers", "0", "upper"))
    os.makedirs(os.path.join(d, "layers", "0", "work"))
    if state is not None:
        with open(os.path.join(d, "state"), "w") as f:
            f.write(state)
    if journal is not None:
        with open(os.path.join(d, "journal"), "w") as f:
            f.write(journal)
    return d


def _prog(ws, name="prog"):
    p = os.path.join(ws, name)
    with open(p, "w") as f:
        f.write("#!/bin/sh\nid\n")
    os.chmod(p, 0o755)
    return p


def _setuid_planted_ws(ctx):
    """A workspace with a state dir (made by a first run) and a planted
    'applying' transaction whose journal would make ws/prog setuid."""
    ws = small_ws(ctx)
    ctx.run_json(ws, "true").expect(outcome="committed", exit_status=0)
    prog = _prog(ws)
    st = os.stat(prog)
    return ws, prog, _journal_meta("prog", st.st_ino, 0o104755, os.geteuid(), os.getegid())


def _run(ctx, ws, args=("true",), cwd=None, extra=(), env=None, timeout=60):
    return ctx.run_txbox(["run", "-w", ws] + list(extra) + ["--"] + list(args), cwd=cwd or ws,
                         timeout=timeout, env=env)


def _refused(r, *words):
    err = r.err.decode("utf-8", "replace")
    check(r.rc == 125, "expected a refusal (exit 125), got exit %d: %s" % (r.rc, err[-600:]))
    for w in words:
        check(w in err, "the refusal does not name %r: %s" % (w, err[-600:]))


def _no_setuid(path, mode=0o755):
    st = os.stat(path)
    check(stat.S_IMODE(st.st_mode) == mode,
          "%s has mode %04o (expected %04o): a planted journal was applied" % (path, stat.S_IMODE(st.st_mode), mode))


# ---------------------------------------------------------------------------
# another user's workspace (the headline: root running where a user planted)

def _foreign_ws(ctx):
    u = _user()
    base = ctx.mkdtemp("foreign")
    os.chmod(base, 0o755)
    ws = small_ws(ctx, parent=base)
    prog = _prog(ws)
    _chown_tree(ws, u.pw_uid, u.pw_gid)
    return u, base, ws, prog


@test("state/foreign-workspace-planted-journal-never-applied", root_only=True)
def foreign_planted(ctx):
    """A user who owns the workspace plants .txbox with an 'applying'
    journal that would make their binary setuid root; root then runs txbox
    there in every way. Nothing may apply it."""
    u, base, ws, prog = _foreign_ws(ctx)
    txs = os.path.join(ws, ".txbox", "tx")
    os.makedirs(txs)
    _plant_tx(txs, journal=_journal_meta("prog", os.stat(prog).st_ino, 0o104755, 0, 0))
    _chown_tree(os.path.join(ws, ".txbox"), u.pw_uid, u.pw_gid)
    os.chmod(os.path.join(ws, ".txbox"), 0o700)
    inside = ("state dir inside " + ws, TEST_USER, "--state-dir")
    runs = [
        (["run", "-w", ws, "--", "true"], ("owned by " + TEST_USER, "--allow-foreign-workspace")),
        (["run", "-w", ws, "--allow-foreign-workspace", "--", "true"], inside),
        (["recover", "-w", ws], inside),
        (["commit", TXID, "-w", ws], inside),
        (["rollback", TXID, "-w", ws], inside),
        # the planted state dir named explicitly: it is the owner's
        (["run", "-w", ws, "--allow-foreign-workspace", "--state-dir", os.path.join(ws, ".txbox"), "--", "true"],
         (ws + "/.txbox", "owned by " + TEST_USER)),
        (["recover", "-w", ws, "--state-dir", os.path.join(ws, ".txbox")], (ws + "/.txbox", "owned by " + TEST_USER)),
    ]
    for args, words in runs:
        r = ctx.run_txbox(args, cwd=base, timeout=60)
        _no_setuid(prog)
        check(os.stat(prog).st_uid == u.pw_uid, "prog changed owner after %r" % args)
        _refused(r, *words)
    check(os.path.exists(os.path.join(txs, TXID, "journal")), "the planted transaction was touched")


@test("state/foreign-workspace-needs-explicit-allow", root_only=True)
def foreign_allow(ctx):
    u, base, ws, prog = _foreign_ws(ctx)
    cmd = ["sh", "-c", "echo x > made"]
    r = _run(ctx, ws, cmd, cwd=base)
    _refused(r, "owned by " + TEST_USER, "--allow-foreign-workspace")
    check(not os.path.lexists(os.path.join(ws, ".txbox")), "a refused run made a state dir")
    check(not os.path.lexists(os.path.join(ws, "made")), "a refused run ran the command")
    # allowed, but never with a state dir inside the workspace, which its
    # owner could rename into the view of root's commands and back
    r = _run(ctx, ws, cmd, cwd=base, extra=["--allow-foreign-workspace"])
    _refused(r, "state dir inside " + ws, "--state-dir")
    os.mkdir(os.path.join(ws, "sd"))
    os.chown(os.path.join(ws, "sd"), 0, 0)
    os.chmod(os.path.join(ws, "sd"), 0o700)
    r = _run(ctx, ws, cmd, cwd=base, extra=["--allow-foreign-workspace", "--state-dir", os.path.join(ws, "sd")])
    _refused(r, "state dir inside " + ws)
    check(not os.path.lexists(os.path.join(ws, ".txbox")) and not os.path.lexists(os.path.join(ws, "made")),
          "a refused run left a state dir or ran the command")
    # a state dir of root's outside the workspace, on its filesystem
    sd = os.path.join(base, "root-state")
    r = _run(ctx, ws, cmd, cwd=base, extra=["--allow-foreign-workspace", "--state-dir", sd])
    check(r.rc == 0 and os.path.exists(os.path.join(ws, "made")), "an allowed run failed: %s" % r.err[-400:])
    st = os.lstat(sd)
    check(st.st_uid == 0 and stat.S_IMODE(st.st_mode) == 0o700,
          "the state dir made is %d %04o" % (st.st_uid, stat.S_IMODE(st.st_mode)))
    # one the workspace's owner made there is theirs: refused
    shutil.rmtree(sd)
    os.mkdir(sd, 0o700)
    os.chown(sd, u.pw_uid, u.pw_gid)
    r = _run(ctx, ws, cwd=base, extra=["--allow-foreign-workspace", "--state-dir", sd])
    _refused(r, sd, "owned by " + TEST_USER)


@test("state/state-dir-owned-by-another-user", root_only=True)
def state_not_own(ctx):
    u = _user()
    ws, prog, journal = _setuid_planted_ws(ctx)
    sd = os.path.join(ws, ".txbox")
    _plant_tx(os.path.join(sd, "tx"), journal=journal)
    for p in (sd, os.path.join(sd, "tx"), os.path.join(sd, "tx", TXID), os.path.join(sd, "tx", TXID, "journal")):
        os.chown(p, u.pw_uid, u.pw_gid)
        r = _run(ctx, ws)
        _no_setuid(prog)
        _refused(r, p.rsplit("/", 1)[-1], "owned by " + TEST_USER)
        os.chown(p, 0, 0)


# ---------------------------------------------------------------------------
# the caller's own state dir, tampered with

@test("state/state-dir-writable-by-others")
def state_writable(ctx):
    ws, prog, journal = _setuid_planted_ws(ctx)
    sd = os.path.join(ws, ".txbox")
    _plant_tx(os.path.join(sd, "tx"), journal=journal)
    for rel, mode in (("", 0o770), ("", 0o707), ("tx", 0o777), ("tx/" + TXID, 0o730),
                      ("tx/" + TXID + "/journal", 0o622), ("tx/" + TXID + "/displaced", 0o777)):
        p = os.path.join(sd, rel) if rel else sd
        old = stat.S_IMODE(os.stat(p).st_mode)
        os.chmod(p, mode)
        r = _run(ctx, ws)
        _no_setuid(prog)
        _refused(r, "writable by its group or by others")
        os.chmod(p, old)
    if which("setfacl"):
        other = "nobody" if os.geteuid() != 0 else TEST_USER
        subprocess.run(["setfacl", "-m", "u:%s:rwx" % other, sd], check=True)
        r = _run(ctx, ws)
        _no_setuid(prog)
        _refused(r, "writable by its group or by others")
    else:
        ctx.note("setfacl not installed: the ACL case was not run")


@test("state/symlinks-are-never-followed")
def state_symlinks(ctx):
    """.txbox, tx/<id>, the lock and the spare/trash/new entries as symlinks
    to a planted state elsewhere: refused, nothing there is read or removed."""
    ws, prog, journal = _setuid_planted_ws(ctx)
    sd = os.path.join(ws, ".txbox")
    elsewhere = ctx.mkdtemp("elsewhere")
    fake = os.path.join(elsewhere, "state")
    os.makedirs(os.path.join(fake, "tx"))
    _plant_tx(os.path.join(fake, "tx"), journal=journal)
    victim = os.path.join(elsewhere, "victim")
    with open(victim, "w") as f:
        f.write("keep\n")
    # tx/<id> -> a planted transaction
    link = os.path.join(sd, "tx", TXID)
    os.symlink(os.path.join(fake, "tx", TXID), link)
    _refused(_run(ctx, ws), "tx/" + TXID, "symlink")
    _no_setuid(prog)
    os.unlink(link)
    for name in (".spare-" + TXID, ".trash-" + TXID, ".new-" + TXID):
        p = os.path.join(sd, "tx", name)
        os.symlink(elsewhere, p)
        _refused(_run(ctx, ws), name, "symlink")
        os.unlink(p)
        check(os.path.exists(victim), "%s: a file behind the symlink was removed" % name)
    # the lock -> a file elsewhere
    os.unlink(os.path.join(sd, "lock"))
    os.symlink(victim, os.path.join(sd, "lock"))
    _refused(_run(ctx, ws), "lock", "symlink")
    os.unlink(os.path.join(sd, "lock"))
    # .txbox itself -> the planted state
    rmtree_force(sd)
    os.symlink(fake, sd)
    _refused(_run(ctx, ws), ".txbox", "symlink")
    _no_setuid(prog)
    with open(victim) as f:
        check(f.read() == "keep\n", "the file behind the lock symlink changed")
    check(os.path.exists(os.path.join(fake, "tx", TXID, "journal")), "the planted state was touched")


@test("state/fifos-never-block")
def state_fifos(ctx):
    ws = small_ws(ctx)
    ctx.run_json(ws, "true").expect(outcome="committed", exit_status=0)
    sd = os.path.join(ws, ".txbox")
    for rel, state in (("state", None), ("journal", "running 1\n"), ("layers/0/root", "running 1\n")):
        d = _plant_tx(os.path.join(sd, "tx"), state=state)
        os.mkfifo(os.path.join(d, rel))
        r = _run(ctx, ws, timeout=30)
        _refused(r, TXID + "/" + rel, "not a regular file")
        shutil.rmtree(d)
    os.unlink(os.path.join(sd, "lock"))
    os.mkfifo(os.path.join(sd, "lock"))
    _refused(_run(ctx, ws, timeout=30), "lock", "not a regular file")


@test("state/huge-and-malformed-state-files")
def state_fields(ctx):
    ws, prog, journal = _setuid_planted_ws(ctx)
    txs = os.path.join(ws, ".txbox", "tx")
    d = _plant_tx(txs, state=None, journal=journal)
    with open(os.path.join(d, "state"), "wb") as f:
        f.truncate(1 << 30)  # sparse: 1 GiB of NULs
    _refused(_run(ctx, ws, timeout=30), TXID + "/state")
    for bad in ("bogus 1\n", "held\n", "held 12 extra\n", "applying x\n", "running 1", "held -1\n",
                "committed 99999999999\n", "Held 1\n"):
        with open(os.path.join(d, "state"), "w") as f:
            f.write(bad)
        r = _run(ctx, ws)
        _no_setuid(prog)
        _refused(r, TXID + "/state", "<running|held|applying|committed> <pid>")
    # a well-formed held transaction stays, waiting for commit or rollback
    os.unlink(os.path.join(d, "journal"))
    with open(os.path.join(d, "state"), "w") as f:
        f.write("held 12\n")
    r = _run(ctx, ws)
    check(r.rc == 0, "a run next to a held transaction failed: %s" % r.err[-400:])
    check(os.path.isdir(d), "the held transaction was removed")


@test("state/hard-links-never-written-through")
def state_hardlinks(ctx):
    """Hard links in the state dir to a file elsewhere (as root: a file of
    root's, like /etc/shadow would be): refused, the file never changes."""
    ws = small_ws(ctx)
    ctx.run_json(ws, "true").expect(outcome="committed", exit_status=0)
    sd = os.path.join(ws, ".txbox")
    outside = os.path.join(ctx.mkdtemp("outside"), "precious")
    with open(outside, "w") as f:
        f.write("precious\n")
    os.chmod(outside, 0o600)

    def same():
        st = os.stat(outside)
        with open(outside) as f:
            check(f.read() == "precious\n", "the hard-linked file was written")
        check(stat.S_IMODE(st.st_mode) == 0o600 and st.st_uid == os.geteuid(),
              "the hard-linked file changed mode or owner")
    for rel, state in (("state", None), ("journal", "running 1\n")):
        d = _plant_tx(os.path.join(sd, "tx"), state=state)
        os.link(outside, os.path.join(d, rel))
        _refused(_run(ctx, ws), TXID + "/" + rel, "hard links")
        same()
        shutil.rmtree(d)
    os.unlink(os.path.join(sd, "lock"))
    os.link(outside, os.path.join(sd, "lock"))
    _refused(_run(ctx, ws), "lock", "hard links")
    same()


@test("state/odd-entries-and-mode-0")
def state_odd(ctx):
    ws = small_ws(ctx)
    ctx.run_json(ws, "true").expect(outcome="committed", exit_status=0)
    txs = os.path.join(ws, ".txbox", "tx")
    for name in ("bad\nname", "UPPER", "junk file", ".other-" + TXID):
        p = os.path.join(txs, name)
        os.mkdir(p)
        _refused(_run(ctx, ws), "never makes such a name")
        if "\n" in name:
            _refused(_run(ctx, ws), "bad\\x0aname")
        os.rmdir(p)
    with open(os.path.join(txs, TXID), "w") as f:
        f.write("not a directory\n")
    _refused(_run(ctx, ws), TXID, "not a directory")
    os.unlink(os.path.join(txs, TXID))
    # a transaction directory nobody may read
    d = _plant_tx(txs, state="running 1\n")
    os.chmod(d, 0)
    r = _run(ctx, ws, timeout=30)
    if os.geteuid() == 0:  # root reads it: an abandoned running transaction, removed
        check(r.rc == 0, "run next to a mode-0 transaction dir failed: %s" % r.err[-400:])
        check(not os.path.lexists(d), "the abandoned transaction was not recovered")
    else:
        _refused(r, TXID, "cannot be opened")
        os.chmod(d, 0o700)


# ---------------------------------------------------------------------------
# workspaces reached through symlinks, and workspaces inside workspaces

def _linked_ws(ctx):
    """A workspace in which a transaction committed link -> a directory outside."""
    ws = small_ws(ctx)
    outside = ctx.mkdtemp("outside")
    with open(os.path.join(outside, "victim"), "w") as f:
        f.write("keep\n")
    ctx.run_json(ws, ["ln", "-s", outside, "link"]).expect(outcome="committed", exit_status=0)
    check(os.path.islink(os.path.join(ws, "link")), "the symlink was not committed")
    return ws, outside


def _outside_untouched(outside):
    names = sorted(os.listdir(outside))
    check(names == ["victim"], "txbox worked in the directory behind the symlink: %r" % names)


@test("workspace/symlink-inside-a-workspace-is-not-followed")
def ws_symlink(ctx):
    ws, outside = _linked_ws(ctx)
    logical = os.path.join(ws, "link")
    env = dict(os.environ, PWD=logical)
    cmd = ["sh", "-c", "echo x > made; rm -f victim"]
    # the current directory, reached through the link (the shell's $PWD)
    r = ctx.run_txbox(["run", "--"] + cmd, cwd=logical, env=env, timeout=60)
    _refused(r, "symlink " + logical, "txbox workspace " + ws)
    _outside_untouched(outside)
    # named, absolute, relative, and deeper through the link
    for w, cwd in ((logical, ws), ("link", ws), ("link/.", ws), (os.path.join(logical, "..", "ws"), ws)):
        r = ctx.run_txbox(["run", "-w", w, "--"] + cmd, cwd=cwd, env=dict(os.environ, PWD=cwd), timeout=60)
        _refused(r, "symlink " + logical)
        _outside_untouched(outside)
    # the real path is a workspace of its own, chosen explicitly
    r = ctx.run_txbox(["run", "-w", outside, "--", "true"], cwd=outside, timeout=60)
    check(r.rc == 0, "the real directory named explicitly was refused: %s" % r.err[-400:])


@test("workspace/nested-named-is-refused")
def ws_nested_named(ctx):
    ws = small_ws(ctx)
    ctx.run_json(ws, "true").expect(outcome="committed", exit_status=0)
    sub = os.path.join(ws, "sub")
    r = ctx.run_txbox(["run", "-w", sub, "--", "sh", "-c", "echo x > made"], cwd=ws, timeout=60)
    _refused(r, "inside the txbox workspace " + ws)
    check(not os.path.lexists(os.path.join(sub, ".txbox")), "a nested state dir was made")
    check(not os.path.lexists(os.path.join(sub, "made")), "the refused command ran")


@test("workspace/current-dir-inside-a-workspace-uses-it")
def ws_nested_cwd(ctx):
    ws = small_ws(ctx)
    ctx.run_json(ws, "true").expect(outcome="committed", exit_status=0)
    sub = os.path.join(ws, "sub", "deeper")
    args = ["run", "--json", "--", "sh", "-c", "pwd; echo x > made; echo y > ../../top"]
    if ctx.policy_file:
        args[1:1] = ["--policy", ctx.policy_file]
    r = ctx.run_txbox(args, cwd=sub, env=dict(os.environ, PWD=sub), timeout=60)
    check(r.rc == 0, "run in a workspace's subdirectory failed: %s" % r.err[-400:])
    r.parse_json()
    check(r.json.get("stdout", "").strip() == sub, "the command started in %r" % r.json.get("stdout"))
    check(os.path.exists(os.path.join(sub, "made")) and os.path.exists(os.path.join(ws, "top")),
          "the changes did not reach the enclosing workspace")
    check(not os.path.lexists(os.path.join(ws, "sub", ".txbox")) and
          not os.path.lexists(os.path.join(sub, ".txbox")), "a nested state dir was made")


@test("state/command-never-commits-a-state-dir-name")
def state_name_never_committed(ctx):
    """A `.txbox` a command makes anywhere in the workspace would be read back
    as a state dir by a later run from that directory (or by a run without
    --state-dir): the commit refuses it, whether it is new, inside a new
    directory, or inside an existing one, and whatever it holds."""
    ws = small_ws(ctx)
    ctx.run_json(ws, "true").expect(outcome="committed", exit_status=0)
    os.mkdir(os.path.join(ws, "old"))
    for script in ("mkdir -p new/.txbox/tx && echo 'applying 1' > new/.txbox/tx/state",
                   "mkdir old/.txbox && echo x > old/.txbox/lock",
                   "mkdir -p old/a/b && cp -r old/a old/c && mkdir old/c/.txbox"):
        r = ctx.run_json(ws, script)
        check(r.jget("outcome", None) != "committed", "committed %r" % script)
        check(".txbox" in (r.jget("error", "") or "") + r.err.decode("utf-8", "replace"),
              "the refusal does not name .txbox: %r" % r.err[-300:])
    found = [os.path.join(d, n) for d, dirs, _ in os.walk(ws) for n in dirs
             if n == ".txbox" and d != ws]
    check(not found, "a nested state dir was committed: %s" % found)
    check(not os.path.lexists(os.path.join(ws, "new")), "the refused transaction published new/")
    # With the state dir elsewhere, a root-level .txbox is the command's too.
    sd = ctx.mkdtemp("statedir-elsewhere")
    r = ctx.run_json(ws, "mkdir .txbox2 && mkdir sub2 && mkdir sub2/.txbox",
                     extra=["--state-dir", os.path.join(sd, "st")])
    check(r.jget("outcome", None) != "committed", "committed sub2/.txbox with --state-dir elsewhere")
