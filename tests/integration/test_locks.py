"""The locks of a state dir (docs/ARCHITECTURE.md, "Locks"): write-only
files that only txbox opens, plain write locks, and recovery that never
removes what a live txbox is still creating. The sandbox side (a command
cannot open another workspace's lock files) is the security attack
state-locks-held-by-another-sandbox."""

import fcntl
import os
import stat
import struct
import subprocess
import time

from harness import Skip, check, small_ws, test

LOCK_GID = 4026531839  # SANDBOX_UNMAPPED_GID: the group of root's lock files
TXID = "20260101-000000-0badc0de"


def _lock_files(ws):
    sd = os.path.join(ws, ".txbox")
    out = [os.path.join(sd, "lock")]
    for e in os.listdir(os.path.join(sd, "tx")):
        p = os.path.join(sd, "tx", e, "lock")
        if os.path.exists(p):
            out.append(p)
    return out


def _sealed_problems(paths):
    out = []
    for p in paths:
        st = os.lstat(p)
        if stat.S_IMODE(st.st_mode) != 0o200:
            out.append("%s has mode %04o" % (p, stat.S_IMODE(st.st_mode)))
        if os.geteuid() == 0 and st.st_gid != LOCK_GID:
            out.append("%s has group %d" % (p, st.st_gid))
    return out


@test("locks/lock-files-are-write-only")
def lock_files_write_only(ctx):
    """Every lock file txbox makes is mode 0200 (as root: group 4026531839),
    and one an older txbox left readable is sealed by the next run."""
    ws = small_ws(ctx)
    ctx.run_json(ws, "echo a > a").expect(outcome="committed", exit_status=0)
    locks = _lock_files(ws)
    check(len(locks) >= 2, "expected the workspace lock and a spare's lock, found %r" % locks)
    probs = _sealed_problems(locks)
    check(not probs, "lock files not sealed: %s" % probs)
    for p in locks:
        os.chmod(p, 0o600)
        if os.geteuid() == 0:
            os.chown(p, 0, 0)
    ctx.run_json(ws, "echo b > b").expect(outcome="committed", exit_status=0)
    probs = _sealed_problems(_lock_files(ws))
    check(not probs, "old-style lock files not sealed by the next run: %s" % probs)


def _plant_new_dir(ws, name):
    d = os.path.join(ws, ".txbox", "tx", name)
    os.makedirs(os.path.join(d, "displaced"))
    with open(os.path.join(d, "lock"), "w"):
        pass
    os.chmod(os.path.join(d, "lock"), 0o200)
    return d


def _recover(ctx, ws):
    r = ctx.run_txbox(["recover", "-w", ws], cwd=ws, timeout=60)
    check(r.rc == 0, "txbox recover failed: %s" % r.err.decode("utf-8", "replace")[-400:])


@test("locks/recovery-leaves-a-young-new-dir-to-its-creator")
def young_new_dir(ctx):
    """rt11 B1: a creator makes its transaction dir's lock file before it
    locks it, so an unlocked lock file in a young .new- dir says nothing:
    recovery deleted such a dir under a live txbox (2 of 320 concurrent runs
    failed without any attacker). Recovery now leaves every .new-/.trash-
    dir alone for a minute; an older one goes unless a txbox holds it."""
    ws = small_ws(ctx)
    ctx.run_json(ws, "true").expect(outcome="committed", exit_status=0)
    young = _plant_new_dir(ws, ".new-" + TXID)
    _recover(ctx, ws)
    check(os.path.isdir(young), "recovery deleted a young .new- dir whose lock was not yet taken")
    old = time.time() - 120
    os.utime(young, (old, old))
    _recover(ctx, ws)
    check(not os.path.exists(young), "recovery left an abandoned .new- dir two minutes old")
    held = _plant_new_dir(ws, ".trash-" + TXID)
    fd = os.open(os.path.join(held, "lock"), os.O_WRONLY)
    try:
        fcntl.fcntl(fd, 37, struct.pack("hhqqi", fcntl.F_WRLCK, 0, 0, 0, 0))  # F_OFD_SETLK
        os.utime(held, (old, old))
        _recover(ctx, ws)
        check(os.path.isdir(held), "recovery deleted an old .trash- dir a live process holds")
    finally:
        os.close(fd)
    _recover(ctx, ws)
    check(not os.path.exists(held), "recovery left an abandoned .trash- dir once its holder let go")


@test("locks/concurrent-runs-in-one-workspace-all-succeed")
def concurrent_runs(ctx):
    """rt11 B1 end to end: concurrent runs in one workspace create, recycle
    and recover transaction dirs under each other's feet; every run must
    commit (none may lose its transaction dir to another's recovery), and
    the workspace ends with every file."""
    ws = small_ws(ctx)
    procs = []
    for k in range(6):
        script = "for i in $(seq 8); do %s run -w %s -- sh -c \"echo $i > f%d-$i\" || echo FAILED $i; done" % (
            ctx.txbox, ws, k)
        if ctx.policy_file:
            script = script.replace(" run -w ", " run --policy %s -w " % ctx.policy_file)
        procs.append(subprocess.Popen(["sh", "-c", script], cwd=ws, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE))
    outs = [p.communicate(timeout=300) for p in procs]
    failed = [o[0].decode() + o[1].decode()[-300:] for o in outs if b"FAILED" in o[0]]
    check(not failed, "concurrent runs failed: %s" % failed[:2])
    missing = [(k, i) for k in range(6) for i in range(1, 9) if not os.path.exists(os.path.join(ws, "f%d-%d" % (k, i)))]
    check(not missing, "files of committed runs are missing: %s" % missing[:5])


@test("locks/root-commands-keep-every-group-but-the-lock-group")
def root_groups(ctx):
    """rt12 I6: the root-mode command's user namespace leaves one gid
    unmapped, and its capabilities do not reach files of that group. It was
    4294967294, the historic nfsnobody that NFS exports and tar archives
    carry: root could no longer read, list or delete such files. The gid is
    now one no system hands out; files of group 4294967294 behave as before."""
    if os.geteuid() != 0:
        raise Skip("root mode only")
    ws = small_ws(ctx)
    nfsnobody = 4294967294
    f = os.path.join(ws, "f")
    with open(f, "w") as fh:
        fh.write("secret-ish\n")
    os.chown(f, 1001, nfsnobody)
    os.chmod(f, 0o640)
    d = os.path.join(ws, "d")
    os.mkdir(d)
    with open(os.path.join(d, "x"), "w"):
        pass
    os.chown(d, 1001, nfsnobody)
    os.chmod(d, 0o750)
    res = ctx.run_json(ws, "cat f && ls d && rm d/x && touch g && chgrp %d g && stat -c %%g g" % nfsnobody)
    res.expect(outcome="committed", exit_status=0)
    out = res.stdout_bytes().decode("utf-8", "replace")
    check("secret-ish" in out and str(nfsnobody) in out, "root could not act on files of group %d: %r"
          % (nfsnobody, out[-400:]))
    check(not os.path.exists(os.path.join(d, "x")), "the delete in a group-%d directory was not committed" % nfsnobody)
    check(os.stat(os.path.join(ws, "g")).st_gid == nfsnobody, "chgrp to %d was not committed" % nfsnobody)


def _run_rc(ctx, ws, extra=(), cmd=("true",), cwd=None):
    return ctx.run_txbox(["run", "-w", ws] + list(extra) + ["--"] + list(cmd), cwd=cwd or ws, timeout=60)


@test("locks/one-state-dir-per-workspace")
def one_state_dir(ctx):
    """rt12 I29: a workspace whose state lives in a --state-dir got a second
    one in W/.txbox from every run (and commit, recover) without the flag:
    two locks, two commits of one workspace at once, a crashed transaction
    never recovered. Without the flag txbox now follows W/.txbox/state-dir;
    another --state-dir, or one for a workspace whose state is in W/.txbox,
    is refused."""
    base = ctx.mkdtemp("onestate")
    ws, st = os.path.join(base, "ws"), os.path.join(base, "st")
    os.mkdir(ws)
    r = _run_rc(ctx, ws, extra=["--state-dir", st], cmd=["sh", "-c", "echo 1 > a"])
    check(r.rc == 0, "the first run failed: %s" % r.err[-300:])
    r = _run_rc(ctx, ws, cmd=["sh", "-c", "echo 2 > b"])
    check(r.rc == 0, "a run without the flag failed: %s" % r.err[-300:])
    sd = os.path.join(ws, ".txbox")
    check(sorted(os.listdir(sd)) == [".gitignore", "state-dir"],
          "a run without the flag made a second state dir: %s" % os.listdir(sd))
    check(len([e for e in os.listdir(os.path.join(st, "tx")) if e.startswith(".spare-")]) >= 1,
          "the run without the flag did not use %s" % st)
    r = _run_rc(ctx, ws, extra=["--state-dir", os.path.join(base, "other")])
    check(r.rc == 125 and b"keeps its state in" in r.err, "another --state-dir was not refused: %s" % r.err[-300:])
    ws2 = os.path.join(base, "ws2")
    os.mkdir(ws2)
    check(_run_rc(ctx, ws2).rc == 0, "a plain run failed")
    r = _run_rc(ctx, ws2, extra=["--state-dir", os.path.join(base, "st2")])
    check(r.rc == 125 and b"would be a second one" in r.err,
          "a --state-dir for a workspace with its state inside was not refused: %s" % r.err[-300:])


@test("locks/state-dir-inside-another-workspace-is-refused")
def state_dir_in_other_ws(ctx):
    """rt12 I28: a --state-dir inside another workspace A is writable by A's
    commands through A's overlay and commit: they removed B's held
    transaction and replaced B's lock while B committed. Such a state dir is
    refused, also when A becomes a workspace after B's state dir exists."""
    base = ctx.mkdtemp("inother")
    a, b, c = (os.path.join(base, n) for n in ("A", "B", "C"))
    for d in (a, b, c):
        os.mkdir(d)
    check(_run_rc(ctx, a).rc == 0, "a plain run in A failed")
    os.mkdir(os.path.join(a, "sub"))
    r = _run_rc(ctx, b, extra=["--state-dir", os.path.join(a, "sub", "st")])
    check(r.rc == 125 and b"inside the txbox workspace" in r.err,
          "a state dir inside workspace A was not refused: %s" % r.err[-300:])
    check(not os.path.exists(os.path.join(a, "sub", "st")), "the refused state dir was made anyway")
    # rt13 J1, J16, J6: the workspace root itself, spelt any way, or reached through a symlink
    os.symlink(a, os.path.join(base, "L"))
    os.mkdir(os.path.join(a, "x"))
    for given, ws in ((a, b), (a + "/", b), (".", b), (os.path.join(base, "L", "x") + "/", b)):
        r = _run_rc(ctx, ws, extra=["--state-dir", given])
        check(r.rc == 125 and (b"inside the txbox workspace" in r.err or b"the workspace itself" in r.err),
              "the state dir %r for %s was not refused: %s" % (given, ws, r.err[-300:]))
    check(not os.path.exists(os.path.join(a, "tx")) and not os.path.exists(os.path.join(b, "tx")),
          "a refused state dir was set up anyway")
    st = os.path.join(c, "st")
    check(_run_rc(ctx, b, extra=["--state-dir", st]).rc == 0, "a run with its state dir in C (not yet a workspace) failed")
    check(_run_rc(ctx, c).rc == 0, "a plain run in C failed")
    r = _run_rc(ctx, b)
    check(r.rc == 125 and b"inside the txbox workspace" in r.err,
          "B's state dir inside what became workspace C was not refused: %s" % r.err[-300:])


@test("locks/timeout-names-who-holds-the-lock")
def timeout_names_holder(ctx):
    """rt12 I14: a run that times out waiting for the workspace lock says
    who holds it: another txbox, or a reader that is not txbox."""
    ws = small_ws(ctx)
    ctx.run_json(ws, "true").expect(outcome="committed", exit_status=0)
    fd = os.open(os.path.join(ws, ".txbox", "lock"), os.O_WRONLY)
    try:
        fcntl.fcntl(fd, 38, struct.pack("hhqqi", fcntl.F_WRLCK, 0, 0, 0, 0))  # F_OFD_SETLKW
        res = ctx.run_json(ws, "echo x > new", extra=["--timeout", "2"], timeout=60)
    finally:
        os.close(fd)
    res.expect(outcome="rolled_back", exit_status=124, rollback_reason="timeout")
    msg = res.jget("error", "") or ""
    check("held by another txbox process" in msg, "the timeout does not say who holds the lock: %r" % msg)


@test("locks/no-commit-changes-another-workspaces-state-dir")
def commit_spares_state_dirs(ctx):
    """rt12 I35/I28c/I34: a state dir can end up inside a workspace that
    was made around it later, inside another user's workspace, or under a
    bind-mounted alias of one; that workspace's commands see it writable,
    and their commit wrote what they did to it (a held transaction
    removed, a lock replaced). Every --state-dir holds .txbox-state, and a
    commit that would change a directory holding it is rolled back."""
    base = ctx.mkdtemp("markedstate")
    b, p = os.path.join(base, "B"), os.path.join(base, "P")
    os.mkdir(b)
    os.mkdir(p)
    st = os.path.join(p, "bstate")
    r = ctx.run_txbox(["run", "-w", b, "--state-dir", st, "--json", "--", "sh", "-c", "echo x > f; $TXBOX_IT_UNSET"],
                      cwd=b, timeout=60)
    txs = [e for e in os.listdir(os.path.join(st, "tx")) if not e.startswith(".")]
    check(len(txs) == 1, "B has no held transaction to protect: %s" % r.err[-300:])
    check(os.path.exists(os.path.join(st, ".txbox-state")), "the state dir holds no .txbox-state")
    res = ctx.run_json(p, "rm -rf bstate/tx/* bstate/tx/.[a-z]*; touch bstate/planted")
    check(res.jget("outcome") == "rolled_back", "P's commit changed B's state dir: %s" % res.jget("outcome"))
    check("state directory of another txbox workspace" in (res.jget("error", "") or ""),
          "the rollback does not say why: %r" % res.jget("error", ""))
    check(not os.path.exists(os.path.join(st, "planted")), "a file was planted in B's state dir")
    left = [e for e in os.listdir(os.path.join(st, "tx")) if not e.startswith(".")]
    check(left == txs, "B's transactions changed: %r -> %r" % (txs, left))


@test("locks/state-dir-usable-whatever-the-umask")
def umask_0222(ctx):
    """rt12 I24: under umask 0222 the state dir was made 0500, and every
    later run failed (nothing repaired it). txbox's directories are now 0700
    whatever the umask."""
    ws = small_ws(ctx)
    for um in ("0222", "022"):
        pol = ["--policy", ctx.policy_file] if ctx.policy_file else []
        p = subprocess.run(["sh", "-c", 'umask %s; exec "$@"' % um, "sh", ctx.txbox, "run", "-w", ws] + pol +
                           ["--", "sh", "-c", "echo %s > u%s" % (um, um)], cwd=ws, capture_output=True, timeout=60)
        check(p.returncode == 0, "a run under umask %s failed: %s" % (um, p.stderr[-300:]))
    for d in (".txbox", ".txbox/tx"):
        mode = stat.S_IMODE(os.stat(os.path.join(ws, d)).st_mode)
        check(mode == 0o700, "%s has mode %04o" % (d, mode))



@test("locks/first-runs-at-once-leave-a-usable-workspace")
def first_runs_at_once(ctx):
    """rt13 J22, J11-J13: first runs of a fresh workspace started together —
    three with one --state-dir (they shared one temporary file and 2 of 3
    failed), or one with and one without (a fix of the previous round left
    the workspace refusing every later run) — must leave a workspace every
    later run can use."""
    base = ctx.mkdtemp("firstruns")
    for k in range(4):
        ws, st = os.path.join(base, "same%d" % k), os.path.join(base, "same%d-st" % k)
        os.mkdir(ws)
        procs = [subprocess.Popen([ctx.txbox, "run", "-w", ws, "--state-dir", st] +
                                  (["--policy", ctx.policy_file] if ctx.policy_file else []) + ["--", "true"],
                                  cwd=ws, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) for _ in range(3)]
        errs = [p.communicate(timeout=60)[1] for p in procs]
        check(all(p.returncode == 0 for p in procs), "first runs with one --state-dir failed: %s" % errs)
    for k in range(4):
        ws, st = os.path.join(base, "mixed%d" % k), os.path.join(base, "mixed%d-st" % k)
        os.mkdir(ws)
        procs = [subprocess.Popen([ctx.txbox, "run", "-w", ws] + extra +
                                  (["--policy", ctx.policy_file] if ctx.policy_file else []) + ["--", "true"],
                                  cwd=ws, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                 for extra in ([], ["--state-dir", st])]
        for p in procs:
            p.communicate(timeout=60)
        r = _run_rc(ctx, ws)
        check(r.rc == 0, "after a first run with and one without --state-dir, runs fail: %s" % r.err[-300:])


@test("locks/a-stray-state-mark-blocks-nothing")
def stray_mark(ctx):
    """rt13 J4: a file named .txbox-state alone (a cloned repository's, or
    one a command made) made its directory uncommittable for good. Only a
    directory that is a state dir (its tx/ and workspace record too) is."""
    ws = small_ws(ctx)
    os.makedirs(os.path.join(ws, "src"))
    open(os.path.join(ws, "src", ".txbox-state"), "w").close()  # as a cloned repository may carry
    res = ctx.run_json(ws, "echo 1 > src/main.c")
    res.expect(outcome="committed", exit_status=0)
    # rt19: a command may not create, change or remove the mark anywhere
    # (a copy of a state dir, with its mark, replacing the original)
    for cmd in ("touch sub/.txbox-state", "rm src/.txbox-state", "mkdir -p c/d && touch c/d/.txbox-state"):
        res = ctx.run_json(ws, cmd)
        check(res.jget("outcome") == "rolled_back" and ".txbox-state" in (res.jget("error", "") or ""),
              "%r was not refused: %s %r" % (cmd, res.jget("outcome"), res.jget("error", "")))



@test("locks/state-dirs-and-workspaces-never-nest")
def never_nest(ctx):
    """rt14 K1/K2, K24/K25, K10/K11, K21: a workspace made at or inside
    another workspace's state dir committed into it (a file planted in a
    held transaction, then published by its user's commit); a state dir
    inside another state dir was accepted; a copied or cloned workspace's
    .txbox/state-dir redirected a first run to any directory; root's state
    dir below a directory another user owns could be swapped between two
    uses. All are refused."""
    base = ctx.mkdtemp("nest")
    b, st = os.path.join(base, "B"), os.path.join(base, "st")
    os.mkdir(b)
    check(_run_rc(ctx, b, extra=["--state-dir", st]).rc == 0, "a run with a --state-dir failed")
    for ws in (st, os.path.join(st, "tx")):
        r = _run_rc(ctx, ws)
        check(r.rc == 125 and b"inside the txbox state dir" in r.err,
              "a workspace at %s was not refused: %s" % (ws, r.err[-300:]))
    c = os.path.join(base, "C")
    os.mkdir(c)
    r = _run_rc(ctx, c, extra=["--state-dir", os.path.join(st, "tx", "cst")])
    check(r.rc == 125 and b"inside the txbox state dir" in r.err,
          "a state dir inside another state dir was not refused: %s" % r.err[-300:])
    # a cloned workspace whose marker names some directory of the user's
    d, h = os.path.join(base, "D"), os.path.join(base, "H")
    os.makedirs(os.path.join(d, ".txbox"))
    os.mkdir(h)
    with open(os.path.join(d, ".txbox", "state-dir"), "w") as f:
        f.write(h + "\n")
    r = _run_rc(ctx, d)
    check(r.rc == 125 and b"not this workspace's state dir" in r.err,
          "a marker naming a directory that is no state dir of this workspace was followed: %s" % r.err[-300:])
    check(os.listdir(h) == [], "the directory the marker named was written: %s" % os.listdir(h))
    if os.geteuid() == 0:
        other = os.path.join(base, "theirs")
        os.mkdir(other)
        os.chown(other, 1001, 1001)
        e = os.path.join(base, "E")
        os.mkdir(e)
        r = _run_rc(ctx, e, extra=["--state-dir", os.path.join(other, "st")])
        check(r.rc == 125 and b"can be changed by another user" in r.err,
              "a state dir below another user's directory was not refused: %s" % r.err[-300:])


@test("locks/state-dir-names-are-never-the-workspaces")
def state_dir_names(ctx):
    """rt15 N33/N34/N38, N2, N1, N8: a file with a second name inside
    another workspace's state dir (cp -al, a dedup tool) was changed in
    place through the workspace's name, so a held transaction's pending
    file took the command's content; a state dir around its workspace
    (--state-dir ..) hid it from git; a state dir forged by another user
    above a workspace blocked it; a workspace inside a state dir that
    lives in a workspace was not recognised. Names in a state dir count as
    names outside the workspace (the change is published as a new file),
    and the rest is refused or ignored as it should."""
    base = ctx.mkdtemp("stnames")
    b, p = os.path.join(base, "B"), os.path.join(base, "P")
    os.mkdir(b)
    os.mkdir(p)
    st = os.path.join(p, "bst")
    r = ctx.run_txbox(["run", "-w", b, "--state-dir", st, "--json", "--", "sh", "-c",
                       "echo pending > f; $TXBOX_IT_UNSET"], cwd=b, timeout=60)
    txs = [e for e in os.listdir(os.path.join(st, "tx")) if not e.startswith(".")]
    check(len(txs) == 1, "B has no held transaction: %s" % r.err[-300:])
    pending = os.path.join(st, "tx", txs[0], "layers", "0", "upper", "f")
    check(os.path.exists(pending), "no pending file %s" % pending)
    ctx.run_json(p, "true").expect(outcome="committed", exit_status=0)
    os.link(pending, os.path.join(p, "x"))
    res = ctx.run_json(p, "echo injected > x")
    check(res.jget("outcome") == "committed", "P's own change was not committed: %s" % res.jget("outcome"))
    with open(pending) as f:
        check(f.read() == "pending\n", "B's pending file was changed through P's name for it")
    with open(os.path.join(p, "x")) as f:
        check(f.read() == "injected\n", "P's change is missing")
    # a state dir around the workspace
    w = os.path.join(base, "outer", "W")
    os.makedirs(w)
    r = _run_rc(ctx, w, extra=["--state-dir", os.path.join(base, "outer")])
    check(r.rc == 125 and b"contains the workspace" in r.err, "a state dir around its workspace: %s" % r.err[-300:])
    check(not os.path.exists(os.path.join(base, "outer", "tx")), "it was set up anyway")
    # a workspace inside the state dir kept in a workspace
    inner = os.path.join(p, ".txbox", "tx", "sub")
    os.makedirs(inner)
    r = _run_rc(ctx, inner, extra=["--allow-foreign-workspace"] if False else [])
    check(r.rc != 0, "a workspace inside %s/.txbox was accepted" % p)
    if os.geteuid() == 0:
        shared = os.path.join(base, "shared")
        os.makedirs(os.path.join(shared, "tx"))
        for n in (".txbox-state", "workspace"):
            open(os.path.join(shared, n), "w").close()
        for e in ("", "tx", ".txbox-state", "workspace"):
            os.chown(os.path.join(shared, e) if e else shared, 1001, 1001)
        v = os.path.join(shared, "V")
        os.mkdir(v)
        os.chown(shared, 0, 0)
        r = _run_rc(ctx, v)
        check(r.rc == 0, "another user's forged state dir above a workspace blocked it: %s" % r.err[-300:])


def _other_user():
    import pwd
    try:
        return pwd.getpwnam("txbox-test")
    except KeyError:
        raise Skip("no user txbox-test")


def _as_other(ctx, pw, base, args, cwd):
    """txbox as the other user, with the suite's policy (copied where that
    user can read it)."""
    args = list(args)
    if ctx.policy_file and args[:1] == ["run"]:
        pol = os.path.join(base, "policy.yaml")
        if not os.path.exists(pol):
            with open(ctx.policy_file, "rb") as src, open(pol, "wb") as dst:
                dst.write(src.read())
            os.chmod(pol, 0o644)
        args[1:1] = ["--policy", pol]
    return subprocess.run(["runuser", "-u", pw.pw_name, "--", ctx.txbox] + args, cwd=cwd,
                          capture_output=True, timeout=120)


def _held_tx(st):
    txs = [e for e in os.listdir(os.path.join(st, "tx")) if not e.startswith(".")]
    check(len(txs) == 1, "no held transaction in %s: %s" % (st, os.listdir(os.path.join(st, "tx"))))
    return txs[0]


def _mkdir_for(path, pw):
    os.mkdir(path)
    os.chown(path, pw.pw_uid, pw.pw_gid)
    return path


@test("locks/other-users-state-dirs-are-never-changed")
def other_users_state_dirs(ctx):
    """rt16 O1/O3/O20/O24, N37, O8, N8: the checks that keep a commit out
    of another workspace's state dir counted only the caller's own state
    dirs, so root's command wrote straight into another user's held
    transaction (and could forge journals or replace its lock) when that
    user's --state-dir lay inside root's workspace, changed it through a
    second name, and root's workspace inside that user's state dir (a
    --state-dir or a .txbox) was accepted. A state dir is one whoever owns
    it."""
    if os.geteuid() != 0:
        raise Skip("needs root")
    pw = _other_user()
    base = ctx.mkdtemp("otherstate")
    os.chmod(base, 0o755)
    rw, b = os.path.join(base, "RW"), _mkdir_for(os.path.join(base, "B"), pw)
    os.mkdir(rw)
    st = os.path.join(_mkdir_for(os.path.join(rw, "sub"), pw), "S")
    p = _as_other(ctx, pw, base, ["run", "-w", b, "--state-dir", st, "--", "sh", "-c",
                                  "echo pending > f; $TXBOX_IT_UNSET"], b)
    tid = _held_tx(st)
    # rt19 S13: the other user's workspace inside RW, its state dir below it
    wv = _mkdir_for(os.path.join(rw, "Wv"), pw)
    _mkdir_for(os.path.join(wv, "sd"), pw)
    svd = os.path.join(wv, "sd", "S")
    _as_other(ctx, pw, base, ["run", "-w", wv, "--state-dir", svd, "--", "sh", "-c", "echo v > f; $TXBOX_IT_UNSET"],
              wv)
    vtid = _held_tx(svd)
    # RW becomes root's workspace after the other user's state dirs exist
    check(_run_rc(ctx, rw).rc == 0, "a plain run in root's workspace failed")
    # root's command replaces the state dir's parent with a copy, with its
    # mark or without (rt19 S13, rt20 R1): a directory holding a state dir
    # is never deleted or replaced by a commit
    copy = "rm -rf /tmp/c && cp -a Wv/sd /tmp/c && rm -rf Wv/sd && %s cp -a /tmp/c Wv/sd"
    for pre in ("", "rm -f /tmp/c/S/.txbox-state /tmp/c/S/workspace &&"):
        res = ctx.run_json(rw, copy % pre)
        check(res.jget("outcome") == "rolled_back" and ".txbox-state" in (res.jget("error", "") or ""),
              "a copy of a state dir replaced it: %s %r" % (res.jget("outcome"), res.jget("error", "")))
    p = _as_other(ctx, pw, base, ["rollback", "-w", wv, vtid], wv)
    check(p.returncode == 125 and b"txbox workspace" in p.stderr,
          "a state dir below a workspace inside root's was used: %s" % p.stderr[-300:])
    # rt22 S1: another user's (empty) .txbox above root's workspace is no
    # reason to refuse root's own state dir below it
    u = _mkdir_for(os.path.join(base, "U"), pw)
    rwu = os.path.join(u, "W")
    os.mkdir(rwu)
    check(_run_rc(ctx, rwu, extra=["--state-dir", os.path.join(rwu, "sd")]).rc == 0, "root's run in U/W failed")
    _mkdir_for(os.path.join(u, ".txbox"), pw)
    r = _run_rc(ctx, rwu, extra=["--state-dir", os.path.join(rwu, "sd")])
    check(r.rc == 0, "another user's .txbox above root's workspace blocked it: %s" % r.err[-300:])
    pending = os.path.join(st, "tx", tid, "layers", "0", "upper", "f")
    check(os.path.exists(pending), "no pending file: %s" % p.stderr[-300:])
    res = ctx.run_json(rw, "echo root > sub/S/tx/%s/layers/0/upper/f; touch sub/S/planted" % tid)
    check(res.jget("outcome") == "rolled_back" and
          "state directory of another txbox workspace" in (res.jget("error", "") or ""),
          "root's commit changed the other user's state dir: %s %r" % (res.jget("outcome"), res.jget("error", "")))
    os.link(pending, os.path.join(rw, "x"))
    ctx.run_json(rw, "echo injected > x").expect(outcome="committed", exit_status=0)
    with open(pending) as f:
        check(f.read() == "pending\n", "the held file was changed by root's command")
    check(not os.path.exists(os.path.join(st, "planted")), "a file was planted in the other user's state dir")
    # root's workspace inside another user's state dir: a --state-dir, a .txbox
    b2 = _mkdir_for(os.path.join(base, "B2"), pw)
    st2 = os.path.join(_mkdir_for(os.path.join(base, "u"), pw), "S2")
    _as_other(ctx, pw, base, ["run", "-w", b2, "--state-dir", st2, "--", "sh", "-c", "echo 2 > f; $TXBOX_IT_UNSET"], b2)
    c = _mkdir_for(os.path.join(base, "C"), pw)
    _as_other(ctx, pw, base, ["run", "-w", c, "--", "sh", "-c", "echo 3 > f; $TXBOX_IT_UNSET"], c)
    for sd in (st2, os.path.join(c, ".txbox")):
        inner = os.path.join(sd, "tx", _held_tx(sd), "layers", "0", "upper", "inner")
        os.mkdir(inner)
        r = _run_rc(ctx, inner, cmd=["sh", "-c", "echo planted > ../planted"])
        check(r.rc == 125 and b"inside the txbox state dir" in r.err,
              "root's workspace inside %s was accepted: rc %d %s" % (sd, r.rc, r.err[-300:]))
    # rt18 X62: root's commands could replace the state dir's parent with a
    # forged copy; so the other user's state dir inside root's workspace is
    # refused from now on (its held transaction waits, untouched)
    p = _as_other(ctx, pw, base, ["commit", "-w", b, tid], b)
    check(p.returncode == 125 and b"inside the txbox workspace" in p.stderr,
          "a state dir inside another user's workspace was used: %s" % p.stderr[-300:])
    check(not os.path.exists(os.path.join(b, "f")), "the held transaction was committed")
    with open(pending) as f:
        check(f.read() == "pending\n", "the held file changed")
    b3 = _mkdir_for(os.path.join(base, "B3"), pw)
    p = _as_other(ctx, pw, base, ["run", "-w", b3, "--state-dir", os.path.join(rw, "sub", "S3"), "--", "true"], b3)
    check(p.returncode == 125 and b"inside the txbox workspace" in p.stderr,
          "a new state dir inside root's workspace was accepted: %s" % p.stderr[-300:])


@test("locks/lookalike-state-dirs-are-never-mistaken")
def lookalike_state_dirs(ctx):
    """rt16 O2, O4, O22, rt15 N26: a tx/ and a 0200 lock that a command
    made counted as a state dir (the workspace refused every later run); a
    nested workspace's .txbox without a lock file did not count, so its held
    file was written through a second name; a dedup tool's second name for
    W/.txbox/.gitignore let a commit rewrite it; a --state-dir chosen around
    an existing workspace stranded that workspace's held transaction."""
    base = ctx.mkdtemp("lookalike")
    w = os.path.join(base, "W")
    os.mkdir(w)
    ctx.run_json(w, "mkdir tx && : > lock && chmod 200 lock").expect(outcome="committed", exit_status=0)
    ctx.run_json(w, "rm -rf tx lock && echo ok > ok").expect(outcome="committed", exit_status=0)
    # a nested workspace whose runs all ended held: its .txbox has no lock
    p = os.path.join(base, "P")
    q = os.path.join(p, "Q")
    os.makedirs(q)
    ctx.run_txbox(["run", "-w", q, "--", "sh", "-c", "echo held > f; $TXBOX_IT_UNSET"], cwd=q, timeout=60)
    held = os.path.join(q, ".txbox", "tx", _held_tx(os.path.join(q, ".txbox")), "layers", "0", "upper", "f")
    check(not os.path.exists(os.path.join(q, ".txbox", "lock")), "the nested workspace has a lock file already")
    os.link(held, os.path.join(p, "x"))
    ctx.run_json(p, "echo from-P > x && chmod 604 x").expect(outcome="committed", exit_status=0)
    with open(held) as f:
        check(f.read() == "held\n", "the nested workspace's held file was written through P's name for it")
    check(stat.S_IMODE(os.stat(held).st_mode) != 0o604, "the held file's mode was changed")
    # W/.txbox/.gitignore of a workspace whose state lives in a --state-dir
    v, vst = os.path.join(base, "V"), os.path.join(base, "Vst")
    os.makedirs(os.path.join(v, "build"))
    check(_run_rc(ctx, v, extra=["--state-dir", vst]).rc == 0, "a run with a --state-dir failed")
    marker_ignore = os.path.join(v, ".txbox", ".gitignore")
    os.link(marker_ignore, os.path.join(v, "build", ".gitignore"))
    ctx.run_json(v, "echo '!keep' >> build/.gitignore").expect(outcome="committed", exit_status=0)
    with open(marker_ignore) as f:
        check(f.read() == "*\n", "the commit rewrote %s" % marker_ignore)
    # a --state-dir around an existing workspace
    x, a = os.path.join(base, "X"), os.path.join(base, "X", "A")
    os.makedirs(a)
    check(_run_rc(ctx, a).rc == 0, "a plain run in X/A failed")
    e = os.path.join(base, "E")
    os.mkdir(e)
    r = _run_rc(ctx, e, extra=["--state-dir", x])
    check(r.rc == 125 and b"must be a new or empty directory" in r.err,
          "a --state-dir around an existing workspace was accepted: %s" % r.err[-300:])
    check(not os.path.exists(os.path.join(x, "tx")), "it was set up anyway")
    check(_run_rc(ctx, a).rc == 0, "X/A no longer runs")
    # rt18 X16: an entry named workspace (a notes file) made it look bound
    with open(os.path.join(x, "workspace"), "w") as f:
        f.write("notes\n")
    r = _run_rc(ctx, e, extra=["--state-dir", x])
    check(r.rc == 125 and b"must be a new or empty directory" in r.err,
          "a --state-dir holding a file named workspace was taken as bound: %s" % r.err[-300:])
    check(not os.path.exists(os.path.join(x, ".txbox-state")), "it was marked anyway")
    check(_run_rc(ctx, a).rc == 0, "X/A no longer runs")
    # rt23 F1: an entry of txbox's names that is no file (a .gitignore
    # directory holding a workspace) made a chosen --state-dir look new
    y = os.path.join(base, "Y")
    ya = os.path.join(y, ".gitignore", "A")
    os.makedirs(ya)
    check(_run_rc(ctx, ya).rc == 0, "a plain run in Y/.gitignore/A failed")
    r = _run_rc(ctx, e, extra=["--state-dir", y])
    check(r.rc == 125 and b"must be a new or empty directory" in r.err,
          "a --state-dir holding a .gitignore directory was accepted: %s" % r.err[-300:])
    check(_run_rc(ctx, ya).rc == 0, "Y/.gitignore/A no longer runs")
    # rt18 X9: the inside state dir's path given as a --state-dir
    w9 = os.path.join(base, "W9")
    os.mkdir(w9)
    r = _run_rc(ctx, w9, extra=["--state-dir", os.path.join(w9, ".txbox") + "/"])
    check(r.rc == 125 and b"the name of the state dir inside a workspace" in r.err,
          "--state-dir W/.txbox was accepted: %s" % r.err[-300:])
    check(_run_rc(ctx, w9).rc == 0, "a plain run after the refused --state-dir failed")
    # rt20 R1-R3: a state dir that serves a workspace but lost its mark (a
    # copy replaced it) is never marked again, by run, rollback or recover
    w20, s20 = os.path.join(base, "W20"), os.path.join(base, "S20")
    os.mkdir(w20)
    ctx.run_txbox(["run", "-w", w20, "--state-dir", s20, "--", "sh", "-c", "echo h > f; $TXBOX_IT_UNSET"],
                  cwd=w20, timeout=60)
    t20 = _held_tx(s20)
    os.unlink(os.path.join(s20, ".txbox-state"))
    os.unlink(os.path.join(s20, "workspace"))
    sd20 = ["--state-dir", s20]
    for args in (["rollback", t20, "-w", w20] + sd20, ["recover", "-w", w20] + sd20,
                 ["run", "-w", w20] + sd20 + ["--", "true"], ["run", "-w", w20, "--", "true"]):
        r = ctx.run_txbox(args, cwd=w20, timeout=60)
        check(r.rc == 125 and (b"lost its mark" in r.err or b"not this workspace's state dir" in r.err),
              "%s used a state dir that lost its mark: %s" % (args[0], r.err[-300:]))
    check(not os.path.exists(os.path.join(s20, ".txbox-state")), "the state dir was marked again")
    # rt21 N80: a held transaction whose commit is refused before the
    # commit point stays held (it was discarded without a word)
    wh = os.path.join(base, "WH")
    os.mkdir(wh)
    r = ctx.run_txbox(["run", "-w", wh, "--", "sh", "-c", "mkdir fx && touch fx/.txbox-state; $TXBOX_IT_UNSET"],
                      cwd=wh, timeout=60)
    th = _held_tx(os.path.join(wh, ".txbox"))
    r = ctx.run_txbox(["commit", th, "-w", wh], cwd=wh, timeout=60)
    check(r.rc == 125 and b".txbox-state" in r.err, "the commit of a held .txbox-state was not refused: %s" % r.err)
    r = ctx.run_txbox(["rollback", th, "-w", wh], cwd=wh, timeout=60)
    check(r.rc == 0 and b"rolled back" in r.err, "the refused held transaction is gone: rc %d %s" % (r.rc, r.err))
    # rt20 R6: deleting a directory that holds a workspace's state
    p20 = os.path.join(base, "P20")
    os.makedirs(os.path.join(p20, "sub", "Q"))
    check(_run_rc(ctx, os.path.join(p20, "sub", "Q")).rc == 0, "a run in the nested workspace failed")
    res = ctx.run_json(p20, "rm -rf sub")
    # (rootless, rm itself may fail on the sealed lock file: rolled back either way)
    check(res.jget("outcome") == "rolled_back" and ("state of a txbox workspace" in (res.jget("error", "") or "")
                                                  or res.jget("exit_code") != 0),
          "a directory holding a workspace's state was deleted: %s %r" % (res.jget("outcome"), res.jget("error", "")))
    check(os.path.isdir(os.path.join(p20, "sub", "Q", ".txbox")), "the nested workspace's state is gone")
