"""A plain literal command (`make -j4`, `./build.sh`) is exec'ed without a
shell (shell_literal_argv). Whatever the command sees and whatever txbox
reports must be what `sh -c` gives: compared against the same text made
non-literal by a trailing `;` (which goes through /bin/sh)."""

import os

from harness import check, small_ws, test


def _same(ctx, ws, text, cwd=None, sort_lines=False):
    a = ctx.run_json(ws, text, cwd=cwd)
    b = ctx.run_json(ws, text + ";", cwd=cwd)
    fields = ("outcome", "exit_code", "signal", "rollback_reason", "stdout", "stderr")
    for f in fields:
        va, vb = a.json.get(f), b.json.get(f)
        if sort_lines and isinstance(va, str):
            va, vb = sorted(va.splitlines()), sorted(vb.splitlines())
        check(va == vb, "%r: %s differs without the shell: %r vs %r" % (text, f, va, vb))
    return a


@test("literal/same-as-sh")
def literal_same(ctx):
    ws = small_ws(ctx)
    os.makedirs(os.path.join(ws, "sub"), exist_ok=True)
    with open(os.path.join(ws, "noshebang"), "w") as f:
        f.write("echo from-a-script-without-shebang \"$0\"\nexit 7\n")
    os.chmod(os.path.join(ws, "noshebang"), 0o755)
    with open(os.path.join(ws, "notexec"), "w") as f:
        f.write("echo never\n")
    os.chmod(os.path.join(ws, "notexec"), 0o644)
    _same(ctx, ws, "env", sort_lines=True)
    _same(ctx, ws, "env", cwd=os.path.join(ws, "sub"), sort_lines=True)
    _same(ctx, ws, "ls -a")
    _same(ctx, ws, "true")
    _same(ctx, ws, "false")
    _same(ctx, ws, "txbox-it-no-such-command --x")
    _same(ctx, ws, "./noshebang a b")
    _same(ctx, ws, "./notexec")
    _same(ctx, ws, "./sub")
    r = _same(ctx, ws, "touch made-by-literal")
    check(os.path.exists(os.path.join(ws, "made-by-literal")), "the literal command's file was not committed")


@test("literal/validate-same-as-sh")
def literal_validate(ctx):
    ws = small_ws(ctx)
    for v in ("ls -a", "txbox-it-no-such-validator", "false"):
        a = ctx.run_json(ws, "echo x > v-%d" % len(v), extra=["--validate", v])
        b = ctx.run_json(ws, "echo x > v-%d" % len(v), extra=["--validate", v + ";"])
        for f in ("outcome", "exit_code", "rollback_reason", "stdout", "stderr", "validation_exit_code"):
            check(a.json.get(f) == b.json.get(f), "--validate %r: %s differs without the shell: %r vs %r"
                  % (v, f, a.json.get(f), b.json.get(f)))


@test("literal/command-path-not-txbox-path")
def literal_path(ctx):
    """The command's PATH decides, not txbox's: with PATH removed from the
    command's environment (env_deny) a bare program name is not found,
    with or without the shell."""
    ws = small_ws(ctx)
    pol = os.path.join(ctx.mkdtemp("policy"), "nopath.yaml")
    with open(pol, "w") as f:
        f.write("version: 1\nsandbox:\n  env_deny: [PATH]\nrules: []\n")
    a = ctx.run_json(ws, "ls", extra=["--policy", pol])
    b = ctx.run_json(ws, "ls;", extra=["--policy", pol])
    for fld in ("outcome", "exit_code", "stdout"):
        check(a.json.get(fld) == b.json.get(fld), "without PATH, %s differs: %r (literal) vs %r (sh)"
              % (fld, a.json.get(fld), b.json.get(fld)))
