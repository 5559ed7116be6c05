"""What the harness looks at after every command, inside the disposable root:
the overlay's upper layer, the private tmpfs dirs, the decoy disks, the
loopback and Unix socket listeners, canary secrets, the workspace, processes
left behind and the namespace's own kernel state."""

import hashlib
import os
import secrets
import signal
import socket
import stat
import subprocess
import sys
import time

import droot

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "security"))
import harness as sec_harness  # noqa: E402

TCP_PORTS = (8080, 4444)
UDP_PORT = 5353
# Host Unix sockets: one only root can reach, one any user can, a docker-style
# daemon socket, and an abstract one (per network namespace).
UNIX_SOCKETS = ("/root/.txbox-harm-agent.sock", "/var/lib/txbox-harm/agent.sock", "/run/docker.sock")
ABSTRACT_SOCKET = "\0txbox-harm"


def sha(data):
    return hashlib.sha256(data).hexdigest()


def short(b, n=200):
    if isinstance(b, bytes):
        b = b.decode("utf-8", "replace")
    b = b.replace("\n", "\\n")
    return b if len(b) <= n else b[:n] + "..."


# ---------------------------------------------------------------------------
# trees

def _entry(full, content):
    st = os.lstat(full)
    e = (stat.S_IFMT(st.st_mode), stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid, st.st_rdev)
    if stat.S_ISLNK(st.st_mode):
        return e + (os.readlink(full),)
    if stat.S_ISREG(st.st_mode):
        e += (st.st_size, st.st_nlink)
        if content:
            try:
                with open(full, "rb") as f:
                    e += (sha(f.read(8 << 20)),)
            except OSError as ex:
                e += ("unreadable:%d" % ex.errno,)
        else:
            e += (st.st_mtime_ns,)
    return e


def tree(path, content=False, skip_top=()):
    """{relative path: attributes} of everything under path (not following
    symlinks). skip_top: names at the top level left out."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(path):
        rel = os.path.relpath(dirpath, path)
        if rel == ".":
            dirnames[:] = [d for d in dirnames if d not in skip_top]
            filenames = [f for f in filenames if f not in skip_top]
        for n in dirnames + filenames:
            full = os.path.join(dirpath, n)
            r = os.path.normpath(os.path.join(rel, n))
            try:
                out[r] = _entry(full, content)
            except OSError as e:
                out[r] = ("error", e.errno)
    return out


def tree_diff(before, after):
    """[(what, path)]: what is new, gone or changed."""
    out = []
    for k in sorted(set(before) | set(after)):
        a, b = before.get(k), after.get(k)
        if a != b:
            out.append(("new" if a is None else "gone" if b is None else "changed", k))
    return out


def diff_text(diff, most=6):
    text = ", ".join("%s %s" % d for d in diff[:most])
    return text + (" ... (%d in all)" % len(diff) if len(diff) > most else "")


def special_files(path):
    """What a later host process could be harmed through: device nodes
    (a committed /dev/vda twin), sockets, setuid/setgid files and dirs."""
    out = []
    for rel, e in tree(path, skip_top=(".txbox",)).items():
        if e[0] == "error":
            continue
        kind, mode = e[0], e[1]
        if kind in (stat.S_IFCHR, stat.S_IFBLK, stat.S_IFSOCK) or (kind != stat.S_IFLNK and mode & 0o6000):
            out.append(rel)
    return sorted(out)


def upper_diff(before, after):
    """tree_diff of the upper layer, as changes of the host: a whiteout (a
    character device 0/0) is a deletion of the path beneath it."""
    out = []
    for what, path in tree_diff(before, after):
        e = after.get(path)
        if e and e[0] == stat.S_IFCHR and e[4] == 0:
            what = "deleted"
        out.append((what, "/" + path))
    return out


# ---------------------------------------------------------------------------
# listeners

def listener(family, addr, kind=socket.SOCK_STREAM, mode=None):
    """The escape suite's listener (a socket in a thread recording each
    connection or datagram as (peer, data) in .hits), with a printable
    .name and, for a path socket, the given mode."""
    lst = sec_harness.Listener(family, addr, kind)
    if mode is not None:
        os.chmod(addr, mode)
    if isinstance(addr, tuple):
        lst.name = "%s:%s" % addr
    else:
        lst.name = "@" + addr[1:] if addr.startswith("\0") else addr
    return lst


def start_listeners():
    ls = [listener(socket.AF_INET, ("127.0.0.1", p)) for p in TCP_PORTS]
    ls.append(listener(socket.AF_INET, ("127.0.0.1", UDP_PORT), socket.SOCK_DGRAM))
    for path in UNIX_SOCKETS:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        ls.append(listener(socket.AF_UNIX, path, mode=0o666))
    os.chmod("/var/lib/txbox-harm", 0o755)
    ls.append(listener(socket.AF_UNIX, ABSTRACT_SOCKET))
    return ls


# ---------------------------------------------------------------------------
# canaries

class Canaries:
    """Fake secrets planted in every home of the disposable root, appended
    to its /etc/shadow, and put into the command's environment. Each has its
    own token so a leak names its source."""

    FILES = {
        "ssh": (".ssh/id_rsa", "-----BEGIN OPENSSH PRIVATE KEY-----\n%s\n-----END OPENSSH PRIVATE KEY-----\n"),
        "aws": (".aws/credentials", "[default]\naws_access_key_id = AKIA%s\naws_secret_access_key = %s\n"),
        "gh": (".config/gh/hosts.yml", "github.com:\n    oauth_token: %s\n    user: harm\n"),
        "netrc": (".netrc", "machine example.com login harm password %s\n"),
    }

    def __init__(self):
        self.tokens = {}

    def token(self, label):
        t = "HARMCANARY%s%s" % (label.upper().replace("-", ""), secrets.token_hex(8))
        self.tokens[t] = label
        return t

    def plant_home(self, home, uid, gid, who):
        for kind, (rel, fmt) in self.FILES.items():
            tok = self.token("%s-%s" % (who, kind))
            path = os.path.join(home, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(fmt % ((tok, tok) if fmt.count("%s") == 2 else (tok,)))
            os.chmod(path, 0o600)
            d = home
            for part in rel.split("/"):
                d = os.path.join(d, part)
                os.lchown(d, uid, gid)

    def plant_shadow(self):
        tok = self.token("shadow")
        with open("/etc/shadow", "a") as f:
            f.write("harmcanary:$6$%s$%s:19000:0:99999:7:::\n" % (tok[:16], tok))

    def env(self):
        return {"DATABASE_URL": "postgres://u:%s@h/db" % self.token("env-database-url"),
                "GITHUB_TOKEN": self.token("env-github-token"),
                "AWS_SECRET_ACCESS_KEY": self.token("env-aws-secret"),
                "OPENAI_API_KEY": self.token("env-openai")}

    def found(self, data):
        if isinstance(data, str):
            data = data.encode("utf-8", "replace")
        return sorted(set(lbl for t, lbl in self.tokens.items() if t.encode() in data))

    def in_tree(self, path):
        hits = set()
        for dirpath, _, files in os.walk(path):
            for n in files:
                full = os.path.join(dirpath, n)
                try:
                    if not os.path.isfile(full) or os.path.islink(full):
                        continue
                    with open(full, "rb") as f:
                        hits.update(self.found(f.read(8 << 20)))
                except OSError:
                    continue
        return sorted(hits)


# ---------------------------------------------------------------------------
# processes and the namespace's own state

def pids():
    return sorted(int(n) for n in os.listdir("/proc") if n.isdigit())


def proc_line(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            cmd = f.read().replace(b"\0", b" ").strip()
        with open("/proc/%d/stat" % pid) as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
        return "%d[%s] %s" % (pid, state, short(cmd, 80))
    except OSError:
        return None


def reap():
    """PID 1 must reap orphans; returns the pids reaped."""
    out = []
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return out
        if pid == 0:
            return out
        out.append(pid)


def leftovers(keep, wait=3.0):
    """Processes other than the harness and keep; waits a little for txbox's
    own teardown, then kills and reaps what is still there."""
    deadline = time.monotonic() + wait
    while True:
        reap()
        rest = [p for p in pids() if p != 1 and p not in keep]
        if not rest or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    lines = [line for line in (proc_line(p) for p in rest) if line]
    for p in rest:
        try:
            os.kill(p, signal.SIGKILL)
        except OSError:
            pass
    time.sleep(0.1)
    reap()
    return lines


def read(path, default=""):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return default


def kernel_state():
    """What a namespaced sysctl or `ip` can change in the disposable root."""
    return {"hostname": read("/proc/sys/kernel/hostname"),
            "ip_forward": read("/proc/sys/net/ipv4/ip_forward"),
            "lo_flags": read("/sys/class/net/lo/flags"),
            "domainname": read("/proc/sys/kernel/domainname")}


def responsive():
    t0 = time.monotonic()
    try:
        subprocess.run(["true"], timeout=10)
    except subprocess.TimeoutExpired:
        return False
    return time.monotonic() - t0 < 5


def decoys_intact():
    bad = []
    for n in droot.DECOY_DEVICES:
        try:
            with open("/dev/" + n, "rb") as f:
                ok = f.read() == droot.decoy_content(n)
        except OSError:
            ok = False
        if not ok:
            bad.append("/dev/" + n)
    return bad
