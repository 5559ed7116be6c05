"""txbox's own human-readable output is terminal-safe: names, keys and text
the command chose (and argv given to `check`) can carry escape sequences
(OSC 52 sets the clipboard, CSI rewrites the screen); txbox must print them
escaped (red team rt3/02)."""

import os

from harness import Fail, check, small_ws, test

HERE = os.path.dirname(os.path.abspath(__file__))


def default_policy(ctx):
    """A copy of policy/default.yaml the test user can read: the tree is
    beside this file, or (--as-user runs a copy of the suite alone) the
    one whose build/src/cli/txbox is under test."""
    for root in (os.path.join(HERE, "..", ".."), os.path.join(os.path.dirname(ctx.txbox), "..", "..", "..")):
        src = os.path.join(root, "policy", "default.yaml")
        if os.path.exists(src):
            dst = os.path.join(ctx.mkdtemp("default-policy"), "default.yaml")
            with open(src) as f, open(dst, "w") as g:
                g.write(f.read())
            return dst
    raise Fail("cannot find policy/default.yaml beside the suite or the binary")

OSC52 = "\x1b]52;c;SGVsbG8=\x07"
BIDI = "\u202e"


def _unsafe(data):
    """Offending characters in bytes printed for a terminal."""
    text = data.decode("utf-8", "replace")
    bad = []
    for i, ch in enumerate(text):
        o = ord(ch)
        if ch == "\n" or ch == "\t":
            continue
        if o < 0x20 or o == 0x7f or 0x80 <= o <= 0x9f or 0x202a <= o <= 0x202e or 0x2066 <= o <= 0x2069:
            bad.append("U+%04X at %d" % (o, i))
    return bad


def _terminal_safe(r, what):
    for name, data in (("stdout", r.out), ("stderr", r.err)):
        bad = _unsafe(data)
        check(not bad, "%s: raw control characters in txbox's %s: %s; %r" % (what, name, bad[:5], data[-400:]))


@test("terminal/effect-reason-path")
def effect_reason_path(ctx):
    ws = small_ws(ctx)
    name = ".env." + OSC52 + BIDI + "x"
    r = ctx.run_txbox(["run", "--policy", default_policy(ctx), "-w", ws, "--", "sh", "-c", 'echo SECRET=1 > "$1"', "sh", name], cwd=ws)
    check(r.rc != 0, "a new .env file committed without a hold: %s" % r.where())
    check(b"\\x1b]52" in r.err, "the escaped name is missing from the message: %s" % r.where())
    _terminal_safe(r, "effect hold")


@test("terminal/commit-error-path")
def commit_error_path(ctx):
    ws = small_ws(ctx)
    name = "sock" + OSC52
    code = "import socket,sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])"
    r = ctx.run_txbox(["run", "--policy", default_policy(ctx), "-w", ws, "--", "python3", "-c", code, name], cwd=ws)
    check(r.rc != 0, "a socket was committed: %s" % r.where())
    _terminal_safe(r, "refused socket")


@test("terminal/check-argv-and-usage")
def check_argv(ctx):
    ws = small_ws(ctx)
    r = ctx.run_txbox(["check", "-w", ws, "--", "cat", "a" + OSC52 + "\x1b[2J" + BIDI + "b"], cwd=ws)
    check(r.rc == 0, "check failed: %s" % r.where())
    check(b"\\x1b[2J" in r.out, "escaped argv missing from check output: %r" % r.out)
    _terminal_safe(r, "check")
    r = ctx.run_txbox(["run", "-w", ws, "--timeout", "1" + OSC52, "--", "true"], cwd=ws)
    check(r.rc == 125, "a bad --timeout was accepted: %s" % r.where())
    _terminal_safe(r, "usage error")


@test("terminal/attributes-reset-before-verdict")
def attributes_reset(ctx):
    """The command leaves SGR 8 (conceal) set on the terminal; txbox's own
    verdict that follows must not be printed invisibly."""
    import pty
    import subprocess
    ws = small_ws(ctx)
    master, slave = pty.openpty()
    p = subprocess.Popen([ctx.txbox, "run", "--policy", default_policy(ctx), "-w", ws, "--", "sh", "-c",
                          r'printf "\033[8m\033[30;40m"; exit 1'],
                         cwd=ws, stdin=subprocess.DEVNULL, stdout=slave, stderr=slave)
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    check(p.wait(timeout=60) == 1, "expected exit status 1: %r" % out)
    at = out.find(b"txbox: rolled back")
    check(at > 0, "no verdict on the terminal: %r" % out)
    conceal = out.rfind(b"\x1b[8m", 0, at)
    check(conceal >= 0, "the command's SGR 8 did not reach the terminal: %r" % out)
    check(b"\x1b[0m" in out[conceal:at], "SGR 8 still set when txbox printed its verdict: %r" % out)
