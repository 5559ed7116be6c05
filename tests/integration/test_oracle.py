"""Commit and rollback oracles (DESIGN.md section 4, invariants 1 and 2).

commit/NAME: build the fixture twice (A, B); run the workload natively in A
(/bin/sh -c TEXT, cwd A) and through `txbox run -w B --json -- TEXT` (cwd B).
Then manifest(A) must equal manifest(B), with these rules:

  * directory mtimes and sizes are not compared (a merge legitimately touches
    directories differently from the native run); everything else is;
  * mtimes of non-directories: equal, or else BOTH must be "clock" mtimes:
    the native one within the native run's wall-clock window and the txbox
    one within the txbox run's window (+-1 s each). Fixture and asset mtimes
    and every explicit mtime a workload sets (touch -d/-r, cp -a, tar x) are
    years in the past, far outside both windows, so they must match exactly;
    a file the workload did not touch keeps its fixture mtime on both sides
    and so must match exactly; a file the workload wrote gets "now" on both
    sides and only has to lie in the right window. A commit that loses an
    explicit mtime, or touches a file the workload did not, is caught.
  * paths listed as volatile in the workload (git's index, which records
    inode numbers and ctimes) are compared by type/mode/owner/xattrs only.

It also checks the result JSON (outcome committed, exit status 0, exit_code 0,
no signal/rollback_reason), the command's stdout against the native run's,
that no overlay-private xattr leaked into the workspace, and the `changes`
list against the real before/after manifests of B:
  * every reported path has a valid kind and is consistent with the
    manifests (added: absent before, present after; deleted: the reverse;
    modified/metadata: present on both sides with the same type, metadata
    also with the same content; type_changed: present on both sides, type
    differs); no path is reported twice;
  * completeness: every path whose manifest entry changed is reported, itself
    or through a reported ancestor directory;
  * no spurious entries: a reported modified/metadata path must really differ,
    or have been touched by the native run (new inode or ctime: e.g. replaced
    by an identical copy); for directories: it or something below it.

rollback/NAME: the same workload followed by `exit 1`; afterwards B must be
identical to the fixture as it was before, directory mtimes included (only
the root's mtime is exempt: creating .txbox/ changes it), the result must be
rolled_back / exit status 1 / rollback_reason exit_status, and the workload
must have succeeded inside the sandbox before `exit 1` (a marker on stdout).
"""

import os
import time

import fixture
import manifest as mf
from harness import Fail, Skip, check, sh, short_json, test, which
from workloads import W

SLACK_NS = 1_000_000_000
KINDS = ("added", "modified", "deleted", "type_changed", "metadata")
ROLLBACK_STATE_LIMIT = 16 << 20


def _window_rule(native_win, tx_win):
    def rule(p, a, b):
        in_native = native_win[0] - SLACK_NS <= a.mtime_ns <= native_win[1] + SLACK_NS
        in_tx = tx_win[0] - SLACK_NS <= b.mtime_ns <= tx_win[1] + SLACK_NS
        if in_native and in_tx:
            return None
        why = []
        if not in_native:
            why.append("native mtime was set explicitly (not the clock)")
        if not in_tx:
            why.append("txbox mtime is outside the txbox run's time window")
        return "mtime_ns: native %d, txbox %d (%s)" % (a.mtime_ns, b.mtime_ns, "; ".join(why))
    return rule


def decode_path(s):
    if not isinstance(s, str):
        raise Fail("change path is not a string: %r" % (s,))
    try:
        b = s.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError as e:
        raise Fail("change path %r is not valid UTF-8/surrogateescape: %s" % (s, e))
    if b in (b"", b"."):
        return b"."
    return b


def _ancestors(p):
    while b"/" in p:
        p = p.rsplit(b"/", 1)[0]
        yield p
    if p != b".":
        yield b"."


def check_changes(res, before, after, native_touched=None):
    changes = res.jget("changes")
    if not isinstance(changes, list):
        raise Fail("changes is not a list: %r" % (changes,))
    problems = []
    reported = {}
    for c in changes:
        if not isinstance(c, dict) or "path" not in c or "kind" not in c:
            problems.append("malformed change entry %r" % (c,))
            continue
        p = decode_path(c["path"])
        k = c["kind"]
        if k not in KINDS:
            problems.append("%s: unknown kind %r" % (mf.show(p), k))
            continue
        if p in reported:
            problems.append("%s: reported twice (%s, %s)" % (mf.show(p), reported[p], k))
        reported[p] = k
        b, a = before.get(p), after.get(p)
        if k == "added" and not (a is not None and b is None):
            problems.append("%s: kind added, but %s" % (
                mf.show(p), "it existed before" if b is not None else "it does not exist after"))
        elif k == "deleted" and not (b is not None and a is None):
            problems.append("%s: kind deleted, but %s" % (
                mf.show(p), "it still exists" if a is not None else "it did not exist before"))
        elif k in ("modified", "metadata", "type_changed"):
            if a is None or b is None:
                problems.append("%s: kind %s, but it %s" % (
                    mf.show(p), k, "does not exist after" if a is None else "did not exist before"))
            elif k == "type_changed" and a.type == b.type:
                problems.append("%s: kind type_changed, but the type is %s before and after" %
                                (mf.show(p), a.type))
            elif k != "type_changed" and a.type != b.type:
                problems.append("%s: kind %s, but the type changed %s -> %s" %
                                (mf.show(p), k, b.type, a.type))
            elif k == "metadata" and any(getattr(a, f) != getattr(b, f) for f in ("size", "sha256", "target")):
                problems.append("%s: kind metadata, but the content changed" % mf.show(p))

    actual = mf.changed_paths(before, after, dir_mtime=False)
    touched = mf.changed_paths(before, after, dir_mtime=True)
    # hard-link group changes have no per-path field in the manifest: a path
    # whose link group changed counts as touched
    for g in before.links ^ after.links:
        for p in g:
            touched.setdefault(p, "links")
    for p in sorted(actual):
        if p in reported or any(x in reported for x in _ancestors(p)):
            continue
        problems.append("%s: changed (%s) but not reported in changes" % (mf.show(p), actual[p]))
    if native_touched:
        touched = dict(touched)
        for p in native_touched:
            touched.setdefault(p, "native")
    touched_anc = set()
    for p in touched:
        touched_anc.update(_ancestors(p))
    for p, k in reported.items():
        if k in ("modified", "metadata") and p not in touched and p not in touched_anc:
            problems.append("%s: reported %s, but nothing about it changed" % (mf.show(p), k))
    if problems:
        raise Fail("changes list inconsistent with the workspace:\n" +
                   mf.format_diff(["  " + x for x in problems], 25) +
                   "\n  changes: " + short_json({"changes": changes}, 900))


def _state_bytes(ws):
    total = 0
    top = os.path.join(ws, ".txbox")
    for dirpath, dirnames, filenames in os.walk(top):
        for f in filenames:
            try:
                st = os.lstat(os.path.join(dirpath, f))
                total += st.st_blocks * 512
            except OSError:
                pass
    return total


def _needs(ctx, wl):
    if wl.root_only and not ctx.privileged:
        raise Skip("needs root (chown to other uids)")
    for n in wl.needs:
        if not which(n):
            raise Skip("%s not installed" % n)


def _native(text, cwd):
    t0 = time.time_ns()
    p = sh(text if isinstance(text, str) else text, cwd=cwd, check_rc=False, timeout=300)
    t1 = time.time_ns()
    if p.returncode != 0:
        raise Fail("TEST BUG: workload fails natively (exit %d): %s" %
                   (p.returncode, p.stderr[-400:].decode("utf-8", "backslashreplace")))
    return p, (t0, t1)


def commit_oracle(ctx, wl):
    _needs(ctx, wl)
    d = ctx.mkdtemp("commit")
    A, B = os.path.join(d, "A"), os.path.join(d, "B")
    fixture.build(A, ctx.privileged)
    fixture.build(B, ctx.privileged)
    before = mf.manifest(B)
    before_a = mf.manifest(A)
    text = wl.render(ctx.assets if wl.uses_assets() else "")
    native, nwin = _native(text, A)
    res = ctx.run_json(B, text, timeout=300)
    try:
        res.expect(outcome="committed", exit_status=0, exit_code=0, signal=None,
                   rollback_reason=None)
    except Fail as e:
        # not committed: then the workspace must at least be exactly as before
        lines = mf.diff(before, mf.manifest(B), dir_mtime=True)
        if lines:
            raise Fail(str(e) + "\n  AND the workspace is neither the before- nor the native after-state; "
                       "vs before:\n" + mf.format_diff(["    " + x for x in lines], 20))
        raise Fail(str(e) + "\n  (the workspace is unchanged)")
    ma, mb = mf.manifest(A), mf.manifest(B)
    lines = mf.diff(ma, mb, mtime_check=_window_rule(nwin, (res.t0_ns, res.t1_ns)),
                    volatile=wl.volatile)
    if lines:
        raise Fail("workspace after commit differs from the native run (expected = native, got = txbox):\n"
                   + mf.format_diff(["  " + x for x in lines]))
    check(not mb.overlay_xattrs, "overlay-private xattrs published into the workspace: %r"
          % mb.overlay_xattrs[:5])
    check(not mb.errors, "unreadable entries in the workspace after commit: %r" % mb.errors[:5])
    if wl.stdout:
        out = res.stdout_bytes()
        if out != native.stdout:
            raise Fail("stdout differs from the native run: native %r, txbox %r" %
                       (native.stdout[:300], out[:300]))
    check_changes(res, before, mb, mf.touched_paths(before_a, ma))
    for p, e in mb.entries.items():
        if e.type == "f" and ma.get(p) and e.size and e.size >= (256 << 20):
            if e.blocks * 512 > max(ma.get(p).blocks * 512 * 4, 64 << 20):
                ctx.note("%s: sparse file densified by commit: native %d bytes allocated, txbox %d"
                         % (mf.show(p), ma.get(p).blocks * 512, e.blocks * 512))


def rollback_oracle(ctx, wl):
    _needs(ctx, wl)
    d = ctx.mkdtemp("rollback")
    B = os.path.join(d, "B")
    fixture.build(B, ctx.privileged)
    before = mf.manifest(B)
    text = wl.render(ctx.assets if wl.uses_assets() else "")
    marker = "__txbox_it_workload_ok__"
    if isinstance(text, bytes):
        full = b"{\n" + text + b"\n} && echo " + marker.encode() + b"\nexit 1\n"
    else:
        full = "{\n" + text + "\n} && echo " + marker + "\nexit 1\n"
    res = ctx.run_json(B, full, timeout=300)
    after = mf.manifest(B)
    lines = mf.diff(before, after, dir_mtime=True, root_mtime=False)
    try:
        res.expect(outcome="rolled_back", exit_status=1, exit_code=1, signal=None,
                   rollback_reason="exit_status")
    except Fail as e:
        raise Fail(str(e) + ("\n  AND the workspace differs from before:\n" +
                             mf.format_diff(["    " + x for x in lines], 20) if lines
                             else "\n  (the workspace is unchanged)"))
    if lines:
        raise Fail("workspace after rollback differs from before (expected = before):\n"
                   + mf.format_diff(["  " + x for x in lines]))
    check(not after.overlay_xattrs, "overlay-private xattrs left in the workspace: %r"
          % after.overlay_xattrs[:5])
    out = res.stdout_bytes()
    if marker.encode() not in out:
        raise Fail("the workload failed inside the sandbox (it succeeds natively); stderr: %r"
                   % res.stderr_bytes()[-500:])
    used = _state_bytes(B)
    check(used < ROLLBACK_STATE_LIMIT,
          "after rollback .txbox/ still holds %d bytes (the layer was not dropped?)" % used)


def _register():
    for wl in W:
        test("commit/" + wl.name, needs=wl.needs)(lambda ctx, wl=wl: commit_oracle(ctx, wl))
    for wl in W:
        test("rollback/" + wl.name, needs=wl.needs)(lambda ctx, wl=wl: rollback_oracle(ctx, wl))


_register()


@test("oracle/fixture-deterministic")
def fixture_deterministic(ctx):
    d = ctx.mkdtemp("fixture")
    a = fixture.build(os.path.join(d, "A"), ctx.privileged)
    b = fixture.build(os.path.join(d, "B"), ctx.privileged)
    lines = mf.diff(mf.manifest(a), mf.manifest(b), dir_mtime=True, root_mtime=True)
    check(not lines, "two fixture builds differ:\n" + mf.format_diff(lines))
    m = mf.manifest(a)
    check(len(m.links) == 1 and len(next(iter(m.links))) == 3, "hard-link group missing: %r" % m.links)
    check(m.get(fixture.deep_path()) is not None, "deep tree missing")
    check(m.get(fixture.NAME_INVALID) is not None and m.get(fixture.NAME_NEWLINE) is not None,
          "odd names missing")
    check(m.get(b"xattr_file").xattrs, "xattrs missing on xattr_file")


@test("oracle/manifest-detects-differences")
def manifest_detects(ctx):
    """Mutation test of the oracle itself: every kind of change to B must
    show up in diff(manifest(A), manifest(B))."""
    def J(root, *parts):
        return os.path.join(os.fsencode(root), *[os.fsencode(p) for p in parts])

    def relink(b):
        os.unlink(J(b, "hl2"))
        with open(J(b, "hl2"), "wb") as f:
            f.write(b"linked\n")
        ns = os.lstat(J(b, "hl1")).st_mtime_ns
        os.utime(J(b, "hl2"), ns=(ns, ns))

    def retarget(b):
        os.unlink(J(b, "link_rel"))
        os.symlink(b"file_4096", J(b, "link_rel"))

    def retype(b):
        os.unlink(J(b, "fifo"))
        open(J(b, "fifo"), "wb").close()

    def append(p, data):
        with open(p, "r+b") as f:
            f.seek(0, 2)
            f.write(data)

    mutations = [
        ("content", lambda b: append(J(b, "file_4096"), b"Z")),
        ("same-size content", lambda b: os.pwrite(os.open(J(b, "file_1m"), os.O_WRONLY), b"Z", 777777)),
        ("mode", lambda b: os.chmod(J(b, "file_small"), 0o600)),
        ("setuid", lambda b: os.chmod(J(b, "exec.sh"), 0o4755)),
        ("mtime", lambda b: os.utime(J(b, "file_small"), ns=(1, 1))),
        ("symlink mtime", lambda b: os.utime(J(b, "link_rel"), ns=(1, 1), follow_symlinks=False)),
        ("xattr", lambda b: os.setxattr(J(b, "file_small"), b"user.q", b"1")),
        ("xattr value", lambda b: os.setxattr(J(b, "xattr_file"), b"user.alpha", b"2")),
        ("symlink target", retarget),
        ("link group", relink),
        ("type", retype),
        ("deleted", lambda b: os.unlink(J(b, "file_empty"))),
        ("added", lambda b: open(J(b, "extra"), "wb").close()),
        ("deep content", lambda b: append(J(b, fixture.deep_path(), "leaf"), b"!")),
        ("odd name content", lambda b: append(J(b, fixture.NAME_INVALID), b"!")),
        ("sparse tail", None),
    ]
    d = ctx.mkdtemp("mutations")
    a = fixture.build(os.path.join(d, "A"), ctx.privileged)
    ma = mf.manifest(a)
    missed = []
    for i, (name, fn) in enumerate(mutations):
        b = fixture.build(os.path.join(d, "B%d" % i), ctx.privileged)
        if fn is None:  # two 3 MiB files, equal except one byte in a hole-only chunk
            for root, off in ((a, None), (b, 2 << 20)):
                with open(J(root, "sparse_probe"), "wb") as f:
                    f.truncate(3 << 20)
                    if off is not None:
                        f.seek(off)
                        f.write(b"\x01")
                os.utime(J(root, "sparse_probe"), ns=(5, 5))
            ma2 = mf.manifest(a)
            os.unlink(J(a, "sparse_probe"))
            if not mf.diff(ma2, mf.manifest(b)):
                missed.append(name)
            continue
        fn(b)
        if not mf.diff(ma, mf.manifest(b), dir_mtime=False):
            missed.append(name)
    check(not missed, "the manifest diff does not detect: %s" % ", ".join(missed))
