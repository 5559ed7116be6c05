#!/usr/bin/python3
"""A NON-ISOLATING stand-in for `txbox run`, used only to validate the
integration suite itself (TXBOX=tests/integration/selftest/mock_txbox.py
tests/integration/run.py -k commit/). It runs the command directly in the
workspace after taking a full `cp -a` backup outside it, and restores the
backup on failure. It is "correct" for the commit and rollback oracles by
construction (commit == native run); it fails the isolation tests by design.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import manifest as mf  # noqa: E402

LIMIT = 1 << 20


def die(msg):
    sys.stderr.write("txbox: %s\n" % msg)
    sys.exit(125)


def main(argv):
    if not argv or argv[0] != "run":
        die("usage: txbox run [-w DIR] [--timeout SEC] [--validate CMD] [--json] -- COMMAND...")
    ws, timeout, validate, js = os.getcwd(), None, None, False
    i = 1
    while i < len(argv) and argv[i] != "--":
        a = argv[i]
        if a in ("-w", "--timeout", "--validate", "--policy"):
            if i + 1 >= len(argv):
                die("%s needs an argument" % a)
            v = argv[i + 1]
            if a == "-w":
                ws = os.path.abspath(v)
                ws_arg = v
            elif a == "--policy":
                pass
            elif a == "--timeout":
                try:
                    timeout = float(v)
                except ValueError:
                    die("bad --timeout %r" % v)
                if timeout <= 0:
                    die("bad --timeout %r" % v)
            else:
                validate = v
            i += 2
        elif a == "--json":
            js = True
            i += 1
        else:
            die("unknown option %r" % a)
    cmd = argv[i + 1:]
    if not cmd:
        die("no command")
    if not os.path.exists(ws):
        die("workspace %s does not exist" % ws)
    if not os.path.isdir(ws):
        die("workspace %s is not a directory" % ws)
    if os.path.realpath(ws) in ("/", "/usr", "/etc", "/bin", "/var", "/home"):
        die("refusing system directory %s as workspace" % ws)
    state = os.path.join(ws, ".txbox")
    os.makedirs(state, exist_ok=True)
    with open(os.path.join(state, ".gitignore"), "w") as f:
        f.write("*\n")
    backup = tempfile.mkdtemp(prefix="mock-txbox-", dir="/var/tmp")
    bk = os.path.join(backup, "ws")
    subprocess.run(["cp", "-a", ws, bk], check=True)
    shutil.rmtree(os.path.join(bk, ".txbox"), ignore_errors=True)
    before = mf.manifest(ws)
    argvx = ["/bin/sh", "-c", cmd[0]] if len(cmd) == 1 else cmd
    t0 = time.time()
    here = os.getcwd()
    cwd = here if (here + "/").startswith(ws + "/") else ws
    p = subprocess.Popen(argvx, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, start_new_session=True, cwd=cwd)
    timed_out = False
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        os.killpg(p.pid, signal.SIGKILL)
        out, err = b"", b""
        try:
            out, err = p.communicate(timeout=1)
        except subprocess.TimeoutExpired:
            pass
    rc = p.returncode
    res = {"tx": "mock", "decision": {"decision": "allow", "rule": "mock", "reason": "", "suggestion": ""},
           "exit_code": None, "signal": None, "rollback_reason": None, "limit": None,
           "stdout_truncated": len(out) > LIMIT, "stderr_truncated": len(err) > LIMIT,
           "stdout": out[:LIMIT].decode("utf-8", "surrogateescape"),
           "stderr": err[:LIMIT].decode("utf-8", "surrogateescape"),
           "timings_ms": {"policy": 0.0, "snapshot": 0.0, "exec": (time.time() - t0) * 1000,
                          "finish": 0.0, "total": 0.0},
           "limits": {"memory": 0, "pids": 0, "cpu": 0, "disk": 0, "mechanism": "rlimit"},
           "network": "none", "error": None, "changes": []}
    status = 0
    if timed_out:
        res["rollback_reason"], status = "timeout", 124
    elif rc is not None and rc < 0:
        res["signal"], res["rollback_reason"], status = -rc, "signal", 128 - rc
    elif rc != 0:
        res["exit_code"], res["rollback_reason"], status = rc, "exit_status", rc
    else:
        res["exit_code"] = 0
        if validate is not None:
            v = subprocess.run(["/bin/sh", "-c", validate], stdin=subprocess.DEVNULL, cwd=cwd)
            if v.returncode != 0:
                res["rollback_reason"], status = "validation", 1
    if status == 0:
        after = mf.manifest(ws)
        ch = mf.changed_paths(before, after)
        kinds = {"added": "added", "deleted": "deleted", "type_changed": "type_changed",
                 "changed": "modified"}
        res["changes"] = [{"path": p.decode("utf-8", "surrogateescape"), "kind": kinds[k]}
                          for p, k in sorted(ch.items())]
        res["outcome"] = "committed"
    else:
        res["outcome"] = "rolled_back"
        for n in os.listdir(ws):
            if n == ".txbox":
                continue
            full = os.path.join(ws, n)
            if os.path.isdir(full) and not os.path.islink(full):
                subprocess.run(["chmod", "-R", "u+rwx", full])
                shutil.rmtree(full)
            else:
                os.unlink(full)
        subprocess.run(["cp", "-a", bk + "/.", ws + "/"], check=True)
        st = os.lstat(bk)
        os.chmod(ws, st.st_mode & 0o7777)
    subprocess.run(["rm", "-rf", backup])
    if js:
        sys.stdout.write(json.dumps(res) + "\n")
    else:
        sys.stdout.write(res["stdout"])
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
