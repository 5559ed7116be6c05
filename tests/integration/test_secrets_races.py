"""The read layer against a host that moves things while a run starts, and
against paths the sandbox's view replaces (/tmp, /run): red team rt6.

The read layer's helper resolves the secret patterns as init starts, then
lists and grants once the view is built. Between the two the host may
replace a symlink on the way to a store by the directory itself, and the
view covers /tmp and /run, where a HOME or a link to a store may live.
Every scene plants fake secrets (CANARY) only, in a private mount
namespace (see test_secrets_mounts._scene)."""

from harness import check, test
from test_secrets_mounts import _leaks, _scene

_RUN = r'''
# run MODE HOME WS TEXT [VAR=VALUE...]: txbox run as MODE with HOME
run() { local m=$1 h=$2 ws=$3 t=$4; shift 4
	(cd "$ws" && as "$m" env HOME="$h" "$@" "$TX" run -w "$ws" ${POL:+--policy "$POL"} -- sh -c "$t") 2>&1; }
'''


@test("secrets/store-link-replaced-by-its-dir-while-starting", root_only=True)
def link_replaced_while_starting(ctx):
    """~/.ssh -> keys (a dotfiles layout) replaced by the directory itself
    (keys renamed over the link, one rename(2)) 0-25 ms after txbox starts:
    whichever the helper saw when it resolved the pattern, ~/.ssh/id_*
    stays hidden (rt6/B1: the pattern resolved through the link pointed at
    keys/ only, and the directory that took .ssh's name got a rule). Not
    tested, by design: an unlink of the link, then a rename, with the
    helper looking in between (a documented limit: keys is no secret's
    name then)."""
    out = _scene(ctx, _RUN + r'''
for m in root rootless; do
	for i in $(seq 0 25); do
		H=$(mktemp -d "$BASE/home-$m-XXXX"); mkdir "$H/keys"
		echo "KEY $CANARY-$m-$i" > "$H/keys/id_ed25519"; ln -s keys "$H/.ssh"
		[ $m = rootless ] && chown -R $TU: "$H" && chown -h $TU: "$H/.ssh"; chmod 755 "$H"
		ws=$(mkws $m)
		d=$(printf '0.%03d' $i)
		( sleep $d; mv -T "$H/keys" "$H/.ssh" ) &
		run $m "$H" "$ws" "sleep 0.2; cat $H/.ssh/id_ed25519 2>/dev/null; echo RAN-$m-$i"
		wait
	done
done
echo SCENE-DONE
''', timeout=300)
    for m in ("root", "rootless"):
        lines = set(out.splitlines())
        ran = sum(1 for i in range(26) if "RAN-%s-%d" % (m, i) in lines)
        check(ran == 26, "%s: only %d of 26 runs ran:\n%s" % (m, ran, out[-1500:]))
    check(not _leaks(out), "a key was read: %s" % _leaks(out))


@test("secrets/paths-under-tmp-and-run-lead-to-host-stores", root_only=True)
def paths_under_tmp_and_run(ctx):
    """The view replaces /tmp and /run, but links there lead to the host's
    stores, and the helper resolves them in the host's tree (a copy of the
    mount namespace taken before the view): a HOME under /tmp whose .ssh
    and .aws link to a dotfiles dir, a HOME that is a link in /tmp,
    XDG_CONFIG_HOME a link in /tmp and KUBECONFIG a link in /run. The
    command reads the targets by their real paths: hidden (rt6/B3)."""
    out = _scene(ctx, _RUN + r'''
mount -t tmpfs -o mode=1777 scenetmp /tmp
mount -t tmpfs -o mode=755 scenerun /run
for m in root rootless; do
	D="$BASE/dot-$m"; mkdir -p "$D/ssh" "$D/aws" "$D/cfg/gh" "$D/home2/.ssh"
	echo "$CANARY-$m-dotssh" > "$D/ssh/id_ed25519"; echo "$CANARY-$m-dotaws" > "$D/aws/credentials"
	echo "$CANARY-$m-xdggh" > "$D/cfg/gh/hosts.yml"; echo "$CANARY-$m-kube" > "$D/kubeconf"
	echo "$CANARY-$m-home2ssh" > "$D/home2/.ssh/id_ed25519"
	H=/tmp/home-$m; mkdir -p $H; ln -s "$D/ssh" $H/.ssh; ln -s "$D/aws" $H/.aws
	ln -s "$D/home2" /tmp/hlink-$m; ln -s "$D/cfg" /tmp/xdg-$m; ln -s "$D/kubeconf" /run/kc-$m
	[ $m = rootless ] && chown -R $TU: "$D" $H && chown -h $TU: $H/.ssh $H/.aws /tmp/hlink-$m /tmp/xdg-$m /run/kc-$m
	chmod 755 "$D" $H
	ws=$(mkws $m)
	for i in 1 2 3; do
		run $m "$H" "$ws" "cat $D/ssh/id_ed25519 $D/aws/credentials 2>/dev/null; echo RAN-A-$m"
		run $m "/tmp/hlink-$m" "$ws" "cat $D/home2/.ssh/id_ed25519 2>/dev/null; echo RAN-B-$m"
		run $m "$BASE" "$ws" "cat $D/cfg/gh/hosts.yml $D/kubeconf 2>/dev/null; echo RAN-C-$m" \
			XDG_CONFIG_HOME=/tmp/xdg-$m KUBECONFIG=/run/kc-$m
	done
done
echo SCENE-DONE
''', timeout=300)
    for m in ("root", "rootless"):
        for k in "ABC":
            n = out.splitlines().count("RAN-%s-%s" % (k, m))
            check(n == 3, "%s %s: %d of 3 runs ran:\n%s" % (m, k, n, out[-1500:]))
    check(not _leaks(out), "a store was read: %s" % _leaks(out))
