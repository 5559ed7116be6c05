"""Exit statuses, validation, bad workspaces, bounded output, result JSON shape
(DESIGN.md section 3), and what a commit must never publish (invariant 5)."""

import os
import stat
import subprocess

import manifest as mf
from harness import Fail, Skip, check, small_ws, test

MiB = 1 << 20


def _ws_unchanged(before, ws, what):
    lines = mf.diff(before, mf.manifest(ws), dir_mtime=True)
    check(not lines, "%s: workspace changed:\n%s" % (what, mf.format_diff(["  " + l for l in lines])))


@test("exit/command-status-3")
def exit3(ctx):
    ws = small_ws(ctx)
    before = mf.manifest(ws)
    res = ctx.run_json(ws, "echo x > new && echo y >> known.txt && exit 3")
    res.expect(outcome="rolled_back", exit_status=3, exit_code=3, signal=None,
               rollback_reason="exit_status")
    _ws_unchanged(before, ws, "exit 3")


@test("exit/command-not-found-127")
def exit127(ctx):
    ws = small_ws(ctx)
    res = ctx.run_json(ws, "echo x > new; txbox-it-no-such-command")
    res.expect(outcome="rolled_back", exit_status=127, exit_code=127, rollback_reason="exit_status")


@test("exit/killed-by-signal-9")
def sig9(ctx):
    ws = small_ws(ctx)
    before = mf.manifest(ws)
    res = ctx.run_json(ws, "echo x > new; kill -9 $$")
    res.expect(outcome="rolled_back", exit_status=137, signal=9, rollback_reason="signal")
    _ws_unchanged(before, ws, "kill -9")


@test("exit/killed-by-signal-15")
def sig15(ctx):
    ws = small_ws(ctx)
    res = ctx.run_json(ws, ["sh", "-c", "echo x > new; kill -TERM $$"])
    res.expect(outcome="rolled_back", exit_status=143, signal=15, rollback_reason="signal")
    check(not os.path.exists(os.path.join(ws, "new")), "rolled back but 'new' exists")


@test("exit/validate-false-rolls-back")
def validate_false(ctx):
    ws = small_ws(ctx)
    before = mf.manifest(ws)
    res = ctx.run_json(ws, "echo x > x", extra=["--validate", "false"])
    problems = []
    if res.rc == 0:
        problems.append("exit status 0 although validation failed (0 only when committed)")
    if res.jget("outcome", None) != "rolled_back":
        problems.append("outcome %r, expected rolled_back" % res.jget("outcome", None))
    if res.jget("rollback_reason", None) != "validation":
        problems.append("rollback_reason %r, expected validation" % res.jget("rollback_reason", None))
    if problems:
        raise Fail("; ".join(problems) + "\n  " + res.where())
    _ws_unchanged(before, ws, "--validate false")
    ctx.note("--validate false: txbox exit status %d, exit_code %r" % (res.rc, res.jget("exit_code", None)))


@test("exit/validate-sees-changes-and-commits")
def validate_true(ctx):
    ws = small_ws(ctx)
    res = ctx.run_json(ws, "echo created > x && rm known.txt",
                       extra=["--validate", "test -f x && grep -q created x && test ! -e known.txt"])
    res.expect(outcome="committed", exit_status=0, rollback_reason=None)
    check(os.path.isfile(os.path.join(ws, "x")), "x not committed")
    check(not os.path.exists(os.path.join(ws, "known.txt")), "known.txt not deleted")


@test("exit/validate-not-decisive-when-command-fails")
def validate_after_failure(ctx):
    ws = small_ws(ctx)
    res = ctx.run_json(ws, "echo x > x; exit 4", extra=["--validate", "true"])
    res.expect(outcome="rolled_back", exit_status=4, exit_code=4, rollback_reason="exit_status")
    check(not os.path.exists(os.path.join(ws, "x")), "x committed although the command failed")


def _bad_workspace(ctx, ws_arg, cwd, must_not_exist):
    pre = {p: os.path.lexists(p) for p in must_not_exist}
    res = ctx.run_txbox(["run", "-w", ws_arg, "--json", "--", "echo x > txbox-it-bad-ws"], cwd=cwd,
                        timeout=60)
    created = [p for p, was in pre.items() if not was and os.path.lexists(p)]
    problems = []
    if res.rc != 125:
        problems.append("exit status %d, expected 125" % res.rc)
    err = res.err.decode("utf-8", "replace")
    if not err.strip():
        problems.append("nothing on stderr")
    elif ws_arg not in err:
        problems.append("stderr does not name %r: %r" % (ws_arg, err.strip()[:300]))
    if created:
        problems.append("created: %s" % ", ".join(created))
    if problems:
        raise Fail("-w %s: %s\n  %s" % (ws_arg, "; ".join(problems), res.where()))
    return res


@test("exit/workspace-missing")
def ws_missing(ctx):
    base = ctx.mkdtemp("badws")
    missing = os.path.join(base, "does-not-exist")
    os.utime(base, ns=(10**18, 10**18))
    before = mf.manifest(base)
    _bad_workspace(ctx, missing, base, [missing])
    lines = mf.diff(before, mf.manifest(base), dir_mtime=True, root_mtime=True)
    check(not lines, "the missing workspace's parent changed: %s" % lines)


@test("exit/workspace-is-a-file")
def ws_file(ctx):
    base = ctx.mkdtemp("badws")
    f = os.path.join(base, "afile")
    with open(f, "w") as fh:
        fh.write("data\n")
    os.utime(base, ns=(10**18, 10**18))
    before = mf.manifest(base)
    _bad_workspace(ctx, f, base, [f + "/.txbox"])
    lines = mf.diff(before, mf.manifest(base), dir_mtime=True, root_mtime=True)
    check(not lines, "the file workspace's directory changed: %s" % lines)


@test("exit/workspace-is-root")
def ws_root(ctx):
    _bad_workspace(ctx, "/", ctx.tmp_root, ["/.txbox", "/txbox-it-bad-ws"])


@test("exit/workspace-is-usr")
def ws_usr(ctx):
    _bad_workspace(ctx, "/usr", ctx.tmp_root, ["/usr/.txbox", "/usr/txbox-it-bad-ws"])


@test("exit/bad-usage-125")
def bad_usage(ctx):
    ws = small_ws(ctx)
    cases = [
        ["run", "-w", ws, "--json", "--"],                      # no command
        ["run", "-w", ws, "--timeout", "abc", "--json", "--", "true"],
        ["run", "-w", ws, "--timeout", "-3", "--json", "--", "true"],
        ["run", "-w", ws, "--no-such-option", "--", "true"],
        ["run", "-w"],
    ]
    problems = []
    for args in cases:
        res = ctx.run_txbox(args, cwd=ws, timeout=60)
        if res.rc != 125:
            problems.append("txbox %s: exit status %d, expected 125" % (" ".join(args[3:] if args[1:2] == ["-w"] else args), res.rc))
        elif not res.err.strip():
            problems.append("txbox %s: no message on stderr" % " ".join(args))
    check(not problems, "; ".join(problems))
    check(not os.listdir(os.path.join(ws, "sub", "deeper")), "workspace changed")


@test("exit/output-bounded-stdout")
def output_stdout(ctx):
    ws = small_ws(ctx)
    full = subprocess.run("seq 1 1000000 | head -c 3145728", shell=True, stdout=subprocess.PIPE).stdout
    assert len(full) == 3 * MiB
    res = ctx.run_json(ws, "seq 1 1000000 | head -c 3145728; echo done > marker", timeout=180)
    res.expect(outcome="committed", exit_status=0, rollback_reason=None)
    out = res.stdout_bytes()
    problems = []
    if len(out) != MiB:
        problems.append("captured stdout is %d bytes, expected %d" % (len(out), MiB))
    if out != full[:len(out)]:
        problems.append("captured stdout is not the first bytes of the output")
    if res.jget("stdout_truncated") is not True:
        problems.append("stdout_truncated is %r" % res.jget("stdout_truncated"))
    if res.jget("stderr_truncated") is not False:
        problems.append("stderr_truncated is %r" % res.jget("stderr_truncated"))
    check(not problems, "; ".join(problems))
    check(os.path.isfile(os.path.join(ws, "marker")), "marker not committed")


@test("exit/output-bounded-stderr-and-failure")
def output_stderr(ctx):
    ws = small_ws(ctx)
    res = ctx.run_json(ws, "seq 1 1000000 | head -c 3145728 >&2; exit 1", timeout=180)
    res.expect(outcome="rolled_back", exit_status=1, exit_code=1, rollback_reason="exit_status")
    err = res.stderr_bytes()
    check(len(err) == MiB, "captured stderr is %d bytes, expected %d" % (len(err), MiB))
    check(res.jget("stderr_truncated") is True, "stderr_truncated is %r" % res.jget("stderr_truncated"))
    check(res.jget("stdout_truncated") is False, "stdout_truncated is %r" % res.jget("stdout_truncated"))


@test("exit/result-json-shape")
def json_shape(ctx):
    ws = small_ws(ctx)
    res = ctx.run_json(ws, "echo hi; echo err >&2; echo n > n")
    res.expect(outcome="committed", exit_status=0)
    j = res.json
    want = {"tx": str, "outcome": str, "decision": dict, "exit_code": int, "signal": type(None),
            "rollback_reason": type(None), "limit": type(None), "stdout": str, "stderr": str,
            "stdout_truncated": bool, "stderr_truncated": bool, "changes": list,
            "timings_ms": dict, "limits": dict, "network": str, "error": type(None)}
    problems = []
    for k, t in want.items():
        if k not in j:
            problems.append("missing %r" % k)
        elif not isinstance(j[k], t) or (t is int and isinstance(j[k], bool)):
            problems.append("%r is %r, expected %s" % (k, j[k], t.__name__))
    for k in ("policy", "snapshot", "exec", "finish", "total"):
        v = j.get("timings_ms", {}).get(k) if isinstance(j.get("timings_ms"), dict) else None
        if not isinstance(v, (int, float)) or isinstance(v, bool) or v < 0:
            problems.append("timings_ms.%s is %r" % (k, v))
    if isinstance(j.get("decision"), dict) and j["decision"].get("decision") not in ("allow", "hold"):
        problems.append("decision.decision is %r" % j["decision"].get("decision"))
    if isinstance(j.get("limits"), dict) and j["limits"].get("mechanism") not in ("cgroup2", "cgroup1", "rlimit"):
        problems.append("limits.mechanism is %r" % j["limits"].get("mechanism"))
    if j.get("stdout") != "hi\n" or j.get("stderr") != "err\n":
        problems.append("stdout/stderr %r/%r" % (j.get("stdout"), j.get("stderr")))
    if j.get("changes") != [{"path": "n", "kind": "added"}]:
        problems.append("changes %r, expected [{'path': 'n', 'kind': 'added'}]" % (j.get("changes"),))
    check(not problems, "; ".join(problems))


@test("exit/text-mode")
def text_mode(ctx):
    ws = small_ws(ctx)
    res = ctx.run_txbox(["run", "-w", ws, "--", "echo hello-from-inside; echo t > t"], cwd=ws, timeout=120)
    check(res.rc == 0, "exit status %d without --json\n  %s" % (res.rc, res.where()))
    check(os.path.isfile(os.path.join(ws, "t")), "not committed without --json")
    res = ctx.run_txbox(["run", "-w", ws, "--", "exit 5"], cwd=ws, timeout=120)
    check(res.rc == 5, "exit status %d without --json for exit 5" % res.rc)


@test("exit/sequence-of-transactions")
def sequence(ctx):
    """commit, rollback, commit on one workspace: state is reused correctly."""
    ws = small_ws(ctx)
    ctx.run_json(ws, "echo 1 > one && mkdir d && echo a > d/a").expect(outcome="committed", exit_status=0)
    before = mf.manifest(ws)
    ctx.run_json(ws, "rm -r d one && echo 2 > two; exit 1").expect(outcome="rolled_back", exit_status=1)
    _ws_unchanged(before, ws, "rollback after a commit")
    ctx.run_json(ws, "echo b > d/b && rm one").expect(outcome="committed", exit_status=0)
    check(sorted(os.listdir(os.path.join(ws, "d"))) == ["a", "b"], "d/ content wrong")
    check(not os.path.exists(os.path.join(ws, "one")) and not os.path.exists(os.path.join(ws, "two")),
          "one/two wrong after the third transaction")


# ---- invariant 5: what a commit never publishes ------------------------------------

@test("guard/setuid-setgid-not-published")
def setuid_guard(ctx):
    ws = small_ws(ctx)
    res = ctx.run_json(ws, "cp /bin/true su && chmod 4755 su && cp /bin/true sg && chmod 2755 sg && "
                           "chmod 6755 known.txt && mkdir sgdir && chmod 2775 sgdir; "
                           "stat -c '%a %n' su sg known.txt sgdir")
    problems = []
    for name in ("su", "sg", "known.txt"):
        p = os.path.join(ws, name)
        if os.path.lexists(p) and os.lstat(p).st_mode & (stat.S_ISUID | stat.S_ISGID):
            problems.append("%s committed with mode 0%o" % (name, stat.S_IMODE(os.lstat(p).st_mode)))
    p = os.path.join(ws, "sgdir")
    if os.path.lexists(p) and os.lstat(p).st_mode & (stat.S_ISUID | stat.S_ISGID):
        problems.append("sgdir committed with mode 0%o" % stat.S_IMODE(os.lstat(p).st_mode))
    check(not problems, "setuid/setgid bits published: " + "; ".join(problems) +
          "\n  inside: %r outcome %r" % (res.stdout_bytes(), res.jget("outcome", None)))


@test("guard/device-nodes-not-published")
def device_guard(ctx):
    ws = small_ws(ctx)
    res = ctx.run_json(ws, "mknod nulldev c 1 3 2>/dev/null && echo MKNOD_OK; "
                           "mknod wh c 0 0 2>/dev/null && echo WHITEOUT_OK; "
                           "mknod blk b 7 0 2>/dev/null && echo BLK_OK; exit 0")
    problems = []
    for name in ("nulldev", "wh", "blk"):
        p = os.path.join(ws, name)
        if os.path.lexists(p):
            m = os.lstat(p).st_mode
            if stat.S_ISCHR(m) or stat.S_ISBLK(m):
                problems.append("%s is a device node in the workspace" % name)
    check(not problems, "; ".join(problems) + "\n  inside: %r" % res.stdout_bytes())
    check(os.path.isfile(os.path.join(ws, "known.txt")), "known.txt lost")
    check(res.jget("outcome", None) in ("committed", "rolled_back"),
          "outcome %r" % res.jget("outcome", None))


@test("guard/socket-refused")
def socket_guard(ctx):
    """A socket in the layer is never published: the transaction rolls back,
    reason "policy", exit status 126, an error naming the socket, and the
    workspace is unchanged."""
    ws = small_ws(ctx)
    before = sorted(e for e in os.listdir(ws) if e != ".txbox")
    res = ctx.run_json(ws, "echo kept > new.txt && python3 -c 'import socket; "
                           "socket.socket(socket.AF_UNIX).bind(\"sock\")'")
    res.expect(outcome="rolled_back", exit_status=126)
    check(res.jget("rollback_reason", None) == "policy", "rollback_reason %r" % res.jget("rollback_reason", None))
    err = res.jget("error", None) or ""
    check("sock" in err and "socket" in err, "error does not name the socket: %r" % err)
    after = sorted(e for e in os.listdir(ws) if e != ".txbox")
    check(after == before, "workspace changed: %r" % after)


@test("exit/no-user-namespaces-rootless", root_only=True)
def no_userns(ctx):
    """A user without user namespaces: a command the policy denies is still
    denied (126); any other gets one clear message and 125, the workspace
    untouched. With user.max_user_namespaces = 0 where this host lets us
    set it, else by the clone failure txbox would see (TXBOX_FAULT_CLONE)."""
    import pwd
    import shutil
    import subprocess
    user = os.environ.get("TEST_USER", "txbox-test")
    try:
        pw = pwd.getpwnam(user)
    except KeyError:
        raise Skip("no user %s" % user)
    if not shutil.which("runuser"):
        raise Skip("no runuser")
    base = ctx.mkdtemp("nouserns")
    ws = small_ws(ctx, parent=base)
    binary = os.path.join(base, "txbox")
    shutil.copy(ctx.txbox, binary)
    for root, dirs, files in os.walk(base):
        for n in dirs + files:
            os.lchown(os.path.join(root, n), pw.pw_uid, pw.pw_gid)
    os.lchown(base, pw.pw_uid, pw.pw_gid)
    os.chmod(base, 0o755)
    os.chmod(binary, 0o755)
    before = mf.manifest(ws)
    knob = "/proc/sys/user/max_user_namespaces"
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    saved = None
    try:
        with open(knob) as f:
            saved = f.read().strip()
        with open(knob, "w") as f:
            f.write("0\n")
    except OSError:
        saved = None
        env["TXBOX_FAULT_CLONE"] = "28"  # ENOSPC: what clone(CLONE_NEWUSER) gives at the limit
    try:
        def run(text):
            return subprocess.run(["runuser", "-u", user, "--", "env"] + ["%s=%s" % kv for kv in env.items()]
                                  + [binary, "run", "-w", ws, "--", text],
                                  capture_output=True, cwd="/", timeout=60, env=env)
        denied = run("rm -rf /")
        allowed = run("echo x > new")
    finally:
        if saved is not None:
            with open(knob, "w") as f:
                f.write(saved + "\n")
    check(denied.returncode == 126, "denied command without user namespaces: exit %d (want 126): %r"
          % (denied.returncode, denied.stderr[-300:]))
    check(allowed.returncode == 125, "allowed command without user namespaces: exit %d (want 125): %r"
          % (allowed.returncode, allowed.stderr[-300:]))
    check(b"user namespaces" in allowed.stderr, "the error does not name user namespaces: %r" % allowed.stderr[-300:])
    _ws_unchanged(before, ws, "no user namespaces")


@test("exit/rollback-of-unsearchable-dirs")
def rollback_unsearchable(ctx):
    """What the command leaves without permissions — a directory without
    search or write permission, with a tree inside — is still removed on
    rollback (as the unprivileged user too), with no error and nothing left."""
    ws = small_ws(ctx)
    before = mf.manifest(ws)
    res = ctx.run_json(ws, "mkdir -p d/sub/x && touch d/sub/x/f && chmod 500 d/sub/x && chmod 644 d && "
                           "mkdir e && chmod 0 e && exit 1")
    res.expect(outcome="rolled_back", exit_status=1, rollback_reason="exit_status")
    _ws_unchanged(before, ws, "unsearchable dirs")
    left = [e for e in os.listdir(os.path.join(ws, ".txbox", "tx")) if not e.startswith(".spare-")]
    check(not left, "transactions left behind: %r" % left)


@test("exit/check-net-judges-like-run")
def check_net(ctx):
    """`check --net` decides as `run --net` does: an unresolved remote target
    is contained without the network and held with it; other commands still
    refuse --net."""
    import json
    ws = small_ws(ctx)
    line = 'git push "$R" main'

    def verdict(*extra):
        p = subprocess.run([ctx.txbox, "check", "-w", ws, *extra, "--json", "--", line],
                           capture_output=True, timeout=30)
        check(p.returncode in (0, 3), "check %r: exit %d: %r" % (extra, p.returncode, p.stderr[-300:]))
        return json.loads(p.stdout)["decision"]

    check(verdict() == "allow", "without --net: %s (want allow)" % verdict())
    check(verdict("--net") == "hold", "with --net: %s (want hold)" % verdict("--net"))
    p = subprocess.run([ctx.txbox, "recover", "-w", ws, "--net"], capture_output=True, timeout=30)
    check(p.returncode == 125 and b"does not apply" in p.stderr, "recover --net: exit %d %r"
          % (p.returncode, p.stderr[-200:]))
