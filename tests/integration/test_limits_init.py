"""The sandbox's init samples the limits no cgroup enforces (CPU budget, and
memory rootless): the command must not be able to blind it (rt3/03: with
prlimit(1, RLIMIT_NOFILE, 3) every sample read 0)."""

import os

from harness import Fail, check, small_ws, test

# prlimit(2) and the scheduling levers (priority, affinity, policy, I/O
# priority) on every process of the sandbox the command did not start (init
# and the socket guard: children of pid 1 outside the command's own tree).
PROBE = r'''
import os, resource, sys
me = os.getpid()
def ppid(p):
    with open("/proc/%d/stat" % p) as f:
        s = f.read()
    return int(s[s.rindex(")") + 2:].split()[1])
mine = {me}
p = me
while p > 1:
    p = ppid(p)
    mine.add(p)
others = [1]
for n in os.listdir("/proc"):
    if n.isdigit() and int(n) not in mine:
        try:
            if ppid(int(n)) == 1:
                others.append(int(n))
        except OSError:
            pass
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
IOPRIO_SET = {"x86_64": 251, "aarch64": 30}.get(os.uname().machine)
levers = [
    ("setpriority", lambda p: os.setpriority(os.PRIO_PROCESS, p, 19)),
    ("sched_setaffinity", lambda p: os.sched_setaffinity(p, {0})),
    ("sched_setscheduler", lambda p: os.sched_setscheduler(p, os.SCHED_IDLE, os.sched_param(0))),
]
def ioprio(p):
    if libc.syscall(IOPRIO_SET, 1, p, 3 << 13) < 0:
        raise OSError(ctypes.get_errno(), "ioprio_set")
if IOPRIO_SET:
    levers.append(("ioprio_set", ioprio))
for p in others:
    for name, fn in levers:
        try:
            fn(p)
            print("CHANGED %s %d" % (name, p))
        except OSError:
            pass
for p in others:
    old = resource.prlimit(p, resource.RLIMIT_NOFILE)
    try:
        resource.prlimit(p, resource.RLIMIT_NOFILE, (3, 3))
        print("CHANGED %d" % p)
    except PermissionError:
        print("refused %d (reading gave %r)" % (p, old))
resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
print("own limit", resource.getrlimit(resource.RLIMIT_NOFILE))
'''

BLIND_INIT = '''
import resource
try:
    resource.prlimit(1, resource.RLIMIT_NOFILE, (3, 3))
except OSError as e:
    print("prlimit on init refused:", e)
'''

CPU = BLIND_INIT + '''
import os, time
kids = []
for i in range(8):
    p = os.fork()
    if p == 0:
        t = time.process_time()
        while time.process_time() - t < 2.5:
            pass
        os._exit(0)
    kids.append(p)
for p in kids:
    os.waitpid(p, 0)
open("cpu-done", "w").write("x")
'''

MEMORY = BLIND_INIT + '''
import os, time
kids = []
for i in range(6):
    p = os.fork()
    if p == 0:
        b = bytearray(150 << 20)
        for j in range(0, len(b), 4096):
            b[j] = 1
        time.sleep(1.5)
        os._exit(0)
    kids.append(p)
for p in kids:
    os.waitpid(p, 0)
open("mem-done", "w").write("x")
'''

# Without memory and pids limits no cgroup is made: the CPU budget rests on
# init's sampling alone, as root too.
NO_CGROUP_POLICY = """version: 1
unresolved: hold
sandbox:
  network: false
  limits:
    memory: 0
    pids: 0
    cpu: 0
    disk: 10G
    nofile: 4096
rules: []
"""


def _no_cgroup_policy(ctx):
    d = ctx.mkdtemp("policy")
    p = os.path.join(d, "no-cgroup.yaml")
    with open(p, "w") as f:
        f.write(NO_CGROUP_POLICY)
    os.chmod(d, 0o755)
    os.chmod(p, 0o644)
    return p


@test("limits-init/prlimit-on-init-and-guard-refused", needs=("python3",))
def prlimit_refused(ctx):
    ws = small_ws(ctx)
    r = ctx.run_json(ws, ["python3", "-c", PROBE], timeout=120)
    r.expect(outcome="committed", exit_status=0)
    out = r.stdout_bytes().decode("utf-8", "replace")
    check("CHANGED" not in out, "the command changed the limits of a process it did not start:\n" + out)
    check("refused 1 " in out, "prlimit(1, NOFILE, new) was not tried or not refused:\n" + out)
    check(out.count("refused ") >= 2, "no socket guard found beside init (expected it refused too):\n" + out)
    check("own limit (64, 64)" in out, "the command could not set its own limits:\n" + out)


def _limit_case(ctx, code, extra, limit, done, policy=None):
    ws = small_ws(ctx)
    args = ["run", "-w", ws] + (["--policy", policy] if policy else []) + list(extra)
    r = ctx.run_txbox(args + ["--json", "--", "python3", "-c", code], cwd=ws, timeout=300)
    r.parse_json()
    if r.jget("outcome") == "committed":
        raise Fail("over the %s limit after prlimit(1, NOFILE, 3), yet committed\n  %s" % (limit, r.where()))
    r.expect(outcome="rolled_back", exit_status=r.rc, rollback_reason="limit")
    check(r.jget("limit") == limit, "limit %r, expected %r" % (r.jget("limit"), limit))
    check(not os.path.exists(os.path.join(ws, done)), "the command's file was committed")


@test("limits-init/cpu-budget-holds-after-prlimit-init", needs=("python3",))
def cpu_after_prlimit(ctx):
    _limit_case(ctx, CPU, ["--cpu", "1"], "cpu", "cpu-done", policy=_no_cgroup_policy(ctx))


@test("limits-init/cpu-budget-holds-after-prlimit-init-default-policy", needs=("python3",))
def cpu_after_prlimit_default(ctx):
    _limit_case(ctx, CPU, ["--cpu", "1"], "cpu", "cpu-done")


@test("limits-init/memory-holds-after-prlimit-init", needs=("python3",))
def memory_after_prlimit(ctx):
    _limit_case(ctx, MEMORY, ["--memory", "200M"], "memory", "mem-done")


AUTOREAPED_CHILDREN = r'''
import os, signal, time
signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children reaped by nobody
t0 = time.time()
while time.time() - t0 < 12:
    if os.fork() == 0:
        end = time.process_time() + 0.008
        while time.process_time() < end:
            pass
        os._exit(0)
    time.sleep(0.0005)
print("PROBE-DONE")
'''


@test("limits-init/cpu-budget-counts-auto-reaped-children", root_only=True, needs=("python3",))
def cpu_autoreaped(ctx):
    """rt17 B2: children that a parent ignoring SIGCHLD never reaps show in
    no /proc sample and in no parent's cutime; --cpu 1 ran the whole
    command and only reported the limit at the end. With a cgroup its usage
    is watched during the run, and the command dies at the budget."""
    ws = small_ws(ctx)
    with open(os.path.join(ws, "spin.py"), "w") as f:
        f.write(AUTOREAPED_CHILDREN)
    res = ctx.run_json(ws, ["python3", "spin.py"], extra=["--cpu", "1", "--memory", "1G", "--pids", "512"],
                       timeout=120)
    check(res.jget("limit") == "cpu", "the CPU budget was not hit: %r %r" % (res.jget("outcome"), res.jget("limit")))
    check("PROBE-DONE" not in (res.jget("stdout", "") or ""), "the command ran to its end past the budget")
