"""Per-run costs taken out of the no-op transaction stay out. Counted
(syscalls under strace -ff, the order of TXBOX_TRACE marks), never timed:
each check fails on the code that paid the cost."""

import glob
import os
import re
import subprocess

from harness import check, small_ws, test

GO_BYTE = re.compile(r'^(sendto\(\d+, "[gm]", 1, |sendmsg\(\d+, \{msg_name=NULL, msg_namelen=0, '
                     r'msg_iov=\[\{iov_base="[gm]", iov_len=1\}\])')
FILE_UNLINK = re.compile(r'^unlinkat\(\d+, "[^"]*", 0\) += 0')


def _noop(ctx, ws, prefix=None, env=None):
    """txbox run -- true with the built-in policy (its cgroup limits), as
    the benchmark runs it; under strace -ff when prefix is given."""
    argv = [ctx.txbox, "run", "-w", ws, "--", "true"]
    if prefix:
        argv = ["strace", "-ff", "-qq", "-o", prefix] + argv
    r = subprocess.run(argv, cwd=ws, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, env=env, timeout=120)
    check(r.returncode == 0, "txbox run -- true exited %d: %s" % (r.returncode, r.stderr[-800:]))
    return r


def _supervisor_calls(ctx, ws):
    """The supervisor's syscalls (one per line, in order) of a no-op run that
    takes a spare (the run before left one)."""
    _noop(ctx, ws)
    prefix = os.path.join(ctx.mkdtemp("strace"), "st")
    _noop(ctx, ws, prefix=prefix)
    for f in glob.glob(prefix + ".*"):
        with open(f, errors="replace") as fh:
            lines = fh.read().splitlines()
        if lines and lines[0].startswith('execve("%s"' % ctx.txbox):
            return lines
    raise AssertionError("no strace output of the supervisor under %s" % prefix)


@test("costs/cgroup-sources-read-once", needs=("strace",))
def cgroup_sources_once(ctx):
    sup = _supervisor_calls(ctx, small_ws(ctx))
    for src in ("/proc/self/mountinfo", "/proc/self/cgroup"):
        n = sum(1 for l in sup if l.startswith("open") and '"%s"' % src in l)
        check(n <= 1, "the supervisor read %s %d times (cgroup lookups share one read)" % (src, n))


@test("costs/no-file-unlink-on-the-way", needs=("strace",))
def no_unlink_on_the_way(ctx):
    """Unlinking a file waits for its inode's eviction: the spare's old
    records go to stale/ and are deleted while the command runs (between
    the go-ahead and the supervise loop's pidfd_open), never before the
    command starts nor in the recycling after the commit."""
    sup = _supervisor_calls(ctx, small_ws(ctx))
    go = next((i for i, l in enumerate(sup) if GO_BYTE.match(l)), None)
    check(go is not None, "no go-ahead byte found in the supervisor's calls")
    loop = next((i for i, l in enumerate(sup) if i > go and l.startswith("pidfd_open(")), len(sup))
    bad = [l for i, l in enumerate(sup) if FILE_UNLINK.match(l) and not go < i < loop]
    check(not bad, "file unlinks outside the while-running window:\n  " + "\n  ".join(bad))


@test("costs/spare-opened-once", needs=("strace",))
def spare_opened_once(ctx):
    """Recovery checks a spare by fstatat; taking it opens it once."""
    sup = _supervisor_calls(ctx, small_ws(ctx))
    opens = [l for l in sup if re.match(r'^openat\(\d+, "\.spare-', l)]
    check(len(opens) == 1, "the spare was opened %d times:\n  %s" % (len(opens), "\n  ".join(opens)))
    fcntls = [l for l in sup if "F_SETFL" in l and "O_DIRECTORY" in l]
    check(not fcntls, "directories opened O_NONBLOCK and reset:\n  " + "\n  ".join(fcntls))


def _marks(ctx, ws):
    env = dict(os.environ, TXBOX_TRACE="1")
    r = _noop(ctx, ws, env=env)
    out = r.stderr.decode(errors="replace")
    return [m.group(1) for m in re.finditer(r"^trace .*? pid \S+\s+(.*)$", out, re.M)]


@test("costs/parallel-work-off-the-path")
def parallel_work(ctx):
    """The environment is filtered after the clone (while init builds the
    view), the socket guard is forked with the command, and as root the
    network namespace is made by the supervisor: none on init's way to
    the view."""
    ws = small_ws(ctx)
    _noop(ctx, ws)
    marks = _marks(ctx, ws)

    def at(label):
        check(label in marks, "no trace mark %r in %r" % (label, marks))
        return marks.index(label)
    check(at("sup: environment filtered") > at("sup: cloned"),
          "the environment is filtered before the sandbox is cloned: %r" % marks)
    check(at("init: socket guard forked") > at("init: go received"),
          "the socket guard is forked before the go-ahead, on init's way to the view: %r" % marks)
    if os.geteuid() == 0:  # rootless, only init (in its user namespace) may make one
        check("sup: network namespace made" in marks and "view: network namespace" not in marks,
              "as root the supervisor makes the network namespace, not init on its way to the "
              "view: %r" % marks)


def _traced_files(ctx, ws, command, policy=None):
    prefix = os.path.join(ctx.mkdtemp("strace"), "st")
    argv = ["strace", "-ff", "-qq", "-s", "1024", "-o", prefix, ctx.txbox, "run", "-w", ws]
    argv += (["--policy", policy] if policy else []) + ["--json", "--", command]
    r = subprocess.run(argv, cwd=ws, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=120)
    out = {}
    for f in glob.glob(prefix + ".*"):
        with open(f, errors="replace") as fh:
            out[f] = fh.read().splitlines()
    return r, out


@test("costs/overlay-unmount-syncs-nothing", needs=("strace",))
def overlay_volatile(ctx):
    """The overlay is mounted volatile: its unmount at init's exit syncs no
    filesystem while the supervisor waits."""
    ws = small_ws(ctx)
    r, files = _traced_files(ctx, ws, "true")
    check(r.returncode == 0, "txbox run -- true exited %d: %s" % (r.returncode, r.stderr[-800:]))
    mounts = [l for ls in files.values() for l in ls
              if l.startswith('mount("overlay"') and l.endswith("= 0")]
    check(len(mounts) == 1, "expected one overlay mount, got %r" % mounts)
    check(",volatile" in mounts[0], "the overlay is not mounted volatile: %s" % mounts[0])


@test("costs/held-layer-synced", needs=("strace",))
def held_synced(ctx):
    """With a volatile overlay nothing syncs a held layer but txbox: it
    syncs the filesystem before the state says held (a held transaction
    may be committed after a crash)."""
    ws = small_ws(ctx)
    r, files = _traced_files(ctx, ws, 'echo data > f; eval "$X"', policy=ctx.policy_file)
    check(b'"held"' in r.stdout, "the command was not held: %r" % r.stdout[-500:])
    sup = next((ls for ls in files.values() if ls and ls[0].startswith('execve("%s"' % ctx.txbox)), [])
    sync = next((i for i, l in enumerate(sup) if l.startswith("syncfs(") and l.endswith("= 0")), None)
    state = next((i for i, l in enumerate(sup) if re.match(r'^renameat2?\(\d+, "\.state\.[0-9a-f]{8}\.tmp"', l)), None)
    check(state is not None, "no state written: %s" % "\n".join(sup[-30:]))
    check(sync is not None and sync < state, "no syncfs before the held state was written")
