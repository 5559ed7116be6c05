"""Spare transaction directories (tx_recycle): a finished transaction's
directory is emptied to its skeleton and reused by the next one. Whatever
was in it must never reach a later transaction or the workspace."""

import os
import stat

import manifest as mf
from harness import check, small_ws, test


def _txdir(ws):
    return os.path.join(ws, ".txbox", "tx")


def _spares(ws):
    return sorted(e for e in os.listdir(_txdir(ws)) if e.startswith(".spare-"))


def _skeleton_problems(sp):
    """What is in the spare directory sp beyond the empty skeleton (no journal,
    no state, nothing displaced, nothing the command wrote, no index entry)."""
    out = []
    for root, dirs, files in os.walk(sp):
        rel = os.path.relpath(root, sp)
        for n in dirs + files:
            r = os.path.normpath(os.path.join(rel, n))
            # stale/: the emptied layer and the old workspace record, deleted
            # by the spare's next user; journal and state go when the spare is
            # taken (into stale/); lock: the transaction's lock file (tx/lock.c)
            if r in ("displaced", "stale", "stale/0", "stale/0/upper", "stale/0/work",
                     "stale/0/work/work", "stale/0/work/index", "stale/0/root", "stale/workspace",
                     "journal", "state", "lock"):
                continue
            if r.startswith("stale/0/work/work/"):
                continue  # the kernel's scratch dir
            if r == "stale/0/upper/.txbox" and stat.S_ISCHR(os.lstat(os.path.join(sp, r)).st_mode):
                continue
            out.append(r)
    return out


@test("spare/commit-and-rollback-leave-empty-skeletons")
def spare_clean(ctx):
    ws = small_ws(ctx)
    res = ctx.run_json(ws, "mkdir -p deep/er && echo a > deep/er/f && echo b > known.txt && ln -s x sl")
    res.expect(outcome="committed", exit_status=0)
    sp = _spares(ws)
    check(len(sp) == 1, "after a commit: spares %r, other entries %r" % (sp, os.listdir(_txdir(ws))))
    probs = _skeleton_problems(os.path.join(_txdir(ws), sp[0]))
    check(not probs, "the spare after a commit holds %r" % probs)
    res = ctx.run_json(ws, "echo z > new; rm -f known.txt; mkdir d2; exit 1")
    res.expect(outcome="rolled_back", exit_status=1)
    sp2 = _spares(ws)
    check(len(sp2) == 1 and sp2 != sp, "the second run should have reused %r and left its own, got %r" % (sp, sp2))
    probs = _skeleton_problems(os.path.join(_txdir(ws), sp2[0]))
    check(not probs, "the spare after a rollback holds %r" % probs)


@test("spare/planted-content-never-published")
def spare_planted(ctx):
    """A spare with content in its upper (a tampered or damaged state dir)
    must be scrubbed: nothing of it may appear in the view or the commit."""
    ws = small_ws(ctx)
    ctx.run_json(ws, "true").expect(outcome="committed", exit_status=0)
    sp = _spares(ws)
    check(len(sp) == 1, "no spare after a run: %r" % os.listdir(_txdir(ws)))
    up = os.path.join(_txdir(ws), sp[0], "stale", "0", "upper")
    with open(os.path.join(up, "planted"), "w") as f:
        f.write("from an earlier transaction\n")
    os.mkdir(os.path.join(up, "planted-dir"))
    try:
        os.setxattr(up, "user.planted", b"1")
    except OSError:
        pass
    before = mf.manifest(ws)
    res = ctx.run_json(ws, "ls -a; getfattr -d . 2>/dev/null; true")
    res.expect(outcome="committed", exit_status=0)
    out = res.json.get("stdout", "")
    check("planted" not in out, "planted content visible to the command: %r" % out)
    check(res.json.get("changes") == [], "changes from planted content: %r" % res.json.get("changes"))
    lines = mf.diff(before, mf.manifest(ws), dir_mtime=True)
    check(not lines, "workspace changed:\n%s" % mf.format_diff(["  " + l for l in lines]))


@test("spare/at-most-two-kept")
def spare_bounded(ctx):
    ws = small_ws(ctx)
    for i in range(4):
        ctx.run_json(ws, "echo %d > f%d" % (i, i)).expect(outcome="committed", exit_status=0)
    entries = os.listdir(_txdir(ws))
    check(all(e.startswith(".spare-") for e in entries) and 1 <= len(entries) <= 2,
          "expected one or two spares, got %r" % entries)


@test("spare/rolled-back-root-xattr-not-kept")
def spare_root_xattr(ctx):
    ws = small_ws(ctx)
    res = ctx.run_json(ws, "setfattr -n user.rolled -v secret-value . && exit 1")
    res.expect(outcome="rolled_back", exit_status=1)
    sp = _spares(ws)
    check(len(sp) == 1, "no spare after a rollback: %r" % os.listdir(_txdir(ws)))
    up = os.path.join(_txdir(ws), sp[0], "stale", "0", "upper")
    names = [n for n in os.listxattr(up) if not n.startswith(("trusted.overlay.", "user.overlay."))]
    check(not names, "the spare's upper root keeps the rolled-back xattrs %r" % names)
    check("user.rolled" not in os.listxattr(ws), "the rolled-back xattr reached the workspace")


@test("spare/old-journal-never-replayed")
def spare_old_journal(ctx):
    """A spare keeps its last commit's journal until it is taken. A txbox
    killed right after taking it must not leave that journal to recovery,
    which would undo the earlier, finished commit."""
    import signal
    import subprocess
    import time
    ws = small_ws(ctx)
    ctx.run_json(ws, "echo committed-before > kept.txt && echo changed >> known.txt").expect(
        outcome="committed", exit_status=0)
    before = mf.manifest(ws)
    p = subprocess.Popen([ctx.txbox, "run", "-w", ws, "--", "echo x > other; sleep 30"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ws)
    time.sleep(1.0)
    p.send_signal(signal.SIGKILL)
    p.wait()
    time.sleep(0.3)
    r = ctx.run_txbox(["recover", "-w", ws], cwd=ws)
    check(r.rc == 0, "recover exited %d: %r" % (r.rc, r.err[-300:]))
    lines = mf.diff(before, mf.manifest(ws), dir_mtime=False)
    check(not lines, "recovery changed the workspace (an old journal replayed?):\n%s"
          % mf.format_diff(["  " + l for l in lines]))
    with open(os.path.join(ws, "kept.txt")) as f:
        check(f.read() == "committed-before\n", "the earlier commit was undone")


FD_CYCLE = r"""
import os, socket
f = os.open("held.txt", os.O_RDWR | os.O_CREAT, 0o644)
a, b = socket.socketpair()
# descriptors in flight in a cycle of Unix sockets outlive every process:
# a workspace file (keeps the overlay alive) and stdout/stderr (keep the
# output pipes open)
socket.send_fds(a, [b"x"], [f, 1, 2])
socket.send_fds(a, [b"x"], [b.fileno()])
socket.send_fds(b, [b"x"], [a.fileno()])
os._exit(0)
"""


@test("spare/descriptors-in-flight")
def spare_fd_in_flight(ctx):
    """A command that leaves descriptors in flight in a socket cycle — its
    output pipes and a file of the workspace's overlay — cannot make txbox
    wait for ever, spin, or break the next transactions (whose overlay must
    not be mounted on dirs the lingering one still holds)."""
    import time
    ws = small_ws(ctx)
    with open(os.path.join(ws, "cycle.py"), "w") as f:
        f.write(FD_CYCLE)
    t0 = time.time()
    res = ctx.run_json(ws, "python3 cycle.py; echo done", extra=["--timeout", "20"], timeout=40)
    took = time.time() - t0
    check(took < 10, "txbox took %.1f s after the command left descriptors in flight" % took)
    check(res.json.get("outcome") in ("committed", "rolled_back"), "outcome %r" % res.json.get("outcome"))
    for i in range(3):
        r = ctx.run_json(ws, "echo %d > after-%d" % (i, i), timeout=40)
        r.expect(outcome="committed", exit_status=0)
