"""A transaction acts on the workspace it was opened on, and only there
(docs/ARCHITECTURE.md, "Workspace identity"): a held transaction's commit
is journaled and recovered like any other; a transaction or a state dir
outside the workspace refuses another workspace; a workspace is never
taken implicitly from a current directory known only by its physical path
that is not one yet (it may have been reached through a symlink a
transaction published)."""

import os
from harness import check, test

FILES = ["f%d" % i for i in range(1, 6)]
HOLD = "; $TXBOX_IT_UNSET"  # unresolvable: the permissive policy holds it


def _write(d, name, text):
    with open(os.path.join(d, name), "w") as f:
        f.write(text)


def _read(d, name):
    try:
        with open(os.path.join(d, name)) as f:
            return f.read().strip()
    except FileNotFoundError:
        return None


def _held(ctx, ws, command, extra=()):
    r = ctx.run_json(ws, command + HOLD, extra=extra, timeout=120)
    r.expect(outcome="held", exit_status=3)
    return r.jget("tx")


def _txbox(ctx, args, cwd, env=None):
    return ctx.run_txbox(args, cwd=cwd, timeout=120, env=env)


def _refused(r, what, *words):
    err = r.err.decode("utf-8", "replace")
    check(r.rc != 0, "%s was not refused (rc 0): %s" % (what, err[-300:]))
    for w in words:
        check(w in err, "%s: the message does not say %r: %s" % (what, w, err[-400:]))


def _held_commit_killed(ctx, label):
    """A held transaction rewriting f1..f5, its commit killed after 2 renames."""
    ws = os.path.join(ctx.mkdtemp(label), "ws")
    os.mkdir(ws)
    for i, n in enumerate(FILES, 1):
        _write(ws, n, "old%d" % i)
    tx = _held(ctx, ws, "; ".join("echo new%d > %s" % (i, n) for i, n in enumerate(FILES, 1)))
    env = dict(os.environ, TXBOX_FAULT_COMMIT_AFTER="2")
    _txbox(ctx, ["commit", tx, "-w", ws], ws, env=env)
    return ws, tx


@test("binding/held-commit-crash-recovers-whole")
def held_commit_crash(ctx):
    ws, tx = _held_commit_killed(ctx, "heldcrash")
    r = _txbox(ctx, ["recover", "-w", ws], ws)
    got = [_read(ws, n) for n in FILES]
    old = ["old%d" % i for i in range(1, 6)]
    new = ["new%d" % i for i in range(1, 6)]
    check(got in (old, new), "after a crashed held commit and recover the workspace is mixed: %r (%s)"
          % (got, r.err[-300:]))
    _txbox(ctx, ["rollback", tx, "-w", ws], ws)
    got2 = [_read(ws, n) for n in FILES]
    check(got2 == got, "a rollback after recovery changed the workspace: %r -> %r" % (got, got2))


@test("binding/held-rollback-with-journal-reverses")
def held_rollback_journal(ctx):
    """A held transaction whose commit crashed before its state changed (as an
    older txbox left it): a rollback must reverse the journal, not discard the
    displaced originals; recovery must not skip it either."""
    ws, tx = _held_commit_killed(ctx, "heldjournal")
    state = os.path.join(ws, ".txbox", "tx", tx, "state")
    with open(state + ".new", "w") as f:
        f.write("held 1\n")
    os.chmod(state + ".new", 0o600)
    os.rename(state + ".new", state)
    _txbox(ctx, ["rollback", tx, "-w", ws], ws)
    got = [_read(ws, n) for n in FILES]
    check(got == ["old%d" % i for i in range(1, 6)],
          "rolling back a held transaction with a journal lost the originals: %r" % got)


def _two(ctx, label):
    root = ctx.mkdtemp(label)
    a, b, s = (os.path.join(root, n) for n in ("A", "B", "S"))
    for d in (a, b):
        os.mkdir(d)
        for i in range(1, 5):
            _write(d, "f%d" % i, "%s%d" % (os.path.basename(d), i))
        _write(d, "gone", os.path.basename(d) + "-keep")
    os.mkdir(s, 0o700)
    return a, b, s


@test("binding/state-dir-serves-one-workspace")
def shared_state_dir(ctx):
    a, b, s = _two(ctx, "sharedsd")
    sd = ["--state-dir", s]
    env = dict(os.environ, TXBOX_FAULT_COMMIT_AFTER="2")
    _txbox(ctx, ["run", "-w", a] + sd + ["--", "; ".join("echo A-new%d > f%d" % (i, i) for i in range(1, 5))],
           a, env=env)
    r = _txbox(ctx, ["run", "-w", b] + sd + ["--", "echo B-x > f1"], b)
    _refused(r, "a run in B with A's state dir", "belongs to the workspace", a)
    check(_read(b, "f1") == "B1", "the refused run changed B")
    _txbox(ctx, ["recover", "-w", a] + sd, a)
    got = [_read(a, "f%d" % i) for i in range(1, 5)]
    check(got in (["A%d" % i for i in range(1, 5)], ["A-new%d" % i for i in range(1, 5)]),
          "A after its crash and recovery is mixed: %r" % got)
    tx = _held(ctx, a, "rm gone; echo A-held > f1", extra=sd)
    r = _txbox(ctx, ["commit", tx, "-w", b] + sd, b)
    _refused(r, "committing A's held transaction with -w B", "belongs to the workspace")
    check(_read(b, "f1") == "B1" and _read(b, "gone") == "B-keep", "A's held transaction changed B")
    # the transaction's own record, whatever the state dir says
    os.unlink(os.path.join(s, "workspace"))
    for verb in ("commit", "rollback"):
        r = _txbox(ctx, [verb, tx, "-w", b] + sd, b)
        _refused(r, "%s of A's held transaction with -w B (no state dir binding)" % verb,
                 "transaction %s" % tx, "belongs to the workspace")
    check(_read(b, "f1") == "B1" and _read(b, "gone") == "B-keep", "A's held transaction changed B")
    r = _txbox(ctx, ["commit", tx, "-w", a] + sd, a)
    check(r.rc == 0 and _read(a, "f1") == "A-held" and _read(a, "gone") is None,
          "A's held transaction no longer commits in A: rc %d %s" % (r.rc, r.err[-300:]))


@test("binding/held-commit-path-swapped-for-symlink")
def held_commit_redirected(ctx):
    root = ctx.mkdtemp("redir")
    w, c, s = (os.path.join(root, n) for n in ("proj", "canary", "S"))
    os.makedirs(os.path.join(w, "data"))
    _write(os.path.join(w, "data"), "x", "junk")
    os.makedirs(os.path.join(c, "data"))
    _write(os.path.join(c, "data"), "db", "precious")
    os.mkdir(s, 0o700)
    tx = _held(ctx, w, "rm -rf data", extra=["--state-dir", s])
    os.rename(w, w + ".orig")
    os.symlink(c, w)
    r = _txbox(ctx, ["commit", tx, "--state-dir", s, "-w", w], root)
    _refused(r, "a held commit through a swapped path", "belongs to the workspace")
    check(_read(os.path.join(c, "data"), "db") == "precious", "the held commit deleted canary/data/db")


@test("binding/no-workspace-through-committed-symlink")
def committed_symlink(ctx):
    root = ctx.mkdtemp("symws")
    w, v, s, s2 = (os.path.join(root, n) for n in ("W", "VICTIM", "S", "S2"))
    for d in (w, v):
        os.mkdir(d)
    for d in (s, s2):
        os.mkdir(d, 0o700)
    ctx.run_json(w, "ln -s %s link" % v, extra=["--state-dir", s]).expect(outcome="committed", exit_status=0)
    link = os.path.join(w, "link")
    tries = [
        ("-w W/link with another --state-dir", ["run", "--state-dir", s2, "-w", link], root, None),
        ("cwd W/link, PWD elsewhere, --state-dir", ["run", "--state-dir", s2], link, "/"),
        ("cwd W/link, PWD elsewhere", ["run"], link, "/"),
        ("cwd W/link, PWD unset", ["run"], link, ""),
        ("cwd W/link, PWD W/link", ["run"], link, link),
    ]
    for label, args, cwd, pwd in tries:
        _write(v, "precious", "precious")
        env = dict(os.environ)
        env.pop("PWD", None)
        if pwd:
            env["PWD"] = pwd
        r = _txbox(ctx, args + ["--", "rm -f precious; echo pwn > pwned"], cwd, env=env)
        check(r.rc != 0, "%s: not refused: %s" % (label, r.err[-300:]))
        check(_read(v, "precious") == "precious" and _read(v, "pwned") is None,
              "%s: the run changed the symlink's target outside the workspace" % label)
    check(not os.path.exists(os.path.join(v, ".txbox")), "a refused run made the symlink target a workspace")
    check(os.path.isdir(os.path.join(w, ".txbox")), "a workspace with its state elsewhere has no .txbox marker")


@test("tx-binding/held-commit-waits-out-a-passing-lock")
def held_commit_waits(ctx):
    """rt12 I10: recovery (started by any run in the workspace) takes each
    held transaction's lock for an instant to read its state; a `txbox
    commit` of that transaction in that instant failed with "in use". It
    now waits a moment for the lock."""
    import fcntl
    import struct
    import threading
    import time
    ws = ctx.mkdtemp("heldwait")
    txid = _held(ctx, ws, "echo x > f")
    lock = os.path.join(ws, ".txbox", "tx", txid, "lock")
    fd = os.open(lock, os.O_WRONLY)
    fcntl.fcntl(fd, 38, struct.pack("hhqqi", fcntl.F_WRLCK, 0, 0, 0, 0))  # F_OFD_SETLKW
    t = threading.Timer(0.4, os.close, (fd,))
    t.start()
    try:
        r = _txbox(ctx, ["commit", "-w", ws, txid], cwd=ws)
    finally:
        t.join()
    check(r.rc == 0, "commit of a held transaction whose lock was busy for 0.4 s failed: %s"
          % r.err.decode("utf-8", "replace")[-300:])
    check(_read(ws, "f") == "x", "the held transaction was not committed")
