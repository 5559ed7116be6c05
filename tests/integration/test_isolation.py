"""Isolation (DESIGN.md section 4, invariant 4; section 3: stdin, -w, cwd)."""

import os
import secrets
import socket
import subprocess
import sys
import tempfile
import threading
import time

import manifest as mf
from harness import Fail, Skip, check, rmtree_force, sh_quote, short_json, small_ws, test, which

Q = sh_quote


def _host_probe_paths(token):
    """Host paths a sandboxed write must not reach: (must_fail, private). The
    first are shown read-only inside (writes must fail); the second are
    private tmpfs inside (writes may succeed there but must not reach the host)."""
    home = os.environ.get("HOME") or "/root"
    fail = ["/txbox-it-probe-" + token, "/etc/txbox-it-probe-" + token,
            "/usr/txbox-it-probe-" + token, "/var/txbox-it-probe-" + token,
            os.path.join(home, "txbox-it-probe-" + token)]
    private = ["/tmp/txbox-it-probe-" + token, "/var/tmp/txbox-it-probe-" + token,
               "/dev/shm/txbox-it-probe-" + token]
    return list(dict.fromkeys(fail)), private


@test("isolation/writes-outside-workspace-fail")
def writes_outside(ctx):
    """Sentinels next to the workspace (a real host directory, read-only
    inside): every write, delete, rename, chmod, xattr and link there, through
    an absolute or relative path, `..` or a symlink in the workspace, must
    fail, and the host must be unchanged afterwards (directory mtimes
    included). Probes in /, /etc, /usr, /var and $HOME likewise; probes in
    /tmp, /var/tmp and /dev/shm (private inside) only must not reach the host."""
    base = ctx.mkdtemp("iso")
    ws = small_ws(ctx, parent=base)
    out = os.path.join(base, "outside")
    os.makedirs(os.path.join(out, "dir"))
    with open(os.path.join(out, "file"), "w") as f:
        f.write("outside\n")
    with open(os.path.join(out, "dir", "inner"), "w") as f:
        f.write("inner\n")
    with open(os.path.join(base, "sibling.txt"), "w") as f:
        f.write("sibling\n")
    os.symlink(os.path.join(out, "file"), os.path.join(ws, "esc"))
    os.symlink(out, os.path.join(ws, "escdir"))
    os.symlink("../sibling.txt", os.path.join(ws, "esc_rel"))
    for p in (out, os.path.join(out, "dir"), base):
        os.utime(p, ns=(10**18, 10**18))
    parent_before = mf.manifest(base, skip_top=("ws",))
    ws_before = mf.manifest(ws)
    token = secrets.token_hex(6)
    probes_fail, probes_private = _host_probe_paths(token)
    O, P = Q(out), Q(base)
    attempts = [
        "echo x > %s/new" % O, "echo x >> %s/file" % O, "rm %s/file" % O,
        "mkdir %s/newdir" % O, "rm -r %s/dir" % O, "rmdir %s/dir" % O, "touch %s/file" % O,
        "touch %s" % O, "chmod 777 %s" % O, "chmod 600 %s/file" % O,
        "mv %s/file %s/moved" % (O, O), "ln -s x %s/lnk" % O, "ln %s/file %s/hardlnk" % (O, O),
        "truncate -s 0 %s/file" % O, "setfattr -n user.x -v 1 %s/file" % O,
        "echo x > %s/sibling-new" % P, "echo x >> %s/sibling.txt" % P, "rm %s/sibling.txt" % P,
        "echo pwned > esc", "echo x > escdir/via-symlink", "echo x >> esc_rel", "rm escdir/file",
        "echo x > ../sibling-new2", "cd .. && mkdir up-dir", "mv known.txt ../stolen",
        "ln known.txt ../hardlink-out", "cp known.txt ../copied",
    ] + ["echo x > %s" % Q(p) for p in probes_fail]
    private = ["echo x > %s" % Q(p) for p in probes_private]
    # one static line per attempt (no `sh -c "$1"`: a dynamic command would
    # be held by the policy as unresolved)
    script = "".join("if ( %s ) 2>/dev/null; then echo %s; else echo %s; fi\n"
                     % (a, Q("ESCAPED: " + a), Q("blocked: " + a)) for a in attempts)
    script += "".join("( %s ) 2>/dev/null\n" % a for a in private) + "exit 0\n"
    try:
        res = ctx.run_json(ws, script)
    finally:
        leaked = [p for p in probes_fail + probes_private if os.path.lexists(p)]
        for p in leaked:
            try:
                os.unlink(p)
            except OSError:
                pass
    problems = []
    text = res.stdout_bytes().decode("utf-8", "replace")
    escaped = [l for l in text.splitlines() if l.startswith("ESCAPED")]
    blocked = [l for l in text.splitlines() if l.startswith("blocked")]
    problems += ["write succeeded inside (must fail: the path is on the read-only host view): " + l[9:]
                 for l in escaped]
    problems += ["host file created: %s" % p for p in leaked]
    lines = mf.diff(parent_before, mf.manifest(base, skip_top=("ws",)), dir_mtime=True,
                    root_mtime=True)
    problems += ["host changed outside the workspace: " + l for l in lines]
    if not problems and len(escaped) + len(blocked) != len(attempts):
        problems.append("the script did not run every attempt: %r" % text[-300:])
    if problems:
        raise Fail("%d problem(s):\n" % len(problems) + "\n".join("  " + p for p in problems[:40]))
    res.expect(outcome="committed", exit_status=0)
    lines = mf.diff(ws_before, mf.manifest(ws), dir_mtime=True)
    check(not lines, "workspace changed although every write was outside it:\n" +
          mf.format_diff(["  " + l for l in lines]))


@test("isolation/workspace-under-tmp")
def workspace_under_tmp(ctx):
    """A workspace under the host's /tmp or /var/tmp (private tmpfs inside the
    sandbox) is still the real workspace: the command sees its files and the
    commit reaches the host."""
    for top in ("/tmp", "/var/tmp"):
        d = tempfile.mkdtemp(prefix="txbox-it-", dir=top)
        try:
            ws = small_ws(ctx, parent=d)
            res = ctx.run_json(ws, "cat known.txt && echo new > new.txt && rm sub/inner.txt")
            res.expect(outcome="committed", exit_status=0)
            check(res.stdout_bytes() == b"known\n", "%s: the workspace's files are not visible inside: %r"
                  % (top, res.stdout_bytes()))
            check(os.path.isfile(os.path.join(ws, "new.txt")), "%s: new.txt not committed" % top)
            check(not os.path.exists(os.path.join(ws, "sub", "inner.txt")), "%s: deletion not committed" % top)
            res = ctx.run_json(ws, "echo x > rolled && exit 1")
            res.expect(outcome="rolled_back", exit_status=1)
            check(not os.path.exists(os.path.join(ws, "rolled")), "%s: rollback left a file" % top)
        finally:
            rmtree_force(d)


@test("isolation/commit-does-not-follow-symlinks-out")
def commit_no_follow(ctx):
    """A symlink to a directory outside is replaced, inside, by a real
    directory holding a file: the commit must create the directory in the
    workspace, never write through the old symlink."""
    base = ctx.mkdtemp("iso")
    ws = small_ws(ctx, parent=base)
    out = os.path.join(base, "outside")
    os.mkdir(out)
    os.symlink(out, os.path.join(ws, "escdir"))
    os.symlink(os.path.join(out, "f"), os.path.join(ws, "escfile"))
    os.utime(out, ns=(10**18, 10**18))
    before = mf.manifest(base, skip_top=("ws",))
    res = ctx.run_json(ws, "rm escdir && mkdir escdir && echo inside > escdir/f && "
                           "rm escfile && echo inside > escfile")
    after = mf.manifest(base, skip_top=("ws",))
    lines = mf.diff(before, after, dir_mtime=True, root_mtime=True)
    check(not lines, "the commit wrote outside the workspace:\n" + "\n".join("  " + l for l in lines))
    res.expect(outcome="committed", exit_status=0)
    check(os.path.isdir(os.path.join(ws, "escdir")) and not os.path.islink(os.path.join(ws, "escdir")),
          "escdir is not a real directory after commit")
    with open(os.path.join(ws, "escdir", "f")) as f:
        check(f.read() == "inside\n", "escdir/f content wrong")
    check(not os.path.islink(os.path.join(ws, "escfile")), "escfile still a symlink after commit")


@test("isolation/private-tmp")
def private_tmp(ctx):
    ws = small_ws(ctx)
    token = secrets.token_hex(6)
    host_marker = "/tmp/txbox-it-host-" + token
    inside_file = "/tmp/txbox-it-inside-" + token
    with open(host_marker, "w") as f:
        f.write("host\n")
    try:
        script = ("echo \"LIST:$(ls -A /tmp | tr '\\n' ' ')\"; "
                  "test -e %s && echo HOST_MARKER_VISIBLE; "
                  "echo x > %s && echo TMP_WRITABLE; test -s %s && echo TMP_READBACK; exit 0"
                  % (host_marker, inside_file, inside_file))
        res = ctx.run_json(ws, script)
        appeared = os.path.lexists(inside_file)
    finally:
        os.unlink(host_marker)
        if os.path.lexists(inside_file):
            os.unlink(inside_file)
    out = res.stdout_bytes().decode("utf-8", "replace")
    problems = []
    if appeared:
        problems.append("a file written to /tmp inside appeared in the host's /tmp")
    if "HOST_MARKER_VISIBLE" in out:
        problems.append("the host's /tmp is visible inside")
    if "TMP_WRITABLE" not in out or "TMP_READBACK" not in out:
        problems.append("/tmp is not writable inside")
    listing = [l for l in out.splitlines() if l.startswith("LIST:")]
    if not listing or listing[0] != "LIST:":
        problems.append("/tmp is not empty inside: %r" % (listing[0] if listing else out[:200]))
    if problems:
        raise Fail("; ".join(problems) + "\n  stdout: %r" % out[:400])
    res.expect(outcome="committed", exit_status=0)


@test("isolation/no-network")
def no_network(ctx):
    ws = small_ws(ctx)
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    srv.settimeout(0.2)
    port = srv.getsockname()[1]
    accepted = []
    stop = threading.Event()

    def acceptor():
        while not stop.is_set():
            try:
                c, addr = srv.accept()
                accepted.append(addr)
                c.close()
            except socket.timeout:
                continue
            except OSError:
                return
    th = threading.Thread(target=acceptor, daemon=True)
    th.start()
    py = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else "python3"
    script = (
        "if bash -c 'echo hi > /dev/tcp/127.0.0.1/%d' 2>/dev/null; then echo BASH_CONNECTED; "
        "else echo BASH_BLOCKED; fi; "
        "if %s -c 'import socket; socket.create_connection((\"127.0.0.1\", %d), timeout=3)' "
        "2>/dev/null; then echo PY_CONNECTED; else echo PY_BLOCKED; fi; exit 0" % (port, py, port))
    try:
        res = ctx.run_json(ws, script)
        time.sleep(0.3)
    finally:
        stop.set()
        th.join(2)
        srv.close()
    out = res.stdout_bytes().decode("utf-8", "replace")
    problems = []
    if accepted:
        problems.append("the host listener on 127.0.0.1:%d accepted %d connection(s) from the sandbox"
                        % (port, len(accepted)))
    if "CONNECTED" in out:
        problems.append("connect succeeded inside: %r" % out.strip())
    if "BASH_BLOCKED" not in out or "PY_BLOCKED" not in out:
        problems.append("probes did not run as expected: %r" % out.strip())
    if problems:
        raise Fail("; ".join(problems))
    res.expect(outcome="committed", exit_status=0)
    check(res.jget("network", None) in ("none", None),
          "result JSON network is %r, expected 'none'" % res.jget("network", None))


@test("isolation/host-processes-invisible")
def host_processes(ctx):
    ws = small_ws(ctx)
    marker = "txbox-it-marker-" + secrets.token_hex(6)
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)", marker],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        script = ("for p in /proc/[0-9]*; do printf '%%s ' \"${p#/proc/}\"; "
                  "tr '\\0' ' ' < $p/cmdline 2>/dev/null; echo; done; "
                  "test -e /proc/%d && echo HOSTPID_EXISTS; exit 0" % proc.pid)
        res = ctx.run_json(ws, script)
    finally:
        proc.kill()
        proc.wait()
    out = res.stdout_bytes().decode("utf-8", "replace")
    lines = [l for l in out.splitlines() if l.strip()]
    problems = []
    if marker in out:
        problems.append("a host process (pid %d, argv containing %s) is visible inside" % (proc.pid, marker))
    pids = []
    for l in lines:
        tok = l.split(" ", 1)[0]
        if tok.isdigit():
            pids.append(int(tok))
    if not pids:
        problems.append("no /proc/PID entries inside at all (is /proc mounted?)")
    if len(pids) > 30:
        problems.append("%d processes visible inside (expected only the sandbox's own)" % len(pids))
    if problems:
        raise Fail("; ".join(problems) + "\n  pids visible inside: %s" % pids[:40])
    res.expect(outcome="committed", exit_status=0)
    if "HOSTPID_EXISTS" in lines:
        ctx.note("host pid %d also exists inside (a sandbox pid with the same number? visible pids: %r)"
                 % (proc.pid, pids[:10]))


@test("isolation/state-dir-invisible")
def state_invisible(ctx):
    ws = small_ws(ctx)
    r0 = ctx.run_json(ws, "true")
    r0.expect(outcome="committed", exit_status=0)
    check(os.path.isdir(os.path.join(ws, ".txbox")), "no .txbox/ state directory after a run")
    res = ctx.run_json(ws, "ls -A; test -e .txbox && echo STATE_VISIBLE; "
                           "ls -A .txbox 2>/dev/null && echo STATE_LISTED; "
                           "find . -name '*txbox*'; exit 0")
    res.expect(outcome="committed", exit_status=0)
    out = res.stdout_bytes().decode("utf-8", "replace")
    names = out.splitlines()
    check(".txbox" not in names and "STATE_VISIBLE" not in out and "STATE_LISTED" not in out
          and "./.txbox" not in names,
          "the state directory is visible inside the sandbox: %r" % out[:400])


@test("isolation/state-dir-not-writable-from-inside")
def state_not_writable(ctx):
    ws = small_ws(ctx)
    ctx.run_json(ws, "true").expect(outcome="committed", exit_status=0)
    state = os.path.join(ws, ".txbox")
    before = mf.manifest(state, skip_top=())
    res = ctx.run_json(ws, "mkdir -p .txbox && echo evil > .txbox/evil && echo evil > .txbox/.gitignore; exit 0")
    check(not os.path.lexists(os.path.join(state, "evil")),
          "a file written to .txbox/ inside was committed into the state directory "
          "(outcome %r)" % res.jget("outcome", None))
    with open(os.path.join(state, ".gitignore"), "rb") as f:
        gi = f.read()
    check(b"evil" not in gi, ".txbox/.gitignore overwritten from inside")
    check(res.jget("outcome", None) in ("committed", "rolled_back", "error"),
          "unexpected outcome %r" % res.jget("outcome", None))
    # txbox keeps working on this workspace
    r2 = ctx.run_json(ws, "echo ok > after")
    r2.expect(outcome="committed", exit_status=0)
    check(os.path.exists(os.path.join(ws, "after")), "next transaction not committed")


@test("isolation/state-dir-has-gitignore")
def state_gitignore(ctx):
    ws = small_ws(ctx)
    ctx.run_json(ws, "true").expect(outcome="committed", exit_status=0)
    p = os.path.join(ws, ".txbox", ".gitignore")
    check(os.path.isfile(p), ".txbox/.gitignore missing (DESIGN.md section 3, State)")
    with open(p) as f:
        check(f.read().strip() == "*", ".txbox/.gitignore is not '*'")


@test("isolation/stdin-is-dev-null")
def stdin_devnull(ctx):
    ws = small_ws(ctx)
    res = ctx.run_json(ws, "echo \"FD0:$(readlink /proc/self/fd/0)\"; cat > got_stdin; exit 0",
                       input=b"SECRET-STDIN-DATA\n", timeout=60)
    res.expect(outcome="committed", exit_status=0)
    out = res.stdout_bytes().decode("utf-8", "replace")
    with open(os.path.join(ws, "got_stdin"), "rb") as f:
        got = f.read()
    check(got == b"", "the command read the caller's stdin: %r" % got[:100])
    check("FD0:/dev/null" in out, "stdin inside is not /dev/null: %r" % out.strip())


@test("isolation/cwd-and-absolute-path")
def cwd_paths(ctx):
    ws = small_ws(ctx)
    ws_real = os.path.realpath(ws)
    sub = os.path.join(ws, "sub", "deeper")
    cases = [
        ("cwd=ws", ws, ws_real),
        ("cwd=ws/sub/deeper with -w ws", sub, os.path.join(ws_real, "sub", "deeper")),
        ("cwd=outside with -w ws", ctx.tmp_root, ws_real),
    ]
    for label, cwd, want in cases:
        res = ctx.run_json(ws, "pwd; pwd -P; test -f %s/known.txt && echo SAME_PATH; exit 0" % Q(ws_real),
                           cwd=cwd)
        res.expect(outcome="committed", exit_status=0)
        lines = res.stdout_bytes().decode("utf-8", "replace").splitlines()
        check(len(lines) >= 2 and lines[0] == want and lines[1] == want,
              "%s: pwd inside is %r, expected %r" % (label, lines[:2], want))
        check("SAME_PATH" in lines, "%s: the workspace is not at its absolute path inside" % label)


@test("isolation/relative-workspace-and-default")
def relative_ws(ctx):
    ws = small_ws(ctx)
    # -w relative to the caller's cwd
    res = ctx.run_txbox(["run", "-w", "sub", "--json", "--", "echo rel > rel.txt"], cwd=ws)
    res.parse_json()
    res.expect(outcome="committed", exit_status=0)
    check(os.path.isfile(os.path.join(ws, "sub", "rel.txt")), "-w sub (relative) did not commit into ws/sub")
    check(not os.path.exists(os.path.join(ws, "rel.txt")), "-w sub wrote into the cwd instead")
    # without -w, a current directory known only by its physical path ($PWD
    # names another) must be a workspace already: ws is not one yet
    env = dict(os.environ, PWD="/")
    res = ctx.run_txbox(["run", "--json", "--", "echo dflt > dflt.txt"], cwd=ws, env=env)
    check(res.rc == 125 and b"not a txbox workspace" in res.err,
          "without -w, a directory that is no workspace yet was used: rc %d %r" % (res.rc, res.err[-300:]))
    check(not os.path.exists(os.path.join(ws, "dflt.txt")), "the refused run changed the cwd")
    # -w defaults to the current directory: $PWD names it
    res = ctx.run_txbox(["run", "--json", "--", "echo dflt > dflt.txt"], cwd=ws, env=dict(os.environ, PWD=ws))
    res.parse_json()
    res.expect(outcome="committed", exit_status=0)
    check(os.path.isfile(os.path.join(ws, "dflt.txt")), "without -w, the cwd was not the workspace")


@test("isolation/argv-mode")
def argv_mode(ctx):
    ws = small_ws(ctx)
    res = ctx.run_json(ws, ["printf", "%s|", "a b", "$HOME", "*", "-n"])
    res.expect(outcome="committed", exit_status=0)
    check(res.stdout_bytes() == b"a b|$HOME|*|-n|",
          "several COMMAND arguments are not executed as an argv: stdout %r" % res.stdout_bytes())
