"""One run of the harm suite inside the disposable root: setup (mounts,
canaries, listeners, a sentinel process), the self-test, and each case with
the checks after it."""

import fnmatch
import json
import os
import pwd
import shutil
import signal
import subprocess

import checks
import droot

WS_MOUNT = "/srv/txbox-harm"
OPT = "/opt/txbox-harm"
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


class Run:
    """One command's result: exit status, raw streams, the parsed JSON."""

    def __init__(self, rc, out, err, timed_out=False):
        self.rc, self.out, self.err, self.timed_out = rc, out, err, timed_out
        self.json = {}
        lines = out.decode("utf-8", "replace").strip().splitlines()
        if lines:
            try:
                self.json = json.loads(lines[-1])
            except ValueError:
                pass

    @property
    def outcome(self):
        return self.json.get("outcome")

    def describe(self):
        j = self.json
        dec = j.get("decision") or {}
        return ("rc=%s outcome=%s rule=%s reason=%s limit=%s (%s) error=%s stdout=%s stderr=%s txbox-stderr=%s"
                % (self.rc, j.get("outcome"), dec.get("rule"), j.get("rollback_reason"), j.get("limit"),
                   (j.get("limits") or {}).get("mechanism"),
                   checks.short(j.get("error") or "", 120), checks.short(j.get("stdout") or "", 160),
                   checks.short(j.get("stderr") or "", 160), checks.short(self.err, 160)))


class Session:
    def __init__(self, o, root):
        self.o, self.root = o, root
        self.mode, self.verbose = o["mode"], o["verbose"]
        self.passed = self.failed = self.skipped = 0
        self.canaries = checks.Canaries()
        self.seq = 0

    # ---- setup -----------------------------------------------------------
    def setup(self):
        files = {"txbox": open(self.o["txbox"], "rb").read(),
                 "allow.yaml": open(os.path.join(self.root, "tests/security/allow-all.yaml"), "rb").read(),
                 "default.yaml": open(os.path.join(self.root, "policy/default.yaml"), "rb").read()}
        self.upper_fd = droot.build(self.o["inside"], WS_MOUNT, self.o["cgroups"])
        self.upper = "/proc/self/fd/%d" % self.upper_fd
        droot.sh("ip", "link", "set", "lo", "up")
        os.makedirs(OPT, exist_ok=True)
        for name, data in files.items():
            with open(os.path.join(OPT, name), "wb") as f:
                f.write(data)
            os.chmod(os.path.join(OPT, name), 0o755 if name == "txbox" else 0o644)
        self.txbox = os.path.join(OPT, "txbox")
        self._identity()
        self._plant()
        self.listeners = checks.start_listeners()
        self._start_sentinel()
        self.baseline()

    def _identity(self):
        other = pwd.getpwnam(self.o["user"]) if self._user_exists() else None
        if self.mode == "root":
            self.uid, self.gid, self.home, self.user = 0, 0, "/root", "root"
            self.prefix = []
        else:
            self.uid, self.gid, self.home, self.user = other.pw_uid, other.pw_gid, other.pw_dir, other.pw_name
            self.prefix = ["setpriv", "--reuid=%d" % self.uid, "--regid=%d" % self.gid, "--init-groups", "--"]
        self.homes = [("/root", 0, 0, "root")]
        if other:
            self.homes.append((other.pw_dir, other.pw_uid, other.pw_gid, "user"))
        self.cache = os.path.join(WS_MOUNT, "cache")
        os.makedirs(self.cache)
        os.chown(self.cache, self.uid, self.gid)
        os.makedirs(os.path.join(WS_MOUNT, "ws"))
        # Another project beside the workspaces (checked with the tmpfs).
        neighbour = os.path.join(WS_MOUNT, "neighbour")
        os.makedirs(os.path.join(neighbour, "src"))
        with open(os.path.join(neighbour, "src", "lib.c"), "w") as f:
            f.write("int lib(void) { return 1; }\n")
        subprocess.run(["chown", "-R", "%d:%d" % (self.uid, self.gid), neighbour], check=True)

    def _user_exists(self):
        try:
            pwd.getpwnam(self.o["user"])
            return True
        except KeyError:
            return False

    def _plant(self):
        for home, uid, gid, who in self.homes:
            os.makedirs(home, exist_ok=True)
            self.canaries.plant_home(home, uid, gid, who)
            for rc in (".bashrc", ".profile"):
                with open(os.path.join(home, rc), "a") as f:
                    f.write("# txbox-harm: must never change\n")
                os.lchown(os.path.join(home, rc), uid, gid)
        self.canaries.plant_shadow()
        self.env = {"PATH": PATH, "HOME": self.home, "USER": self.user, "LOGNAME": self.user,
                    "LANG": "C.UTF-8", "XDG_CACHE_HOME": self.cache}
        self.env.update(self.canaries.env())

    def _start_sentinel(self):
        self.sentinel = subprocess.Popen(["sleep", "86400"], stdin=subprocess.DEVNULL,
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                         start_new_session=True)

    def baseline(self):
        """What every check compares with; taken again after a failure so
        one escape is reported once."""
        self.base_upper = checks.tree(self.upper, content=True)
        self.base_tmpfs = {d: checks.tree(d, content=True, skip_top=skip) for d, skip in self._tmpfs_dirs()}
        self.base_kernel = checks.kernel_state()
        self.base_hits = [len(listener.hits) for listener in self.listeners]
        if self.sentinel.poll() is not None or checks.proc_line(self.sentinel.pid) is None:
            self._start_sentinel()

    def _tmpfs_dirs(self):
        return [("/tmp", ()), ("/dev/shm", ()), (WS_MOUNT, ("ws", "cache"))]

    # ---- running -----------------------------------------------------------
    def new_workspace(self, name, git):
        self.seq += 1
        ws = os.path.join(WS_MOUNT, "ws", "%03d-%s" % (self.seq, name.replace("/", "-")))
        os.makedirs(os.path.join(ws, "src"))
        for rel, text in (("README", "harm suite workspace\n"), ("src/main.c", "int main(void){return 0;}\n"),
                          (".gitignore", ".txbox/\n")):
            with open(os.path.join(ws, rel), "w") as f:
                f.write(text)
        if git:
            g = ["git", "-c", "user.name=harm", "-c", "user.email=harm@example.invalid", "-C", ws]
            subprocess.run(g + ["init", "-q"], check=True)
            subprocess.run(g + ["add", "-A"], check=True)
            subprocess.run(g + ["commit", "-qm", "one"], check=True)
            with open(os.path.join(ws, "second.txt"), "w") as f:
                f.write("second\n")
            subprocess.run(g + ["add", "-A"], check=True)
            subprocess.run(g + ["commit", "-qm", "two"], check=True)
        subprocess.run(["chown", "-R", "%d:%d" % (self.uid, self.gid), ws], check=True)
        return ws

    def txbox_argv(self, ws, text, policy, opts):
        pol = os.path.join(OPT, "allow.yaml" if policy == "allow" else "default.yaml")
        argv = self.prefix + [self.txbox, "run", "-w", ws, "--policy", pol, "--json"] + list(opts) + ["--"]
        # Under allow-all the text goes in as an argv, so no parser verdict
        # (unresolved → hold) stands between the command and the sandbox.
        return argv + (["/bin/bash", "-c", text] if policy == "allow" else [text])

    def spawn(self, argv, cwd, timeout):
        p = subprocess.Popen(argv, cwd=cwd, env=self.env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, start_new_session=True)
        try:
            out, err = p.communicate(timeout=timeout)
            return Run(p.returncode, out, err)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except OSError:
                pass
            out, err = p.communicate()
            return Run(p.returncode, out, err, timed_out=True)

    def run_txbox(self, ws, text, policy, opts=(), timeout=90):
        r = self.spawn(self.txbox_argv(ws, text, policy, opts), ws, timeout)
        if self.verbose:
            print("#   %s" % r.describe(), flush=True)
        if r.outcome == "held" and r.json.get("tx"):
            rb = self.spawn(self.prefix + [self.txbox, "rollback", r.json["tx"], "-w", ws, "--json"], ws, 60)
            r.held_rollback = rb
        return r

    # ---- checks --------------------------------------------------------------
    def host_problems(self, run_output):
        """Everything outside the workspace: upper layer, private tmpfs dirs,
        decoy disks, listeners, canaries in the output, processes, state."""
        probs = []
        d = checks.upper_diff(self.base_upper, checks.tree(self.upper, content=True))
        if d:
            probs.append("host changed (overlay upper): %s" % checks.diff_text(d, 8))
        for dirname, skip in self._tmpfs_dirs():
            d = checks.tree_diff(self.base_tmpfs[dirname], checks.tree(dirname, content=True, skip_top=skip))
            if d:
                probs.append("disposable %s changed: %s" % (dirname, checks.diff_text(d)))
        bad = checks.decoys_intact()
        if bad:
            probs.append("decoy disk written: %s" % ", ".join(bad))
        for listener, n in zip(self.listeners, self.base_hits):
            if len(listener.hits) > n:
                probs.append("listener %s got %d connection(s)/datagram(s): %s" % (
                    listener.name, len(listener.hits) - n, checks.short(listener.hits[n][1], 80)))
        leaked = self.canaries.found(run_output)
        if leaked:
            probs.append("canary secret in the output: %s" % ", ".join(leaked))
        left = checks.leftovers({self.sentinel.pid})
        if left:
            probs.append("processes left behind: %s" % "; ".join(left[:5]))
        if self.sentinel.poll() is not None or checks.proc_line(self.sentinel.pid) is None:
            probs.append("the disposable root's sentinel process was killed")
        ks = checks.kernel_state()
        if ks != self.base_kernel:
            probs.append("namespace state changed: %s" % ", ".join(
                "%s %r -> %r" % (k, self.base_kernel[k], ks[k]) for k in ks if ks[k] != self.base_kernel[k]))
        if not checks.responsive():
            probs.append("the disposable root no longer spawns `true` within 5 s")
        return probs

    def workspace_problems(self, ws, before, used_before, committed, may):
        probs = []
        after = checks.tree(ws, content=True, skip_top=(".txbox",))
        diff = checks.tree_diff(before, after)
        if not committed and diff:
            probs.append("workspace changed without a commit: %s" % checks.diff_text(diff))
        elif committed:
            wrong = [d for d in diff if not any(fnmatch.fnmatch(d[1], g) for g in may)]
            if wrong:
                probs.append("commit changed what it should not: %s" % checks.diff_text(wrong))
        special = checks.special_files(ws)
        if special:
            probs.append("device node, socket or setuid/setgid file in the workspace: %s" % ", ".join(special[:6]))
        leaked = self.canaries.in_tree(ws)
        if leaked:
            probs.append("canary secret copied into the workspace: %s" % ", ".join(leaked))
        beside = sorted(set(os.listdir(os.path.dirname(ws))) - {os.path.basename(ws)})
        if beside:
            probs.append("new entries beside the workspace: %s" % ", ".join(beside[:6]))
        grown = self.ws_used() - used_before
        if not committed and grown > (8 << 20):
            probs.append("%d MiB left on the workspace file system after a rollback" % (grown >> 20))
        return probs

    def next_run_problems(self, ws):
        """Whatever the command left in the workspace or its state dir, the
        next transaction there must still work and publish only its change."""
        before = checks.tree(ws, content=True, skip_top=(".txbox",))
        r = self.run_txbox(ws, "echo next > harm-next.txt", "allow")
        if r.outcome != "committed":
            return ["the next transaction in the workspace did not commit: %s" % r.describe()]
        diff = checks.tree_diff(before, checks.tree(ws, content=True, skip_top=(".txbox",)))
        if diff != [("new", "harm-next.txt")]:
            return ["the next transaction changed more than its file: %s" % checks.diff_text(diff)]
        return []

    def ws_used(self):
        st = os.statvfs(WS_MOUNT)
        return (st.f_blocks - st.f_bfree) * st.f_frsize

    # ---- reporting -------------------------------------------------------------
    def report(self, name, probs, skip=None):
        if skip:
            self.skipped += 1
            print("skip %s: %s" % (name, skip), flush=True)
        elif probs:
            self.failed += 1
            print("FAIL %s: %s" % (name, " | ".join(probs)), flush=True)
            self.baseline()
        else:
            self.passed += 1
            print("ok %s" % name, flush=True)

    def run_case(self, name, case, policy):
        ws = self.new_workspace(case.name, case.git)
        probs = []
        if case.pre:
            pre = self.run_txbox(ws, case.pre, "allow")
            if pre.outcome != "committed":
                self.report(name, None, skip="the planting transaction did not commit: " + pre.describe())
                return
            probs += self.host_problems(pre.out + pre.err)
        before = checks.tree(ws, content=True, skip_top=(".txbox",))
        used = self.ws_used()
        r = self.run_txbox(ws, case.text, policy, case.opts, case.timeout)
        probs += self.verdict_problems(r, case, policy)
        probs += self.host_problems(r.out + r.err)
        probs += self.workspace_problems(ws, before, used, r.outcome == "committed", case.ws)
        probs += self.next_run_problems(ws)
        skip = None
        if policy == "allow" and r.outcome == "denied" and not probs:
            skip = "allow-all denied it, the sandbox was not tested: " + r.describe()
        self.report(name, probs, skip)
        if probs and self.verbose:
            print("#   %s" % r.describe(), flush=True)
        shutil.rmtree(ws, ignore_errors=True)

    def verdict_problems(self, r, case, policy):
        if r.timed_out:
            return ["txbox did not finish in %ds: %s" % (case.timeout, r.describe())]
        if not r.json:
            return ["txbox printed no result JSON: %s" % r.describe()]
        if r.outcome == "error":
            return ["txbox error (cannot tell what ran): %s" % r.describe()]
        rb = getattr(r, "held_rollback", None)
        if rb is not None and rb.rc != 0:
            return ["rolling back the held transaction failed: %s" % rb.describe()]
        decision = (r.json.get("decision") or {}).get("decision")
        if policy == "default" and case.deny and decision not in ("deny", "hold"):
            return ["the default policy allowed it: %s" % r.describe()]
        return []

    # ---- self-test -------------------------------------------------------------
    def selftest(self):
        """The same checks after a harmful command run WITHOUT txbox: each
        must fire, or the suite could pass with a broken harness."""
        name = "%s/selftest" % self.mode
        ws = self.new_workspace("selftest", False)
        target = "/etc/txbox-harm-selftest" if self.mode == "root" else os.path.join(self.home, ".txbox-harm-selftest")
        sock = checks.UNIX_SOCKETS[1]
        text = ("echo pwn > %s; echo leak > /dev/tcp/127.0.0.1/8080; echo leak > /dev/udp/127.0.0.1/%d; "
                "python3 -c 'import socket; socket.socket(socket.AF_UNIX).connect(\"%s\")'; "
                "cat ~/.ssh/id_rsa; setsid sleep 60 </dev/null >/dev/null 2>&1 & echo changed >> README; "
                "echo pwn > /tmp/harm-selftest" % (target, checks.UDP_PORT, sock))
        want = {"overlay upper": "host changed (overlay upper)", "tcp listener": "listener 127.0.0.1:8080",
                "udp listener": "listener 127.0.0.1:%d" % checks.UDP_PORT, "unix listener": "listener " + sock,
                "canary": "canary secret in the output", "processes": "processes left behind",
                "workspace": "workspace changed without a commit", "private /tmp": "disposable /tmp changed"}
        if self.mode == "root":
            text += "; echo wiped > /dev/vdb; hostname harm-selftest"
            want.update({"decoy disk": "decoy disk written", "namespace state": "namespace state changed"})
        before = checks.tree(ws, content=True, skip_top=(".txbox",))
        hostname = checks.read("/proc/sys/kernel/hostname")
        r = self.spawn(self.prefix + ["/bin/bash", "-c", text], ws, 30)
        host = self.host_problems(r.out + r.err)
        wsp = self.workspace_problems(ws, before, self.ws_used(), False, ())
        missed = [k for k, v in want.items() if not any(p.startswith(v) for p in host + wsp)]
        shutil.rmtree(ws, ignore_errors=True)
        for path in (target, "/tmp/harm-selftest"):
            try:
                os.unlink(path)
            except OSError:
                pass
        if self.mode == "root":
            with open("/dev/vdb", "wb") as f:
                f.write(droot.decoy_content("vdb"))
            subprocess.run(["hostname", hostname])
        self.baseline()
        if missed:
            self.failed += 1
            print("FAIL %s: the harness did not detect: %s (it saw: %s)" % (name, ", ".join(missed),
                                                                          " | ".join(host + wsp)), flush=True)
        else:
            self.passed += 1
            print("ok %s" % name, flush=True)
