"""Escape-suite harness: temp dirs, the txbox driver, host snapshots and the
checks every attack gets (secrets never leak, no process survives, nothing
dangerous published into the workspace, nothing named after the run appears
outside a workspace, the machine still answers)."""

import fcntl
import hashlib
import json
import os
import pty
import secrets
import select
import shutil
import signal
import socket
import stat
import subprocess
import sys
import termios
import threading
import time
import tty

HERE = os.path.dirname(os.path.abspath(__file__))
SYS_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

ATTACKS = []  # (name, func, opts)


class Fail(Exception):
    """The attack (or the host check after it) showed a hole."""


class Skip(Exception):
    """The attack cannot run in this setting (reason in the message)."""


def attack(name, root_only=False, heavy=False, needs=()):
    """Register an attack function f(ctx)."""
    def deco(fn):
        ATTACKS.append((name, fn, {"root_only": root_only, "heavy": heavy, "needs": tuple(needs)}))
        return fn
    return deco


def check(cond, msg):
    if not cond:
        raise Fail(msg)


def which(prog):
    return shutil.which(prog, path=SYS_PATH)


def short(b, n=300):
    if isinstance(b, bytes):
        b = b.decode("utf-8", "replace")
    b = b.replace("\n", "\\n")
    return b if len(b) <= n else b[:n] + "..."


def rmtree_force(path):
    """Remove a tree even with 0000 dirs (overlay work dirs) in it."""
    if not os.path.lexists(path):
        return
    if os.path.islink(path) or not os.path.isdir(path):
        os.unlink(path)
        return
    for dirpath, dirnames, _ in os.walk(path):
        for d in dirnames:
            full = os.path.join(dirpath, d)
            try:
                if not os.path.islink(full):
                    os.chmod(full, 0o700)
            except OSError:
                pass
    shutil.rmtree(path, ignore_errors=True)


# ---------------------------------------------------------------------------
# host snapshots

def _entry(path, content):
    st = os.lstat(path)
    e = {
        "type": stat.S_IFMT(st.st_mode), "mode": stat.S_IMODE(st.st_mode),
        "uid": st.st_uid, "gid": st.st_gid, "ino": st.st_ino, "nlink": st.st_nlink,
        "rdev": st.st_rdev,
    }
    if not stat.S_ISDIR(st.st_mode):
        e["size"] = st.st_size
        e["mtime"] = st.st_mtime_ns
    if stat.S_ISLNK(st.st_mode):
        e["target"] = os.readlink(path)
    if content and stat.S_ISREG(st.st_mode) and st.st_size <= (4 << 20):
        try:
            with open(path, "rb") as f:
                e["sha"] = hashlib.sha256(f.read()).hexdigest()
        except OSError as ex:
            e["sha"] = "unreadable:%d" % ex.errno
    return e


def snapshot(path, recursive=False, content=False, skip=()):
    """{relpath: attributes} of path and its entries (recursively or one
    level). Directory mtimes are left out only for dirs we do not own the
    contents of; here they are kept via the entries themselves. skip: absolute
    paths to leave out (e.g. workspaces inside a parent)."""
    out = {}
    skip = set(os.path.abspath(s) for s in skip)
    try:
        out["."] = _entry(path, content)
    except OSError as e:
        return {"!error": str(e)}

    def walk(d, rel):
        try:
            names = sorted(os.listdir(d))
        except OSError as e:
            out[rel + "/!error"] = str(e)
            return
        for n in names:
            full = os.path.join(d, n)
            if full in skip:
                continue
            r = n if rel == "." else rel + "/" + n
            try:
                out[r] = _entry(full, content)
            except OSError as e:
                out[r] = {"error": str(e)}
                continue
            if recursive and stat.S_ISDIR(out[r]["type"]) and not os.path.islink(full):
                walk(full, r)
    walk(path, ".")
    return out


def snapshot_diff(before, after):
    diffs = []
    for k in sorted(set(before) | set(after)):
        a, b = before.get(k), after.get(k)
        if a == b:
            continue
        if a is None:
            diffs.append("new %s" % k)
        elif b is None:
            diffs.append("gone %s" % k)
        else:
            ch = [f for f in sorted(set(a) | set(b)) if a.get(f) != b.get(f)]
            diffs.append("changed %s (%s)" % (k, ",".join(ch)))
    return diffs


def file_sha(path):
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError as e:
        return "error:%d" % e.errno


def read_text(path, default=None):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return default


# ---------------------------------------------------------------------------
# host-side helpers an attack may need

class HostSleep:
    """A host process the sandbox must not see, signal or trace."""

    def __init__(self):
        self.tag = "86400.%d" % secrets.randbelow(10**9)
        self.proc = subprocess.Popen(["sleep", self.tag], stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     start_new_session=True)
        self.pid = self.proc.pid

    def state(self):
        """(alive, state letter, tracer pid)"""
        if self.proc.poll() is not None:
            return (False, "X", 0)
        st = read_text("/proc/%d/status" % self.pid, "")
        state, tracer = "?", 0
        for line in st.splitlines():
            if line.startswith("State:"):
                state = line.split()[1]
            elif line.startswith("TracerPid:"):
                tracer = int(line.split()[1])
        return (True, state, tracer)

    def stop(self):
        try:
            self.proc.kill()
        except OSError:
            pass
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            pass


class Listener:
    """A listening socket in a thread, counting connections/datagrams."""

    def __init__(self, family, addr, kind=socket.SOCK_STREAM):
        self.sock = socket.socket(family, kind)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(addr)
        self.kind = kind
        if kind == socket.SOCK_STREAM:
            self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.addr = self.sock.getsockname()
        self.hits = []
        self._stop = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self._stop:
            try:
                if self.kind == socket.SOCK_STREAM:
                    c, peer = self.sock.accept()
                    c.settimeout(1)
                    try:
                        data = c.recv(200)
                    except OSError:
                        data = b""
                    self.hits.append((peer, data))
                    c.close()
                else:
                    data, peer = self.sock.recvfrom(200)
                    self.hits.append((peer, data))
            except socket.timeout:
                continue
            except OSError:
                if self._stop:
                    break
                time.sleep(0.05)

    def close(self):
        time.sleep(0.3)  # let a late connection land
        self._stop = True
        self.thread.join(2)
        try:
            self.sock.close()
        except OSError:
            pass


# ---------------------------------------------------------------------------
# txbox driver

class Result:
    def __init__(self, argv, rc, out, err, elapsed, maxrss_kb, script=None):
        self.argv = argv
        self.rc = rc
        self.raw_out = out
        self.raw_err = err
        self.elapsed = elapsed
        self.maxrss_kb = maxrss_kb
        self.script = script
        self.json = None
        try:
            text = out.decode("utf-8", "replace").strip()
            if text:
                self.json = json.loads(text.splitlines()[-1])
        except ValueError:
            self.json = None

    def get(self, key, default=None):
        return (self.json or {}).get(key, default)

    @property
    def stdout(self):
        return self.get("stdout") or ""

    @property
    def stderr(self):
        return self.get("stderr") or ""

    @property
    def outcome(self):
        return self.get("outcome")

    def lines(self, prefix):
        return [l for l in self.stdout.splitlines() if l.startswith(prefix)]

    def describe(self):
        j = self.json or {}
        return ("rc=%s outcome=%s reason=%s limit=%s signal=%s error=%s stdout=%s stderr=%s txbox-stderr=%s"
                % (self.rc, j.get("outcome"), j.get("rollback_reason"), j.get("limit"), j.get("signal"),
                   short(j.get("error") or "", 200), short(self.stdout, 400), short(self.stderr, 300),
                   short(self.raw_err, 200)))


class Ctx:
    """Everything one suite run shares: paths, the marker, the txbox driver,
    and the list of things the current attack created (for the generic
    checks and cleanup)."""

    SECRET_ENV = ("FOO_TOKEN", "AWS_SECRET_ACCESS_KEY", "DB_PASSWORD", "GITHUB_TOKEN",
                  "NPM_TOKEN", "OPENAI_API_KEY", "AZURE_CLIENT_SECRET", "MY_SERVICE_PAT")

    def __init__(self, txbox, policy, tmp_root, vis_root, verbose=False):
        self.txbox = txbox
        self.policy = policy
        self.tmp_root = tmp_root      # /var/tmp/txbox-sec-*: private in the sandbox
        self.vis_root = vis_root      # a temp dir the sandbox sees (read-only)
        self.verbose = verbose
        self.uid = os.getuid()
        self.is_root = self.uid == 0
        self.mark = secrets.token_hex(6)
        self.pwn = "txsec-pwn-" + self.mark        # every attack artefact is named so
        self.secret = "TXSECRET" + secrets.token_hex(10)  # content of every secret
        self.bin = os.path.join(vis_root, "bin")
        self.scripts = os.path.join(vis_root, "scripts")
        self.home = os.path.join(vis_root, "home")
        for d in (self.bin, self.scripts, self.home):
            os.makedirs(d, exist_ok=True)
        self.compiled = {}
        self.compile_errors = {}
        self.notes = []
        self.reset_attack(None)

    # ---- per attack -------------------------------------------------------
    def reset_attack(self, name):
        self.attack_name = name
        self.runs = []
        self.workspaces = []
        self.cleanups = []
        self.notes = []
        self.allow_error = False
        self.secret_ok_under = []

    def note(self, msg):
        self.notes.append(msg)

    def on_cleanup(self, fn):
        self.cleanups.append(fn)

    def run_cleanups(self):
        for fn in reversed(self.cleanups):
            try:
                fn()
            except Exception as e:  # noqa: BLE001 - cleanup must go on
                self.note("cleanup: %s" % e)
        self.cleanups = []

    # ---- building blocks --------------------------------------------------
    def compile_all(self, sources):
        """cc every attack program into vis/bin (in parallel)."""
        cc = which("cc") or which("gcc")
        procs = []
        for src in sources:
            name = os.path.splitext(os.path.basename(src))[0]
            out = os.path.join(self.bin, name)
            argv = [cc, "-std=gnu11", "-O1", "-w", "-o", out, src]
            procs.append((name, out, subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)))
        for name, out, p in procs:
            o, _ = p.communicate()
            if p.returncode == 0:
                self.compiled[name] = out
            else:
                self.compile_errors[name] = short(o, 500)

    def prog(self, name):
        if name not in self.compiled:
            raise Fail("attack program %s did not compile: %s" % (name, self.compile_errors.get(name, "?")))
        return self.compiled[name]

    def workspace(self, name, where="tmp", parent=None, seed=True):
        """A fresh workspace. where: "tmp" (under /var/tmp/txbox-sec-*, which
        the sandbox replaces by a private tmpfs except the workspace itself)
        or "vis" (under the visible temp root). parent: explicit parent dir."""
        if parent is None:
            parent = os.path.join(self.tmp_root if where == "tmp" else self.vis_root, "ws")
        os.makedirs(parent, exist_ok=True)
        ws = os.path.join(parent, name)
        rmtree_force(ws)
        os.makedirs(ws)
        if seed:
            with open(os.path.join(ws, "README"), "w") as f:
                f.write("workspace of the escape suite\n")
            os.makedirs(os.path.join(ws, "src"))
            with open(os.path.join(ws, "src", "main.c"), "w") as f:
                f.write("int main(void) { return 0; }\n")
            with open(os.path.join(ws, "tool"), "w") as f:
                f.write("#!/bin/sh\necho tool\n")
            os.chmod(os.path.join(ws, "tool"), 0o755)
        self.workspaces.append(ws)
        return ws

    PRELUDE = r"""# escape-suite attack (generated)
set +e
MARK='%(mark)s'
PWN='%(pwn)s'
BIN='%(bin)s'
esc() { echo "ESCAPED $*"; }
blk() { echo "BLOCKED $*"; }
# must_fail NAME CMD...: the command has to fail
must_fail() {
    _n=$1; shift
    if _o=$("$@" 2>&1); then esc "$_n: $(printf '%%s' "$_o" | head -c 300 | tr '\n' ' ')"
    else blk "$_n: $(printf '%%s' "$_o" | head -c 200 | tr '\n' ' ')"; fi
}
# must_fail_sh NAME 'shell text'
must_fail_sh() { _n=$1; shift; must_fail "$_n" /bin/sh -c "$1"; }
done_() { echo PROBE-DONE; exit 0; }
"""

    def script(self, name, body):
        """Write an attack script into vis/scripts (visible, read-only inside)."""
        path = os.path.join(self.scripts, "%s.sh" % name)
        with open(path, "w") as f:
            f.write(self.PRELUDE % {"mark": self.mark, "pwn": self.pwn, "bin": self.bin})
            f.write(body)
            f.write("\ndone_\n")
        os.chmod(path, 0o755)
        return path

    def base_env(self, extra=None, home=None):
        env = {
            "PATH": SYS_PATH,
            "HOME": home or self.home,
            "LANG": "C.UTF-8",
            "USER": os.environ.get("USER", "root" if self.is_root else "user"),
        }
        for k in self.SECRET_ENV:
            env[k] = self.secret
        env["SSH_AUTH_SOCK"] = os.path.join(self.vis_root, "agent-" + self.secret)
        if extra:
            env.update(extra)
        return env

    def run(self, ws, body=None, argv=None, opts=(), name=None, env=None, home=None, timeout=90,
            use_pty=False, pass_fds=(), preexec=None, cwd=None, on_start=None):
        """txbox run -w WS --policy P --json OPTS -- /bin/sh SCRIPT (or argv).
        Returns a Result; the pty master (use_pty) is on result.pty_master."""
        script = None
        if body is not None:
            script = self.script(name or self.attack_name, body)
            cmd = ["/bin/sh", script]
        else:
            cmd = list(argv)
        full = [self.txbox, "run", "-w", ws]
        if self.policy:
            full += ["--policy", self.policy]
        full += ["--json"] + list(opts) + ["--"] + cmd
        e = self.base_env(env, home)
        master = slave = None
        if use_pty:
            master, slave = pty.openpty()
            tty.setraw(slave)

        def pre():
            os.setsid()
            if use_pty:
                fcntl.ioctl(slave, termios.TIOCSCTTY, 0)
            if preexec:
                preexec()
        t0 = time.monotonic()
        p = subprocess.Popen(full, stdin=slave if use_pty else subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=e,
                             cwd=cwd or ws, preexec_fn=pre, pass_fds=tuple(pass_fds) + ((slave,) if use_pty else ()))
        if on_start:
            on_start(p)
        out_fd, err_fd = p.stdout.fileno(), p.stderr.fileno()
        bufs = {out_fd: [], err_fd: []}
        files = {p.stdout.fileno(): p.stdout, p.stderr.fileno(): p.stderr}
        open_fds = set(bufs)
        killed = False
        while open_fds:
            left = timeout - (time.monotonic() - t0)
            if left <= 0 and not killed:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except OSError:
                    pass
                killed = True
            r, _, _ = select.select(list(open_fds), [], [], max(0.05, min(left, 1.0)) if left > 0 else 1.0)
            for fd in r:
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    open_fds.discard(fd)
                else:
                    bufs[fd].append(chunk)
            if killed and time.monotonic() - t0 > timeout + 10:
                break
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        for f in files.values():
            f.close()
        elapsed = time.monotonic() - t0
        res = Result(full, p.returncode, b"".join(bufs[out_fd]), b"".join(bufs[err_fd]), elapsed,
                     ru.ru_maxrss, script)
        res.killed_by_harness = killed
        res.env = e
        if use_pty:
            res.pty_master, res.pty_slave = master, slave
            self.on_cleanup(lambda: (os.close(master), os.close(slave)))
        self.runs.append(res)
        if self.verbose:
            print("#   %s (%.2fs): %s" % (os.path.basename(script or cmd[0]), elapsed, res.describe()))
        if killed:
            raise Fail("txbox did not finish within %ds (killed by the harness): %s" % (timeout, res.describe()))
        if res.json is None:
            raise Fail("txbox printed no result JSON: %s" % res.describe())
        if res.outcome == "error" and not self.allow_error:
            if res.get("rollback_reason"):
                raise Fail("txbox ran the attack, then failed finishing the transaction (%s): %s"
                           % (res.get("error"), res.describe()))
            raise Fail("txbox failed instead of running the attack: %s" % res.describe())
        return res

    # ---- expectations on a run -------------------------------------------
    def expect_blocked(self, res, required=()):
        """No ESCAPED line, the probe ran to its end, and each required step
        reported BLOCKED."""
        esc = res.lines("ESCAPED")
        if esc:
            raise Fail("; ".join(l[len("ESCAPED "):] for l in esc[:8]) +
                       (" (+%d more)" % (len(esc) - 8) if len(esc) > 8 else ""))
        if "PROBE-DONE" not in res.stdout.splitlines():
            raise Fail("the attack did not run to its end: %s" % res.describe())
        got = set(l.split()[1].rstrip(":") for l in res.lines("BLOCKED"))
        missing = [r for r in required if r not in got]
        if missing:
            raise Fail("attack steps did not report: %s; %s" % (", ".join(missing), res.describe()))

    # ---- generic checks after every attack --------------------------------
    def generic_checks(self):
        problems = []
        # 1. secrets never in any output
        for r in self.runs:
            for label, text in (("stdout", r.stdout), ("stderr", r.stderr),
                                ("txbox stderr", r.raw_err.decode("utf-8", "replace"))):
                if self.secret in text:
                    i = text.index(self.secret)
                    problems.append("a secret marker reached the command's %s: ...%s..." %
                                    (label, short(text[max(0, i - 80):i + 40], 160)))
        # 2. no process of the attack survives
        left = self.surviving_processes()
        if left:
            problems.append("processes of the attack survive txbox: %s" % "; ".join(left[:5]))
            for pid, _ in self._surviving_pids():
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
        # 3. workspaces hold nothing dangerous
        for ws in self.workspaces:
            problems += self.audit_workspace(ws)
        # 4. nothing named after this run outside the workspaces
        problems += self.marker_scan()
        # 5. the machine answers
        t0 = time.monotonic()
        try:
            subprocess.run(["true"], timeout=20)
            dt = time.monotonic() - t0
            if dt > 5:
                problems.append("the machine is sluggish: spawning `true` took %.1fs" % dt)
        except subprocess.TimeoutExpired:
            problems.append("the machine does not answer: `true` did not finish in 20s")
        return problems

    def _surviving_pids(self):
        me = set()
        p = os.getpid()
        while p > 1:
            me.add(p)
            st = read_text("/proc/%d/stat" % p, "")
            try:
                p = int(st.rsplit(")", 1)[1].split()[1])
            except (IndexError, ValueError):
                break
        tokens = [self.scripts.encode(), self.mark.encode()]
        out = []
        for d in os.listdir("/proc"):
            if not d.isdigit() or int(d) in me:
                continue
            try:
                with open("/proc/%s/cmdline" % d, "rb") as f:
                    cl = f.read()
            except OSError:
                continue
            if any(t in cl for t in tokens) and b"run.py" not in cl:
                out.append((int(d), cl.replace(b"\0", b" ").decode("utf-8", "replace")[:120]))
        return out

    def surviving_processes(self, wait=3.0):
        deadline = time.monotonic() + wait
        while True:
            left = self._surviving_pids()
            if not left or time.monotonic() > deadline:
                return ["%d %s" % x for x in left]
            time.sleep(0.1)

    def audit_workspace(self, ws):
        """What commit must never publish, and secrets that must not be there."""
        problems = []
        if not os.path.isdir(ws):
            return problems
        sensitive = {}
        for p in ("/etc/shadow", "/etc/passwd", "/etc/sudoers", "/etc/gshadow"):
            try:
                st = os.stat(p)
                sensitive[(st.st_dev, st.st_ino)] = p
            except OSError:
                pass
        inode_links = {}
        secret = self.secret.encode()
        for dirpath, dirnames, filenames in os.walk(ws):
            rel_dir = os.path.relpath(dirpath, ws)
            for n in dirnames + filenames:
                full = os.path.join(dirpath, n)
                rel = os.path.normpath(os.path.join(rel_dir, n))
                in_state = rel == ".txbox" or rel.startswith(".txbox/")
                try:
                    st = os.lstat(full)
                except OSError:
                    continue
                if stat.S_ISREG(st.st_mode):
                    inode_links.setdefault((st.st_dev, st.st_ino), [st.st_nlink, []])[1].append(rel)
                if in_state:
                    if self.mark in n:
                        problems.append("attack artefact inside the state dir: %s" % rel)
                    continue
                m = st.st_mode
                if stat.S_ISCHR(m) or stat.S_ISBLK(m):
                    problems.append("device node published: %s (%s %d:%d)" % (
                        rel, "char" if stat.S_ISCHR(m) else "block", os.major(st.st_rdev), os.minor(st.st_rdev)))
                if stat.S_ISSOCK(m):
                    problems.append("socket published: %s" % rel)
                if m & (stat.S_ISUID | stat.S_ISGID) and not stat.S_ISLNK(m):
                    problems.append("%s bit published: %s (mode %o)" % (
                        "setuid" if m & stat.S_ISUID else "setgid", rel, stat.S_IMODE(m)))
                if (st.st_dev, st.st_ino) in sensitive:
                    problems.append("hard link to %s published: %s" % (sensitive[(st.st_dev, st.st_ino)], rel))
                try:
                    names = os.listxattr(full, follow_symlinks=False)
                except OSError:
                    names = []
                for x in names:
                    # user.overlay.* is overlay metadata only for a rootless (userxattr)
                    # overlay; as root it is the command's data, committed like natively
                    if x == "security.capability" or x.startswith("trusted.overlay.") or \
                            (x.startswith("user.overlay.") and not self.is_root):
                        problems.append("xattr %s published on %s" % (x, rel))
                planted = any(full.startswith(d + "/") for d in self.secret_ok_under)
                if stat.S_ISREG(m) and st.st_size <= (32 << 20) and not planted:
                    try:
                        with open(full, "rb") as f:
                            if secret in f.read():
                                problems.append("a secret reached the workspace: %s" % rel)
                    except OSError:
                        pass
                if self.secret in n:
                    problems.append("a secret reached the workspace (file name): %s" % rel)
        # Hard links leading out of the workspace: more links than names in it.
        for (dev, ino), (nlink, rels) in inode_links.items():
            if nlink > len(rels) and not all(r.startswith(".txbox") for r in rels):
                problems.append("hard link to a file outside the workspace: %s (nlink %d, %d inside)" % (
                    rels[0], nlink, len(rels)))
        return problems

    def marker_scan(self):
        """Files named after this run outside the workspaces."""
        problems = []
        flat = ["/", "/etc", "/usr", "/usr/bin", "/usr/local", "/usr/local/bin", "/usr/lib", "/root",
                "/tmp", "/var/tmp", "/var", "/var/lib", "/dev", "/dev/shm", "/home", "/run", "/opt", "/srv",
                "/etc/cron.d", "/etc/profile.d", "/etc/sudoers.d", os.path.expanduser("~")]
        for d in flat:
            try:
                for n in os.listdir(d):
                    if self.mark in n:
                        problems.append("attack artefact on the host: %s" % os.path.join(d, n))
            except OSError:
                pass
        ws_set = set(self.workspaces)
        for root in (self.vis_root, self.tmp_root):
            for dirpath, dirnames, filenames in os.walk(root):
                dirnames[:] = [d for d in dirnames if os.path.join(dirpath, d) not in ws_set]
                if dirpath == self.scripts:
                    continue
                for n in dirnames + filenames:
                    if self.pwn in n:
                        problems.append("attack artefact outside the workspace: %s" % os.path.join(dirpath, n))
        return problems
