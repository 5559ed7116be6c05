"""The cgroups the disposable root gets: a fresh child of the harness's own
cgroup in each hierarchy txbox uses (memory, pids, cpuacct, and cgroup v2),
which the whole run joins. Inside, only these sub-trees are mounted, so an
escaped `rm -rf /` or `find / -delete` cannot remove the machine's other
cgroups, and the memory ceiling bounds the whole run on a shared machine."""

import os

CONTROLLERS = ("memory", "pids", "cpuacct")
MEMORY_CEILING = 3 << 30


def mounts():
    """[(key, mountpoint)] of the cgroup hierarchies txbox may use; key is
    the controller name, or "unified" for cgroup v2."""
    out = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, right = line.split(" - ", 1)
            fstype, _, opts = right.split()[:3]
            mnt = left.split()[4]
            if fstype == "cgroup2":
                out.append(("unified", mnt))
            elif fstype == "cgroup":
                ctrls = [c for c in opts.split(",") if c in CONTROLLERS]
                if ctrls:
                    out.append((ctrls[0], mnt))
    return out


def own_path(key):
    with open("/proc/self/cgroup") as f:
        for line in f:
            _, ctrls, path = line.rstrip("\n").split(":", 2)
            if (key == "unified" and ctrls == "") or key in ctrls.split(","):
                return path
    return None


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


class Jail:
    def __init__(self):
        self.dirs = []   # (key, new dir, the dir we came from)

    def enter(self):
        """Make the sub-trees and move this process (so its children) in.
        A hierarchy we cannot use is left out, as txbox would do without it."""
        tag = "txbox-harm-%d" % os.getpid()
        for key, mnt in mounts():
            path = own_path(key)
            if path is None:
                continue
            home = os.path.join(mnt, path.lstrip("/"))
            new = os.path.join(home, tag)
            try:
                os.mkdir(new)
                if key == "memory":
                    write(os.path.join(new, "memory.limit_in_bytes"), str(MEMORY_CEILING))
                write(os.path.join(new, "cgroup.procs"), str(os.getpid()))
            except OSError:
                continue
            self.dirs.append((key, new, home))
        return self

    def arg(self):
        return ",".join("%s=%s" % (k, d) for k, d, _ in self.dirs)

    def leave(self):
        for _, new, home in reversed(self.dirs):
            try:
                write(os.path.join(home, "cgroup.procs"), str(os.getpid()))
            except OSError:
                pass
            # txbox's own leftovers (empty) first, then ours.
            for dirpath, dirnames, _ in os.walk(new, topdown=False):
                for d in dirnames:
                    try:
                        os.rmdir(os.path.join(dirpath, d))
                    except OSError:
                        pass
            try:
                os.rmdir(new)
            except OSError:
                pass


def bind_into(root, arg, sh):
    """Mount a tmpfs on root/sys/fs/cgroup and bind each sub-tree there."""
    base = os.path.join(root, "sys/fs/cgroup")
    sh("mount", "-t", "tmpfs", "-o", "mode=755,size=1m", "harm-cgroup", base)
    for item in filter(None, arg.split(",")):
        key, src = item.split("=", 1)
        os.mkdir(os.path.join(base, key))
        sh("mount", "--bind", src, os.path.join(base, key))
