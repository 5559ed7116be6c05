#!/usr/bin/env python3
"""Measure `txbox check` on a corpus of command lines.

Usage: measure.py --txbox PATH [--mode auto|benign|adversarial]
                  [--policy FILE] [-w DIR] [--jobs N] TSV

Every row's first column is one shell text, passed as the single COMMAND
argument of `txbox check --json -w DIR -- LINE` (escapes \\\\ \\t \\n \\r are
undone first).  Benign rows are `line, repo, path, kind[, expect=hold]`;
adversarial rows are `line, technique, harm, expect`.  A decision other than
`allow` counts as held/denied (a false positive for benign rows, an
interception for adversarial ones).  A row on which txbox fails (no JSON) is
reported as an error and counted as neither.  See README.md.
"""
import argparse
import collections
import concurrent.futures
import json
import subprocess
import sys
import tempfile

ESCAPES = {"\\": "\\", "t": "\t", "n": "\n", "r": "\r"}


def unescape(s):
    out, i = [], 0
    while i < len(s):
        if s[i] == "\\" and i + 1 < len(s) and s[i + 1] in ESCAPES:
            out.append(ESCAPES[s[i + 1]])
            i += 2
        else:
            out.append(s[i])
            i += 1
    return "".join(out)


def read_rows(path):
    rows = []
    with open(path, encoding="utf-8") as f:
        for n, raw in enumerate(f, 1):
            raw = raw.rstrip("\n")
            if not raw or raw.startswith("#"):
                continue
            cols = raw.split("\t")
            rows.append({"n": n, "raw": cols[0], "line": unescape(cols[0]),
                         "cols": cols[1:]})
    return rows


def check(args, workspace, row):
    cmd = [args.txbox, "check", "-w", workspace, "--json"]
    if args.policy:
        cmd += ["--policy", args.policy]
    if args.net:
        cmd.append("--net")
    cmd += ["--", row["line"]]
    r = subprocess.run(cmd, capture_output=True, timeout=60)
    try:
        out = json.loads(r.stdout)
        return out["decision"], out.get("rule", ""), out.get("reason", "")
    except (ValueError, KeyError, TypeError):
        err = (r.stderr or r.stdout).decode("utf-8", "replace").strip()
        return "error", "error", f"exit {r.returncode}: {err[:200]}"


def run_all(args, rows):
    with tempfile.TemporaryDirectory(prefix="txbox-corpus-") as tmp:
        workspace = args.workspace or tmp
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            results = pool.map(lambda r: check(args, workspace, r), rows)
            for row, (decision, rule, reason) in zip(rows, results):
                row.update(decision=decision, rule=rule, reason=reason)


def pct(k, n):
    return f"{k}/{n} ({100.0 * k / n:.1f}%)" if n else f"{k}/0"


def counts_line(rows):
    c = collections.Counter(r["decision"] for r in rows)
    return " ".join(f"{d}={c[d]}" for d in ("allow", "hold", "deny", "error"))


def report_benign(rows):
    for r in rows:
        r["expect_hold"] = "expect=hold" in r["cols"][3:]
    labelled = [r for r in rows if r["expect_hold"]]
    plain = [r for r in rows if not r["expect_hold"]]
    stopped = [r for r in rows if r["decision"] in ("hold", "deny")]
    print(f"rows: {len(rows)} from {len({r['cols'][0] for r in rows})} "
          f"repositories; {counts_line(rows)}")
    print(f"not allowed (all rows): {pct(len(stopped), len(rows))}")
    print("false positives (rows not labelled expect=hold): "
          + pct(sum(r['decision'] in ('hold', 'deny') for r in plain), len(plain)))
    print("expect=hold rows held or denied: "
          + pct(sum(r['decision'] in ('hold', 'deny') for r in labelled),
                len(labelled)))
    by_kind = collections.defaultdict(list)
    for r in plain:
        by_kind[r["cols"][2]].append(r)
    for kind, rs in sorted(by_kind.items()):
        k = sum(r["decision"] in ("hold", "deny") for r in rs)
        print(f"  false positives, kind {kind}: {pct(k, len(rs))}")
    print_by_rule(stopped, lambda r: f"{r['cols'][0]} {r['cols'][2]}"
                  + (" expect=hold" if r["expect_hold"] else ""))
    print_errors(rows)


def report_adversarial(rows):
    stopped = [r for r in rows if r["decision"] in ("hold", "deny")]
    print(f"rows: {len(rows)}; {counts_line(rows)}")
    print(f"intercepted (decision not allow): {pct(len(stopped), len(rows))}")
    exact = sum(r["decision"] == r["cols"][2] for r in rows)
    print(f"decision equal to expect: {pct(exact, len(rows))}")
    for title, col in (("technique", 0), ("harm", 1)):
        groups = collections.defaultdict(list)
        for r in rows:
            groups[r["cols"][col]].append(r)
        print(f"\nper {title}: intercepted/rows")
        for name, rs in sorted(groups.items()):
            k = sum(r["decision"] in ("hold", "deny") for r in rs)
            print(f"  {name:<28} {pct(k, len(rs))}")
    allowed = collections.defaultdict(list)
    for r in rows:
        if r["decision"] == "allow":
            allowed[r["cols"][0]].append(r)
    print(f"\nallowed lines, by technique ({sum(map(len, allowed.values()))}):")
    for name, rs in sorted(allowed.items()):
        print(f"  [{name}]")
        for r in rs:
            print(f"    {r['raw']}    # {r['cols'][1]}")
    print_by_rule(stopped, lambda r: f"{r['cols'][0]} expect={r['cols'][2]}")
    print_errors(rows)


def print_by_rule(stopped, describe):
    groups = collections.defaultdict(list)
    for r in stopped:
        groups[r["rule"]].append(r)
    print(f"\nheld or denied, by rule ({len(stopped)}):")
    for rule, rs in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        print(f"  rule {rule}: {len(rs)}")
        for r in rs:
            print(f"    {r['decision']:<4} {r['raw']}")
            print(f"         [{describe(r)}] {r['reason']}")


def print_errors(rows):
    errors = [r for r in rows if r["decision"] == "error"]
    if errors:
        print(f"\nerrors ({len(errors)}):")
        for r in errors:
            print(f"  line {r['n']}: {r['raw']}\n    {r['reason']}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--txbox", required=True, help="txbox binary")
    ap.add_argument("--mode", choices=("auto", "benign", "adversarial"),
                    default="auto")
    ap.add_argument("--policy", help="policy file passed to txbox check")
    ap.add_argument("--net", action="store_true",
                    help="judge as `txbox run --net` would (txbox check --net)")
    ap.add_argument("-w", dest="workspace",
                    help="workspace for check (default: an empty temp dir)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("tsv")
    args = ap.parse_args()
    rows = read_rows(args.tsv)
    if not rows:
        sys.exit(f"{args.tsv}: no rows")
    mode = args.mode
    if mode == "auto":
        mode = "adversarial" if rows[0]["cols"][2:3] in (["deny"], ["hold"]) \
            else "benign"
    bad = [r["n"] for r in rows if len(r["cols"]) < 3]
    if bad:
        sys.exit(f"{args.tsv}: rows with fewer than 4 columns: {bad[:10]}")
    version = subprocess.run([args.txbox, "version"], capture_output=True,
                             text=True).stdout.strip()
    print(f"# txbox check{' --net' if args.net else ''} on {args.tsv} ({mode}); txbox: {args.txbox} {version}")
    run_all(args, rows)
    (report_adversarial if mode == "adversarial" else report_benign)(rows)


if __name__ == "__main__":
    main()
