#!/usr/bin/python3
"""txbox harm suite: real destructive commands through `txbox run` inside a
disposable root, each followed by a check of everything they could harm.

usage: run.py [--mode root|user] [--user NAME] [--txbox PATH] [--policy allow|default|both]
              [-k PATTERN]... [--list] [-v]

  --mode root     txbox runs as root (default)
  --mode user     txbox runs rootless as --user (default txbox-test), dropped
                  to with setpriv inside the disposable root
  --txbox PATH    the binary (default: $TXBOX, else build/src/cli/txbox)
  --policy WHICH  allow: tests/security/allow-all.yaml (the sandbox must
                  hold); default: policy/default.yaml; both (default)
  -k PATTERN      only cases whose name contains PATTERN (or glob-matches it)
  --list          print the case names and exit
  -v              print every txbox result

Must start as root: the disposable root needs mount, PID and network
namespaces. Prints `ok NAME` / `FAIL NAME: reason` / `skip NAME: reason`,
then `harm: N passed, N failed, N skipped`; exits 1 on any failure.
"""

import fnmatch
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

import cases  # noqa: E402
import cgjail  # noqa: E402
import session  # noqa: E402

PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
VALUED = ("--mode", "--user", "--txbox", "--policy", "--inside", "--cgroups", "-k")
# CI must stay bounded even when a txbox under test hangs in every case.
BUDGET = 600
NAMESPACES = ["--mount", "--pid", "--net", "--uts", "--ipc", "--fork", "--propagation", "private"]


def parse(argv):
    o = {"mode": "root", "user": "txbox-test", "txbox": None, "policy": "both", "k": [],
         "list": False, "verbose": False, "inside": None, "cgroups": ""}
    i = 0
    while i < len(argv):
        a, nxt = argv[i], argv[i + 1] if i + 1 < len(argv) else None
        if a in VALUED and nxt is None:
            sys.exit("run.py: %s needs a value" % a)
        if a == "-k":
            o["k"].append(nxt)
        elif a in VALUED[:-1]:
            o[a[2:]] = nxt
        elif a == "--list":
            o["list"] = True
        elif a == "-v":
            o["verbose"] = True
        else:
            sys.exit(__doc__)
        i += 2 if a in VALUED else 1
    if o["mode"] not in ("root", "user") or o["policy"] not in ("allow", "default", "both"):
        sys.exit(__doc__)
    return o


def selected(o):
    pols = ["allow", "default"] if o["policy"] == "both" else [o["policy"]]
    out = []
    for c in cases.CASES:
        for pol in pols:
            name = "%s/%s/%s" % (o["mode"], pol, c.name)
            if o["k"] and not any(k in name or fnmatch.fnmatch(name, k) for k in o["k"]):
                continue
            out.append((name, c, pol))
    return out


def finish(passed, failed, skipped):
    print("harm: %d passed, %d failed, %d skipped" % (passed, failed, skipped), flush=True)
    sys.exit(1 if failed else 0)


def outside(o, argv):
    """Check what can be checked from the real host, then re-run this
    script as PID 1 of fresh namespaces on a stage dir removed at the end."""
    if os.getuid() != 0:
        print("skip harm: needs root (the disposable root is built with mount/PID/net namespaces)")
        finish(0, 0, 1)
    if o["mode"] == "user":
        try:
            pwd.getpwnam(o["user"])
        except KeyError:
            print("skip harm/%s: no user %s to run rootless as" % (o["mode"], o["user"]))
            finish(0, 0, 1)
    txbox = o["txbox"] or os.environ.get("TXBOX") or os.path.join(ROOT, "build/src/cli/txbox")
    if not os.access(txbox, os.X_OK):
        print("FAIL harm: no txbox binary at %s" % txbox)
        finish(0, 1, 0)
    stage = tempfile.mkdtemp(prefix="txbox-harm.", dir="/var/tmp")
    jail = cgjail.Jail()
    try:
        jail.enter()
        cmd = ["unshare"] + NAMESPACES + ["--", PYTHON, "-B", os.path.abspath(__file__)] + argv
        cmd += ["--inside", stage, "--txbox", os.path.abspath(txbox), "--cgroups", jail.arg()]
        rc = subprocess.call(cmd)
    finally:
        jail.leave()
        shutil.rmtree(stage, ignore_errors=True)
    sys.exit(rc)


def main():
    o = parse(sys.argv[1:])
    if o["list"]:
        for name, _, _ in selected(o):
            print(name)
        return
    if o["inside"] is None:
        outside(o, sys.argv[1:])
    s = session.Session(o, ROOT)
    try:
        s.setup()
    except Exception as e:  # noqa: BLE001 - any setup failure is one FAIL line
        print("FAIL harm/%s/setup: %s: %s" % (o["mode"], type(e).__name__, e), flush=True)
        finish(0, 1, 0)
    s.selftest()
    deadline = time.monotonic() + BUDGET
    for name, case, pol in selected(o):
        if time.monotonic() > deadline:
            s.report(name, None, skip="the suite's %d s budget is spent (txbox hanging or a slow machine)" % BUDGET)
            continue
        try:
            s.run_case(name, case, pol)
        except Exception as e:  # noqa: BLE001 - one broken case must not end the suite
            s.report(name, ["harness error: %s: %s" % (type(e).__name__, e)])
    finish(s.passed, s.failed, s.skipped)


if __name__ == "__main__":
    main()
