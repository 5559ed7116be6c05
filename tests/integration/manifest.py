"""Full manifest of a directory tree, and a readable diff of two manifests.

A manifest records, for every entry below a root (paths relative to the root,
as bytes; the root itself is b"."; the top-level ".txbox" is skipped):

  type        'f' regular, 'd' dir, 'l' symlink, 'p' fifo, 's' socket,
              'c' char device, 'b' block device
  mode        S_IMODE (permission bits incl. setuid/setgid/sticky)
  uid, gid
  size        regular files and symlinks (directory sizes are fs-internal: not kept)
  sha256      of the content of regular files (see content_hash: a hash over
              1 MiB chunk hashes, so a 1 GiB sparse file is hashed without
              reading its holes; equal content <=> equal hash, whatever the
              hole layout)
  target      readlink() bytes for symlinks
  xattrs      sorted ((name, value), ...) read with follow_symlinks=False,
              trusted.overlay.* and user.overlay.* excluded (but collected in
              Manifest.overlay_xattrs so callers can assert that none leaked)
  rdev        for device nodes
  mtime_ns    for every entry (directories too; whether a directory's mtime is
              compared is the caller's choice, see diff())
  blocks, nlink, ino, ctime_ns
              informational only, never compared (ino/ctime tell which paths a
              native run touched, see touched_paths())

and the hard-link groups: the set of path-sets of regular files that share a
(st_dev, st_ino) with st_nlink > 1 (compared as sets of path-sets, never by
inode number). A group only counts the links inside the tree.

The comparison (diff) is strict by default. Callers relax it explicitly:
  dir_mtime      compare directory mtimes (False: ignore them)
  root_mtime     compare the root directory's mtime
  mtime_check    callable(path, expected_entry, actual_entry) -> None | str,
                 used instead of exact equality when the mtimes differ
  volatile       paths whose content, size and mtime are inherently
                 non-deterministic (e.g. .git/index stores inode numbers and
                 ctimes): only type, mode, uid, gid and xattrs are compared
"""

import hashlib
import os
import stat

SKIP_TOP = b".txbox"
CHUNK = 1 << 20
_ZERO_CHUNK_DIGEST = hashlib.sha256(bytes(CHUNK)).digest()

OVERLAY_XATTR_PREFIXES = (b"trusted.overlay.", b"user.overlay.")


def _is_overlay_xattr(name):
    n = name if isinstance(name, bytes) else os.fsencode(name)
    return n.startswith(OVERLAY_XATTR_PREFIXES)


def content_hash(path, size, dir_fd=None):
    """sha256 over (size, sha256 of each 1 MiB chunk). Chunks lying entirely
    in a hole (SEEK_DATA) are not read: their digest is the all-zero chunk's."""
    h = hashlib.sha256()
    h.update(b"size:%d\n" % size)
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NOCTTY, dir_fd=dir_fd)
    try:
        off = 0
        while off < size:
            n = min(CHUNK, size - off)
            if n == CHUNK:
                try:
                    data_at = os.lseek(fd, off, os.SEEK_DATA)
                except OSError:  # ENXIO: only a hole until EOF
                    data_at = size
                if data_at >= off + CHUNK:
                    h.update(_ZERO_CHUNK_DIGEST)
                    off += CHUNK
                    continue
            buf = os.pread(fd, n, off)
            if len(buf) != n:
                raise OSError("short read on %r at %d" % (path, off))
            h.update(hashlib.sha256(buf).digest())
            off += n
    finally:
        os.close(fd)
    return h.hexdigest()


class Entry:
    __slots__ = ("type", "mode", "uid", "gid", "size", "sha256", "target",
                 "xattrs", "rdev", "mtime_ns", "blocks", "nlink", "ino", "ctime_ns")

    def __init__(self, **kw):
        for k in self.__slots__:
            setattr(self, k, kw.get(k))

    def fields(self):
        return {k: getattr(self, k) for k in self.__slots__}

    def __repr__(self):
        return "Entry(%s)" % ", ".join("%s=%r" % kv for kv in self.fields().items()
                                      if kv[1] is not None)


_TYPES = [
    (stat.S_ISREG, "f"), (stat.S_ISDIR, "d"), (stat.S_ISLNK, "l"),
    (stat.S_ISFIFO, "p"), (stat.S_ISSOCK, "s"), (stat.S_ISCHR, "c"),
    (stat.S_ISBLK, "b"),
]


def _type_of(st_mode):
    for pred, t in _TYPES:
        if pred(st_mode):
            return t
    return "?"


class Manifest:
    def __init__(self, root, skip_top=(SKIP_TOP,)):
        self.root = os.fsencode(root)
        self.skip_top = tuple(os.fsencode(x) for x in skip_top)
        self.entries = {}          # rel path (bytes) -> Entry
        self.links = set()         # set of frozenset(rel paths)
        self.overlay_xattrs = []   # (path, name) of overlay-private xattrs found
        self.errors = []           # (path, message) for unreadable entries
        self._scan()

    # Everything is read relative to directory fds (openat/fstatat style), so
    # trees deeper than PATH_MAX are fine; xattrs go through
    # /proc/self/fd/DIRFD/NAME (short, and the last component is not followed).

    def _xattrs(self, xpath, rel):
        try:
            names = os.listxattr(xpath, follow_symlinks=False)
        except OSError as e:
            self.errors.append((rel, "listxattr: %s" % e))
            return ()
        out = []
        for name in names:
            if _is_overlay_xattr(name):
                self.overlay_xattrs.append((rel, name))
                continue
            try:
                val = os.getxattr(xpath, name, follow_symlinks=False)
            except OSError as e:
                self.errors.append((rel, "getxattr %s: %s" % (name, e)))
                continue
            out.append((name, val))
        return tuple(sorted(out))

    def _add(self, name, dir_fd, rel, st, inodes):
        """name relative to dir_fd (dir_fd None: name is the root path)."""
        t = _type_of(st.st_mode)
        e = Entry(type=t, mode=stat.S_IMODE(st.st_mode), uid=st.st_uid,
                  gid=st.st_gid, mtime_ns=st.st_mtime_ns, blocks=st.st_blocks,
                  nlink=st.st_nlink, ino=st.st_ino, ctime_ns=st.st_ctime_ns)
        if t == "f":
            e.size = st.st_size
            try:
                e.sha256 = content_hash(name, st.st_size, dir_fd=dir_fd)
            except OSError as ex:
                self.errors.append((rel, "read: %s" % ex))
                e.sha256 = "<unreadable>"
            if st.st_nlink > 1:
                inodes.setdefault((st.st_dev, st.st_ino), set()).add(rel)
        elif t == "l":
            e.target = os.readlink(name, dir_fd=dir_fd)
            e.size = st.st_size
        elif t in ("c", "b"):
            e.rdev = (os.major(st.st_rdev), os.minor(st.st_rdev))
        xpath = name if dir_fd is None else b"/proc/self/fd/%d/%s" % (dir_fd, name)
        e.xattrs = self._xattrs(xpath, rel)
        self.entries[rel] = e

    def _walk(self, fd, rel_dir, inodes):
        try:
            names = sorted(os.listdir(fd))
        except OSError as ex:
            self.errors.append((rel_dir or b".", "listdir: %s" % ex))
            return
        for name in (os.fsencode(n) for n in names):
            if not rel_dir and name in self.skip_top:
                continue
            rel = rel_dir + b"/" + name if rel_dir else name
            st = os.lstat(name, dir_fd=fd)
            self._add(name, fd, rel, st, inodes)
            if stat.S_ISDIR(st.st_mode):
                try:
                    sub = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC,
                                  dir_fd=fd)
                except OSError as ex:
                    self.errors.append((rel, "open dir: %s" % ex))
                    continue
                try:
                    self._walk(sub, rel, inodes)
                finally:
                    os.close(sub)

    def _scan(self):
        inodes = {}
        st = os.lstat(self.root)
        self._add(self.root, None, b".", st, inodes)
        fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            self._walk(fd, b"", inodes)
        finally:
            os.close(fd)
        self.links = {frozenset(paths) for paths in inodes.values() if len(paths) > 1}

    # convenience
    def __contains__(self, p):
        return p in self.entries

    def get(self, p):
        return self.entries.get(p)

    def paths(self):
        return set(self.entries)


def manifest(root, skip_top=(SKIP_TOP,)):
    return Manifest(root, skip_top)


def show(p):
    """Readable rendering of a bytes path (repr keeps \\n and invalid bytes visible)."""
    s = repr(p)[1:] if isinstance(p, bytes) else repr(p)
    if len(s) > 160:
        s = s[:70] + "...(%d chars)..." % len(s) + s[-70:]
    return s


def _fmt(field, v):
    if v is None:
        return "-"
    if field == "mode":
        return "0%o" % v
    if field == "xattrs":
        return "{" + ", ".join("%s=%r" % (n if isinstance(n, str) else n.decode("utf-8", "replace"), val)
                               for n, val in v) + "}"
    if field == "sha256":
        return v[:12]
    if field == "target":
        return show(v)
    return repr(v)


CONTENT_FIELDS = ("type", "size", "sha256", "target", "rdev")
META_FIELDS = ("mode", "uid", "gid", "xattrs")


def entry_diffs(p, e, a, *, dir_mtime=False, root_mtime=False, mtime_check=None,
                volatile=False):
    """List of (field, message) for one path present on both sides."""
    out = []
    if e.type != a.type:
        return [("type", "type: expected %s, got %s" % (e.type, a.type))]
    fields = list(META_FIELDS)
    if not volatile:
        fields[:0] = [f for f in CONTENT_FIELDS if f != "type"]
    for f in fields:
        ev, av = getattr(e, f), getattr(a, f)
        if ev != av:
            out.append((f, "%s: expected %s, got %s" % (f, _fmt(f, ev), _fmt(f, av))))
    if volatile:
        return out
    compare_mtime = True
    if e.type == "d":
        compare_mtime = root_mtime if p == b"." else dir_mtime
    if compare_mtime and e.mtime_ns != a.mtime_ns:
        msg = None
        if mtime_check is not None:
            msg = mtime_check(p, e, a)
        else:
            msg = "mtime_ns: expected %d, got %d" % (e.mtime_ns, a.mtime_ns)
        if msg:
            out.append(("mtime", msg))
    return out


def diff(expected, actual, *, dir_mtime=False, root_mtime=False, mtime_check=None,
         volatile=(), links=True):
    """Differences between two manifests, as a list of readable lines
    (empty list: equal under the given rules)."""
    lines = []
    ep, ap = expected.paths(), actual.paths()
    vol = set(volatile)
    for p in sorted(ep - ap):
        lines.append("missing:    %s (%s)" % (show(p), expected.entries[p].type))
    for p in sorted(ap - ep):
        lines.append("unexpected: %s (%s)" % (show(p), actual.entries[p].type))
    for p in sorted(ep & ap):
        for _, msg in entry_diffs(p, expected.entries[p], actual.entries[p],
                                  dir_mtime=dir_mtime, root_mtime=root_mtime,
                                  mtime_check=mtime_check, volatile=p in vol):
            lines.append("differs:    %s: %s" % (show(p), msg))
    if links and expected.links != actual.links:
        for g in sorted(expected.links - actual.links, key=sorted):
            lines.append("link group missing:    {%s}" % ", ".join(show(x) for x in sorted(g)))
        for g in sorted(actual.links - expected.links, key=sorted):
            lines.append("link group unexpected: {%s}" % ", ".join(show(x) for x in sorted(g)))
    return lines


def changed_paths(before, after, *, dir_mtime=False):
    """Paths that differ between two manifests (added, deleted, or any
    compared field different; directory mtimes only when dir_mtime)."""
    out = {}
    bp, ap = before.paths(), after.paths()
    for p in bp - ap:
        out[p] = "deleted"
    for p in ap - bp:
        out[p] = "added"
    for p in bp & ap:
        d = entry_diffs(p, before.entries[p], after.entries[p], dir_mtime=dir_mtime,
                        root_mtime=dir_mtime)
        if d:
            out[p] = "type_changed" if d[0][0] == "type" else "changed"
    return out


def touched_paths(before, after):
    """Paths a run touched, judged by identity rather than content: added,
    deleted, or a different inode or ctime afterwards (a rewrite with
    identical content, a replacement by an identical copy, a chmod back to
    the same mode all count)."""
    out = set(before.paths() ^ after.paths())
    for p in before.paths() & after.paths():
        b, a = before.entries[p], after.entries[p]
        if b.ino != a.ino or b.ctime_ns != a.ctime_ns:
            out.add(p)
    return out


def format_diff(lines, limit=40):
    if len(lines) <= limit:
        return "\n".join(lines)
    return "\n".join(lines[:limit] + ["... and %d more difference(s)" % (len(lines) - limit)])


if __name__ == "__main__":
    import sys
    if len(sys.argv) == 2:
        m = manifest(sys.argv[1])
        for p in sorted(m.entries):
            print(show(p), m.entries[p])
        for g in sorted(m.links, key=sorted):
            print("links:", sorted(g))
    elif len(sys.argv) == 3:
        d = diff(manifest(sys.argv[1]), manifest(sys.argv[2]))
        print(format_diff(d, 1000) or "equal")
        sys.exit(1 if d else 0)
    else:
        print("usage: manifest.py DIR [DIR2]", file=sys.stderr)
        sys.exit(2)
