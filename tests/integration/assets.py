"""Inputs that workloads copy in, built once per suite OUTSIDE every workspace
(so the native run and the txbox run get byte-identical inputs):

  big.bin        100 MiB of pseudo-random bytes (fixed seed)
  archive.tar    a tar with dirs, files, a symlink, a hard link, a long name and
                 an entry overwriting the fixture's file_small; all mtimes
                 explicit (2005), owner = the suite's uid/gid
  cproj/         a small C project (Makefile, two .c, one .h) with fixed mtimes
"""

import io
import os
import random
import tarfile

BIG_SIZE = 100 * 1024 * 1024
TAR_MTIME = 1_112_911_993  # 2005-04-07


def _write(path, data, mode=0o644, mtime_ns=None):
    with open(path, "wb") as f:
        f.write(data)
    os.chmod(path, mode)
    if mtime_ns is not None:
        os.utime(path, ns=(mtime_ns, mtime_ns))


def build_assets(d):
    rnd = random.Random(100)
    with open(os.path.join(d, "big.bin"), "wb") as f:
        left = BIG_SIZE
        while left:
            n = min(left, 8 << 20)
            f.write(rnd.randbytes(n))
            left -= n

    uid, gid = os.getuid(), os.getgid()

    def info(name, typ=tarfile.REGTYPE, mode=0o644, size=0, mtime=TAR_MTIME):
        ti = tarfile.TarInfo(name)
        ti.type = typ
        ti.mode = mode
        ti.size = size
        ti.mtime = mtime
        ti.uid, ti.gid = uid, gid
        ti.uname = ti.gname = ""
        return ti

    with tarfile.open(os.path.join(d, "archive.tar"), "w", format=tarfile.PAX_FORMAT) as tf:
        tf.addfile(info("tarred", tarfile.DIRTYPE, 0o755))
        tf.addfile(info("tarred/sub", tarfile.DIRTYPE, 0o750))
        for i in range(20):
            data = random.Random(i).randbytes(i * 997)
            tf.addfile(info("tarred/sub/f%02d" % i, size=len(data), mode=0o640 if i % 2 else 0o644,
                            mtime=TAR_MTIME + i), io.BytesIO(data))
        data = b"script\n"
        tf.addfile(info("tarred/run.sh", size=len(data), mode=0o755), io.BytesIO(data))
        ln = info("tarred/link", tarfile.SYMTYPE)
        ln.linkname = "sub/f01"
        tf.addfile(ln)
        hl = info("tarred/hard", tarfile.LNKTYPE)
        hl.linkname = "tarred/sub/f02"
        tf.addfile(hl)
        long = "tarred/" + "n" * 200 + "/" + "m" * 200
        tf.addfile(info(long.rsplit("/", 1)[0], tarfile.DIRTYPE, 0o755))
        tf.addfile(info(long, size=5), io.BytesIO(b"long\n"))
        data = b"from tar\n"
        tf.addfile(info("file_small", size=len(data), mode=0o600, mtime=TAR_MTIME + 99),
                   io.BytesIO(data))

    p = os.path.join(d, "cproj")
    os.mkdir(p)
    ns = 1_200_000_000_000_000_000
    _write(os.path.join(p, "util.h"), b"int add(int a, int b);\n", mtime_ns=ns)
    _write(os.path.join(p, "util.c"), b'#include "util.h"\nint add(int a, int b) { return a + b; }\n',
           mtime_ns=ns + 1)
    _write(os.path.join(p, "main.c"),
           b'#include <stdio.h>\n#include "util.h"\n'
           b'int main(void) { printf("%d built %s\\n", add(2, 3), __DATE__); return 0; }\n',
           mtime_ns=ns + 2)
    # relative paths only, no -g: objects and the binary are byte-identical
    # whatever the absolute directory (checked: gcc 12, binutils 2.40)
    _write(os.path.join(p, "Makefile"),
           b"CFLAGS = -O2 -Wall\n"
           b"all: app\n"
           b"app: main.o util.o\n\t$(CC) -o $@ main.o util.o\n"
           b"%.o: %.c util.h\n\t$(CC) $(CFLAGS) -c $< -o $@\n"
           b"clean:\n\trm -f app *.o\n",
           mtime_ns=ns + 3)
    os.utime(p, ns=(ns + 4, ns + 4))
