#!/usr/bin/env python3
"""Differential test: the parser's argv versus bash's.

Usage: shell_diff.py --driver PATH [--bash PATH] [--seed N] [-v]

Generates cases (gen_cases.py), asks shell-diff-driver for the argv of every
command, and runs each case with
    env -i LC_ALL=C.UTF-8 bash --norc --noprofile -f -c CASE
in an empty temporary directory. Only cases the parser sees as plain printf
commands with static words are given to bash (the generator never produces
anything else; this is a second safety net). Prints "N passed, N failed" and
exits 1 on any mismatch.
"""
import argparse
import concurrent.futures
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_cases  # noqa: E402

FORBIDDEN = ("$(", "`", "<(", ">(", "${", "~")


def printf_output(args):
    """What `printf '%s\\0' @K@ ARGS…` prints after the sentinel's own field
    (the sentinel always consumes the format once, so no empty-args case)."""
    return b"".join(a + b"\0" for a in args)


def parse_driver(out):
    pos = 0

    def num():
        nonlocal pos
        end = out.index(b":", pos)
        v = int(out[pos:end])
        pos = end + 1
        return v

    def blob():
        nonlocal pos
        n = num()
        b = out[pos:pos + n]
        pos += n
        return b

    cases = []
    while pos < len(out):
        tag = out[pos:pos + 1]
        pos += 1
        if tag == b"E":
            cases.append(("error", blob().decode("utf-8", "replace")))
            continue
        cmds = []
        for _ in range(num()):
            cmds.append([blob() for _ in range(num())])
        cases.append(("ok", cmds))
    return cases


def run_bash(bash, text, cwd):
    p = subprocess.run(
        ["env", "-i", "LC_ALL=C.UTF-8", bash, "--norc", "--noprofile", "-f", "-c", text],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd, timeout=10)
    return p.returncode, p.stdout, p.stderr


def split_bash(out, sentinels):
    """Split bash's output into {sentinel: output of that printf}."""
    res = {}
    fields = out.split(b"\0")
    cur = None
    for f in fields[:-1]:
        if f in sentinels:
            cur = f
            res[cur] = b""
            continue
        if cur is None:
            return None
        res[cur] += f + b"\0"
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--driver", required=True)
    ap.add_argument("--bash", default="bash")
    ap.add_argument("--seed", type=int, default=20240601)
    ap.add_argument("-v", action="store_true")
    args = ap.parse_args()

    cases = gen_cases.generate(args.seed)
    nwords = sum(t.count(" ") for t, _ in cases)
    blob = b"".join(t.encode("utf-8") + b"\0" for t, _ in cases)
    p = subprocess.run([args.driver], input=blob, stdout=subprocess.PIPE, check=True)
    parsed = parse_driver(p.stdout)
    if len(parsed) != len(cases):
        print("driver returned %d results for %d cases" % (len(parsed), len(cases)))
        return 1

    passed = failed = 0
    failures = []
    jobs = []
    for i, ((text, cmds), (status, res)) in enumerate(zip(cases, parsed)):
        if status != "ok":
            failures.append((text, "parser error: " + res))
            continue
        if any(f in text for f in FORBIDDEN):
            failures.append((text, "generator produced a forbidden sequence"))
            continue
        if len(res) != len(cmds):
            failures.append((text, "parser found %d commands, expected %d" % (len(res), len(cmds))))
            continue
        bad = [w for w in res if not w or w[0] != b"printf" or len(w) < 3 or w[1] != b"%s\\0"]
        if bad:
            failures.append((text, "parser saw something other than printf '%%s\\0': %r" % bad[:1]))
            continue
        jobs.append((i, text, cmds, res))

    with tempfile.TemporaryDirectory(prefix="txbox-shell-diff-") as empty:
        with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 4) as ex:
            futs = {ex.submit(run_bash, args.bash, text, empty): (i, text, cmds, res)
                    for i, text, cmds, res in jobs}
            for fut in concurrent.futures.as_completed(futs):
                i, text, cmds, res = futs[fut]
                rc, out, err = fut.result()
                if rc != 0:
                    failures.append((text, "bash failed (%d): %s" % (rc, err.decode("utf-8", "replace"))))
                    continue
                sentinels = {s.encode() for s, _ in cmds}
                got = split_bash(out, sentinels)
                if got is None:
                    failures.append((text, "cannot split bash output %r" % out))
                    continue
                want_visible = {s.encode() for s, v in cmds if v}
                if set(got) != want_visible:
                    failures.append((text, "bash ran %r, expected %r" % (sorted(got), sorted(want_visible))))
                    continue
                ok = True
                for words in res:
                    sent = words[2]
                    if sent not in got:
                        continue
                    mine = printf_output(words[3:])
                    if mine != got[sent]:
                        failures.append((text, "command %s: parser %r, bash %r" %
                                         (sent.decode(), mine, got[sent])))
                        ok = False
                        break
                if ok:
                    passed += 1

    failed = len(failures)
    for text, why in failures[:20]:
        print("FAIL %r\n     %s" % (text, why))
    print("%d passed, %d failed (%d cases, ~%d words)" % (passed, failed, len(cases), nwords))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
