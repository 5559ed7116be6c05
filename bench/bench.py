#!/usr/bin/env python3
"""txbox speed, side by side with baselines, in one run.

Every case is measured as a whole process (fork+exec+wait, wall clock) and
the variants of a case are interleaved round-robin, so drift in machine load
hits them equally. Reported: median (and p90) of N runs, and ratios.

  1. run overhead:   true  |  bwrap --unshare-all --ro-bind / / --dev /dev --proc /proc true
                     |  txbox run -- true  (default policy; and with no cgroup limits)
  2. snapshot cost:  txbox run -- 'echo x > f; exit 1' (snapshot + exec + rollback of a one-file
                     change) in workspaces of 10, 1,000 and 100,000 files
  3. commit cost:    txbox run creating 1, 100, 10,000 files, against the same
                     command run bare, plus `cp -a` and `mv` of the same files
                     (a copy-based snapshot would pay cp -a per transaction)

Usage: bench/bench.py [--runs N] [--txbox PATH] [--quick] [--only overhead|snapshot|commit]...
                      [--also NAME=PATH]...   (more txbox binaries, interleaved in section 1)
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def timed(argv, cwd=None, env=None):
    t = time.perf_counter()
    r = subprocess.run(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    dt = (time.perf_counter() - t) * 1000.0
    return dt, r.returncode, r.stderr


def measure(variants, runs, setup=None):
    """variants: list of (name, argv-or-callable). Interleaved; returns {name: [ms]}."""
    out = {name: [] for name, _ in variants}
    for i in range(runs + 2):  # two warm-up rounds, discarded
        for name, v in variants:
            if setup:
                setup(name)
            if callable(v):
                dt = v()
            else:
                dt, rc, err = timed(v)
                if rc not in (0, 1):
                    sys.exit(f"bench: {name} failed ({rc}): {err.decode(errors='replace')[:500]}")
            if i >= 2:
                out[name].append(dt)
    return out


def med(xs):
    return statistics.median(xs)


def p90(xs):
    s = sorted(xs)
    return s[min(len(s) - 1, int(round(0.9 * (len(s) - 1))))]


def report(title, res, base=None):
    print(f"\n## {title}")
    print(f"{'case':44s} {'median ms':>10s} {'p90 ms':>9s}" + (f" {'ratio':>8s}" if base else ""))
    for name, xs in res.items():
        line = f"{name:44s} {med(xs):10.2f} {p90(xs):9.2f}"
        if base:
            line += f" {med(xs) / med(res[base]):8.2f}x"
        print(line)


def make_tree(root, nfiles):
    os.makedirs(root, exist_ok=True)
    per_dir = 1000
    for i in range(nfiles):
        d = os.path.join(root, f"d{i // per_dir}")
        if i % per_dir == 0:
            os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, f"f{i}"), "w") as f:
            f.write("x")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=21)
    ap.add_argument("--txbox", default=os.environ.get("TXBOX", os.path.join(ROOT, "build/src/cli/txbox")))
    ap.add_argument("--quick", action="store_true", help="smaller trees, fewer runs (smoke test)")
    ap.add_argument("--only", choices=["overhead", "snapshot", "commit"], action="append",
                    help="run only these sections (repeatable)")
    ap.add_argument("--also", action="append", default=[], metavar="NAME=PATH",
                    help="another txbox binary for section 1 (default policy), interleaved with the rest")
    args = ap.parse_args()
    tx = args.txbox
    runs = 5 if args.quick else args.runs
    if not os.access(tx, os.X_OK):
        sys.exit(f"bench: no txbox binary at {tx} (build first: scripts/build.sh)")
    bwrap = shutil.which("bwrap")
    tmp = tempfile.mkdtemp(prefix="txbox-bench-", dir="/var/tmp")
    nolimits = os.path.join(tmp, "nolimits.yaml")
    with open(os.path.join(ROOT, "policy/default.yaml")) as f:
        pol = f.read()
    pol = pol.replace("    memory: 4G", "    memory: 0").replace("    pids: 1024", "    pids: 0")
    with open(nolimits, "w") as f:
        f.write(pol)
    print(f"# txbox bench — {time.strftime('%Y-%m-%d %H:%M')} — {os.uname().release}, {os.cpu_count()} cpus, "
          f"uid {os.getuid()}, {runs} interleaved runs per case, load {os.getloadavg()[0]:.2f}")
    try:
        ws = os.path.join(tmp, "ws")
        os.makedirs(ws)
        only = set(args.only or ["overhead", "snapshot", "commit"])
        # 1. run overhead
        variants = [("bare: true", ["/bin/true"])]
        if bwrap:
            variants.append(("bwrap --unshare-all ... true",
                             [bwrap, "--unshare-all", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "true"]))
        variants += [
            ("txbox run -- true (default policy)", [tx, "run", "-w", ws, "--", "true"]),
            ("txbox run -- true (no cgroup limits)", [tx, "run", "-w", ws, "--policy", nolimits, "--", "true"]),
            ("txbox check -- true (policy only)", [tx, "check", "-w", ws, "--", "true"]),
        ]
        for spec in args.also:
            name, _, path = spec.partition("=")
            if not name or not os.access(path, os.X_OK):
                sys.exit(f"bench: --also wants NAME=PATH of an executable, not {spec!r}")
            # a workspace of its own: a build's spares are its own layout
            ows = os.path.join(tmp, f"ws-{len(variants)}")
            os.makedirs(ows)
            variants.append((f"txbox run -- true ({name})", [path, "run", "-w", ows, "--", "true"]))
        res = measure(variants, runs) if "overhead" in only else None
        if res:
            report("1. whole-transaction overhead (no change)", res, "bwrap --unshare-all ... true" if bwrap else None)
            print(f"# load average after section 1: {os.getloadavg()[0]:.2f}")

        # 2. snapshot + rollback vs workspace size
        sizes = ([10, 1000] + ([] if args.quick else [100000])) if "snapshot" in only else []
        variants = []
        for n in sizes:
            w = os.path.join(tmp, f"ws{n}")
            make_tree(w, n)
            variants.append((f"snapshot+rollback, {n} files", [tx, "run", "-w", w, "--policy", nolimits, "--",
                                                                "echo x > d0/f0; exit 1"]))
        res = measure(variants, runs) if variants else None
        if res:
            report("2. snapshot + one-file change + rollback vs workspace size", res, variants[0][0])

        # 3. commit of N new files vs bare / cp -a / mv
        counts = ([1, 100] + ([1000] if args.quick else [10000])) if "commit" in only else []
        for n in counts:
            src = os.path.join(tmp, f"src{n}")
            make_tree(src, n)
            wsn = os.path.join(tmp, f"wsc{n}")
            os.makedirs(wsn, exist_ok=True)
            bare_ws = os.path.join(tmp, f"bare{n}")
            os.makedirs(bare_ws, exist_ok=True)
            for d in (wsn, bare_ws):  # the generator lives in the workspace (the sandbox has its own /var/tmp)
                with open(os.path.join(d, "gen.sh"), "w") as f:
                    f.write(f"mkdir -p out && i=0; while [ $i -lt {n} ]; do echo $i > out/f$i; i=$((i+1)); done\n")
            gen = "sh ./gen.sh"

            def clean(name, wsn=wsn, bare_ws=bare_ws, n=n):
                for p in (os.path.join(wsn, "out"), os.path.join(bare_ws, "out"), os.path.join(tmp, f"cp{n}"),
                          os.path.join(tmp, f"mv{n}")):
                    if os.path.lexists(p):
                        shutil.rmtree(p)
                if name.startswith("mv"):
                    shutil.copytree(src, os.path.join(tmp, f"mvsrc{n}"), dirs_exist_ok=True)

            variants = [
                (f"bare sh: create {n} files", ["/bin/sh", "-c", f"cd {bare_ws} && {gen}"]),
                (f"txbox run: create+commit {n} files", [tx, "run", "-w", wsn, "--policy", nolimits, "--", gen]),
                (f"cp -a of {n} files", ["cp", "-a", src, os.path.join(tmp, f"cp{n}")]),
                (f"mv of {n} files (same fs)", ["mv", os.path.join(tmp, f"mvsrc{n}"), os.path.join(tmp, f"mv{n}")]),
            ]
            res = measure(variants, max(5, runs // 2) if n >= 10000 else runs, setup=clean)
            report(f"3. commit of {n} new files", res, variants[0][0])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
