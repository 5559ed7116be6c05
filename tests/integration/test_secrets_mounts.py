"""Secrets stay hidden whatever the mount table and the password database
look like (docs/ARCHITECTURE.md, "Secrets"): a home is found by what it
is, not by how /etc/passwd spells it; a home (or /etc) seen through a
second mount is masked there too; a store directory rewritten by rename
while the command runs stays hidden.

Each scenario runs in a private mount namespace of its own (tmpfs over
/home, a bind-mounted /etc/passwd, bind mounts of the home): the host's
real homes and files are never touched. Root sets the scene, then runs
txbox as root and as the test user (rootless)."""

import os
import pwd
import re
import shutil
import subprocess
import tempfile

from harness import Skip, check, rmtree_force, small_ws, test, which

TEST_USER = "txbox-test"
CANARY = "TXSECRETCANARY"


def _scene(ctx, script, timeout=120):
    """Run script (bash) in a private mount namespace with TX (a world-readable
    copy of txbox), BASE (a 0755 directory), TU (the test user) set.
    Returns its stdout+stderr as text."""
    if not which("unshare") or not which("runuser"):
        raise Skip("needs unshare and runuser")
    try:
        pwd.getpwnam(TEST_USER)
    except KeyError:
        raise Skip("no user %s" % TEST_USER)
    base = tempfile.mkdtemp(prefix="txbox-secrets-", dir="/var/lib")
    try:
        os.chmod(base, 0o755)
        tx = os.path.join(base, "txbox")
        shutil.copy(ctx.txbox, tx)
        os.chmod(tx, 0o755)
        pol = ""
        if ctx.policy_file:  # the suite's (no rules: nothing is held)
            pol = os.path.join(base, "policy.yaml")
            shutil.copy(ctx.policy_file, pol)
            os.chmod(pol, 0o644)
        env = dict(os.environ, TX=tx, BASE=base, TU=TEST_USER, CANARY=CANARY, POL=pol)
        env.pop("SSH_AUTH_SOCK", None)
        p = subprocess.run(["unshare", "--mount", "--propagation", "private", "bash", "-c",
                            "set -u\n" + _HELPERS + script],
                           env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=timeout)
        out = p.stdout.decode("utf-8", "replace")
        if ctx.verbose:
            print(out)
        check("SCENE-DONE" in out, "the scene did not run to its end:\n" + out[-1500:])
        return out
    finally:
        rmtree_force(base)


_HELPERS = r'''
as() { local m=$1; shift; if [ "$m" = root ]; then "$@"; else runuser -u "$TU" -- "$@"; fi; }
mkws() { local d; d=$(mktemp -d "$BASE/ws-$1-XXXX"); [ "$1" = rootless ] && chown "$TU": "$d"; chmod 755 "$d"; echo "$d"; }
# txrun MODE HOME shell-text
txrun() { local ws; ws=$(mkws "$1"); (cd "$ws" && as "$1" env HOME="$2" "$TX" run -w "$ws" ${POL:+--policy "$POL"} -- sh -c "$3") 2>&1; }
plant() { mkdir -p "$1/.ssh"; echo "KEY $CANARY-$2" > "$1/.ssh/id_ed25519"; echo "export T=$CANARY-hist-$2" > "$1/.bash_history"; }
'''


def _leaks(out):
    return sorted({w for w in out.split() if CANARY in w})


@test("secrets/other-homes-by-what-they-are", root_only=True)
def other_homes(ctx):
    """Homes spelled /home/bob/ or /home//carol, or living under /opt, /srv,
    /usr/local (one shared by two accounts) are other users' homes: root's
    command reads none of them. The system's own trees used as homes
    (/usr/sbin, /bin, /nonexistent) stay visible."""
    out = _scene(ctx, r'''
mount -t tmpfs tmpfs /home; mkdir -p /opt /srv; mount -t tmpfs tmpfs /opt; mount -t tmpfs tmpfs /srv
mount -t tmpfs tmpfs /usr/local
for h in /home/bob /home/carol /opt/erin /srv/frank /usr/local/gina /srv/shared; do plant $h $(basename $h); chmod 700 $h; done
cp /etc/passwd "$BASE/passwd"
cat >> "$BASE/passwd" <<EOF
bob:x:1601:1601::/home/bob/:/bin/sh
carol:x:1602:1602::/home//carol:/bin/sh
erin:x:1604:1604::/opt/erin:/bin/sh
frank:x:1605:1605::/srv/./frank:/bin/sh
gina:x:1606:1606::/usr/local/gina:/bin/sh
svc1:x:1607:1607::/srv/shared:/usr/sbin/nologin
svc2:x:1608:1608::/srv/shared:/usr/sbin/nologin
sysish:x:1609:1609::/usr/sbin:/usr/sbin/nologin
EOF
chmod 644 "$BASE/passwd"; mount --bind "$BASE/passwd" /etc/passwd
txrun root /root 'cat /home/bob/.ssh/id_ed25519 /home/carol/.ssh/id_ed25519 /opt/erin/.ssh/id_ed25519 \
  /srv/frank/.ssh/id_ed25519 /usr/local/gina/.ssh/id_ed25519 /srv/shared/.ssh/id_ed25519 \
  /home/*/.bash_history /opt/*/.bash_history /srv/*/.bash_history /usr/local/*/.bash_history 2>/dev/null
  [ -x /usr/sbin/runuser ] && echo SBIN-VISIBLE; [ -x /bin/sh ] && echo BIN-VISIBLE'
echo SCENE-DONE
''')
    check(not _leaks(out), "root's command read other users' secrets: %s" % _leaks(out))
    check("SBIN-VISIBLE" in out and "BIN-VISIBLE" in out,
          "a system tree used as a home (/usr/sbin) was hidden:\n" + out[-800:])


@test("secrets/home-masked-on-every-mount", root_only=True)
def home_every_mount(ctx):
    """The caller's home bind-mounted elsewhere (and a store itself, /home,
    /root, /etc and the root filesystem): the masked stores and the
    system's secrets are hidden at every place the mount table shows them."""
    out = _scene(ctx, r'''
mount -t tmpfs tmpfs /home; plant /home/$TU self; chown -R $TU: /home/$TU; chmod 700 /home/$TU
mount -t tmpfs -o mode=700 tmpfs /root; plant /root root
for d in home-alias user-alias ssh-alias root-alias etc-alias fs-alias; do mkdir "$BASE/$d"; done
mount --bind /home "$BASE/home-alias"; mount --bind /home/$TU "$BASE/user-alias"
mount --bind /home/$TU/.ssh "$BASE/ssh-alias"
mount --bind /root "$BASE/root-alias"; mount --bind /etc "$BASE/etc-alias"; mount --bind / "$BASE/fs-alias"
[ -s /etc/shadow ] && echo SHADOW-ON-HOST
probe="cat \$HOME/.ssh/id_ed25519 \$HOME/.bash_history $BASE/home-alias/$TU/.ssh/id_ed25519 \
  $BASE/home-alias/$TU/.bash_history $BASE/user-alias/.ssh/id_ed25519 $BASE/ssh-alias/id_ed25519 $BASE/root-alias/.ssh/id_ed25519 \
  $BASE/root-alias/.bash_history 2>/dev/null
  for s in $BASE/etc-alias/shadow $BASE/fs-alias/etc/shadow; do [ -n \"\$(head -c 64 \$s 2>/dev/null)\" ] && echo SHADOW-READ:\$s; done; true"
txrun root /root "$probe" | sed 's/^/[root] /'
txrun rootless /home/$TU "$probe" | sed 's/^/[rootless] /'
echo SCENE-DONE
''')
    check(not _leaks(out), "a masked secret was read through another mount: %s\n%s" % (_leaks(out), out[-1500:]))
    if "SHADOW-ON-HOST" in out:
        check("[root] SHADOW-READ" not in out,
              "root's command read /etc/shadow through another mount:\n" + out[-1500:])


@test("secrets/store-dir-rewritten-while-running", root_only=True)
def store_dir_rewritten(ctx):
    """~/.docker/config.json rewritten by rename on the host while the
    command runs (docker login does this): the new file is not readable
    inside, as root and rootless."""
    out = _scene(ctx, r'''
for m in root rootless; do
  H=$(mktemp -d "$BASE/home-$m-XXXX"); mkdir -p "$H/.docker"; echo '{"auths":{}}' > "$H/.docker/config.json"
  [ $m = rootless ] && chown -R $TU: "$H"; chmod 700 "$H"
  txrun $m "$H" "for i in \$(seq 30); do cat $H/.docker/config.json 2>/dev/null | grep $CANARY && break; sleep 0.1; done; true" > "$BASE/out-$m" &
  sleep 1
  as $m sh -c "echo '{\"auths\":{\"x\":{\"auth\":\"$CANARY-docker-$m\"}}}' > $H/.docker/c.tmp && mv $H/.docker/c.tmp $H/.docker/config.json"
  wait
  sed "s/^/[$m] /" "$BASE/out-$m"
done
echo SCENE-DONE
''')
    check(not _leaks(out), "a store rewritten during the run was read: %s\n%s" % (_leaks(out), out[-1200:]))


@test("secrets/store-replaced-or-created-while-running", root_only=True)
def store_replaced_or_created(ctx):
    """Stores the host rewrites by rename (npm, git credential-store, cargo)
    or creates while the command runs — directly in the home (~/.netrc) and
    in a store directory (~/.m2/settings.xml), and a hidden directory made
    then (~/.config/gh) — are not readable inside, as root and rootless."""
    out = _scene(ctx, r'''
for m in root rootless; do
  H=$(mktemp -d "$BASE/home-$m-XXXX"); mkdir -p "$H/.m2" "$H/.cargo" "$H/.config"
  echo old > "$H/.npmrc"; echo old > "$H/.cargo/credentials.toml"
  [ $m = rootless ] && chown -R $TU: "$H"; chmod 755 "$H"
  S="$H/.npmrc $H/.netrc $H/.git-credentials $H/.pypirc $H/.m2/settings.xml $H/.cargo/credentials.toml $H/.config/gh/hosts.yml"
  txrun $m "$H" "for i in \$(seq 60); do [ -e $H/.host-done ] && break; sleep 0.1; done; cat $S 2>&1; true" > "$BASE/out-$m" &
  sleep 1.5
  as $m sh -c "echo '$CANARY-npm-$m' > $H/.npmrc.tmp && mv $H/.npmrc.tmp $H/.npmrc
    echo '$CANARY-netrc-$m' > $H/.netrc; echo '$CANARY-git-$m' > $H/.git-credentials
    echo '$CANARY-pypi-$m' > $H/.pypirc.tmp && mv $H/.pypirc.tmp $H/.pypirc
    echo '$CANARY-m2-$m' > $H/.m2/settings.xml
    echo '$CANARY-cargo-$m' > $H/.cargo/c.tmp && mv $H/.cargo/c.tmp $H/.cargo/credentials.toml
    mkdir -p $H/.config/gh && echo '$CANARY-gh-$m' > $H/.config/gh/hosts.yml
    chmod 644 $H/.netrc $H/.git-credentials $H/.pypirc $H/.npmrc; touch $H/.host-done"
  wait
  sed "s/^/[$m] /" "$BASE/out-$m"
done
echo SCENE-DONE
''')
    check(not _leaks(out), "a store replaced or created during the run was read: %s\n%s" % (_leaks(out), out[-2000:]))


@test("secrets/etc-shadow-replaced-while-running", root_only=True)
def shadow_replaced(ctx):
    """/etc/shadow replaced by rename on the host while the command runs
    (passwd, chpasswd, useradd write nshadow and rename it): the new file is
    not readable inside, as root and rootless (world-readable here, so only
    the mask stands in the way; world-readable from the start too, since
    rootless a store the caller cannot read is not worth a split). The
    scene's /etc is a copy bound over the real one in a private mount
    namespace: the host's is never touched."""
    out = _scene(ctx, r'''
mkdir "$BASE/etc"; cp -a /etc/. "$BASE/etc/"; mount --bind "$BASE/etc" /etc; chmod 644 /etc/shadow /etc/gshadow
for m in root rootless; do
  H=$(mktemp -d "$BASE/home-$m-XXXX"); [ $m = rootless ] && chown $TU: "$H"; chmod 755 "$H"
  txrun $m "$H" "for i in \$(seq 60); do [ -e /etc/host-done-$m ] && break; sleep 0.1; done
    cat /etc/shadow /etc/gshadow 2>&1 | grep -a $CANARY; true" > "$BASE/out-$m" &
  sleep 1.5
  cp /etc/shadow /etc/nshadow && echo "intruder:$CANARY-shadow-$m:1::::::" >> /etc/nshadow
  chmod 644 /etc/nshadow && mv /etc/nshadow /etc/shadow
  echo "intruder:$CANARY-gshadow-$m::" > /etc/gshadow.new && chmod 644 /etc/gshadow.new && mv /etc/gshadow.new /etc/gshadow
  touch /etc/host-done-$m
  wait
  sed "s/^/[$m] /" "$BASE/out-$m"
done
echo SCENE-DONE
''')
    check(not _leaks(out), "/etc/shadow replaced during the run was read: %s\n%s" % (_leaks(out), out[-2000:]))


def _syscall_counts(ctx):
    """strace -f -c of a no-op `txbox run` (the suite's permissive policy):
    {syscall: (calls, errors)}."""
    if not which("strace"):
        raise Skip("needs strace")
    ws = tempfile.mkdtemp(prefix="txbox-count-", dir="/var/lib")
    out = os.path.join(ws, ".strace")
    try:
        argv = ["strace", "-f", "-c", "-o", out, ctx.txbox, "run", "-w", ws]
        if ctx.policy_file:
            argv += ["--policy", ctx.policy_file]
        subprocess.run(argv + ["--", "true"], cwd=ws, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=60, check=True)
        counts = {}
        with open(out) as f:
            for line in f:
                w = line.split()
                if len(w) >= 5 and w[0][0].isdigit() and not w[-1] == "total":
                    calls = int(w[3])
                    errors = int(w[4]) if len(w) == 6 else 0
                    counts[w[-1]] = (calls, errors)
        return counts
    finally:
        rmtree_force(ws)


@test("secrets/masking-syscall-budget", root_only=True)
def masking_syscall_budget(ctx):
    """Masking must stay cheap, counted in syscalls (noise-free): with
    Landlock it mounts nothing (the mount masks were one open_tree and one
    move_mount per other home and system secret: 14 each here) and probes
    no absent store one by one (the old code's ~130 failing openat2 per
    run; a directory is listed once and matched instead)."""
    c = _syscall_counts(ctx)
    if "landlock_add_rule" not in c:
        raise Skip("no Landlock: masks are mounts")
    clone_moves = c.get("open_tree", (0, 0))[0] + c.get("move_mount", (0, 0))[0]
    check(clone_moves == 0, "masking made mounts again: open_tree+move_mount = %d" % clone_moves)
    failed_opens = c.get("openat2", (0, 0))[1] + c.get("openat", (0, 0))[1]
    check(failed_opens <= 40, "%d opens failed in a no-op run (absent stores probed one by one?)" % failed_opens)
    reads = c.get("getdents64", (0, 0))[0]
    check(reads <= 120, "%d getdents64 calls in a no-op run (directories listed more than once?)" % reads)


# Credential stores of well-known tools (red team rt3/05) and classes of
# credential files by name, in split directories of the home.
_STORES = """.ssh/id_rsa .config/rclone/rclone.conf .terraform.d/credentials.tfrc.json
.authinfo .msmtprc .muttrc .fetchmailrc .smbcredentials .netrc.gpg .authinfo.gpg
.ollama/id_ed25519 .config/io.datasette.llm/keys.json .local/share/opencode/auth.json
.config/ngrok/ngrok.yml .circleci/cli.yml .wakatime.cfg .sentryclirc .cursor/mcp.json
.config/Code/User/globalStorage/state.vscdb .config/Cursor/User/globalStorage/state.vscdb
.local/share/atuin/history.db .viminfo .lesshst .config/filezilla/sitemanager.xml
.android/adbkey .bitcoin/wallet.dat .ethereum/keystore/UTC--key .irssi/config .weechat/sec.conf
.config/discord/Local_Storage/leveldb/000003.log .config/Slack/Cookies .config/tailscale/x
.env .env.production .vault.gpg .config/svc-account.pem .config/deploy_token .config/app-credentials.json
.local/share/mywallet.dat .cache/api-secret.txt .config/auth.json""".split()
# Readable: shell start-up files without a secret, and ordinary config.
_ORDINARY = ".profile .bash_profile .config/tool/settings.json .config/nvim/init.vim .local/share/notes.txt".split()


@test("secrets/well-known-stores-and-classes", root_only=True)
def well_known_stores(ctx):
    """rt3/05: the stores of well-known tools and files named like
    credentials (*.gpg, *token*, *secret*, *credential*, *.pem, wallets,
    auth.json, .env*) in the home and its split directories are hidden, as
    root and rootless; so is a start-up file that exports a literal token
    (.bashrc, .zshrc), while one without (.profile; .bash_profile with a
    socket path and a computed token) and ordinary files stay readable.
    The home is a tmpfs in the scene's private mount namespace."""
    out = _scene(ctx, r'''
STORES="''' + " ".join(_STORES) + r'''"; ORD="''' + " ".join(_ORDINARY) + r'''"
for m in root rootless; do
  H=/root; [ $m = rootless ] && H=/home/$TU
  mount -t tmpfs -o mode=755 scenehome "$H"
  for f in $STORES; do mkdir -p "$H/$(dirname $f)"; echo "$CANARY-$m-$f" > "$H/$f"; done
  for f in $ORD; do mkdir -p "$H/$(dirname $f)"; echo "ORDINARY-$f" > "$H/$f"; done
  printf 'alias ll="ls -l"\nexport OPENAI_API_KEY=sk-%s%s\n' "$CANARY" 0123456789abcdef0123456789 > "$H/.bashrc"
  printf 'export PATH=$PATH:/opt/bin\nexport GH_TOKEN="%s-%s-zshrc"\n' "$CANARY" $m > "$H/.zshrc"
  printf 'export SSH_AUTH_SOCK=/run/user/1/ssh\nexport GITHUB_TOKEN=$(pass show gh)\n# ORDINARY\n' > "$H/.bash_profile"
  [ $m = rootless ] && chown -R $TU: "$H"
  chmod -R go-rwx "$H"/.[a-z]*; chmod 755 "$H"
  txrun $m "$H" "cd \$HOME; for f in $STORES .bashrc .zshrc; do cat \$f 2>/dev/null; done
    for f in $ORD; do grep -q ORDINARY \$f && echo READABLE-$m-\$f; done; true" | sed "s/^/[$m] /"
  umount "$H"
done
echo SCENE-DONE
''')
    check(not _leaks(out), "credential stores were read: %s\n%s" % (_leaks(out), out[-1500:]))
    for m in ("root", "rootless"):
        for f in _ORDINARY:
            check("READABLE-%s-%s" % (m, f) in out, "[%s] %s (no secret in it) was hidden:\n%s" % (m, f, out[-1500:]))


@test("secrets/split-dir-named-whole-later", root_only=True)
def split_then_whole(ctx):
    """A policy mask of a directory that a built-in store already splits
    (~/.config, split for .config/gh) hides it whole: no entry of it is
    readable (its entries used to get rules of their own)."""
    out = _scene(ctx, r'''
for m in root rootless; do
  H=$(mktemp -d "$BASE/home-$m-XXXX"); mkdir -p "$H/.config/gh" "$H/.config/app"
  echo "$CANARY-gh-$m" > "$H/.config/gh/hosts.yml"; echo "$CANARY-app-$m" > "$H/.config/app/conf"
  printf 'version: 1\nunresolved: hold\nrules: []\nsandbox:\n  masked_paths: ["~/.config"]\n' > "$BASE/pol-$m.yaml"
  chmod 644 "$BASE/pol-$m.yaml"; [ $m = rootless ] && chown -R $TU: "$H"; chmod 755 "$H"
  ws=$(mkws $m); (cd "$ws" && as $m env HOME="$H" "$TX" run -w "$ws" --policy "$BASE/pol-$m.yaml" -- \
    sh -c "cat $H/.config/app/conf $H/.config/gh/hosts.yml 2>/dev/null; true") 2>&1 | sed "s/^/[$m] /"
done
echo SCENE-DONE
''')
    check(not _leaks(out), "an entry of a directory masked whole was read: %s\n%s" % (_leaks(out), out[-1500:]))


@test("secrets/rootless-readable-system-secret-hidden", root_only=True)
def rootless_system_secret(ctx):
    """Rootless, /etc is split only when it holds a secret the command could
    read: a world-readable /etc/ipsec.secrets (a copy of /etc bound over it
    in the scene) is hidden, root and rootless."""
    out = _scene(ctx, r'''
mkdir "$BASE/etc"; cp -a /etc/. "$BASE/etc/"; mount --bind "$BASE/etc" /etc
echo "$CANARY-ipsec" > /etc/ipsec.secrets; chmod 644 /etc/ipsec.secrets
for m in root rootless; do
  H=$(mktemp -d "$BASE/home-$m-XXXX"); [ $m = rootless ] && chown $TU: "$H"; chmod 755 "$H"
  txrun $m "$H" "cat /etc/ipsec.secrets 2>/dev/null; cat /etc/hostname >/dev/null && echo ETC-READABLE-$m; true" | sed "s/^/[$m] /"
done
echo SCENE-DONE
''')
    check(not _leaks(out), "a readable system secret was read: %s\n%s" % (_leaks(out), out[-1500:]))
    check("ETC-READABLE-root" in out and "ETC-READABLE-rootless" in out, "/etc was hidden:\n" + out[-1500:])


@test("secrets/rootless-unreadable-secrets-need-no-split", root_only=True)
def rootless_rule_count(ctx):
    """Rootless, a system secret the caller cannot read anyway (/etc/shadow
    0640 root:shadow) is not worth splitting /etc (one rule per entry):
    the read layer has fewer rules than /etc has entries."""
    if not which("strace"):
        raise Skip("needs strace")
    if subprocess.run(["runuser", "-u", TEST_USER, "--", "test", "-r", "/etc/shadow"]).returncode == 0:
        raise Skip("the test user can read /etc/shadow")
    out = _scene(ctx, r'''
ws=$(mkws rootless); H=$(mktemp -d "$BASE/home-XXXX"); chown $TU: "$H"; chmod 755 "$H"
chmod 777 "$BASE"
(cd "$ws" && as rootless env HOME="$H" strace -f -c -o "$BASE/count" "$TX" run -w "$ws" ${POL:+--policy "$POL"} -- true) >/dev/null 2>&1
echo "RULES $(awk '$NF == "landlock_add_rule" {print $4}' "$BASE/count")"
echo SCENE-DONE
''')
    rules = [w.split()[1] for w in out.splitlines() if w.startswith("RULES ")]
    if not rules or not rules[0].isdigit():
        raise Skip("no Landlock rules counted (no Landlock?):\n" + out[-800:])
    entries = len(os.listdir("/etc"))
    check(int(rules[0]) < entries, "rootless read layer: %s rules, /etc has %d entries (split for secrets "
          "the caller cannot read)" % (rules[0], entries))


@test("secrets/env-store-tilde-and-relative", root_only=True)
def env_store_tilde_relative(ctx):
    """rt4/03: a variable that moves a store names it the way the tool
    reading it does: `~/x` (botocore, kubectl and libpq expand it
    themselves) or a path relative to where the command starts. Both are
    hidden like an absolute one, as root and rootless."""
    out = _scene(ctx, r'''
for m in root rootless; do
  H=/root; [ $m = rootless ] && H=/home/$TU
  mount -t tmpfs -o mode=755 scenehome "$H"
  mkdir -p "$H/creds" "$H/k"
  echo "$CANARY-tilde-$m" > "$H/creds/aws"; echo "$CANARY-kube-$m" > "$H/k/cfg"
  ws=$(mkws $m); out="$(dirname "$ws")/outside-$m"; mkdir -p "$out"; echo "$CANARY-rel-$m" > "$out/pgpass"
  [ $m = rootless ] && chown -R $TU: "$H" "$out"
  (cd "$ws" && as $m env HOME="$H" AWS_SHARED_CREDENTIALS_FILE='~/creds/aws' KUBECONFIG="/nonexistent:~/k/cfg" \
     PGPASSFILE="../outside-$m/pgpass" "$TX" run -w "$ws" ${POL:+--policy "$POL"} -- \
     sh -c "cat $H/creds/aws $H/k/cfg ../outside-$m/pgpass; echo RAN-$m") 2>&1 | sed "s/^/[$m] /"
  umount "$H"
done
echo SCENE-DONE
''')
    for m in ("root", "rootless"):
        check("RAN-%s" % m in out, "[%s] the command did not run:\n%s" % (m, out[-1500:]))
    check(not _leaks(out), "relocated stores were read: %s\n%s" % (_leaks(out), out[-1500:]))


def _count(out, word):
    """How many times word occurs as a whole word ("RAN-root" is not in "RAN-rootless")."""
    return len(re.findall(re.escape(word) + r"(?![\w-])", out))


@test("secrets/home-spelt-through-links-and-dots", root_only=True)
def home_spelt_oddly(ctx):
    """rt4/24, 25, 27, 14: a home, a relocated store or a policy mask spelt
    through a symlink (/home -> /var/home, NFS links) or with ".." is the
    same place: every store in it stays hidden, as root and rootless (the
    Landlock walk dropped the rest of a pattern at a symlink to a home and
    looked ".." up literally)."""
    out = _scene(ctx, r'''
for m in root rootless; do
  H=$(mktemp -d "$BASE/home-$m-XXXX"); plant "$H" $m; mkdir -p "$H/creds" "$H/a/deep"
  echo "$CANARY-env-$m" > "$H/creds/aws"; echo "$CANARY-pol-$m" > "$H/private.key"; echo "$CANARY-dd-$m" > "$H/a/dd.key"
  ln -s "$H" "$BASE/link-$m"; mkdir "$BASE/up-$m"; ln -s .. "$BASE/up-$m/back"
  printf 'version: 1\nunresolved: hold\nrules: []\nsandbox:\n  masked_paths: ["%s", "%s"]\n' \
    "$BASE/link-$m/private.key" "$H/a/deep/../dd.key" > "$BASE/pol-$m.yaml"; chmod 644 "$BASE/pol-$m.yaml"
  [ $m = rootless ] && chown -R $TU: "$H"; chmod 755 "$H"
  for hs in "$H/../$(basename "$H")" "$BASE/link-$m" "$BASE/up-$m/back/$(basename "$H")/" "$(dirname "$H")//$(basename "$H")/./"; do
    ws=$(mkws $m); (cd "$ws" && as $m env HOME="$hs" AWS_SHARED_CREDENTIALS_FILE="$BASE/link-$m/creds/aws" \
      "$TX" run -w "$ws" --policy "$BASE/pol-$m.yaml" -- sh -c "cat $H/.ssh/id_ed25519 $H/.bash_history \
      $H/creds/aws $H/private.key $H/a/dd.key 2>/dev/null; cat $H/a/deep/../../.bash_history 2>/dev/null; \
      echo RAN-$m") 2>&1 | sed "s|^|[$m $hs] |"
  done
done
echo SCENE-DONE
''')
    for m in ("root", "rootless"):
        check(_count(out, "RAN-" + m) == 4, "[%s] a command did not run:\n%s" % (m, out[-1500:]))
    check(not _leaks(out), "stores of a home spelt through a link or '..' were read: %s\n%s"
          % (_leaks(out), out[-2500:]))


@test("secrets/workspace-inside-a-hidden-store", root_only=True)
def workspace_inside_store(ctx):
    """rt4/19: a workspace inside a store hidden whole (Codex keeps
    worktrees in ~/.codex/worktrees, Claude projects in ~/.claude) leaves
    the store's other entries hidden; the workspace itself works."""
    out = _scene(ctx, r'''
for m in root rootless; do
  for s in .codex/worktrees/w1:.codex/auth.json .claude/projects/p1:.claude/.credentials.json \
           .config/gh/repos/r1:.config/gh/hosts.yml; do
    H=$(mktemp -d "$BASE/home-$m-XXXX"); ws="$H/${s%%:*}"; mkdir -p "$ws" "$(dirname "$ws")/w2"
    echo "$CANARY-$m-${s#*:}" > "$H/${s#*:}"; echo "$CANARY-$m-sibling" > "$(dirname "$ws")/w2/f"
    echo mine > "$ws/f"; [ $m = rootless ] && chown -R $TU: "$H"; chmod 755 "$H"
    (cd "$ws" && as $m env HOME="$H" "$TX" run -w "$ws" ${POL:+--policy "$POL"} -- sh -c \
      "cat $H/${s#*:} $(dirname "$ws")/w2/f 2>/dev/null; cat f && echo new > g && echo RAN-$m") 2>&1 | sed "s|^|[$m $s] |"
    grep -q new "$ws/g" && echo "COMMITTED-$m"
  done
done
echo SCENE-DONE
''')
    for m in ("root", "rootless"):
        check(_count(out, "RAN-" + m) == 3 and _count(out, "COMMITTED-" + m) == 3,
              "[%s] the workspace inside a store did not work:\n%s" % (m, out[-1500:]))
    check(not _leaks(out), "entries of a store holding the workspace were read: %s\n%s" % (_leaks(out), out[-2500:]))


@test("secrets/dangling-store-link-target-created-later", root_only=True)
def dangling_store_link(ctx):
    """rt4/11: a store that is a dangling symlink when the command starts
    (~/.netrc -> data/dot/netrc through a chain of two links, a dotfiles
    manager's layout) is hidden at its target's path: the host creating
    the target while the command runs does not make it readable."""
    out = _scene(ctx, r'''
for m in root rootless; do
  H=$(mktemp -d "$BASE/home-$m-XXXX"); D="$BASE/data-$m"; mkdir -p "$D/dot"
  ln -s "$D/dot/netrc" "$BASE/netrc-$m"; ln -s "$BASE/netrc-$m" "$H/.netrc"; ln -s ../data-$m/dot/ssh "$H/.ssh"
  [ $m = rootless ] && chown -R $TU: "$H" "$D"; chmod 755 "$H" "$D" "$D/dot"
  (sleep 1; echo "machine x password $CANARY-netrc-$m" > "$D/dot/netrc"; mkdir "$D/dot/ssh"
   echo "$CANARY-ssh-$m" > "$D/dot/ssh/id_ed25519"; chmod -R a+rX "$D") &
  ws=$(mkws $m); (cd "$ws" && as $m env HOME="$H" "$TX" run -w "$ws" ${POL:+--policy "$POL"} -- sh -c \
    "sleep 2.5; cat $H/.netrc $D/dot/netrc $H/.ssh/id_ed25519 2>/dev/null; echo RAN-$m") 2>&1 | sed "s|^|[$m] |"
  wait
done
echo SCENE-DONE
''')
    for m in ("root", "rootless"):
        check(_count(out, "RAN-" + m) == 1, "[%s] the command did not run:\n%s" % (m, out[-1500:]))
    check(not _leaks(out), "a store created at a dangling link's target was read: %s\n%s" % (_leaks(out), out[-1500:]))


@test("secrets/unlistable-home-parent-hidden-whole", root_only=True)
def unlistable_home_parent(ctx):
    """rt4/23: on a host whose /home is 0711 (the caller cannot list it),
    a home not in /etc/passwd (a directory service's user) is still
    somebody else's: rootless, /home gets no rule but the way to the
    caller's own home, whose ordinary files stay readable."""
    out = _scene(ctx, r'''
mount -t tmpfs -o mode=0711 scenehome /home; mkdir -p "/home/$TU" /home/carol/pub
echo "$CANARY-carol" > /home/carol/pub/notes.txt; chmod 755 /home/carol /home/carol/pub; chmod 644 /home/carol/pub/notes.txt
echo ORDINARY > "/home/$TU/notes.txt"; plant "/home/$TU" rootless; chown -R "$TU": "/home/$TU"; chmod 711 /home
txrun rootless "/home/$TU" "cat /home/carol/pub/notes.txt /home/$TU/.ssh/id_ed25519 2>/dev/null
  grep -q ORDINARY /home/$TU/notes.txt && echo OWN-READABLE; true" | sed "s/^/[rootless] /"
umount /home
echo SCENE-DONE
''')
    check(not _leaks(out), "a home below an unlistable /home was read: %s\n%s" % (_leaks(out), out[-1500:]))
    check("OWN-READABLE" in out, "the caller's own home was hidden:\n" + out[-1500:])


@test("secrets/home-the-caller-cannot-search", root_only=True)
def home_not_searchable(ctx):
    """`runuser -u bob` and `sudo -u bob` without -H keep HOME=/root: a home
    the caller cannot search holds nothing it could read, so the run goes
    on (it used to fail: "the directories above /root: Permission
    denied"), and /root stays unreadable."""
    out = _scene(ctx, r'''
ws=$(mkws rootless)
(cd "$ws" && runuser -u "$TU" -- env HOME=/root "$TX" run -w "$ws" ${POL:+--policy "$POL"} -- \
   sh -c 'ls /root >/dev/null 2>&1 || echo ROOT-UNREADABLE; echo RAN') 2>&1; echo "rc=$?"
echo SCENE-DONE
''')
    check("RAN" in out and "rc=0" in out, "the run failed with HOME=/root:\n" + out[-1500:])
    check("ROOT-UNREADABLE" in out, "/root became readable:\n" + out[-1500:])


@test("secrets/store-in-workspace-under-private-tmp", root_only=True)
def store_in_workspace_under_tmp(ctx):
    """rt6/B4: a store inside the workspace (an env store, a policy mask,
    ~/.netrc linking into it) is masked by mounts on the workspace's
    overlay, wherever the workspace lies: under /tmp or /var/tmp (the
    view's private tmpfs, skipped by the walk) it was readable, under
    /var/lib the mask of a file failed the run (EINVAL)."""
    out = _scene(ctx, r'''
mount -t tmpfs -o mode=1777 scenetmp /tmp; mount -t tmpfs -o mode=1777 scenevartmp /var/tmp
for m in root rootless; do
  H=$(mktemp -d "$BASE/home-$m-XXXX"); chmod 755 "$H"
  for top in "$BASE" /tmp /var/tmp; do
    t=$(basename $top); ws=$(mktemp -d "$top/ws-$m-XXXX"); chmod 755 "$ws"; mkdir -p "$ws/sub" "$ws/dot"
    echo "$CANARY-$m-kube-$t" > "$ws/sub/kube.yaml"; echo "$CANARY-$m-pol-$t" > "$ws/deploy.key"
    echo "machine x password $CANARY-$m-netrc-$t" > "$ws/dot/netrc"; echo "plain-$m-$t" > "$ws/plain"
    ln -sfn "$ws/dot/netrc" "$H/.netrc"
    [ $m = rootless ] && chown -R $TU: "$ws" "$H"
    printf 'version: 1\nunresolved: hold\nrules: []\nsandbox:\n  masked_paths: ["%s"]\n' "$ws/deploy.key" > "$BASE/pol-$m.yaml"
    chmod 644 "$BASE/pol-$m.yaml"
    (cd "$ws" && as $m env HOME="$H" KUBECONFIG="$ws/sub/kube.yaml" "$TX" run -w "$ws" --policy "$BASE/pol-$m.yaml" -- \
      sh -c "cat $ws/sub/kube.yaml $ws/deploy.key $ws/dot/netrc $H/.netrc plain 2>/dev/null; echo RAN-$m") 2>&1 | sed "s|^|[$m $t] |"
  done
done
echo SCENE-DONE
''')
    for m in ("root", "rootless"):
        check(_count(out, "RAN-" + m) == 3, "[%s] a command did not run:\n%s" % (m, out[-2500:]))
        check(out.count("plain-%s-" % m) == 3, "[%s] the workspace's own files were hidden:\n%s" % (m, out[-2500:]))
    check(not _leaks(out), "stores inside the workspace were read: %s\n%s" % (_leaks(out), out[-2500:]))


@test("secrets/start-up-file-symlink-with-token", root_only=True)
def rc_symlink(ctx):
    """rt6/B5: a shell start-up file kept by a dotfiles manager
    (~/.bashrc -> dotfiles/bashrc, ~/.zshrc through a chain of two links)
    that exports a token is hidden like a regular one, under both names;
    a linked start-up file without a secret stays readable."""
    out = _scene(ctx, r'''
for m in root rootless; do
  H=$(mktemp -d "$BASE/home-$m-XXXX"); mkdir -p "$H/dotfiles"
  echo "export GITHUB_TOKEN=ghp_${CANARY}${m}1234567890abcdefghijklmnopqrstu" > "$H/dotfiles/bashrc"
  echo "export NPM_TOKEN=npm_${CANARY}${m}zz1234567890abcdefghijklmnopqrstu" > "$H/dotfiles/zshrc"
  ln -s dotfiles/bashrc "$H/.bashrc"; ln -s "$H/dotfiles/zshrc" "$H/dotfiles/zlink"; ln -s dotfiles/zlink "$H/.zshrc"
  echo "export PATH=\$HOME/bin:\$PATH # plain-$m" > "$H/dotfiles/profile"; ln -s dotfiles/profile "$H/.profile"
  [ $m = rootless ] && chown -R $TU: "$H"; chmod 755 "$H"
  ws=$(mkws $m)
  (cd "$ws" && as $m env HOME="$H" "$TX" run -w "$ws" ${POL:+--policy "$POL"} -- sh -c \
    "cat $H/.bashrc $H/dotfiles/bashrc $H/.zshrc $H/dotfiles/zshrc $H/.profile 2>/dev/null; echo RAN-$m") 2>&1 | sed "s|^|[$m] |"
done
echo SCENE-DONE
''')
    for m in ("root", "rootless"):
        check(_count(out, "RAN-" + m) == 1, "[%s] the command did not run:\n%s" % (m, out[-1500:]))
        check("plain-" + m in out, "[%s] a linked start-up file without a secret was hidden:\n%s" % (m, out[-1500:]))
    check(not _leaks(out), "a linked start-up file's token was read: %s\n%s" % (_leaks(out), out[-1500:]))


@test("secrets/passwd-read-whole", root_only=True)
def passwd_read_whole(ctx):
    """rt6/B6: every account of /etc/passwd counts, after a line longer
    than 16 KiB and after more than 4096 accounts: the homes listed there
    (outside /home) stay hidden, as root and rootless."""
    out = _scene(ctx, r'''
mount -t tmpfs -o mode=755 scenesrv /srv; mkdir -p /srv/bob /srv/zed
echo "$CANARY-bob" > /srv/bob/key; echo "$CANARY-zed" > /srv/zed/key; chmod 755 /srv/bob /srv/zed; chmod 644 /srv/*/key
cp /etc/passwd "$BASE/passwd"
echo "bigg:x:1690:1690:$(head -c 20000 /dev/zero | tr '\0' g):/nonexistent:/usr/sbin/nologin" >> "$BASE/passwd"
echo "bob:x:1691:1691::/srv/bob:/bin/sh" >> "$BASE/passwd"
for i in $(seq 4200); do echo "svc$i:x:$((20000+i)):$((20000+i))::/nonexistent:/usr/sbin/nologin"; done >> "$BASE/passwd"
echo "zed:x:1692:1692::/srv/zed:/bin/sh" >> "$BASE/passwd"
chmod 644 "$BASE/passwd"; mount --bind "$BASE/passwd" /etc/passwd
for m in root rootless; do
  H=$(mktemp -d "$BASE/home-$m-XXXX"); [ $m = rootless ] && chown $TU: "$H"; chmod 755 "$H"
  txrun $m "$H" "cat /srv/bob/key /srv/zed/key 2>/dev/null; echo RAN-$m" | sed "s|^|[$m] |"
done
echo SCENE-DONE
''')
    for m in ("root", "rootless"):
        check(_count(out, "RAN-" + m) == 1, "[%s] the command did not run:\n%s" % (m, out[-1500:]))
    check(not _leaks(out), "homes listed late in /etc/passwd were read: %s\n%s" % (_leaks(out), out[-1500:]))


@test("secrets/passwd-unreadable-fails-with-its-reason", root_only=True)
def passwd_unreadable(ctx):
    """rt6/B6 and idea 8: an /etc/passwd that cannot be read (here a
    directory) fails the run closed, and the error is the read layer
    helper's own (naming the file and the cause), not init's "helper is
    gone: Broken pipe" on telling a helper already gone that the view is
    built."""
    out = _scene(ctx, r'''
mkdir "$BASE/etc"; cp -a /etc/. "$BASE/etc/"; rm -f "$BASE/etc/passwd"; mkdir "$BASE/etc/passwd"
H=$(mktemp -d "$BASE/home-XXXX"); chmod 755 "$H"
for i in 1 2 3; do
  ws=$(mkws root)
  (cd "$ws" && mount --bind "$BASE/etc" /etc && env HOME="$H" "$TX" run -w "$ws" ${POL:+--policy "$POL"} -- \
     sh -c "echo RAN"; echo "rc=$?"; umount /etc) 2>&1
done
echo SCENE-DONE
''')
    check("RAN" not in out and out.count("rc=125") == 3,
          "the command ran without knowing the password database's homes:\n" + out[-1500:])
    # At least once, not always: the socket guard's "taking the command's
    # listener: No such process" (sandbox.c) can still win the race with
    # the command's own report; that is a different message, not this bug's.
    check("secrets: reading /etc/passwd: Is a directory" in out,
          "the run did not report the helper's reason:\n" + out[-1500:])
    check("Broken pipe" not in out and "is gone" not in out, "the helper's reason was lost:\n" + out[-1500:])


# rt8 B7: system credential stores (and the account databases' lock)
# that system_secrets[] did not list, relative to /etc or /var.
_SYS_ETC = """apt/auth.conf apt/auth.conf.d/repo.conf wireguard/wg0.conf openvpn/client/vpn.key
netplan/01-wifi.yaml ceph/ceph.client.admin.keyring letsencrypt/live/example.org/privkey.pem
ppp/srp-secrets cups/ssl/server.key davfs2/secrets rsyncd.secrets chrony/chrony.keys
credstore/db.password ipsec.d/private/host.pem swanctl/private/host.pem pki/CA/private/ca.key
krb5kdc/kadm5.keytab .pwd.lock""".split()
_SYS_VAR_FILES = "cache/debconf/passwords.dat log/btmp".split()


@test("secrets/system-credential-stores", root_only=True)
def system_credential_stores(ctx):
    """rt8 B7: debconf's password database, APT's repository logins, VPN,
    wifi and Ceph keys, systemd credentials, failed logins (btmp) and the
    like are hidden, as root and rootless (world-readable canaries, so
    only the mask stands in the way); so is the account databases' lock
    file a command could otherwise lock on the host. Their
    neighbours stay readable. /etc is a copy bound over the real one and
    each /var file a canary bound over it, in the scene's private mount
    namespace: the host's are never touched."""
    out = _scene(ctx, r'''
mkdir "$BASE/etc"; cp -a /etc/. "$BASE/etc/"; mount --bind "$BASE/etc" /etc
for f in ''' + " ".join(_SYS_ETC) + r'''; do mkdir -p "/etc/$(dirname $f)"; echo "$CANARY-etc-$f" > "/etc/$f"; chmod 644 "/etc/$f"; done
chmod -R a+rX /etc/apt /etc/wireguard /etc/openvpn /etc/netplan /etc/ceph /etc/letsencrypt /etc/ppp /etc/cups /etc/credstore /etc/ipsec.d /etc/swanctl /etc/pki /etc/krb5kdc 2>/dev/null
for f in ''' + " ".join(_SYS_VAR_FILES) + r'''; do
  [ -e "/var/$f" ] || continue
  c="$BASE/canary-$(echo $f | tr / _)"; echo "$CANARY-var-$f" > "$c"; chmod 644 "$c"; mount --bind "$c" "/var/$f"
done
for m in root rootless; do
  H=$(mktemp -d "$BASE/home-$m-XXXX"); [ $m = rootless ] && chown $TU: "$H"; chmod 755 "$H"
  txrun $m "$H" "for f in ''' + " ".join(_SYS_ETC) + r'''; do cat /etc/\$f 2>/dev/null; done
    for f in ''' + " ".join(_SYS_VAR_FILES) + r'''; do cat /var/\$f 2>/dev/null; done
    ls /etc/apt/sources.list.d >/dev/null && head -c1 /var/lib/dpkg/status >/dev/null &&
      head -c1 /var/cache/debconf/config.dat >/dev/null && echo NEIGHBOURS-READABLE-$m; true" | sed "s/^/[$m] /"
done
echo SCENE-DONE
''')
    check(not _leaks(out), "system credential stores were read: %s\n%s" % (_leaks(out), out[-2000:]))
    for m in ("root", "rootless"):
        check("NEIGHBOURS-READABLE-" + m in out, "[%s] a neighbour of a store was hidden:\n%s" % (m, out[-1500:]))


@test("secrets/host-kernel-views-unreadable-as-root", root_only=True)
def host_kernel_views(ctx):
    """rt17 B1: /sys/kernel/tracing is in the view (read-only), and root's
    command read the host's trace buffers (every process's activity) and
    drained trace_pipe; ACPI tables and the like were readable too. Those
    views are hidden from root's command; the rest of /sys stays readable."""
    probes = [p for p in ("/sys/kernel/tracing/trace", "/sys/kernel/debug/tracing/trace",
                          "/sys/firmware/acpi/tables/DSDT", "/sys/firmware/dmi/tables/DMI")
              if os.path.exists(p) and os.access(p, os.R_OK)]
    if not probes:
        raise Skip("no host kernel view to probe here")
    ws = small_ws(ctx)
    script = "; ".join("if head -c 1 %s >/dev/null 2>&1; then echo READ %s; fi" % (p, p) for p in probes)
    script += "; cat /sys/kernel/mm/transparent_hugepage/enabled >/dev/null 2>&1 || cat /sys/class/net/lo/mtu"
    res = ctx.run_json(ws, script)
    res.expect(outcome="committed", exit_status=0)
    out = res.jget("stdout", "")
    check("READ" not in out, "root's command read host kernel views: %r" % out)
    # rt18 X4: the same views stacked, mounted or bound elsewhere (a build
    # chroot's /sys), in a private mount namespace of the test's own
    if not which("unshare") or not os.path.exists("/sys/kernel/tracing/README"):
        return
    m = os.path.join(os.path.dirname(ws), "m")
    mounts = ("mount --bind /sys/kernel/tracing /sys/kernel/tracing; mount -t tracefs nodev {m}/tr; "
              "mount -t sysfs sysfs {m}/sys2; mount --bind /sys/firmware {m}/fw; "
              "mount --rbind /sys/kernel {m}/sysk").format(m=m)
    probes = ["/sys/kernel/tracing/README", m + "/tr/README", m + "/sys2/firmware/acpi/tables/DSDT",
              m + "/fw/acpi/tables/DSDT", m + "/sysk/tracing/README"]
    for d in ("tr", "sys2", "fw", "sysk"):
        os.makedirs(os.path.join(m, d))
    inner = "; ".join("if head -c 1 %s >/dev/null 2>&1; then echo READ %s; fi" % (p, p) for p in probes)
    pol = ["--policy", ctx.policy_file] if ctx.policy_file else []
    cmd = "%s && exec %s run -w %s %s -- sh -c '%s'" % (mounts, ctx.txbox, ws, " ".join(pol), inner)
    p = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", cmd], capture_output=True,
                       timeout=120)
    check(p.returncode == 0, "the run in a namespace with more kernel views failed: %s" % p.stderr[-300:])
    check(b"READ" not in p.stdout, "root's command read kernel views mounted elsewhere: %r" % p.stdout)
