"""Workloads for the commit and rollback oracles.

Each workload is shell text (run by /bin/sh -c, i.e. dash) executed with
cwd = a fresh copy of the fixture (fixture.py). It must succeed natively
(exit 0); it must not depend on the workspace's absolute path, on the current
time (except through mtimes, see oracle.py) or on anything that differs
between two runs. "@ASSETS@" is replaced by the absolute path of the suite's
asset directory (assets.py), which lives outside every workspace.

Fields:
  name       test name suffix (commit/NAME, rollback/NAME)
  text       shell text (str, or bytes for raw non-UTF-8 command text)
  root_only  needs root natively (chown to other uids ...)
  volatile   paths whose content is inherently run-dependent (compare type,
             mode, owner, xattrs only)
  needs      executables required
  stdout     compare the command's stdout with the native run's (default True)
  heavy      informational (big data)

The change matrix (incoming change x existing entry) is covered by the
"m/..." workloads:
                   nothing        file             dir              symlink
  new file         m/file-new     m/file-on-file*  m/file-on-dir    m/file-on-symlink
  new dir          m/dir-new      m/dir-on-file    m/dir-on-dir     m/dir-on-symlink
  new symlink      m/sym-new      m/sym-on-file    m/sym-on-dir     m/sym-on-symlink
  deletion         m/del-nothing  m/del-file       m/del-dir        m/del-symlink
  opaque dir       m/opaque-new   m/opaque-on-file m/opaque-on-dir* m/opaque-on-symlink
  metadata only    m/meta-nothing m/meta-file*     m/meta-dir*      m/meta-symlink
"""


class Workload:
    def __init__(self, name, text, root_only=False, volatile=(), needs=(), stdout=True,
                 heavy=False):
        self.name = name
        self.text = text
        self.root_only = root_only
        self.volatile = tuple(volatile)
        self.needs = tuple(needs)
        self.stdout = stdout
        self.heavy = heavy

    def render(self, assets):
        if isinstance(self.text, bytes):
            return self.text.replace(b"@ASSETS@", assets.encode() if assets else b"")
        if "@ASSETS@" in self.text:
            return self.text.replace("@ASSETS@", assets)
        return self.text

    def uses_assets(self):
        t = self.text if isinstance(self.text, str) else self.text.decode("latin-1")
        return "@ASSETS@" in t


W = []


def w(name, text, **kw):
    W.append(Workload(name, text, **kw))


GIT_ENV = ("export GIT_AUTHOR_NAME=it GIT_AUTHOR_EMAIL=it@example.invalid "
           "GIT_COMMITTER_NAME=it GIT_COMMITTER_EMAIL=it@example.invalid "
           "GIT_AUTHOR_DATE='2005-04-07T22:13:13Z' GIT_COMMITTER_DATE='2005-04-07T22:13:13Z' "
           "GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null HOME=/nonexistent TZ=UTC LC_ALL=C; ")

# ---- the matrix -------------------------------------------------------------
# new file
w("m/file-new", "echo hello > newfile && printf abc > sub/newfile2 && : > emptynew && "
                "echo deep > sub/nested/deeper/newleaf")
w("m/file-on-file-overwrite", "echo replaced > file_small && printf abc > file_1m && "
                              "cat file_4095 > file_4096")
w("m/file-on-file-recreate", "rm file_4096 && echo recreated > file_4096 && "
                             "rm -f readonly && echo rw > readonly")
w("m/file-on-file-rename-over", "mv file_4095 file_4097 && mv sub/a.txt sub/b.txt")
w("m/file-on-dir", "rm -r dir && echo nowfile > dir && rm -r emptydir && : > emptydir")
w("m/file-on-symlink", "rm link_rel && echo nowfile > link_rel && rm linkdir && echo f > linkdir")
w("m/file-on-fifo", "rm fifo && echo notfifo > fifo")
# new dir
w("m/dir-new", "mkdir -p newdir/a/b && echo x > newdir/a/b/f && mkdir -m 0700 newpriv && "
               "mkdir emptynewdir && mkdir sub/nested/deeper/more")
w("m/dir-on-file", "rm file_small && mkdir file_small && echo in > file_small/inner && "
                   "rm hl2 && mkdir hl2")
w("m/dir-on-dir", "rm -r dir && mkdir dir && echo fresh > dir/fresh")
w("m/dir-on-symlink", "rm linkdir && mkdir linkdir && echo x > linkdir/f && "
                      "rm link_dangling && mkdir link_dangling")
# new symlink
w("m/sym-new", "ln -s file_small newlink && ln -s /usr/bin newabs && ln -s nowhere newdangling && "
               "ln -s sub newlinkdir && ln -s ../../x sub/nested/up2")
w("m/sym-on-file", "ln -sf sub/a.txt file_4096 && rm secret && ln -s /etc/hostname secret")
w("m/sym-on-dir", "rm -r dir2 && ln -s sub dir2 && rm -r dir && ln -s /etc dir")
w("m/sym-on-symlink", "ln -sfn dir link_rel && ln -sfn /usr link_abs && ln -sfn dir2 linkdir")
# deletion
w("m/del-nothing", "rm -f nothere && rm -rf nodir && true")
w("m/del-file", "rm -f file_small file_empty secret readonly sub/b.txt")
w("m/del-dir", "rm -r dir sub/nested emptydir xattr_dir")
w("m/del-symlink", "rm link_rel link_dangling linkdir link_abs sub/link_up")
w("m/del-fifo", "rm fifo")
w("m/del-deep-tree", "rm -r deep")
w("m/del-everything", "find . -mindepth 1 -maxdepth 1 -exec rm -rf {} +")
# opaque directories (rm -r d && mkdir d)
w("m/opaque-new", "rm -rf newd && mkdir newd && echo n > newd/n")
w("m/opaque-on-file", "rm -r file_4097 && mkdir file_4097")
w("m/opaque-on-dir", "rm -r dir && mkdir dir")
w("m/opaque-on-dir-nested", "rm -r dir && mkdir -p dir/sub && echo y2 > dir/sub/y2")
w("m/opaque-on-dir-same-names", "rm -r sub && mkdir sub && echo a2 > sub/a.txt && mkdir sub/nested")
w("m/opaque-on-dir-with-xattr", "rm -r xattr_dir && mkdir xattr_dir && echo i > xattr_dir/inner")
w("m/opaque-on-symlink", "rm -r linkdir && mkdir linkdir && echo o > linkdir/o")
# metadata only
w("m/meta-nothing", "touch -c nothere && chmod 644 nothere 2>/dev/null; true")
w("m/meta-file-chmod", "chmod 600 file_small && chmod 755 file_4095 && chmod 444 sub/a.txt && "
                       "chmod 640 hl1 && chmod 400 secret && chmod 1644 file_4096")
w("m/meta-file-touch", "touch -d @1262401445.123456789 file_small && "
                       "touch -m -d @1300000000 sub/b.txt && touch -r file_4095 file_4096 && "
                       "touch -d @1262401445 hl2")
w("m/meta-file-xattr", "setfattr -n user.x -v y file_small && setfattr -x user.alpha xattr_file && "
                       "setfattr -n user.beta -v newval xattr_file && "
                       "setfattr -n user.hl -v 1 hl1", needs=("setfattr",))
w("m/meta-dir-chmod", "chmod 700 sub && chmod 1777 emptydir && chmod 750 dir2 && chmod 711 deep")
w("m/meta-dir-touch-xattr", "touch -d @1262401445 sub dir && setfattr -n user.new -v 1 sub && "
                            "setfattr -x user.dirattr xattr_dir", needs=("setfattr",))
w("m/meta-symlink", "touch -h -d @1262401445.5 link_rel link_dangling linkdir")
w("m/meta-root", "setfattr -n user.root -v r . && touch .", needs=("setfattr",))  # owner/mode: test_commit_trust
w("m/meta-chown", "chown 4321:4321 file_small && chown -h 4321:4321 link_rel && "
                  "chown 0:0 owned_other && chown 4321 sub && chown -R 4321:4321 dir_other",
  root_only=True)

# ---- renames ----------------------------------------------------------------
w("rename/dir", "mv dir renamed_dir && mv sub/nested sub/nested_moved")
w("rename/file", "mv file_small moved_small && mv sub/a.txt dir2/a_moved.txt && "
                 "mv 'name with spaces.txt' no_spaces.txt")
w("rename/dir-over-empty-dir", "mv -T dir2 emptydir")
w("rename/swap-files", "mv file_4095 tmp && mv file_4096 file_4095 && mv tmp file_4096")
w("rename/dir-then-modify-inside", "mv dir newname && echo more >> newname/x && rm newname/sub/y && "
                                   "echo z > newname/sub/z")
w("rename/dir-then-recreate-old", "mv sub sub_old && mkdir sub && echo n > sub/a.txt")
w("rename/deep", "mv deep deep2 && f=$(find deep2 -name leaf) && echo more >> \"$f\"")
w("rename/file-over-symlink", "mv file_4095 link_rel")
w("rename/symlinks", "mv linkdir linkdir2 && mv link_dangling sub/dangling_moved")
w("rename/into-new-dir", "mkdir newhome && mv sub dir2 file_small newhome/")

# ---- hard links -------------------------------------------------------------
w("hardlink/new", "ln file_small hardnew && ln sub/a.txt sub/a_link")
w("hardlink/append-to-group-member", "echo more >> hl1")
w("hardlink/extend-group", "ln hl1 hl4")
w("hardlink/remove-member", "rm hl2")
w("hardlink/sed-i-member", "sed -i s/linked/changed/ hl2")
w("hardlink/new-group-new-files", "echo n > n1 && ln n1 n2 && mkdir nd && ln n1 nd/n3")
w("hardlink/replace-file-with-link", "ln -f file_small file_4096")
w("hardlink/chmod-group-member", "chmod 600 hl2")

# ---- special files, sizes ---------------------------------------------------
w("special/fifo-new", "mkfifo newfifo && mkfifo -m 600 sub/fifo2")
# A Unix socket left in the workspace is refused at commit (issue 4: "device
# nodes and sockets are refused"): see guard/socket-refused in test_exit.py.
w("big/100mb-file", "cp @ASSETS@/big.bin big.bin", heavy=True)
w("big/modify-1m-in-place", "printf XYZ | dd of=file_1m bs=1 seek=500000 conv=notrunc 2>/dev/null")
w("big/sparse-1g", "truncate -s 1G sparse && printf x | dd of=sparse bs=1 seek=536870912 "
                   "conv=notrunc 2>/dev/null && truncate -s 1G file_small", heavy=True)
w("big/10k-files",
  "mkdir t && i=0 && while [ $i -lt 100 ]; do mkdir t/d$i; j=0; "
  "while [ $j -lt 100 ]; do echo $i.$j > t/d$i/f$j; j=$((j+1)); done; i=$((i+1)); done",
  heavy=True)
w("big/truncate-extend", "truncate -s 0 file_4097 && truncate -s +100 file_4096 && "
                         "truncate -s 10 file_1m")

# ---- names ------------------------------------------------------------------
w("names/create-odd",
  r"""printf x > "$(printf 'a\nb')" && printf y > "$(printf '\377\376new')" && printf z > ./-newdash && """
  r"""printf w > "$(printf 'tab\there')" && mkdir "$(printf 'dir\nnl')" && """
  r"""echo q > "$(printf 'dir\nnl')/in\\side" && touch "$(printf '%0255d' 0)" && """
  r"""echo "'quoted'" > "it's \"q\"" && ln -s "$(printf '\377')" "$(printf 'sym\377')" """)
w("names/modify-odd",
  r"""echo mod >> "$(printf 'new\nline')" && rm -- -dash && """
  r"""mv "$(printf '\377\376')" "$(printf 'renamed\377')" && for f in LLLL*.txt; do echo m >> "$f"; done && """
  r"""rm inv*alid-latin1.txt && mv 'name with spaces.txt' "$(printf 'now\nnewline')" """)
w("names/raw-bytes-in-command", b"echo caf\xe9 > caf\xe9 && mkdir d\xff && echo x > d\xff/\xfe")

# ---- real tools ----------------------------------------------------------------
w("tools/git-init-add-commit",
  GIT_ENV + "git init -q -b main repo && cd repo && cp ../sub/b.txt . && echo hi > a && "
  "mkdir src && echo 'int x;' > src/x.c && git add -A && git commit -q -m first && "
  "echo more >> a && git commit -q -am second && git tag v1 && git log --format=%H%n%s",
  volatile=(b"repo/.git/index",), needs=("git",))
w("tools/git-in-existing-tree",
  GIT_ENV + "git init -q -b main . && git add sub dir && git commit -q -m m && git rm -q -r dir && "
  "git commit -q -m rm && git status --porcelain=v1 -z sub dir | od -c",
  volatile=(b".git/index",), needs=("git",))
w("tools/tar-extract", "tar xf @ASSETS@/archive.tar && tar tf @ASSETS@/archive.tar | wc -l",
  needs=("tar",))
w("tools/make-c-project",
  "cp -a @ASSETS@/cproj proj && cd proj && SOURCE_DATE_EPOCH=1000000000 make -s && ./app > out.txt && "
  "make -s && ./app",
  needs=("gcc", "make"))
w("tools/cp-a", "cp -a sub sub_copy && cp -a xattr_file xattr_copy && cp -a xattr_dir xattr_dir_copy")
w("tools/sed-i-and-sort", "sed -i 's/b/B/' sub/b.txt && sort -r sub/b.txt > sorted && "
                          "sed -i '1d' 'name with spaces.txt'")

# ---- miscellaneous --------------------------------------------------------------
w("misc/symlinked-dir-write", "echo x > linkdir/newfile && echo y >> linkdir/a.txt && "
                              "mkdir linkdir/newsub && rm linkdir/b.txt")
w("misc/write-through-symlinks", "echo appended >> link_rel && echo created > link_dangling && "
                                 "echo up >> sub/link_up")
w("misc/listing-sees-no-state", "ls -A > listing && find . -path ./find.txt -prune -o -print "
                                "| LC_ALL=C sort > find.txt && cat listing")
w("misc/umask", "umask 077 && echo p > umask_file && mkdir umask_dir && umask 0 && echo q > umask0")
w("misc/readonly-file-rewrite", "chmod u+w readonly && echo changed >> readonly && chmod 444 readonly")
w("misc/privdir-write", "echo more >> privdir/f && echo new > privdir/g")
w("misc/new-file-with-xattrs", "echo n > xnew && setfattr -n user.k -v v xnew && mkdir xdirnew && "
                               "setfattr -n user.d -v 1 xdirnew && ln -s xnew xsym", needs=("setfattr",))
w("misc/exec-script", "./exec.sh > out_exec && printf '#!/bin/sh\\necho ran\\n' > run.sh && "
                      "chmod +x run.sh && ./run.sh")
w("misc/deep-write-bottom", "f=$(find deep -name leaf) && echo more >> \"$f\" && "
                            "mkdir \"${f%/leaf}/below\" && echo b > \"${f%/leaf}/below/f\"")
w("misc/dir-recreated-same-content", "mv dir2 .tmp_dir2 && cp -a .tmp_dir2 dir2 && rm -r .tmp_dir2")
w("misc/read-only-access", "cat file_small sub/a.txt > /dev/null && ls -laR > /dev/null && "
                           "stat fifo > /dev/null && find . -type f -exec cat {} + > /dev/null")
w("misc/create-then-delete", "echo tmp > tmpfile && mkdir tmpdir && echo x > tmpdir/x && "
                             "rm -r tmpfile tmpdir && echo x > sub/a.txt && rm sub/a.txt")
w("misc/mixed",
  "echo n >> file_small && rm -r dir && mv dir2 dir && ln -s dir dirlink && mkdir -p new/a && "
  "echo 1 > new/a/1 && chmod 700 new && rm link_abs && mkfifo new/p && "
  "touch -d @1234567890 file_4097 && ln file_4097 new/hard && rm \"$(printf 'new\\nline')\"")
# dash's cd fails once $PWD exceeds PATH_MAX, so the deep part is done with
# relative mkdir/chdir in python3
w("misc/path-longer-than-PATH_MAX",
  "python3 -c '\nimport os\nfor r, d, f in os.walk(\"deep\"):\n    if \"leaf\" in f:\n        os.chdir(r)\n        break\n"
  "for i in range(80):\n    n = \"long-component-name-for-exceeding-path-max-%d\" % i\n    os.mkdir(n)\n    os.chdir(n)\n"
  "open(\"f\", \"w\").write(\"bottom\\n\")\nos.symlink(\"../../x\", \"lnk\")\n'", needs=("python3",))
w("misc/readonly-dir-after-write", "echo x > dir2/new && mkdir dir2/sub && echo y > dir2/sub/y && "
                                   "chmod 555 dir2/sub dir2")
w("misc/new-files-explicit-mtime", "touch -d @1111111111.5 brandnew && mkdir nd2 && "
                                   "echo c > nd2/f && touch -d @1111111112 nd2/f && ln -s x nd2/l && "
                                   "touch -h -d @1111111113 nd2/l")
w("misc/xattr-large-value", "setfattr -n user.big -v \"$(head -c 3000 /dev/zero | tr '\\0' a)\" file_small && "
                            "setfattr -n user.empty -v '' file_4095", needs=("setfattr",))
w("rename/hardlink-member", "mv hl2 hl2_moved && mv sub/hl3 hl3_moved")
# rt17 B4: a renamed group member changed as well; the commit linked the
# new name to the old inode, dropping the change (index=on: root only)
w("rename/hardlink-member-then-chmod", "mv hl2 hl2_moved && chmod 600 hl2_moved", root_only=True)
w("rename/hardlink-member-then-append", "mv hl2 hl2_moved && echo more >> hl2_moved", root_only=True)
w("rename/hardlink-member-then-xattr-and-times",
  "mv hl2 hl2_moved && setfattr -n user.moved -v 1 hl2_moved && touch -d @1111111111 hl2_moved",
  root_only=True, needs=("setfattr",))
# rt18 X1, X2: an xattr or ACL alone was compared on the magic link, not the
# file; two renamed members of one changed group linked the third name twice
w("rename/hardlink-member-then-xattr", "mv hl2 hl2_moved && setfattr -n user.moved -v 1 hl2_moved",
  root_only=True, needs=("setfattr",))
w("rename/hardlink-member-then-acl", "mv hl2 hl2_moved && setfacl -m u:1001:rw hl2_moved",
  root_only=True, needs=("setfacl",))
w("rename/two-hardlink-members-then-append",
  "mv hl1 hl1_moved && mv hl2 hl2_moved && echo more >> hl1_moved", root_only=True)
w("rename/dir-into-new-dir-same-name", "mv dir x && mkdir dir && mv x dir/x")
w("rename/swap-dirs", "mv dir tmpd && mv dir2 dir && mv tmpd dir2")
w("rename/onto-deleted", "rm -r sub && mv dir sub")
w("rename/dir-with-big-file", "mkdir -p big/inner && cp file_1m big/inner/ && mv big big2 && mv big2/inner big2/in2")
w("m/sym-loop", "ln -s self selfloop && ln -s b a_loop && ln -s a_loop b")
W.sort(key=lambda x: x.name)
