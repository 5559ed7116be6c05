"""Test registry, per-suite context and helpers to drive the txbox binary."""

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time

TESTS = []  # list of (name, func, opts)


class Fail(Exception):
    """A test failure; str(e) is the reason (first line) plus details."""


class Skip(Exception):
    pass


def test(name, root_only=False, needs=()):
    """Register a test function f(ctx). needs: executables that must exist."""
    def deco(fn):
        TESTS.append((name, fn, {"root_only": root_only, "needs": tuple(needs)}))
        return fn
    return deco


def check(cond, msg):
    if not cond:
        raise Fail(msg)


def which(prog):
    return shutil.which(prog, path="/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin")


# ---------------------------------------------------------------------------

def rmtree_force(path):
    """Remove a tree even when it holds 0444 files / 0500 / 0000 dirs."""
    path = os.fsencode(path)
    if not os.path.lexists(path):
        return
    if not os.path.isdir(path) or os.path.islink(path):
        os.unlink(path)
        return

    def onerror(func, p, exc):
        try:
            parent = os.path.dirname(p)
            os.chmod(parent, 0o700)
            if os.path.isdir(p) and not os.path.islink(p):
                os.chmod(p, 0o700)
            func(p)
        except OSError:
            pass
    for dirpath, dirnames, _ in os.walk(path):
        for d in dirnames:
            full = os.path.join(dirpath, d)
            try:
                if not os.path.islink(full):
                    st = os.lstat(full)
                    if (stat.S_IMODE(st.st_mode) & 0o700) != 0o700:
                        os.chmod(full, stat.S_IMODE(st.st_mode) | 0o700)
            except OSError:
                pass
    shutil.rmtree(path, onerror=onerror)


class Context:
    def __init__(self, txbox, tmp_root, privileged, verbose=False, keep=False):
        self.txbox = txbox
        self.tmp_root = tmp_root
        self.privileged = privileged
        self.verbose = verbose
        self.keep = keep
        self._assets = None
        self._ref_manifest = None
        self.notes = []
        self._dirs = []
        self.policy_file = None

    def note(self, msg):
        self.notes.append(msg)

    def mkdtemp(self, prefix):
        safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in prefix)[:60]
        d = tempfile.mkdtemp(prefix=safe + "-", dir=self.tmp_root)
        self._dirs.append(d)
        return d

    def cleanup_test_dirs(self):
        if self.keep:
            self._dirs = []
            return
        for d in self._dirs:
            rmtree_force(d)
        self._dirs = []

    # -- assets, built once per suite, outside every workspace ---------------
    @property
    def assets(self):
        if self._assets is None:
            from assets import build_assets
            d = os.path.join(self.tmp_root, "assets")
            os.mkdir(d)
            build_assets(d)
            self._assets = d
        return self._assets

    # -- txbox ---------------------------------------------------------------
    def run_txbox(self, args, cwd, *, stdin=subprocess.DEVNULL, input=None, timeout=600,
                  env=None):
        """Run txbox with args (list of str/bytes). Returns TxResult."""
        args = list(args)
        if self.policy_file and args[:1] == ["run"] and "--policy" not in args:
            args[1:1] = ["--policy", self.policy_file]
        cmd = [self.txbox] + args
        t0 = time.time()
        t0_ns = time.time_ns()
        try:
            io = {"input": input} if input is not None else {"stdin": stdin}
            p = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               timeout=timeout, env=env, **io)
        except subprocess.TimeoutExpired as e:
            raise Fail("txbox did not finish within %ds: %s" % (timeout, _cmdline(cmd)))
        t1_ns = time.time_ns()
        return TxResult(cmd, p.returncode, p.stdout, p.stderr, time.time() - t0, t0_ns, t1_ns)

    def run_json(self, ws, command, *, cwd=None, extra=(), **kw):
        """txbox run -w WS [extra] --json -- COMMAND... ; command: str/bytes (shell
        text) or list (argv)."""
        argv = command if isinstance(command, list) else [command]
        args = ["run", "-w", ws] + list(extra) + ["--json", "--"] + argv
        r = self.run_txbox(args, cwd=cwd or ws, **kw)
        r.parse_json()
        return r


def _cmdline(cmd):
    out = []
    for c in cmd:
        s = c.decode("utf-8", "backslashreplace") if isinstance(c, bytes) else c
        if len(s) > 200:
            s = s[:200] + "..."
        out.append(s)
    return " ".join(repr(s) if (not s or any(ch in s for ch in " \n'\"$;&|")) else s
                    for s in out)


class TxResult:
    def __init__(self, cmd, rc, out, err, wall, t0_ns, t1_ns):
        self.cmd = cmd
        self.rc = rc
        self.out = out
        self.err = err
        self.wall = wall
        self.t0_ns = t0_ns
        self.t1_ns = t1_ns
        self.json = None

    def where(self):
        return "[%s] exit %d; stderr: %s" % (_cmdline(self.cmd), self.rc,
                                            self.err[-600:].decode("utf-8", "backslashreplace").strip() or "(empty)")

    def parse_json(self):
        try:
            text = self.out.decode("utf-8")
        except UnicodeDecodeError as e:
            raise Fail("--json output is not valid UTF-8 (%s): %r %s" % (e, self.out[:200], self.where()))
        try:
            self.json = json.loads(text)
        except ValueError as e:
            raise Fail("--json output is not one JSON document (%s): %r %s" % (e, text[:300], self.where()))
        if not isinstance(self.json, dict):
            raise Fail("--json output is not an object: %r" % text[:300])
        return self.json

    def jget(self, key, default=KeyError):
        if key not in self.json:
            if default is KeyError:
                raise Fail("result JSON has no %r field: %s" % (key, short_json(self.json)))
            return default
        return self.json[key]

    def stdout_bytes(self):
        s = self.jget("stdout")
        if s is None:
            return b""
        return s.encode("utf-8", "surrogateescape")

    def stderr_bytes(self):
        s = self.jget("stderr")
        if s is None:
            return b""
        return s.encode("utf-8", "surrogateescape")

    def expect(self, *, outcome, exit_status, rollback_reason="__any__", exit_code="__any__",
               signal="__any__"):
        problems = []
        if self.rc != exit_status:
            problems.append("exit status %d, expected %d" % (self.rc, exit_status))
        got = self.jget("outcome", None)
        if got != outcome:
            problems.append("outcome %r, expected %r" % (got, outcome))
        if rollback_reason != "__any__" and self.jget("rollback_reason", None) != rollback_reason:
            problems.append("rollback_reason %r, expected %r" % (self.jget("rollback_reason", None),
                                                                 rollback_reason))
        if exit_code != "__any__" and self.jget("exit_code", None) != exit_code:
            problems.append("exit_code %r, expected %r" % (self.jget("exit_code", None), exit_code))
        if signal != "__any__" and self.jget("signal", None) != signal:
            problems.append("signal %r, expected %r" % (self.jget("signal", None), signal))
        if problems:
            raise Fail("; ".join(problems) + "\n  json: " + short_json(self.json) +
                       "\n  " + self.where())


def short_json(j, limit=700):
    if j is None:
        return "(none)"
    d = dict(j)
    for k in ("stdout", "stderr"):
        if isinstance(d.get(k), str) and len(d[k]) > 200:
            d[k] = d[k][:200] + "...(%d chars)" % len(d[k])
    if isinstance(d.get("changes"), list) and len(d["changes"]) > 8:
        d["changes"] = d["changes"][:8] + ["...(%d total)" % len(j["changes"])]
    s = json.dumps(d, ensure_ascii=True)
    return s if len(s) <= limit else s[:limit] + "..."


def sh(cmd, cwd=None, check_rc=True, env=None, timeout=600):
    """Run shell text natively. Returns CompletedProcess (bytes)."""
    try:
        p = subprocess.run(["/bin/sh", "-c", cmd], cwd=cwd, stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise Fail("native command did not finish within %ds: %r" % (timeout, cmd[:300]))
    if check_rc and p.returncode != 0:
        raise Fail("native command failed (exit %d): %r\n  stderr: %s" %
                   (p.returncode, cmd if isinstance(cmd, str) else cmd[:300],
                    p.stderr[-500:].decode("utf-8", "backslashreplace")))
    return p


def small_ws(ctx, prefix="ws", parent=None):
    """A small workspace: known.txt, sub/inner.txt, sub/deeper/. Returns its path."""
    base = parent or ctx.mkdtemp(prefix)
    ws = os.path.join(base, "ws")
    os.mkdir(ws)
    with open(os.path.join(ws, "known.txt"), "w") as f:
        f.write("known\n")
    os.makedirs(os.path.join(ws, "sub", "deeper"))
    with open(os.path.join(ws, "sub", "inner.txt"), "w") as f:
        f.write("inner\n")
    return ws


def sh_quote(s):
    import shlex
    return shlex.quote(s)
