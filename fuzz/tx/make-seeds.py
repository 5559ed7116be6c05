#!/usr/bin/env python3
"""Seeds for fuzz_gitobj from real repositories (git init, a few commits,
git gc): each seed is "ROOT TARGET LOOSE" =GITOBJ= idx =GITOBJ= pack
=GITOBJ= loose object, as fuzz/tx/fuzz_gitobj.c reads it.
    fuzz/tx/make-seeds.py OUTDIR
Seeds: SHA-1 and SHA-256, whole commits, commits stored as deltas
(similar long messages, `git repack -adf --window=50`), a merge."""
import os
import subprocess
import sys
import tempfile
import zlib

MARK = b"=GITOBJ="


def git(repo, *args, env=None):
    e = dict(os.environ, GIT_AUTHOR_NAME="a", GIT_AUTHOR_EMAIL="a@x", GIT_COMMITTER_NAME="a",
             GIT_COMMITTER_EMAIL="a@x", GIT_AUTHOR_DATE="1700000000 +0000",
             GIT_COMMITTER_DATE="1700000000 +0000", GIT_CONFIG_NOSYSTEM="1", HOME=repo)
    return subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True, env=e).stdout.decode().strip()


def commit(repo, i, msg, name="f"):
    with open(os.path.join(repo, name), "w") as f:
        f.write("line %d\n" % i * (i + 1))
    git(repo, "add", name)
    git(repo, "commit", "-qm", msg)
    return git(repo, "rev-parse", "HEAD")


def seed(repo, root, target, loose):
    pack = os.path.join(repo, ".git/objects/pack")
    idx = [n for n in os.listdir(pack) if n.endswith(".idx")][0]
    with open(os.path.join(pack, idx), "rb") as f:
        idx_b = f.read()
    with open(os.path.join(pack, idx[:-4] + ".pack"), "rb") as f:
        pack_b = f.read()
    with open(os.path.join(repo, ".git/objects", loose[:2], loose[2:]), "rb") as f:
        loose_b = f.read()
    return b" ".join(x.encode() for x in (root, target, loose)) + b"\n" + MARK + idx_b + MARK + pack_b + MARK + loose_b


def raw_pack(repo, idx_path, rawlen):
    """The pack as fuzz_gitobj's RAWPACK part: per object its id, its
    entry header (type, size, delta base) and its data inflated."""
    out = b"RAWPACK\n"
    with open(idx_path[:-4] + ".pack", "rb") as f:
        pack = f.read()
    for line in git(repo, "verify-pack", "-v", idx_path).splitlines():
        w = line.split()
        if len(w) < 5 or w[1] not in ("commit", "tree", "blob", "tag"):
            continue
        at = int(w[4])
        h = at
        c = pack[h]
        h += 1
        while c & 0x80:
            c = pack[h]
            h += 1
        typ = (pack[at] >> 4) & 7
        if typ == 6:
            while pack[h] & 0x80:
                h += 1
            h += 1
        elif typ == 7:
            h += rawlen
        d = zlib.decompressobj()
        data = d.decompress(pack[h:])
        out += bytes.fromhex(w[0]) + bytes([h - at]) + pack[at:h] + len(data).to_bytes(2, "little") + data
    return out


def build(fmt, deltas):
    repo = tempfile.mkdtemp(prefix="gitobj-seed-")
    git(repo, "init", "-q", "--object-format=" + fmt)
    body = "\n\n" + "a long message that repeats so commits delta against each other. " * 20
    ids = [commit(repo, i, "commit %d%s" % (i, body)) for i in range(6)]
    git(repo, "checkout", "-qb", "side", ids[2])
    side = commit(repo, 9, "side" + body, "g")
    git(repo, "checkout", "-q", "-")
    git(repo, "merge", "-q", "--no-ff", "-m", "merge" + body, "side")
    merge = git(repo, "rev-parse", "HEAD")
    if deltas:
        git(repo, "repack", "-adfq", "--window=50", "--depth=50")
    else:
        git(repo, "gc", "-q")
    tip = commit(repo, 20, "loose tip" + body)  # after gc: a loose object
    seeds = [seed(repo, tip, ids[0], tip), seed(repo, merge, side, tip), seed(repo, ids[5], ids[1], tip)]
    pdir = os.path.join(repo, ".git/objects/pack")
    idx = os.path.join(pdir, [n for n in os.listdir(pdir) if n.endswith(".idx")][0])
    with open(os.path.join(repo, ".git/objects", tip[:2], tip[2:]), "rb") as f:
        loose = b"RAW\n" + zlib.decompress(f.read())
    head = b" ".join(x.encode() for x in (tip, ids[0], tip)) + b"\n"
    seeds.append(head + MARK + MARK + raw_pack(repo, idx, len(tip) // 2) + MARK + loose)
    return seeds


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for fmt in ("sha1", "sha256"):
        for deltas in (False, True):
            for i, s in enumerate(build(fmt, deltas)):
                name = "%s-%s-%d" % (fmt, "delta" if deltas else "gc", i)
                with open(os.path.join(out, name), "wb") as f:
                    f.write(s)


if __name__ == "__main__":
    main()
