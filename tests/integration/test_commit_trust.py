"""What a commit may trust (issue 8): overlay metadata only in the namespace
the overlay used, never a link to an inode outside the workspace, never a
change to an inode with names outside it, bounded planning, and the
workspace root's owner and mode left alone."""

import os
import subprocess
import stat
import time

from harness import Skip, check, small_ws, test

# The command forges an overlay.origin for a host file: the handle of that
# file (name_to_handle_at), in the layout overlayfs writes, set as
# user.overlay.origin on a workspace file with the same content.
FORGE_ORIGIN = r'''
import ctypes, os, struct, sys
host, name = sys.argv[1], sys.argv[2]
libc = ctypes.CDLL(None, use_errno=True)
buf = ctypes.create_string_buffer(8 + 128)
struct.pack_into("II", buf, 0, 128, 0)
mnt = ctypes.c_int()
if libc.name_to_handle_at(-100, host.encode(), buf, ctypes.byref(mnt), 0) != 0:
    sys.exit("name_to_handle_at: %d" % ctypes.get_errno())
nb, typ = struct.unpack_from("Ii", buf, 0)
handle = buf.raw[8:8 + nb]
val = bytes([0, 0xfb, 21 + nb, 0, typ & 0xff]) + bytes(16) + handle
with open(host, "rb") as f:
    data = f.read()
with open(name, "wb") as f:
    f.write(data)
os.setxattr(name, "user.overlay.origin", val)
'''


def _outside_pair(ctx, ws, content=b"host secret\n"):
    """A host file outside the workspace with a second link (same fs)."""
    out = os.path.join(os.path.dirname(ws), "outside")
    os.mkdir(out)
    os.chmod(os.path.dirname(ws), 0o755)
    os.chmod(out, 0o755)
    h = os.path.join(out, "host.txt")
    with open(h, "wb") as f:
        f.write(content)
    os.chmod(h, 0o644)
    os.link(h, os.path.join(out, "host2.txt"))
    return h


@test("trust/forged-user-overlay-origin-never-links-out", root_only=True)
def forged_origin(ctx):
    ws = small_ws(ctx)
    h = _outside_pair(ctx, ws)
    res = ctx.run_json(ws, ["python3", "-c", FORGE_ORIGIN, h, "x"])
    res.expect(outcome="committed", exit_status=0)
    st, hs = os.lstat(os.path.join(ws, "x")), os.lstat(h)
    check(st.st_ino != hs.st_ino, "the commit hard-linked the host file %s into the workspace" % h)
    check(hs.st_nlink == 2, "the host file's link count changed to %d" % hs.st_nlink)
    # as root the overlay uses trusted.overlay.*: this one is the command's data
    check(os.getxattr(os.path.join(ws, "x"), "user.overlay.origin"),
          "the user.overlay.origin the command set was not committed as a user xattr")


@test("trust/forged-user-overlay-opaque-and-whiteout-delete-nothing")
def forged_opaque(ctx):
    ws = small_ws(ctx)
    with open(os.path.join(ws, "victim.txt"), "w") as f:
        f.write("committed earlier\n")
    script = ("import os\n"
              "os.setxattr('sub', 'user.overlay.opaque', b'y')\n"
              "open('victim.txt', 'w').close()\n"
              "os.setxattr('victim.txt', 'user.overlay.whiteout', b'y')\n")
    res = ctx.run_json(ws, ["python3", "-c", script])
    if ctx.privileged:
        res.expect(outcome="committed", exit_status=0)
    for p in ("sub/inner.txt", "sub/deeper", "victim.txt"):
        check(os.path.lexists(os.path.join(ws, p)), "%s was deleted by the commit (json: %s)" %
              (p, res.json.get("changes")))
    kinds = {c["path"]: c["kind"] for c in res.json.get("changes", [])}
    check("sub/inner.txt" not in kinds and kinds.get("victim.txt") != "deleted",
          "the change list reports deletions: %r" % kinds)
    if ctx.privileged:
        check(os.getxattr(os.path.join(ws, "sub"), "user.overlay.opaque") == b"y",
              "user.overlay.opaque was not committed as the command's xattr")


def _linked_out(ctx):
    ws = small_ws(ctx)
    h = _outside_pair(ctx, ws, b"shared object\n")
    os.link(h, os.path.join(ws, "obj"))  # like `git clone` of a local repository
    os.link(h, os.path.join(ws, "obj2"))  # a second name inside
    return ws, h


@test("links/outside-name-content-not-rewritten")
def outside_content(ctx):
    ws, h = _linked_out(ctx)
    res = ctx.run_json(ws, "echo more >> obj")
    res.expect(outcome="committed", exit_status=0)
    with open(h, "rb") as f:
        check(f.read() == b"shared object\n", "the file outside the workspace was rewritten")
    with open(os.path.join(ws, "obj"), "rb") as f:
        check(f.read() == b"shared object\nmore\n", "the change is missing in the workspace")
    check(os.lstat(os.path.join(ws, "obj")).st_ino != os.lstat(h).st_ino, "obj is still the outside inode")
    notes = [c for c in res.json.get("changes", []) if c["path"] == "obj" and c.get("note")]
    check(notes, "the result does not say obj was split from its outside links: %r" % res.json.get("changes"))


@test("links/outside-name-mode-not-changed")
def outside_mode(ctx):
    ws, h = _linked_out(ctx)
    res = ctx.run_json(ws, "chmod 600 obj")
    res.expect(outcome="committed", exit_status=0)
    check(stat.S_IMODE(os.lstat(h).st_mode) == 0o644, "the mode of the file outside the workspace changed to %o"
          % stat.S_IMODE(os.lstat(h).st_mode))
    check(stat.S_IMODE(os.lstat(os.path.join(ws, "obj")).st_mode) == 0o600, "chmod not committed")


@test("links/renamed-outside-name-keeps-its-change")
def renamed_outside(ctx):
    """rt17 B4: a renamed member of a group with a name outside the
    workspace, then changed (`mv obj key; chmod 600 key`), was published as
    a link to the old inode: the chmod was dropped. The new name gets its
    own inode with the change, and a note; the outside file is untouched."""
    ws, h = _linked_out(ctx)
    res = ctx.run_json(ws, "mv obj key && chmod 600 key")
    res.expect(outcome="committed", exit_status=0)
    key = os.path.join(ws, "key")
    check(stat.S_IMODE(os.lstat(key).st_mode) == 0o600, "the chmod of the renamed member was dropped: %o"
          % stat.S_IMODE(os.lstat(key).st_mode))
    check(stat.S_IMODE(os.lstat(h).st_mode) == 0o644, "the outside file's mode changed")
    check(os.lstat(key).st_ino != os.lstat(h).st_ino, "key is still the outside inode")
    if ctx.privileged:  # rootless, the view itself gave key a new inode (no index)
        notes = [c for c in res.json.get("changes", []) if c["path"] == "key" and c.get("note")]
        check(notes, "the result does not say key left its group: %r" % res.json.get("changes"))


@test("links/outside-symlink-metadata-not-changed")
def outside_symlink(ctx):
    """rt17 B6: a symlink with a second name outside the workspace (`cp -al`
    links symlinks too) had its times (and, as root, owner) changed in place
    by a commit of `touch -h` / `chown -h`. It is published as a new inode."""
    ws = small_ws(ctx)
    out = os.path.join(os.path.dirname(ws), "outside")
    os.mkdir(out)
    host = os.path.join(out, "lnk")
    os.symlink("target", host)
    os.utime(host, (1000000000, 1000000000), follow_symlinks=False)
    os.link(host, os.path.join(ws, "lnk"), follow_symlinks=False)
    res = ctx.run_json(ws, "touch -h -d @1111111111 lnk")
    res.expect(outcome="committed", exit_status=0)
    check(os.lstat(host).st_mtime == 1000000000, "the outside symlink's mtime changed")
    check(os.lstat(os.path.join(ws, "lnk")).st_mtime == 1111111111, "the change is missing in the workspace")
    check(os.readlink(os.path.join(ws, "lnk")) == "target", "the symlink's target changed")


@test("links/btrfs-subvolume-inodes-are-not-the-workspaces", root_only=True, needs=("mkfs.btrfs", "losetup"))
def btrfs_subvolume(ctx):
    """rt16 O17: the census matched names by inode number alone, and a
    btrfs subvolume inside the workspace shares its mount but numbers its
    inodes afresh: a file there with the number of a workspace file that
    has an outside name made the count look complete, and a chmod was
    applied in place to the outside name's inode. A directory on another
    device is now, like a mount, a place whose names prove nothing."""
    base = ctx.mkdtemp("btrfs")
    img, mnt = os.path.join(base, "img"), os.path.join(base, "mnt")
    os.mkdir(mnt)
    with open(img, "wb") as f:
        f.truncate(256 << 20)
    if subprocess.run(["mkfs.btrfs", "-q", img], capture_output=True).returncode != 0:
        raise Skip("mkfs.btrfs failed")
    if subprocess.run(["mount", "-o", "loop", img, mnt], capture_output=True).returncode != 0:
        raise Skip("cannot mount a btrfs image here")
    try:
        x = os.path.join(mnt, "x")
        with open(x, "w") as f:
            f.write("shared\n")
        ws, out = os.path.join(mnt, "W"), os.path.join(mnt, "out")
        os.mkdir(ws)
        os.mkdir(out)
        os.chmod(x, 0o644)
        os.rename(x, os.path.join(ws, "a"))
        os.link(os.path.join(ws, "a"), os.path.join(out, "h"))
        sv = os.path.join(ws, "sv")
        subprocess.run(["btrfs", "subvolume", "create", sv], check=True, capture_output=True)
        f2 = os.path.join(sv, "f")
        with open(f2, "w") as f:
            f.write("other\n")
        if os.stat(f2).st_ino != os.stat(os.path.join(ws, "a")).st_ino:
            raise Skip("the inode numbers did not collide")
        os.mkdir(os.path.join(sv, ".txbox"))  # a name the census never counts
        os.link(f2, os.path.join(sv, ".txbox", "g"))
        res = ctx.run_json(ws, "chmod 600 a")
        res.expect(outcome="committed", exit_status=0)
        mode = stat.S_IMODE(os.stat(os.path.join(out, "h")).st_mode)
        check(mode == 0o644, "the outside name's mode changed to %o" % mode)
        check(stat.S_IMODE(os.stat(os.path.join(ws, "a")).st_mode) == 0o600, "chmod not committed")
    finally:
        subprocess.run(["umount", "-l", mnt], capture_output=True)


@test("links/inside-group-stays-one-inode")
def inside_group(ctx):
    ws = small_ws(ctx)
    a = os.path.join(ws, "a")
    with open(a, "w") as f:
        f.write("one\n")
    os.link(a, os.path.join(ws, "sub", "b"))
    res = ctx.run_json(ws, "echo two >> a && chmod 640 a")
    res.expect(outcome="committed", exit_status=0)
    sa, sb = os.lstat(a), os.lstat(os.path.join(ws, "sub", "b"))
    with open(os.path.join(ws, "sub", "b")) as f:
        got = f.read()
    if ctx.privileged:  # index=on finds the group; without it a copy-up is a new file (ARCHITECTURE.md)
        check(sa.st_ino == sb.st_ino and sa.st_nlink == 2, "the hard-link group was split")
        check(got == "one\ntwo\n", "the other name does not show the change: %r" % got)
    check(stat.S_IMODE(sa.st_mode) == 0o640, "chmod not committed")


@test("timeout/sparse-4tib-chmod-commits-quickly")
def sparse_chmod(ctx):
    ws = small_ws(ctx)
    big = os.path.join(ws, "big")
    with open(big, "wb") as f:
        try:
            f.truncate(4 << 40)
        except OSError as e:
            from harness import Skip
            raise Skip("no 4 TiB sparse file here: %s" % e)
        f.seek(1 << 30)
        f.write(b"data in the middle")
    t0 = time.monotonic()
    res = ctx.run_json(ws, "chmod 600 big", extra=["--timeout", "60"], timeout=120)
    took = time.monotonic() - t0
    res.expect(outcome="committed", exit_status=0)
    check(stat.S_IMODE(os.lstat(big).st_mode) == 0o600, "chmod not committed")
    check(took < 30, "committing a chmod of a sparse file took %.1f s" % took)


@test("trust/workspace-root-owner-and-mode-not-published")
def root_meta(ctx):
    ws = small_ws(ctx)
    os.chmod(ws, 0o755)
    before = os.lstat(ws)
    chown = " && chown 4321:4321 ." if ctx.privileged else ""
    res = ctx.run_json(ws, "chmod 700 .%s && echo x > new" % chown)
    res.expect(outcome="committed", exit_status=0)
    after = os.lstat(ws)
    check((after.st_uid, after.st_gid, stat.S_IMODE(after.st_mode)) ==
          (before.st_uid, before.st_gid, 0o755),
          "the workspace root became %d:%d %o" % (after.st_uid, after.st_gid, stat.S_IMODE(after.st_mode)))
    check(os.path.exists(os.path.join(ws, "new")), "the rest of the commit is missing")
    notes = [c for c in res.json.get("changes", []) if c["path"] == "." and c.get("note")]
    check(notes, "the result does not say the root's owner/mode were not published: %r" %
          res.json.get("changes"))


# A minimal POSIX ACL as the kernel stores it (system.posix_acl_*): version
# 2, then (tag, perm, id) for USER_OBJ, GROUP_OBJ and OTHER; other=rwx.
SET_ROOT_ACLS = r'''
import os, struct
def acl(other):
    e = [(0x01, 7), (0x04, 5), (0x20, other)]
    return struct.pack("<I", 2) + b"".join(struct.pack("<HHI", t, p, 0xffffffff) for t, p in e)
os.setxattr(".", "system.posix_acl_access", acl(7))
os.setxattr(".", "system.posix_acl_default", acl(6))
print("mode in the sandbox %o" % (os.stat(".").st_mode & 0o777))
'''


@test("trust/workspace-root-acl-not-published")
def root_acl(ctx):
    """An ACL carries mode bits (other=rwx made a 0700 root 0757), and a
    default ACL reaches every file made there later, whatever the umask."""
    ws = small_ws(ctx)
    os.chmod(ws, 0o700)
    res = ctx.run_json(ws, "python3 -c '%s' && echo x > new" % SET_ROOT_ACLS.replace("'", "'\\''"))
    res.expect(outcome="committed", exit_status=0)
    check("mode in the sandbox 757" in res.json.get("stdout", ""), "the ACL did not apply in the sandbox: %r"
          % res.json.get("stdout"))
    mode = stat.S_IMODE(os.lstat(ws).st_mode)
    check(mode == 0o700, "the workspace root became %o through an ACL" % mode)
    acls = [k for k in os.listxattr(ws) if k.startswith("system.posix_acl")]
    check(not acls, "ACLs published on the workspace root: %r" % acls)
    check(os.path.exists(os.path.join(ws, "new")), "the rest of the commit is missing")
    notes = [c for c in res.json.get("changes", []) if c["path"] == "." and c.get("note")]
    check(notes and "ACL" in notes[0]["note"], "no note about the root's ACLs: %r" % res.json.get("changes"))


@test("trust/workspace-root-xattrs-survive-unrelated-commits")
def root_xattrs_kept(ctx):
    """The upper root started without the workspace root's xattrs: any
    commit with a change removed them (and the command never saw them)."""
    ws = small_ws(ctx)
    os.setxattr(ws, "user.keep", b"1")
    res = ctx.run_json(ws, "python3 -c 'import os; print(os.getxattr(\".\", \"user.keep\"))' && "
                           "python3 -c 'import os; os.setxattr(\".\", \"user.added\", b\"2\")' && echo x > new")
    res.expect(outcome="committed", exit_status=0)
    check("b'1'" in res.json.get("stdout", ""), "the command did not see the root's xattr: %r"
          % res.json.get("stdout"))
    names = os.listxattr(ws)
    check("user.keep" in names, "an unrelated commit removed the root's xattr: %r" % names)
    check("user.added" in names and os.getxattr(ws, "user.added") == b"2", "the new root xattr is missing: %r"
          % names)


# Writes small files until UNTIL seconds after its start, then exits 0:
# the layer is as big as the machine allows when the command ends.
FILL_UNTIL = r'''
import os, sys, time
t0, until = time.monotonic(), float(sys.argv[1])
os.mkdir("many")
i = 0
while time.monotonic() - t0 < until:
    for _ in range(200):
        with open("many/f%d" % i, "w") as f:
            f.write("x")
        i += 1
print("wrote", i)
'''


@test("timeout/commit-of-a-big-layer-stays-within-the-deadline")
def big_layer_deadline(ctx):
    """--timeout bounds the transaction up to its commit point: a command
    that ends just before the deadline with a big layer was committed
    after it (judging, preparing and syncing 100k files took ~1 s)."""
    ws = small_ws(ctx)
    t0 = time.monotonic()
    res = ctx.run_json(ws, "python3 -c '%s' 2.7" % FILL_UNTIL.replace("'", "'\\''"),
                       extra=["--timeout", "3"], timeout=120)
    took = time.monotonic() - t0
    ctx.note("%s after %.2f s (%s)" % (res.json.get("outcome"), took, res.json.get("stdout", "").strip()))
    if res.json.get("outcome") == "committed":
        total = res.json["timings_ms"]["total"] / 1000
        check(total < 3.3, "committed %.2f s into a 3 s --timeout" % total)
        check(os.path.isdir(os.path.join(ws, "many")), "committed without its files")
    else:
        res.expect(outcome="rolled_back", exit_status=124, rollback_reason="timeout")
        check(not os.path.exists(os.path.join(ws, "many")), "rolled back, yet files were published")


@test("timeout/waiting-for-the-workspace-lock-is-bounded")
def lock_wait(ctx):
    import fcntl
    import struct
    ws = small_ws(ctx)
    ctx.run_json(ws, "true").expect(outcome="committed", exit_status=0)
    fd = os.open(os.path.join(ws, ".txbox", "lock"), os.O_WRONLY)  # lock files are write-only (tx/lock.h)
    try:
        # another transaction "committing" forever: txbox's own kind of lock
        # (an OFD write lock, tx/lock.c), which a flock or read lock is not
        fcntl.fcntl(fd, 38, struct.pack("hhqqi", fcntl.F_WRLCK, 0, 0, 0, 0))  # F_OFD_SETLKW
        t0 = time.monotonic()
        res = ctx.run_json(ws, "echo x > new", extra=["--timeout", "3"], timeout=60)
        took = time.monotonic() - t0
    finally:
        os.close(fd)
    res.expect(outcome="rolled_back", exit_status=124, rollback_reason="timeout")
    check(took < 20, "txbox waited %.1f s for the lock with --timeout 3" % took)
    check(not os.path.exists(os.path.join(ws, "new")), "something was published")
    check("lock" in (res.json.get("error") or ""), "no message about the lock: %r" % res.json.get("error"))


@test("trust/deleting-a-directory-never-empties-a-mount-below-it", root_only=True, needs=("unshare", "mount"))
def mount_below_deleted_dir(ctx):
    """rt21 N15/N17/N40: inside the sandbox a mount point below the
    workspace shows as an empty directory, so `rm -rf sub` was one delete of
    sub; the commit moved sub, the mount riding along, to the transaction's
    trash, whose removal emptied the mounted tree (another filesystem, or a
    bind of a directory elsewhere). Such a commit is refused, and removal
    never enters a mount."""
    ws = small_ws(ctx)
    ext = os.path.join(os.path.dirname(ws), "ext")
    os.makedirs(ext)
    for n in ("a", "b"):
        with open(os.path.join(ext, n), "w") as f:
            f.write("keep\n")
    os.makedirs(os.path.join(ws, "sub", "deeper", "m"))
    ctx.run_json(ws, "true").expect(outcome="committed", exit_status=0)
    pol = ["--policy", ctx.policy_file] if ctx.policy_file else []
    for cmd in ("rm -rf sub", "rm -rf sub && mkdir -p sub/deeper && echo x > sub/new"):
        inner = "mount --bind %s %s/sub/deeper/m && exec %s run -w %s %s -- sh -c '%s'" % (
            ext, ws, ctx.txbox, ws, " ".join(pol), cmd)
        p = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", inner], capture_output=True,
                           timeout=120)
        check(p.returncode != 0 and b"mount point" in p.stderr,
              "%r with a mount below was not refused: rc %d %s" % (cmd, p.returncode, p.stderr[-300:]))
        check(sorted(os.listdir(ext)) == ["a", "b"], "the mounted tree was emptied: %s" % os.listdir(ext))
        check(os.path.isdir(os.path.join(ws, "sub", "deeper", "m")), "the workspace lost sub")


@test("trust/removing-a-transaction-never-empties-a-mount-in-it", root_only=True, needs=("unshare", "mount"))
def mount_in_state(ctx):
    """rt22 B1-B3, G1: a directory mounted inside a held transaction (its
    layer, or the transaction directory itself) was emptied by a rollback:
    the directory a removal starts at was never checked, only those below
    it. Removal refuses every mount point, the first one too."""
    ws = small_ws(ctx)
    ext = os.path.join(os.path.dirname(ws), "ext")
    os.makedirs(ext)
    with open(os.path.join(ext, "a"), "w") as f:
        f.write("keep\n")
    r = ctx.run_txbox(["run", "-w", ws, "--", "sh", "-c", "mkdir d && echo x > d/x; $TXBOX_IT_UNSET"], cwd=ws,
                      timeout=60)
    txs = os.path.join(ws, ".txbox", "tx")
    tid = [e for e in os.listdir(txs) if not e.startswith(".")]
    check(len(tid) == 1, "no held transaction: %s" % r.err[-300:])
    for target in (os.path.join(txs, tid[0], "layers", "0", "upper", "d"), os.path.join(txs, tid[0])):
        inner = "mount --bind %s %s && exec %s rollback %s -w %s" % (ext, target, ctx.txbox, tid[0], ws)
        p = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", inner], capture_output=True,
                           timeout=120)
        check(os.listdir(ext) == ["a"], "a rollback emptied a directory mounted in the transaction (%s): %s %s"
              % (target, os.listdir(ext), p.stderr[-300:]))


@test("trust/deleting-a-tree-with-an-unreadable-directory-commits")
def delete_unreadable(ctx):
    """rt22 D1 (a regression of the state check on deletions): a tree
    holding a mode-000 directory of the caller's, made readable and removed
    by the command, was refused: the check could not list it. An
    unlistable directory holds nothing any txbox could use."""
    ws = small_ws(ctx)
    os.makedirs(os.path.join(ws, "t", "locked"))
    with open(os.path.join(ws, "t", "locked", "f"), "w") as f:
        f.write("x\n")
    os.chmod(os.path.join(ws, "t", "locked"), 0)
    try:
        res = ctx.run_json(ws, "chmod -R u+rwx t && rm -r t")
        res.expect(outcome="committed", exit_status=0)
        check(not os.path.exists(os.path.join(ws, "t")), "t is still there")
    finally:
        if os.path.exists(os.path.join(ws, "t", "locked")):
            os.chmod(os.path.join(ws, "t", "locked"), 0o700)
