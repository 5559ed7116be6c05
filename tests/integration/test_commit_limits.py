"""What a commit cannot carry fails closed, with an error that names the
entry and the cause (red team rt8, ODD ideas 25 and 28).

The scene is a tmpfs (it takes user xattrs past the 64 KiB the kernel can
list, ext4 does not) in a private mount namespace: nothing of the host is
touched. Root sets it up, then runs txbox as root and as the test user."""

import json
import re

from harness import Skip, check, test
from test_secrets_mounts import _scene

_SCENE = r'''
mkdir "$BASE/mnt"; mount -t tmpfs -o mode=755 txbox-xattr "$BASE/mnt"
for m in root rootless; do
  ws="$BASE/mnt/ws-$m"; mkdir "$ws"; [ $m = rootless ] && chown "$TU": "$ws"
  (cd "$ws" && as $m python3 -c "
import os
open('lowerfile', 'w').write('one')
for i in range(2000):
    os.setxattr('lowerfile', 'user.attr-%04d-%s' % (i, 'n' * 24), b'v')
try:
    os.listxattr('lowerfile'); print('LISTABLE')
except OSError as e:
    print('LISTXATTR', e.errno)
")
  (cd "$ws" && as $m "$TX" run -w "$ws" ${POL:+--policy "$POL"} --json -- sh -c 'echo two >> lowerfile') > "$BASE/out" 2>/dev/null
  echo "rc-$m=$?"
  echo "content-$m=$(cat "$ws/lowerfile")"
  echo "json-$m=$(tr -d '\n' < "$BASE/out")"
done
echo SCENE-DONE
'''


@test("commit/xattr-list-too-big-named", root_only=True)
def xattr_list_too_big(ctx):
    """A file whose user xattr names take more than 64 KiB (listxattr's
    E2BIG) cannot be committed: the run fails closed (125, the file
    unchanged), and the error names the file and says why in words, not
    only "Argument list too long"; root and rootless."""
    out = _scene(ctx, _SCENE, timeout=180)
    if "LISTXATTR 7" not in out:
        raise Skip("this kernel's tmpfs does not take that many user xattrs:\n" + out[-500:])
    for m in ("root", "rootless"):
        found = re.search(r"^json-%s=(.*)$" % m, out, re.M)
        check(found, "[%s] no result:\n%s" % (m, out[-1500:]))
        err = json.loads(found.group(1)).get("error") or ""
        check("rc-%s=125" % m in out and "content-%s=one" % m in out,
              "[%s] the file was not left alone with exit 125:\n%s" % (m, out[-1500:]))
        check("lowerfile" in err and "more than 64 KiB" in err,
              "[%s] the error does not name the file and the cause: %r" % (m, err))
