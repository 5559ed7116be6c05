"""Deterministic fixture tree.

build(root, privileged) creates the same tree every time: same names, content,
modes, xattrs, hard links and mtimes (set with ns precision, bottom-up, so
directory mtimes are deterministic too). Building twice (A and B) gives two
trees whose manifests are equal.

Contents (see _spec): plain files of sizes 0 .. 1 MiB, an executable,
0600/0444/0755 modes, odd names (spaces, leading dash, newline, invalid UTF-8,
255 bytes), a depth-60 tree with long component names, relative/absolute/
dangling symlinks and a symlink to a directory, a hard-link group of three
(one in a subdirectory), a fifo, user.* xattrs on a file and a directory, an
empty directory, a 0700 directory; as root also a file and a directory owned
by uid/gid 1234.

Absolute symlinks point outside the workspace (to /etc/passwd and a
non-existent /nonexistent/...), never into it: A and B live at different
paths, and an absolute link into the workspace would differ between them.
"""

import os
import random

# every mtime is in 2001, far from "now": the oracle treats mtimes close to
# the run's wall clock as "set by the workload's own clock" (see oracle.py).
BASE_NS = 1_000_000_000_123_456_789
STEP_NS = 1_000_003_007

DEPTH = 60
DEEP_COMPONENT = b"level-%02d-" + b"x" * 20   # 29 bytes per component

NAME_255 = b"L" * 251 + b".txt"
NAME_NEWLINE = b"new\nline"
NAME_INVALID = b"\xff\xfe"
NAME_INVALID2 = b"inv\xe9alid-latin1.txt"
NAME_SPACES = b"name with spaces.txt"
NAME_DASH = b"-dash"

OTHER_UID = 1234


def blob(seed, n):
    return random.Random(seed).randbytes(n)


def deep_path(depth=DEPTH):
    return b"/".join([b"deep"] + [DEEP_COMPONENT % i for i in range(depth)])


# (relpath, kind, data/target, mode, extra)
def _spec(privileged):
    s = []
    f = lambda p, data, mode=0o644, **kw: s.append((p, "f", data, mode, kw))
    d = lambda p, mode=0o755, **kw: s.append((p, "d", None, mode, kw))
    l = lambda p, target: s.append((p, "l", target, None, {}))

    f(b"file_empty", b"")
    f(b"file_small", b"hello\n")
    f(b"file_4095", blob(1, 4095))
    f(b"file_4096", blob(2, 4096))
    f(b"file_4097", blob(3, 4097))
    f(b"file_1m", blob(4, 1 << 20))
    f(b"exec.sh", b"#!/bin/sh\necho hi\n", 0o755)
    f(b"secret", b"top secret\n", 0o600)
    f(b"readonly", b"read only\n", 0o444)
    f(NAME_SPACES, b"spaces\n")
    f(NAME_DASH, b"dash\n")
    f(NAME_NEWLINE, b"newline\n")
    f(NAME_INVALID, b"invalid utf-8\n")
    f(NAME_INVALID2, b"latin1\n")
    f(NAME_255, b"long name\n")
    f(b"xattr_file", b"has xattrs\n", xattrs={b"user.alpha": b"1", b"user.beta": b"\x00\x01bin"})
    d(b"xattr_dir", xattrs={b"user.dirattr": b"d"})
    f(b"xattr_dir/inner", b"inner\n")
    d(b"emptydir")
    d(b"privdir", 0o700)
    f(b"privdir/f", b"private\n", 0o600)
    d(b"sub")
    f(b"sub/a.txt", b"a\n")
    f(b"sub/b.txt", b"b\n" * 1000)
    d(b"sub/nested")
    d(b"sub/nested/deeper")
    f(b"sub/nested/deeper/file", b"deep file\n")
    l(b"sub/link_up", b"../file_small")
    d(b"dir")
    f(b"dir/x", b"x\n")
    d(b"dir/sub")
    f(b"dir/sub/y", b"y\n")
    d(b"dir2")
    f(b"dir2/z", b"z\n")
    l(b"link_rel", b"file_small")
    l(b"link_rel_sub", b"sub/a.txt")
    l(b"link_abs", b"/etc/passwd")
    l(b"link_dangling", b"does-not-exist")
    l(b"link_abs_dangling", b"/nonexistent/txbox-it")
    l(b"linkdir", b"sub")
    f(b"hl1", b"linked\n")
    s.append((b"hl2", "h", b"hl1", None, {}))
    s.append((b"sub/hl3", "h", b"hl1", None, {}))
    s.append((b"fifo", "p", None, 0o644, {}))
    d(b"deep")
    comps = [DEEP_COMPONENT % i for i in range(DEPTH)]
    for i in range(1, DEPTH + 1):
        d(b"/".join([b"deep"] + comps[:i]))
    f(deep_path() + b"/leaf", b"leaf\n")
    if privileged:
        f(b"owned_other", b"other owner\n", 0o640, owner=(OTHER_UID, OTHER_UID))
        d(b"dir_other", 0o755, owner=(OTHER_UID, OTHER_UID))
        f(b"dir_other/f", b"f\n", 0o644, owner=(OTHER_UID, OTHER_UID))
    return s


def build(root, privileged):
    """Create the fixture in root (which must not exist or be empty)."""
    root = os.fsencode(root)
    os.makedirs(root, exist_ok=True)
    os.chmod(root, 0o755)
    spec = _spec(privileged)
    old_umask = os.umask(0)
    try:
        for rel, kind, data, mode, kw in spec:
            p = os.path.join(root, rel)
            if kind == "d":
                os.mkdir(p, 0o755)
            elif kind == "f":
                fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
                with os.fdopen(fd, "wb") as fh:
                    fh.write(data)
            elif kind == "l":
                os.symlink(data, p)
            elif kind == "h":
                os.link(os.path.join(root, data), p)
            elif kind == "p":
                os.mkfifo(p, 0o644)
            for name, val in kw.get("xattrs", {}).items():
                os.setxattr(p, name, val, follow_symlinks=False)
            if "owner" in kw:
                os.chown(p, *kw["owner"], follow_symlinks=False)
        # modes last (0444 / 0700 dirs must not block creation), then mtimes
        # bottom-up so that no later operation touches an mtime already set
        for rel, kind, data, mode, kw in spec:
            if mode is not None and kind in ("f", "d", "p"):
                os.chmod(os.path.join(root, rel), mode)
        entries = [(rel, kind) for rel, kind, *_ in spec]
        for i, (rel, kind) in enumerate(entries):
            ns = BASE_NS + i * STEP_NS
            os.utime(os.path.join(root, rel), ns=(ns, ns), follow_symlinks=False)
        # directories again, deepest first (children's utime does not change
        # the parent's mtime, but their creation did: redo dirs to be sure)
        for i, (rel, kind) in sorted(enumerate(entries), key=lambda e: -e[1][0].count(b"/")):
            if kind == "d":
                ns = BASE_NS + i * STEP_NS
                os.utime(os.path.join(root, rel), ns=(ns, ns), follow_symlinks=False)
        ns = BASE_NS - 7 * STEP_NS
        os.utime(root, ns=(ns, ns))
    finally:
        os.umask(old_umask)
    return root
