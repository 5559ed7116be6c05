"""Timeouts and process clean-up (DESIGN.md section 3: exit status 124)."""

import os
import signal
import time

from harness import Fail, check, small_ws, test

SLEEP_ARGV = b"sleep\x00100\x00"


def sleep_pids():
    """pids (host view) of live processes whose argv is exactly `sleep 100`."""
    out = set()
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % name, "rb") as f:
                if f.read() != SLEEP_ARGV:
                    continue
            with open("/proc/%s/stat" % name, "rb") as f:
                st = f.read()
            state = st[st.rindex(b")") + 2:st.rindex(b")") + 3]
            if state not in (b"Z", b"X"):
                out.add(int(name))
        except (OSError, ValueError):
            continue
    return out


def _leftovers(pre, grace=1.0):
    """New `sleep 100` processes still alive `grace` seconds after txbox exited;
    also returns whether some existed right at exit. Kills what it finds (they
    are descendants of this test)."""
    at_exit = sleep_pids() - pre
    deadline = time.monotonic() + grace
    left = at_exit
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = sleep_pids() - pre
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    return left, bool(at_exit)


def _timeout_case(ctx, script, label):
    ws = small_ws(ctx)
    pre = sleep_pids()
    res = ctx.run_txbox(["run", "-w", ws, "--timeout", "2", "--json", "--", "sh", "-c", script],
                        cwd=ws, timeout=120)
    left, at_exit = _leftovers(pre)
    problems = []
    if left:
        problems.append("%d `sleep 100` process(es) still alive on the host 1 s after txbox exited "
                        "(pids %s)" % (len(left), sorted(left)))
    elif at_exit:
        ctx.note("%s: `sleep 100` processes were still alive when txbox exited (gone within 1 s)" % label)
    if res.wall >= 3.0:
        problems.append("txbox took %.2f s with --timeout 2 (limit: timeout + 1 s)" % res.wall)
    if problems:
        raise Fail("; ".join(problems) + "\n  " + res.where())
    res.parse_json()
    res.expect(outcome="rolled_back", exit_status=124, rollback_reason="timeout")
    check(not os.path.exists(os.path.join(ws, "before_timeout")),
          "a file written before the timeout was committed")
    return res


@test("timeout/sigterm-ignoring-forking-tree")
def timeout_tree(ctx):
    _timeout_case(ctx, 'trap "" TERM; (trap "" TERM; sleep 100) & (sleep 100 &) ; sleep 100',
                  "brief's tree")


@test("timeout/writes-then-hangs-with-setsid-daemon")
def timeout_setsid(ctx):
    _timeout_case(ctx, 'echo x > before_timeout; trap "" TERM HUP INT; setsid sleep 100 & '
                       '(trap "" TERM; exec sleep 100 <&- >&- 2>&-) & sleep 100', "setsid tree")


@test("timeout/not-triggered-for-fast-command")
def timeout_fast(ctx):
    ws = small_ws(ctx)
    res = ctx.run_txbox(["run", "-w", ws, "--timeout", "5", "--json", "--", "echo ok > fast"],
                        cwd=ws, timeout=60)
    res.parse_json()
    res.expect(outcome="committed", exit_status=0)
    check(res.wall < 5, "a fast command with --timeout 5 took %.1f s" % res.wall)
    check(os.path.isfile(os.path.join(ws, "fast")), "not committed")


@test("timeout/background-process-outliving-the-command")
def background_leftover(ctx):
    """The command exits at once but leaves `sleep 100` running (holding
    stdout open, and another one detached): txbox must return promptly and
    leave no process behind: a process surviving its transaction could write
    into the workspace after the commit."""
    ws = small_ws(ctx)
    pre = sleep_pids()
    res = ctx.run_txbox(["run", "-w", ws, "--json", "--", "sh", "-c",
                         "sleep 100 & (setsid sleep 100 >/dev/null 2>&1 &) ; echo started"],
                        cwd=ws, timeout=150)
    left, at_exit = _leftovers(pre)
    problems = []
    if left:
        problems.append("%d `sleep 100` process(es) survived the transaction (pids %s)"
                        % (len(left), sorted(left)))
    if res.wall > 20:
        problems.append("txbox took %.1f s: it waited for the background process" % res.wall)
    if problems:
        raise Fail("; ".join(problems) + "\n  " + res.where())
    res.parse_json()
    res.expect(outcome="committed", exit_status=0)


@test("timeout/live-output-nobody-reads")
def timeout_stalled_terminal(ctx):
    """Without --json the output is copied live to txbox's stdout. A reader
    that never reads (a stalled terminal, a full pipe) must not hold up the
    timeout: txbox returns 124 on time, the workspace unchanged."""
    import subprocess
    ws = small_ws(ctx)
    r, w = os.pipe()
    try:
        t0 = time.time()
        p = subprocess.Popen([ctx.txbox, "run", "-w", ws, "--timeout", "2", "--",
                              "echo x > new; yes txbox-live-output | head -c 8000000; sleep 60"],
                             stdout=w, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, cwd=ws)
        os.close(w)
        w = -1
        try:
            _, err = p.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            raise Fail("txbox still running 20 s after a 2 s timeout while its stdout was not read")
        took = time.time() - t0
        check(p.returncode == 124, "exit %d, expected 124 (timeout); stderr: %r" % (p.returncode, err[-300:]))
        check(took < 4.0, "txbox took %.1f s with a 2 s timeout (blocked on the unread output?)" % took)
        check(not os.path.exists(os.path.join(ws, "new")), "timed out but 'new' exists")
    finally:
        if w >= 0:
            os.close(w)
        os.close(r)


@test("timeout/live-output-stalled-terminal")
def timeout_stalled_pty(ctx):
    """The same with a terminal (a pty nobody reads, as a stalled ssh
    session): a terminal says it is writable with very little room, and a
    write into it must still never block txbox."""
    import pty
    import subprocess
    ws = small_ws(ctx)
    master, slave = pty.openpty()
    try:
        t0 = time.time()
        p = subprocess.Popen([ctx.txbox, "run", "-w", ws, "--timeout", "3", "--", "seq 1 500000; sleep 60"],
                             stdout=slave, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, cwd=ws)
        os.close(slave)
        slave = -1
        try:
            _, err = p.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            raise Fail("txbox still running 20 s after a 3 s timeout while its terminal was not read")
        took = time.time() - t0
        check(p.returncode == 124, "exit %d, expected 124 (timeout); stderr: %r" % (p.returncode, err[-300:]))
        check(took < 6.0, "txbox took %.1f s with a 3 s timeout (blocked on the terminal?)" % took)
    finally:
        if slave >= 0:
            os.close(slave)
        os.close(master)
