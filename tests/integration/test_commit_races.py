"""What the commit does with a workspace another writer changes while it
runs (issue 8, red team round 2): it never acts on a name swapped for a
symlink after the check, never crosses a mount point inside the
workspace, never blocks on a FIFO or another process's file lease, and
never writes a journal recovery could not read back."""

import os
import subprocess
import sys
import time

from harness import check, small_ws, test

# Swaps two names of a directory with renameat2(RENAME_EXCHANGE) until killed.
SWAPPER = r'''
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
d = os.open(sys.argv[1], os.O_PATH | os.O_DIRECTORY)
a, b = sys.argv[2].encode(), sys.argv[3].encode()
while True:
    libc.renameat2(d, a, d, b, 2)
'''

# Holds a write lease on a file; gives way once (so the sandbox's copy-up
# can read it), takes it again and then never gives way.
LEASER = r'''
import fcntl, os, signal, sys, time
p = sys.argv[1]; state = {"breaks": 0, "fd": -1}
def onio(*a):
    state["breaks"] += 1
    if state["breaks"] == 1 and state["fd"] >= 0:
        fcntl.fcntl(state["fd"], fcntl.F_SETLEASE, fcntl.F_UNLCK); os.close(state["fd"]); state["fd"] = -1
signal.signal(signal.SIGIO, onio)
end = time.time() + float(sys.argv[2])
while time.time() < end:
    if state["fd"] < 0 and state["breaks"] < 2:
        try:
            f = os.open(p, os.O_RDONLY)
            try:
                fcntl.fcntl(f, fcntl.F_SETLEASE, fcntl.F_WRLCK); state["fd"] = f
            except OSError:
                os.close(f)
        except OSError:
            pass
    time.sleep(0.001)
'''


def _racing(ctx, ws, d, a, b, command, tries, budget):
    """Run command in ws tries times (at most budget seconds) while a
    swapper exchanges d/a and d/b; returns the longest run in seconds."""
    longest, t_end = 0.0, time.monotonic() + budget
    for _ in range(tries):
        if time.monotonic() > t_end:
            break
        sw = subprocess.Popen([sys.executable, "-c", SWAPPER, d, a, b])
        try:
            time.sleep(0.05)
            t0 = time.monotonic()
            ctx.run_txbox(["run", "--timeout", "5", "-w", ws, "--", command], cwd=ws, timeout=60)
            longest = max(longest, time.monotonic() - t0)
        finally:
            sw.kill()
            sw.wait()
        yield longest


@test("races/meta-never-follows-a-name-swapped-for-a-symlink", root_only=True)
def meta_symlink_race(ctx):
    ws = small_ws(ctx)
    canary = os.path.join(os.path.dirname(ws), "canary")
    with open(canary, "w") as f:
        f.write("root secret\n")
    d = os.path.join(ws, "shared")
    os.mkdir(d)
    cmd = ("for i in $(seq 200); do [ -L shared/f ] || chmod 0606 shared/f 2>/dev/null && "
           "[ ! -L shared/f ] && exit 0; done; exit 1")
    for attempt in range(40):
        for n in ("f", "l"):
            if os.path.lexists(os.path.join(d, n)):
                os.unlink(os.path.join(d, n))
        with open(os.path.join(d, "f"), "w") as f:
            f.write("data\n")
        os.chmod(os.path.join(d, "f"), 0o644)
        os.symlink(canary, os.path.join(d, "l"))
        os.chmod(canary, 0o600)
        for _ in _racing(ctx, ws, d, "f", "l", cmd, 1, 60):
            pass
        mode = os.stat(canary).st_mode & 0o7777
        check(mode == 0o600, "attempt %d: the commit chmod'ed %s outside the workspace to %o" %
              (attempt, canary, mode))


@test("races/planning-never-blocks-on-a-fifo-swapped-in", root_only=True)
def fifo_race(ctx):
    ws = small_ws(ctx)
    d = os.path.join(ws, "shared")
    os.mkdir(d)
    cmd = ("for i in $(seq 200); do [ -p shared/f ] || chmod 0606 shared/f 2>/dev/null && "
           "[ ! -p shared/f ] && exit 0; done; exit 1")
    for attempt in range(300):
        for n in ("f", "p"):
            if os.path.lexists(os.path.join(d, n)):
                os.unlink(os.path.join(d, n))
        with open(os.path.join(d, "f"), "w") as f:
            f.write("data\n")
        os.mkfifo(os.path.join(d, "p"))
        # a blocked run fails the test after 60 s (run_txbox's own limit)
        for longest in _racing(ctx, ws, d, "f", "p", cmd, 1, 150):
            check(longest < 20, "attempt %d: txbox run --timeout 5 took %.0f s" % (attempt, longest))


@test("races/planning-never-waits-for-a-file-lease")
def lease(ctx):
    ws = small_ws(ctx)
    f = os.path.join(ws, "leased")
    with open(f, "w") as fh:
        fh.write("data\n")
    holder = subprocess.Popen([sys.executable, "-c", LEASER, f, "120"])
    try:
        time.sleep(1)
        t0 = time.monotonic()
        res = ctx.run_json(ws, "chmod 0606 leased; sleep 0.5", extra=["--timeout", "5"], timeout=150)
        took = time.monotonic() - t0
    finally:
        holder.kill()
        holder.wait()
    check(took < 25, "txbox run --timeout 5 waited %.0f s for another process's lease" % took)
    check(res.json is not None and res.json.get("outcome") in ("committed", "rolled_back"),
          "no result: %s" % res.where())
    if res.json.get("outcome") == "committed":
        check(os.stat(f).st_mode & 0o777 == 0o606, "committed, but the mode is not the command's")


@test("races/commit-never-crosses-a-mount-point", root_only=True)
def submount(ctx):
    ws = small_ws(ctx)
    outside = os.path.join(os.path.dirname(ws), "mounted")
    os.mkdir(outside)
    os.chmod(outside, 0o700)
    with open(os.path.join(outside, "file"), "w") as f:
        f.write("keep\n")
    os.mkdir(os.path.join(ws, "mnt"))
    # the sandbox shows the empty mount-point directory; its metadata changes
    inner = ("mount --bind %s %s/mnt && exec %s run -w %s -- "
             "'chmod 0777 mnt; chown 1001:1001 mnt; setfattr -n user.rt -v x mnt; touch -d @1000 mnt; true'"
             % (outside, ws, ctx.txbox, ws))
    p = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", inner],
                       capture_output=True, text=True, timeout=120)
    st = os.stat(outside)
    fst = os.stat(os.path.join(outside, "file"))
    check((st.st_mode & 0o7777, st.st_uid) == (0o700, 0),
          "the directory mounted in the workspace became %o %d (rc %d: %s)" %
          (st.st_mode & 0o7777, st.st_uid, p.returncode, p.stderr[-300:]))
    try:
        x = os.getxattr(outside, "user.rt")
    except OSError:
        x = None
    check(x is None, "the commit set an xattr on the mounted directory")
    check(st.st_mtime != 1000 and fst.st_mode & 0o777 == 0o644, "the mounted directory's times were changed")
    check("mount point" in p.stderr, "no message naming the mount point: %s" % p.stderr[-300:])
    check(p.returncode != 0, "the commit of changes to a mount point was reported as done")


def _at_deep(ws, parts, create=False):
    """An fd of ws/parts... (each opened relative to the last: the whole path
    is longer than PATH_MAX)."""
    fd = os.open(ws, os.O_RDONLY | os.O_DIRECTORY)
    for c in parts:
        if create:
            os.mkdir(c, dir_fd=fd)
        nfd = os.open(c, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = nfd
    return fd


def _put(dfd, name, text):
    f = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644, dir_fd=dfd)
    os.write(f, text.encode())
    os.close(f)


def _get(dfd, name):
    f = os.open(name, os.O_RDONLY, dir_fd=dfd)
    try:
        return os.read(f, 100).decode().strip()
    finally:
        os.close(f)


@test("journal/a-path-too-long-for-recovery-is-refused-before-any-change")
def deep_path(ctx):
    ws = small_ws(ctx)
    parts = ["d" * 200] * 21  # 4220 bytes: more than recovery reads back
    wfd = os.open(ws, os.O_RDONLY | os.O_DIRECTORY)
    dfd = _at_deep(ws, parts, create=True)
    try:
        script = ("import os\n"
                  "for n in ('a', 'z'): open(n, 'w').write('new\\n')\n"
                  "for c in %r: os.chdir(c)\n"
                  "open('deep', 'w').write('new\\n')\n" % parts)
        for k in (1, 2):
            for d, n in ((wfd, "a"), (wfd, "z"), (dfd, "deep")):
                _put(d, n, "old\n")
            env = dict(os.environ, TXBOX_FAULT_COMMIT_AFTER=str(k))
            ctx.run_txbox(["run", "-w", ws, "--", "python3 -c %s" % _shq(script)], cwd=ws, env=env)
            rec = ctx.run_txbox(["recover", "-w", ws], cwd="/")
            state = [_get(wfd, "a"), _get(wfd, "z"), _get(dfd, "deep")]
            check(state in (["old"] * 3, ["new"] * 3),
                  "killed after %d op(s): the workspace is half-applied: %r (recover: %s)" %
                  (k, state, rec.where()))
            later = ctx.run_json(ws, "true")
            check(later.json is not None and later.json.get("outcome") == "committed",
                  "after the crash, a later run fails: %s" % later.where())
    finally:
        os.close(dfd)
        os.close(wfd)


def _shq(s):
    return "'" + s.replace("'", "'\\''") + "'"
