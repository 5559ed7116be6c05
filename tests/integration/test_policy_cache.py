"""The compiled-policy cache (policy/cache.c) and how a policy file is opened.

A cache entry a sandboxed command could have written is never trusted: a cache
dir inside the run's workspace, or inside any other txbox workspace, is neither
read nor written (red team rt3/14). The user's own processes outside every
sandbox are trusted: an entry they plant outside all workspaces is used, which
also shows that the cache still works. A policy file that is a FIFO is refused
at once instead of blocking open(2) (rt3/04b)."""

import os
import stat

from harness import Fail, check, small_ws, test

POLICY = "version: 1\nunresolved: hold\nrules: []\nsandbox:\n  network: %s\n"


def _write(path, text):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o644)


def _entry(ctx, policy, cache):
    """The cache entry txbox writes for `policy` into cache/txbox: (name, bytes)."""
    ws = small_ws(ctx, "cache-seed")
    env = dict(os.environ, XDG_CACHE_HOME=cache)
    res = ctx.run_txbox(["run", "-w", ws, "--policy", policy, "--json", "--", "true"], cwd=ws, env=env)
    res.parse_json()
    d = os.path.join(cache, "txbox")
    names = os.listdir(d) if os.path.isdir(d) else []
    if len(names) != 1:
        raise Fail("expected one cache entry in %s, found %r\n  %s" % (d, names, res.where()))
    with open(os.path.join(d, names[0]), "rb") as f:
        return names[0], f.read()


def _forged(ctx):
    """(policy file with network: false, its entry's name, that entry with the
    network flag of the compiled part set): what an attacker who knows the
    public format writes."""
    base = ctx.mkdtemp("cache-forge")
    p_off, p_on = os.path.join(base, "off.yaml"), os.path.join(base, "on.yaml")
    _write(p_off, POLICY % "false")
    _write(p_on, POLICY % "true ")
    name, off = _entry(ctx, p_off, os.path.join(base, "c-off"))
    _, on = _entry(ctx, p_on, os.path.join(base, "c-on"))
    check(len(off) == len(on), "entries of equal-length policies differ in length")
    flag = [i for i in range(len(off)) if off[i] == 0 and on[i] == 1]
    check(flag, "no network flag found between the two entries")
    forged = bytearray(off)
    forged[flag[-1]] = 1
    return p_off, name, bytes(forged)


def _plant_from_sandbox(ctx, ws, cache_rel, name, data, env):
    """A sandboxed command writes the forged entry to ws/cache_rel/txbox/name; committed."""
    script = ("import os,sys; d=os.path.join(sys.argv[1],'txbox'); os.makedirs(d,exist_ok=True); "
              "open(os.path.join(d,sys.argv[2]),'wb').write(bytes.fromhex(sys.argv[3]))")
    res = ctx.run_txbox(["run", "-w", ws, "--json", "--", "python3", "-c", script,
                         os.path.join(ws, cache_rel), name, data.hex()], cwd=ws, env=env)
    res.parse_json()
    res.expect(outcome="committed", exit_status=0)
    with open(os.path.join(ws, cache_rel, "txbox", name), "rb") as f:
        check(f.read() == data, "the forged entry was not committed as written")


def _network_of(ctx, ws, policy, env):
    res = ctx.run_txbox(["run", "-w", ws, "--policy", policy, "--json", "--", "true"], cwd=ws, env=env)
    res.parse_json()
    res.expect(outcome="committed", exit_status=0)
    return res.jget("network"), res


@test("policy-cache/inside-workspace-never-written-nor-read")
def cache_in_workspace(ctx):
    policy, name, forged = _forged(ctx)
    ws = small_ws(ctx, "cache-ws")
    home = ctx.mkdtemp("cache-home")
    env = dict(os.environ, XDG_CACHE_HOME=os.path.join(ws, ".cache"), HOME=home)
    net, res = _network_of(ctx, ws, policy, env)
    check(not os.path.exists(os.path.join(ws, ".cache")),
          "txbox wrote its policy cache into the workspace, outside any transaction\n  " + res.where())
    check(os.path.isdir(os.path.join(home, ".cache", "txbox")),
          "no fallback cache in $HOME/.cache/txbox (XDG_CACHE_HOME is inside the workspace)")
    _plant_from_sandbox(ctx, ws, ".cache", name, forged, env)
    net, res = _network_of(ctx, ws, policy, env)
    check(net == "none", "a cache entry forged by the command inside the workspace was used: "
          "network %r under `network: false`\n  %s" % (net, res.where()))


@test("policy-cache/home-inside-workspace")
def cache_home_in_workspace(ctx):
    """$HOME inside the workspace (XDG_CACHE_HOME unset): the run is refused
    (a workspace may not contain the caller's home, rt3/15), and refusing
    writes nothing into the workspace, the policy cache included."""
    policy, name, forged = _forged(ctx)
    ws = small_ws(ctx, "cache-ws")
    home = os.path.join(ws, "home")
    os.mkdir(home)
    env = dict(os.environ, HOME=home)
    env.pop("XDG_CACHE_HOME", None)
    res = ctx.run_txbox(["run", "-w", ws, "--policy", policy, "--", "true"], cwd=ws, env=env)
    check(res.rc == 125 and b"home" in res.err,
          "a workspace containing $HOME was not refused with a reason naming it: " + res.where())
    check(not os.path.exists(os.path.join(home, ".cache")),
          "txbox wrote its policy cache into the workspace ($HOME is inside it)")


@test("policy-cache/inside-another-workspace")
def cache_in_other_workspace(ctx):
    """The cache lies in workspace B (not yet a txbox workspace when A's run
    writes it); a command run in B forges it; A's next run must not use it."""
    policy, name, forged = _forged(ctx)
    ws_a, ws_b = small_ws(ctx, "cache-a"), small_ws(ctx, "cache-b")
    env = dict(os.environ, XDG_CACHE_HOME=os.path.join(ws_b, ".cache"), HOME=ctx.mkdtemp("cache-home"))
    _network_of(ctx, ws_a, policy, env)
    _plant_from_sandbox(ctx, ws_b, ".cache", name, forged, env)
    net, res = _network_of(ctx, ws_a, policy, env)
    check(net == "none", "a cache entry forged by a command in another workspace was used: "
          "network %r\n  %s" % (net, res.where()))


@test("policy-cache/outside-workspaces-used")
def cache_outside_used(ctx):
    """Threat model: the user's own processes outside the sandbox are trusted.
    An entry such a process writes outside every workspace is read (this also
    checks the cache is read at all; the forged flag is how it shows)."""
    policy, name, forged = _forged(ctx)
    cache = ctx.mkdtemp("cache-out")
    ws = small_ws(ctx, "cache-ws")
    env = dict(os.environ, XDG_CACHE_HOME=cache)
    os.makedirs(os.path.join(cache, "txbox"), mode=0o700)
    path = os.path.join(cache, "txbox", name)
    with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as f:
        f.write(forged)
    net, res = _network_of(ctx, ws, policy, env)
    check(net == "host", "an entry in the user's own cache dir outside every workspace was not used "
          "(network %r): the cache is not read\n  %s" % (net, res.where()))


def _fifo(ctx):
    d = ctx.mkdtemp("policy-fifo")
    path = os.path.join(d, "policy.yaml")
    os.mkfifo(path, 0o644)
    check(stat.S_ISFIFO(os.stat(path).st_mode), "mkfifo made no FIFO")
    return path


@test("policy-file/fifo-refused-run")
def fifo_run(ctx):
    path = _fifo(ctx)
    ws = small_ws(ctx)
    res = ctx.run_txbox(["run", "-w", ws, "--policy", path, "--json", "--", "true"], cwd=ws, timeout=20)
    check(res.rc == 125, "txbox run --policy FIFO: exit %d, expected 125\n  %s" % (res.rc, res.where()))
    check(b"FIFO" in res.out + res.err,
          "the error does not say the policy is a FIFO\n  " + res.where())


@test("policy-file/fifo-refused-check")
def fifo_check(ctx):
    path = _fifo(ctx)
    res = ctx.run_txbox(["policy", "check", path], cwd=os.path.dirname(path), timeout=20)
    check(res.rc != 0, "txbox policy check FIFO succeeded\n  " + res.where())
    check(b"FIFO" in res.out + res.err,
          "the error does not say the policy is a FIFO\n  " + res.where())
