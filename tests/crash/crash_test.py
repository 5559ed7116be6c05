#!/usr/bin/env python3
"""Invariant 3: a crash at any instant of a commit recovers to the whole
before-state (or, once the commit point is passed, the whole after-state).

For each workload, txbox is SIGKILLed (TXBOX_FAULT_COMMIT_AFTER=N, a fault
injection point in snapshot/commit.c) after N of its commit ops, for every N
from 0 until the commit completes. Recovery is then triggered both ways that
exist — `txbox recover` and simply the next `txbox run` — and the workspace
manifest must equal the before-manifest exactly (type, mode, owner, size,
content, symlink target, xattrs, hard-link groups, mtimes of every entry,
directories included). Also: SIGKILL of txbox while the command runs leaves
no transaction, mount or process behind after the next invocation.

Ends with "crash: N passed, N failed".
"""
import hashlib
import os
import stat
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TXBOX = os.environ.get("TXBOX", os.path.join(ROOT, "build/src/cli/txbox"))
POLICY = None

WORKLOADS = {
    "mixed": "rm f1; echo new > f2; mkdir e; echo z > e/z; rm -r d; ln -s f3 l; chmod 700 .; "
             "setfattr -n user.t -v 1 f4; mv f5 f6",
    "replace-types": "rm -r d && echo file > d; rm f1 && mkdir f1; rm sl && mkdir sl; touch -d @1000 f3",
    "hardlinks": "echo more >> h1; ln h1 h3; ln f2 f2b",
    # a changed member of a hard-link group (large, names in two dirs) is
    # published as a new inode under each name; a sparse file keeps its holes
    "group-sparse": "echo more >> g1 && chmod 640 d/g2 && "
                    "printf y | dd of=sparse bs=1 seek=100000000 conv=notrunc 2>/dev/null && chmod 600 sparse",
    "many": "mkdir -p many sub && " + " && ".join(f"echo {i} > sub/{i}" for i in range(1, 13))
            + " && rm f1 f2 f3 && touch -d @5 f4",
}



def tx_leftovers(ws):
    """Entries of .txbox/tx that are not clean spares. A spare (an emptied
    transaction directory kept for reuse) holds an empty displaced/ and its
    emptied layer under stale/ (deleted by its next user): an upper with
    nothing but the .txbox whiteout, an empty overlay index. journal and
    state may stay until the spare is taken (never read under a spare's
    name); the old workspace record goes into stale/ with the layer."""
    txd = os.path.join(ws, ".txbox", "tx")
    bad = []
    for e in os.listdir(txd):
        p = os.path.join(txd, e)
        if not e.startswith(".spare-"):
            bad.append(e)
            continue
        def ls(rel):
            try:
                return sorted(os.listdir(os.path.join(p, rel)))
            except OSError as ex:
                return [f"<{ex.strerror}>"]
        up = os.path.join(p, "stale/0/upper")
        upper_ok = all(n == ".txbox" and stat.S_ISCHR(os.lstat(os.path.join(up, n)).st_mode)
                       for n in ls("stale/0/upper"))
        idx = os.path.join(p, "stale/0/work/index")
        index_ok = not os.path.lexists(idx) or ls("stale/0/work/index") == []
        if (not {"displaced", "stale"} <= set(ls("")) <= {"displaced", "stale", "journal", "state", "lock"}
                or ls("displaced") or ls("stale") not in (["0"], ["0", "workspace"])
                or not set(ls("stale/0")) <= {"upper", "work", "root"} or not upper_ok
                or not set(ls("stale/0/work")) <= {"work", "index"} or not index_ok):
            bad.append(e + " (not an empty skeleton)")
    return bad

def manifest(root):
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        if rel_dir == ".":
            dirnames[:] = [d for d in dirnames if d != ".txbox"]
        for name in [""] + sorted(dirnames + filenames) if rel_dir == "." else sorted(dirnames + filenames):
            p = os.path.join(dirpath, name) if name else dirpath
            rel = os.path.normpath(os.path.join(rel_dir, name)) if name else rel_dir
            st = os.lstat(p)
            entry = [st.st_mode, st.st_uid, st.st_gid, st.st_mtime_ns]
            if os.path.islink(p):
                entry.append(os.readlink(p))
            elif os.path.isfile(p):
                h = hashlib.sha256()
                with open(p, "rb") as f:
                    for chunk in iter(lambda: f.read(1 << 20), b""):
                        h.update(chunk)
                entry.append(h.hexdigest())
                entry.append(st.st_nlink)
                if name.startswith("sparse"):  # holes kept: no copy ever densifies it
                    entry.append(st.st_blocks)
            try:
                xs = sorted((k, os.getxattr(p, k, follow_symlinks=False))
                            for k in os.listxattr(p, follow_symlinks=False) if ".overlay." not in k)
            except OSError:
                xs = []
            entry.append(xs)
            out[rel] = entry
    # hard-link groups as sets of paths
    groups = {}
    for dirpath, dirnames, filenames in os.walk(root):
        if os.path.relpath(dirpath, root) == ".":
            dirnames[:] = [d for d in dirnames if d != ".txbox"]
        for n in filenames:
            p = os.path.join(dirpath, n)
            st = os.lstat(p)
            if st.st_nlink > 1 and not os.path.islink(p):
                groups.setdefault((st.st_dev, st.st_ino), []).append(os.path.relpath(p, root))
    out["<groups>"] = sorted(sorted(g) for g in groups.values())
    return out


def strip_new_mtimes(m, before):
    out = {}
    for k, v in m.items():
        if k != "<groups>" and before.get(k) != v and isinstance(v, list):
            v = v[:3] + [None] + v[4:]
        out[k] = v
    return out


def fixture(ws):
    os.makedirs(os.path.join(ws, "d"))
    for i in range(1, 6):
        with open(os.path.join(ws, f"f{i}"), "w") as f:
            f.write(f"{i}\n")
    with open(os.path.join(ws, "d", "k"), "w") as f:
        f.write("keep\n")
    with open(os.path.join(ws, "h1"), "w") as f:
        f.write("h\n")
    os.link(os.path.join(ws, "h1"), os.path.join(ws, "h2"))
    with open(os.path.join(ws, "g1"), "wb") as f:
        f.write(bytes(range(256)) * 32768)  # 8 MiB
    os.link(os.path.join(ws, "g1"), os.path.join(ws, "d", "g2"))
    with open(os.path.join(ws, "sparse"), "wb") as f:
        f.write(b"head")
        f.seek(64 << 20)
        f.write(b"middle")
        f.truncate(256 << 20)
    os.link(os.path.join(ws, "sparse"), os.path.join(ws, "d", "sparse-link"))
    os.symlink("f2", os.path.join(ws, "sl"))
    os.setxattr(os.path.join(ws, "f4"), "user.t", b"0")
    t = 1700000000
    for dirpath, dirnames, filenames in os.walk(ws, topdown=False):
        for n in filenames + dirnames:
            os.utime(os.path.join(dirpath, n), ns=(t * 10**9, t * 10**9), follow_symlinks=False)
    # create the state dir first so the root's mtime is not disturbed by it
    subprocess.run([TXBOX, "run", "-w", ws, "--policy", POLICY, "--", "true"], capture_output=True)
    os.utime(ws, ns=(t * 10**9, t * 10**9))


def run_tx(ws, cmd, env=None):
    return subprocess.run([TXBOX, "run", "-w", ws, "--policy", POLICY, "--", cmd], capture_output=True,
                          env=env, timeout=60)


def diff(a, b):
    lines = []
    for k in sorted(set(a) | set(b)):
        if a.get(k) != b.get(k):
            lines.append(f"  {k}: {a.get(k)} != {b.get(k)}")
    return "\n".join(lines[:10])


# Kills inside an op, which TXBOX_FAULT_COMMIT_AFTER (between ops) cannot
# reach: strace kills txbox at the K-th call of a syscall (before it runs),
# for every K until the run completes. Rootless, a rename that needs a
# directory's write bit (a directory left 0555, a 0555 directory moved to
# another parent, a 0555 workspace root) lends it for the rename; as root,
# a changed hard-link group is linked under its other names (sub/h3 in a
# directory the command left alone), which moves the parent's times. Both
# are journaled and must be undone by recovery.
LOAN_USER = os.environ.get("TXBOX_CRASH_USER", "txbox-test")
LOAN_SETUP = ("mkdir ro sub && echo x > ro/x && echo y > ro/y && echo h > ro/h1 && ln ro/h1 h2 && "
              "ln h2 sub/h3 && chmod 555 ro")
LOAN_CMD = ("chmod u+w . ro && echo R > ro/x && echo n > ro/new && rm ro/y && echo more >> h2 && "
            "mkdir nd && echo z > nd/z && chmod 555 nd ro && {root_mode}")
LOAN_SYSCALLS = ("linkat", "renameat2", "fchmodat")
# name: (user or None for root, workspace root left 0555)
LOAN_VARIANTS = {"loan": (LOAN_USER, False), "loan-ro-root": (LOAN_USER, True), "link-times": (None, False)}


def as_user(user):
    return ["runuser", "-u", user, "--"] if user else []


def loan_fixture(ws, txbox, user, root_ro):
    os.makedirs(ws)
    os.chmod(ws, 0o755)
    if user:
        shutil.chown(ws, user, user)
    subprocess.run(as_user(user) + ["sh", "-c", f"cd '{ws}' && {LOAN_SETUP}"], check=True)
    subprocess.run(as_user(user) + [txbox, "run", "-w", ws, "--policy", POLICY, "--", "true"],
                   capture_output=True)
    t = 1700000000 * 10**9
    for dirpath, dirnames, filenames in os.walk(ws, topdown=False):
        if ".txbox" in os.path.relpath(dirpath, ws).split(os.sep):
            continue
        for n in filenames + dirnames:
            if n != ".txbox":
                os.utime(os.path.join(dirpath, n), ns=(t, t), follow_symlinks=False)
    if root_ro:
        os.chmod(ws, 0o555)
    os.utime(ws, ns=(t, t))


def loan_run(txbox, ws, user, root_ro, prefix=()):
    cmd = LOAN_CMD.format(root_mode="chmod 555 ." if root_ro else "true")
    return subprocess.run(as_user(user) + list(prefix) + [txbox, "run", "-w", ws, "--policy", POLICY, "--", cmd],
                          capture_output=True, timeout=60)


def loan_case(tmp, txbox, variant, sc, k, after):
    """One kill at the k-th sc of `txbox run`: (stop, ok, killed)."""
    user, root_ro = LOAN_VARIANTS[variant]
    where = f"crash/{variant}/{sc}/{k}"
    ws = os.path.join(tmp, f"{variant}-{sc}-{k}")
    loan_fixture(ws, txbox, user, root_ro)
    before = manifest(ws)
    r = loan_run(txbox, ws, user, root_ro,
                 ["strace", "-o", "/dev/null", "-e", f"trace={sc}", "-e", f"inject={sc}:signal=KILL:when={k}"])
    completed, killed = r.returncode == 0, r.returncode in (-9, 137)
    ok = completed or killed
    if not ok:
        print(f"FAIL {where}: txbox exited {r.returncode}: {r.stderr.decode()[-400:]}")
    if k % 2:
        rr = subprocess.run(as_user(user) + [txbox, "recover", "-w", ws], capture_output=True)
        if rr.returncode != 0:
            print(f"FAIL {where}: recover exited {rr.returncode}: {rr.stderr.decode()}")
            ok = False
    else:
        subprocess.run(as_user(user) + [txbox, "run", "-w", ws, "--policy", POLICY, "--", "true"],
                       capture_output=True)
    got = manifest(ws)
    # killed: the whole before-state, or the after-state once past the commit point
    past = strip_new_mtimes(got, before) == strip_new_mtimes(after, before)
    if not past and (completed or got != before):
        print(f"FAIL {where}:\n" + diff(before, got))
        ok = False
    left = tx_leftovers(ws)
    if left:
        print(f"FAIL {where}: transactions left behind: {left}")
        ok = False
    subprocess.run(["chmod", "-R", "u+w", ws])
    shutil.rmtree(ws)
    return completed or not ok, ok, killed


def loan_variant(tmp, txbox, variant):
    user, root_ro = LOAN_VARIANTS[variant]
    ref = os.path.join(tmp, f"{variant}-ref")
    loan_fixture(ref, txbox, user, root_ro)
    loan_run(txbox, ref, user, root_ro)
    after = manifest(ref)
    ok, kills = True, 0
    for sc in LOAN_SYSCALLS:
        for k in range(1, 200):
            stop, good, killed = loan_case(tmp, txbox, variant, sc, k, after)
            ok, kills = ok and good, kills + killed
            if stop:
                break
    if ok and kills:
        print(f"ok crash/{variant} ({'as ' + user if user else 'as root'}, killed at every "
              f"{'/'.join(LOAN_SYSCALLS)} of the commit: {kills} kills, all recovered)")
        return True
    print(f"FAIL crash/{variant}" + ("" if kills else ": no kill ever fired"))
    return False


def loan_crashes(tmp):
    """(passed, failed), or None when this cannot run here."""
    try:
        import pwd
        pwd.getpwnam(LOAN_USER)
    except KeyError:
        return None
    if os.getuid() != 0 or not shutil.which("strace"):
        return None
    os.chmod(tmp, 0o755)
    os.chmod(POLICY, 0o644)
    txbox = os.path.join(tmp, "txbox")  # where the user can run it
    shutil.copy(TXBOX, txbox)
    os.chmod(txbox, 0o755)
    results = [loan_variant(tmp, txbox, v) for v in LOAN_VARIANTS]
    return results.count(True), results.count(False)


def main():
    global POLICY
    tmp = tempfile.mkdtemp(prefix="txbox-crash-", dir="/var/tmp")
    passed = failed = 0
    # A permissive policy: the crash tests are about the commit, not classification.
    POLICY = os.path.join(tmp, "policy.yaml")
    with open(os.path.join(ROOT, "policy/default.yaml")) as f:
        pol = f.read()
    with open(POLICY, "w") as f:
        f.write(pol.replace("    memory: 4G", "    memory: 0").replace("    pids: 1024", "    pids: 0"))
    try:
        for name, cmd in WORKLOADS.items():
            # the after-state, for reference
            ref = os.path.join(tmp, f"{name}-ref")
            fixture(ref)
            r = run_tx(ref, cmd)
            after = manifest(ref)
            n = 0
            ok = True
            while True:
                ws = os.path.join(tmp, f"{name}-{n}")
                fixture(ws)
                before = manifest(ws)
                env = dict(os.environ, TXBOX_FAULT_COMMIT_AFTER=str(n))
                r = run_tx(ws, cmd, env)
                completed = r.returncode == 0
                if r.returncode not in (0, -9, 137):
                    print(f"FAIL crash/{name}/{n}: txbox exited {r.returncode}: {r.stderr.decode()[-400:]}")
                    ok = False
                    break
                how = "recover" if n % 2 == 0 else "next run"
                if how == "recover":
                    rr = subprocess.run([TXBOX, "recover", "-w", ws], capture_output=True)
                    if rr.returncode != 0:
                        print(f"FAIL crash/{name}/{n}: recover exited {rr.returncode}: {rr.stderr.decode()}")
                        ok = False
                else:
                    subprocess.run([TXBOX, "run", "-w", ws, "--policy", POLICY, "--", "true"], capture_output=True)
                    os.utime(ws, ns=(before["."][3], before["."][3])) if False else None
                got = manifest(ws)
                want = after if completed else before
                if completed:  # new entries carry the time they were made: compare all but their mtimes
                    got, want = strip_new_mtimes(got, before), strip_new_mtimes(want, before)
                if how == "next run" and not completed:
                    # the next run's own (empty) commit leaves the root as it found it
                    pass
                if got != want:
                    print(f"FAIL crash/{name}/{n} ({'after' if completed else 'before'} expected, via {how}):\n"
                          + diff(want, got))
                    ok = False
                leftovers = tx_leftovers(ws)
                if leftovers:
                    print(f"FAIL crash/{name}/{n}: transactions left behind: {leftovers}")
                    ok = False
                shutil.rmtree(ws)
                if completed or n > 200:
                    break
                n += 1
            if ok and n > 0:
                print(f"ok crash/{name} (killed after 0..{n - 1} ops, all recovered; {n} is the full commit)")
                passed += 1
            else:
                if n == 0:
                    print(f"FAIL crash/{name}: the fault injection never fired (commit had no ops?)")
                failed += 1

        loans = loan_crashes(tmp)
        if loans is None:
            print(f"skip crash/loan: needs root, strace and the user {LOAN_USER}")
        else:
            passed, failed = passed + loans[0], failed + loans[1]

        # SIGKILL of txbox while the command runs
        ws = os.path.join(tmp, "killed")
        fixture(ws)
        before = manifest(ws)
        marker = f"txbox-crash-marker-{os.getpid()}"
        p = subprocess.Popen([TXBOX, "run", "-w", ws, "--policy", POLICY, "--",
                              f"echo x > f1; rm f2; exec -a {marker} sleep 60"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(1.0)
        p.send_signal(signal.SIGKILL)
        p.wait()
        time.sleep(0.3)
        alive = subprocess.run(["pgrep", "-f", marker], capture_output=True).stdout.strip()
        subprocess.run([TXBOX, "run", "-w", ws, "--policy", POLICY, "--", "true"], capture_output=True)
        got = manifest(ws)
        left = tx_leftovers(ws)
        mounts = [l for l in open("/proc/self/mountinfo") if ws in l]
        if alive or left or mounts or got != before:
            print(f"FAIL crash/sigkill-during-run: alive={alive!r} left={left} mounts={len(mounts)}\n"
                  + diff(before, got))
            failed += 1
        else:
            print("ok crash/sigkill-during-run (sandbox died with txbox; next run cleaned up; workspace intact)")
            passed += 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"crash: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
