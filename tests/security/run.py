#!/usr/bin/python3
"""txbox escape suite: real attacks inside `txbox run`, each followed by a
check of the host.

usage: run.py [-k PATTERN]... [--as-user USER] [--txbox PATH] [--no-policy] [--list] [-v] [--keep]

  -k PATTERN      run only attacks whose name contains PATTERN (or matches it
                  as a glob); may be repeated
  --as-user USER  (as root) run the whole suite as USER via `runuser -u USER --`,
                  with temp dirs owned by USER (created with `useradd -m` when
                  missing); txbox then runs rootless (user namespaces)
  --txbox PATH    the binary (default: $TXBOX, else build/src/cli/txbox)
  --no-policy     do not pass --policy tests/security/allow-all.yaml
  --list          print the attack names and exit
  -v              show every txbox run
  --keep          keep the temp dirs (their paths are printed)

Prints `ok NAME` / `FAIL NAME: reason` (and `skip NAME: reason`) per attack,
`# ...` notes, and ends with exactly one line `security: N passed, N failed`;
exits 1 on any failure.

Temp dirs: /var/tmp/txbox-sec-* (workspaces; inside the sandbox /var/tmp is a
private tmpfs, so only the workspace itself is visible there) and a second
one the sandbox can see read-only, /var/lib/txbox-sec-* (as root; else under
~/.cache), for the fake HOME with planted secrets, the attack programs, the
Unix socket listener and the parents of some workspaces. A fake HOME under
/var/tmp would be hidden by the private tmpfs and make every secret test pass
vacuously. Both are always removed.
"""

import fnmatch
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback

sys.dont_write_bytecode = True  # never leave __pycache__ in the source tree
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import harness  # noqa: E402
from harness import Fail, Skip, Ctx, rmtree_force  # noqa: E402
import attacks  # noqa: E402,F401  (registers the attacks)

PYTHON = "/usr/bin/python3"


def parse(argv):
    o = {"k": [], "as_user": None, "txbox": None, "policy": True, "list": False, "verbose": False,
         "keep": False, "tmp_root": None, "vis_root": None}
    i = 0
    while i < len(argv):
        a = argv[i]
        nxt = argv[i + 1] if i + 1 < len(argv) else None
        if a == "-k" and nxt is not None:
            o["k"].append(nxt)
            i += 1
        elif a.startswith("-k") and len(a) > 2:
            o["k"].append(a[2:])
        elif a == "--as-user" and nxt is not None:
            o["as_user"] = nxt
            i += 1
        elif a.startswith("--as-user="):
            o["as_user"] = a.split("=", 1)[1]
        elif a == "--txbox" and nxt is not None:
            o["txbox"] = nxt
            i += 1
        elif a == "--no-policy":
            o["policy"] = False
        elif a == "--list":
            o["list"] = True
        elif a == "-v":
            o["verbose"] = True
        elif a == "--keep":
            o["keep"] = True
        elif a == "--tmp-root" and nxt is not None:  # internal: the --as-user child
            o["tmp_root"] = nxt
            i += 1
        elif a == "--vis-root" and nxt is not None:  # internal
            o["vis_root"] = nxt
            i += 1
        elif a in ("-h", "--help"):
            print(__doc__)
            sys.exit(0)
        else:
            print("run.py: unknown argument %r" % a, file=sys.stderr)
            print(__doc__, file=sys.stderr)
            sys.exit(2)
        i += 1
    return o


def find_txbox(o):
    t = o["txbox"] or os.environ.get("TXBOX") or os.path.join(HERE, "..", "..", "build", "src", "cli", "txbox")
    return os.path.abspath(t)


def selected(name, patterns):
    if not patterns:
        return True
    return any(p in name or fnmatch.fnmatch(name, p) for p in patterns)


def final(passed, failed):
    print("security: %d passed, %d failed" % (passed, failed), flush=True)
    return 1 if failed else 0


# ---------------------------------------------------------------------------

def as_user(o, argv):
    user = o["as_user"]
    if os.getuid() != 0:
        print("run.py: --as-user needs root", file=sys.stderr)
        return final(0, 1)
    try:
        pw = pwd.getpwnam(user)
    except KeyError:
        print("# creating the user %s (useradd -m)" % user, flush=True)
        r = subprocess.run(["useradd", "-m", user], capture_output=True, text=True)
        if r.returncode != 0:
            print("FAIL setup: useradd -m %s: %s" % (user, r.stderr.strip()))
            return final(0, 1)
        pw = pwd.getpwnam(user)
    runuser = shutil.which("runuser", path=harness.SYS_PATH)
    if not runuser:
        print("FAIL setup: no runuser")
        return final(0, 1)
    txbox = find_txbox(o)
    tmp_root = tempfile.mkdtemp(prefix="txbox-sec-", dir="/var/tmp")
    vis_root = tempfile.mkdtemp(prefix="txbox-sec-", dir="/var/lib")
    for d in (tmp_root, vis_root):
        os.chown(d, pw.pw_uid, pw.pw_gid)
        os.chmod(d, 0o755)
    # drop --as-user from the child's arguments
    child = []
    skip = False
    for a in argv:
        if skip:
            skip = False
            continue
        if a == "--as-user":
            skip = True
            continue
        if a.startswith("--as-user="):
            continue
        child.append(a)
    cmd = [runuser, "-u", user, "--", PYTHON, os.path.join(HERE, "run.py"), "--txbox", txbox,
           "--tmp-root", tmp_root, "--vis-root", vis_root] + child
    # (a --txbox PATH given by the caller stays after ours and wins)
    env = {"PATH": harness.SYS_PATH, "LANG": "C.UTF-8", "HOME": pw.pw_dir, "USER": user, "LOGNAME": user}
    print("# running as %s (uid %d): %s" % (user, pw.pw_uid, " ".join(cmd[4:])), flush=True)
    rc = 1
    try:
        p = subprocess.Popen(cmd, env=env, cwd="/")
        rc = p.wait()
    except KeyboardInterrupt:
        p.send_signal(signal.SIGINT)
        rc = p.wait()
    finally:
        if o["keep"]:
            print("# kept %s %s" % (tmp_root, vis_root))
        else:
            rmtree_force(tmp_root)
            rmtree_force(vis_root)
    return rc


def preflight(ctx):
    """txbox must run a trivial command (and accept the policy) before the
    attacks mean anything."""
    ws = ctx.workspace("preflight")
    try:
        r = ctx.run(ws, argv=["/bin/sh", "-c", "echo ok > preflight.txt"], timeout=60)
    except Fail as e:
        return "txbox cannot run a trivial command: %s" % e
    if r.outcome != "committed":
        return "a trivial command was not committed: %s" % r.describe()
    return None


def main(argv):
    o = parse(argv)
    if o["list"]:
        for name, _, _ in harness.ATTACKS:
            print(name)
        return 0
    if o["as_user"]:
        return as_user(o, argv)

    txbox = find_txbox(o)
    if not os.access(txbox, os.X_OK):
        print("FAIL setup: no txbox binary at %s (set $TXBOX or --txbox)" % txbox)
        return final(0, 1)
    policy = os.path.join(HERE, "allow-all.yaml") if o["policy"] else None

    made = []
    tmp_root = o["tmp_root"]
    if not tmp_root:
        tmp_root = tempfile.mkdtemp(prefix="txbox-sec-", dir="/var/tmp")
        made.append(tmp_root)
    vis_root = o["vis_root"]
    if not vis_root:
        base = "/var/lib" if os.getuid() == 0 else os.path.join(os.path.expanduser("~"), ".cache")
        os.makedirs(base, exist_ok=True)
        vis_root = tempfile.mkdtemp(prefix="txbox-sec-", dir=base)
        os.chmod(vis_root, 0o755)
        made.append(vis_root)

    def cleanup(*_):
        if o["keep"]:
            print("# kept %s %s" % (tmp_root, vis_root), flush=True)
            return
        for d in (tmp_root, vis_root):
            rmtree_force(d)

    def on_signal(sig, _frame):
        cleanup()
        print("security: interrupted by signal %d" % sig, flush=True)
        os._exit(1)
    signal.signal(signal.SIGTERM, on_signal)

    passed = failed = 0
    t_start = time.monotonic()
    try:
        ctx = Ctx(txbox, policy, tmp_root, vis_root, verbose=o["verbose"])
        print("# txbox %s as uid %d; temp dirs %s %s; policy %s" % (
            txbox, ctx.uid, tmp_root, vis_root, policy or "(none)"), flush=True)
        attacks.plant_secrets(ctx.home, ctx.secret)
        ctx.compile_all(sorted(os.path.join(HERE, "c", f) for f in os.listdir(os.path.join(HERE, "c"))
                               if f.endswith(".c")))
        for name, err in sorted(ctx.compile_errors.items()):
            print("# cannot compile c/%s.c: %s" % (name, err))
        ctx.reset_attack("preflight")
        err = preflight(ctx)
        ctx.run_cleanups()
        if err:
            print("FAIL preflight: %s" % err)
            return final(0, 1)
        for w in ctx.workspaces:
            rmtree_force(w)

        for name, fn, opts in harness.ATTACKS:
            if not selected(name, o["k"]):
                continue
            ctx.reset_attack(name)
            t0 = time.monotonic()
            status, reason = "ok", None
            try:
                if opts["root_only"] and not ctx.is_root:
                    raise Skip("needs root")
                fn(ctx)
            except Skip as e:
                status, reason = "skip", str(e)
            except Fail as e:
                status, reason = "FAIL", str(e)
            except Exception as e:  # noqa: BLE001 - a broken attack is a failure, not a crash
                status, reason = "FAIL", "harness error: %s: %s" % (
                    type(e).__name__, traceback.format_exc().strip().splitlines()[-3:])
            ctx.run_cleanups()
            if status != "skip":
                extra = ctx.generic_checks()
                if extra:
                    reason = "; ".join(([reason] if reason else []) + extra)
                    status = "FAIL"
            for n in ctx.notes:
                print("# %s: %s" % (name, n))
            dt = time.monotonic() - t0
            if status == "ok":
                passed += 1
                print("ok %s" % name + (" (%.1fs)" % dt if o["verbose"] else ""), flush=True)
            elif status == "skip":
                print("skip %s: %s" % (name, reason), flush=True)
            else:
                failed += 1
                print("FAIL %s: %s" % (name, reason.replace("\n", " ")), flush=True)
            for w in ctx.workspaces:
                rmtree_force(w)
    finally:
        cleanup()
    print("# %.1fs" % (time.monotonic() - t_start))
    return final(passed, failed)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
