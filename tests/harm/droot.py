"""The disposable root: a private mount, PID, network, UTS and IPC namespace
whose / is an overlay over the real / with its upper layer on a tmpfs that
dies with the run. Even a command that escapes txbox then changes nothing
real, and the upper layer is the record of what it changed.

Only the harness process (PID 1 of the new PID namespace, started by
`unshare`) calls build(); everything here runs before any command does."""

import ctypes
import os
import stat
import subprocess

import cgjail

SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}
MNT_DETACH = 2

# Decoy block devices: regular files on the disposable /dev tmpfs. A wipe
# that reaches them changes their content (checked), never a real disk.
DECOY_DEVICES = ("vda", "vdb", "sda", "nvme0n1", "loop0", "xvda")
DECOY_SIZE = 1 << 20

_libc = ctypes.CDLL(None, use_errno=True)


class SetupError(Exception):
    pass


def sh(*argv):
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if p.returncode != 0:
        raise SetupError("%s: %s" % (" ".join(argv), p.stdout.decode(errors="replace").strip()))


def mount(fstype, src, target, opts=None, flags=()):
    argv = ["mount", "-t", fstype] + list(flags)
    if opts:
        argv += ["-o", opts]
    sh(*(argv + [src, target]))


def pivot_root(new_root):
    """pivot_root(".", ".") then detach the old root: nothing of the real
    file system stays reachable except through the overlay."""
    nr = SYS_PIVOT_ROOT.get(os.uname().machine)
    if nr is None:
        raise SetupError("pivot_root: unknown syscall number on %s" % os.uname().machine)
    os.chdir(new_root)
    if _libc.syscall(nr, b".", b".") != 0:
        raise SetupError("pivot_root: %s" % os.strerror(ctypes.get_errno()))
    if _libc.umount2(b".", MNT_DETACH) != 0:
        raise SetupError("umount old root: %s" % os.strerror(ctypes.get_errno()))
    os.chdir("/")


def make_dev(dev):
    """A minimal /dev of our own (a bind of the real /dev would hand the
    commands the real disks): the usual character devices, a fresh devpts,
    a private /dev/shm and decoy disks."""
    mount("tmpfs", "harm-dev", dev, "mode=755,size=64m")
    for name, major, minor in (("null", 1, 3), ("zero", 1, 5), ("full", 1, 7), ("random", 1, 8),
                               ("urandom", 1, 9), ("tty", 5, 0)):
        p = os.path.join(dev, name)
        os.mknod(p, 0o666 | stat.S_IFCHR, os.makedev(major, minor))
        os.chmod(p, 0o666)
    for d in ("pts", "shm", "mapper"):
        os.mkdir(os.path.join(dev, d))
    mount("devpts", "devpts", os.path.join(dev, "pts"), "newinstance,ptmxmode=0666,mode=620")
    os.symlink("pts/ptmx", os.path.join(dev, "ptmx"))
    mount("tmpfs", "harm-shm", os.path.join(dev, "shm"), "mode=1777,size=64m")
    for i, n in enumerate(("stdin", "stdout", "stderr")):
        os.symlink("/proc/self/fd/%d" % i, os.path.join(dev, n))
    os.symlink("/proc/self/fd", os.path.join(dev, "fd"))
    for n in DECOY_DEVICES:
        with open(os.path.join(dev, n), "wb") as f:
            f.write(decoy_content(n))
        os.chmod(os.path.join(dev, n), 0o660)


def decoy_content(name):
    block = ("txbox-harm decoy disk %s\n" % name).encode()
    return (block * (DECOY_SIZE // len(block) + 1))[:DECOY_SIZE]


def build(stage, ws_mount, cgroups):
    """Mount the disposable root under stage (a dir on the real /; its
    tmpfs lives only in this mount namespace), pivot into it and return an
    O_DIRECTORY fd of the overlay's upper layer, which stays outside.
    cgroups: the sub-trees from cgjail.Jail.arg()."""
    mount("tmpfs", "harm-stage", stage, "mode=700,size=256m")
    upper, work, root = (os.path.join(stage, n) for n in ("upper", "work", "root"))
    for d in (upper, work, root):
        os.mkdir(d)
    mount("overlay", "harm-root", root, "lowerdir=/,upperdir=%s,workdir=%s" % (upper, work))
    upper_fd = os.open(upper, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    mount("proc", "proc", os.path.join(root, "proc"))
    mount("sysfs", "sysfs", os.path.join(root, "sys"), "ro,nosuid,nodev,noexec")
    # txbox's limits need cgroups (rw); only the run's own sub-trees.
    cgjail.bind_into(root, cgroups, sh)
    make_dev(os.path.join(root, "dev"))
    mount("tmpfs", "harm-tmp", os.path.join(root, "tmp"), "mode=1777,size=128m")
    wsdir = root + ws_mount
    os.makedirs(wsdir, exist_ok=True)
    # Small on purpose: the disk and inode fills must end here, quickly.
    mount("tmpfs", "harm-ws", wsdir, "mode=755,size=384m,nr_inodes=60000")
    pivot_root(root)
    return upper_fd
