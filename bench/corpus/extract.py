#!/usr/bin/env python3
"""Extract benign-ci.tsv from git snapshots of public repositories.

Usage: extract.py MIRROR_DIR > benign-ci.tsv

MIRROR_DIR holds one bare git directory per repository at
MIRROR_DIR/OWNER+NAME/repo.  Only text is read (git ls-tree / git show);
nothing from the repositories is built or run.  `bash -n` parses the
candidate lines to find where a compound command ends; it executes nothing.
The selection and labelling rules are in README.md next to this file.
"""
import re
import shlex
import subprocess
import sys
from pathlib import Path

import yaml

REPOS = """
jqlang/jq redis/redis tmux/tmux libuv/libuv madler/zlib facebook/zstd
htop-dev/htop curl/curl nginx/nginx git/git
nlohmann/json fmtlib/fmt google/googletest
junegunn/fzf spf13/cobra gin-gonic/gin cli/cli caddyserver/caddy
prometheus/prometheus etcd-io/etcd
BurntSushi/ripgrep sharkdp/bat sharkdp/fd tokio-rs/tokio serde-rs/serde
alacritty/alacritty starship/starship
psf/requests pallets/flask pytest-dev/pytest psf/black python-poetry/poetry
fastapi/fastapi pypa/pip
expressjs/express vuejs/core prettier/prettier eslint/eslint axios/axios
vitejs/vite
google/guava square/okhttp junit-team/junit5 apache/maven mockito/mockito
jekyll/jekyll Homebrew/brew rubocop/rubocop heartcombo/devise sinatra/sinatra
facebook/docusaurus squidfunk/mkdocs-material gohugoio/hugo mkdocs/mkdocs
composer/composer laravel/framework elixir-lang/elixir jgm/pandoc
docker/compose
GNOME/glib libvirt/libvirt fdroid/fdroidserver
""".split()

CAP = {"workflow": 15, "gitlab-ci": 15, "makefile": 8, "readme": 8}
README_TAGS = {"sh", "bash", "shell", "zsh", "console", "shell-session",
               "sh-session"}
SESSION_TAGS = {"console", "shell-session", "sh-session"}


class Repo:
    def __init__(self, gitdir):
        self.gitdir = gitdir

    def git(self, *args):
        return subprocess.run(["git", "-C", str(self.gitdir), *args],
                              capture_output=True, check=True).stdout

    def files(self):
        out = self.git("ls-tree", "-r", "-z", "--name-only", "HEAD")
        return [p.decode("utf-8", "replace") for p in out.split(b"\0") if p]

    def text(self, path):
        return self.git("show", "HEAD:" + path).decode("utf-8", "replace")


# ---- logical lines -------------------------------------------------------

def gha_placeholder(match):
    return re.sub(r"[^A-Za-z0-9_.-]", "_", match.group(1).strip())


def incomplete(text):
    """True when bash reports the text as unfinished (not merely wrong)."""
    r = subprocess.run(["bash", "-n"], input=text.encode(),
                       capture_output=True)
    err = r.stderr.decode("utf-8", "replace")
    if "delimited by end-of-file" in err:  # a warning only: status is 0
        return True
    if r.returncode == 0:
        return False
    return "unexpected end of file" in err or "looking for matching" in err


def join_continuations(text):
    out, cur = [], None
    for raw in text.split("\n"):
        line = raw if cur is None else cur + " " + raw.lstrip(" \t")
        trail = len(line) - len(line.rstrip("\\"))
        if trail % 2 == 1:
            cur = line[:-1].rstrip(" \t")
            continue
        out.append(line)
        cur = None
    if cur is not None:
        out.append(cur)
    return out


def logical_lines(script):
    """Split shell text into logical command lines (see README.md)."""
    script = re.sub(r"\$\{\{(.*?)\}\}", gha_placeholder, script, flags=re.S)
    acc = []
    for line in join_continuations(script):
        if not acc:
            s = line.strip()
            if not s or s.startswith("#"):
                continue
            acc = [s]
        else:
            acc.append(line)
        text = "\n".join(acc)
        if not incomplete(text):
            yield text
            acc = []


# ---- sources ---------------------------------------------------------------

def shell_ok(shell, runs_on):
    if shell is not None:
        return str(shell).split()[0] in ("bash", "sh")
    return not (isinstance(runs_on, str) and "windows" in runs_on.lower())


def default_shell(node):
    try:
        return node["defaults"]["run"]["shell"]
    except (KeyError, TypeError):
        return None


def workflow_lines(repo, files):
    paths = sorted(p for p in files
                   if re.fullmatch(r"\.github/workflows/[^/]+\.ya?ml", p))
    for path in paths:
        try:
            doc = yaml.safe_load(repo.text(path))
        except yaml.YAMLError:
            continue
        if not isinstance(doc, dict):
            continue
        wf_shell = default_shell(doc)
        for job in (doc.get("jobs") or {}).values():
            if not isinstance(job, dict):
                continue
            job_shell = default_shell(job) or wf_shell
            for step in job.get("steps") or []:
                if not isinstance(step, dict) or "run" not in step:
                    continue
                shell = step.get("shell", job_shell)
                if not shell_ok(shell, job.get("runs-on")):
                    continue
                for line in logical_lines(str(step["run"])):
                    yield path, line


class GitLabLoader(yaml.SafeLoader):
    """Reads GitLab's own tags (`!reference [...]`) as nothing to extract."""


GitLabLoader.add_multi_constructor("!", lambda loader, suffix, node: None)


def gitlab_lines(repo, files):
    path = ".gitlab-ci.yml"
    if path not in files:
        return
    doc = yaml.load(repo.text(path), Loader=GitLabLoader)
    for job in doc.values():
        if not isinstance(job, dict):
            continue
        for key in ("before_script", "script", "after_script"):
            entries = job.get(key) or []
            if isinstance(entries, str):
                entries = [entries]
            for entry in entries:
                if entry is None:
                    continue
                if isinstance(entry, list):
                    entry = "\n".join(map(str, entry))
                for line in logical_lines(str(entry)):
                    yield path, line


def makefile_lines(repo, files):
    for path in ("GNUmakefile", "Makefile"):
        if path not in files:
            continue
        text = re.sub(r"\\\n[ \t]*", " ", repo.text(path))
        for raw in text.split("\n"):
            if not raw.startswith("\t"):
                continue
            line = raw.strip().lstrip("@-+").strip()
            if not line or line.startswith("#"):
                continue
            if re.search(r"(?<!\$)\$[({]", line.replace("$$", "")):
                continue
            yield path, line.replace("$$", "$")
        return


def readme_lines(repo, files):
    path = "README.md"
    if path not in files:
        return
    for m in re.finditer(r"^ {0,3}(```+|~~~+)[ \t]*([^\n]*)\n(.*?)^ {0,3}\1[ \t]*$",
                         repo.text(path), flags=re.S | re.M):
        tag = (m.group(2).split() or [""])[0].lower()
        if tag not in README_TAGS:
            continue
        body = m.group(3)
        if tag in SESSION_TAGS:
            cmds = [l[2:] for l in body.split("\n") if l.startswith("$ ")]
        else:
            cmds = [l[2:] if l.startswith("$ ") else l
                    for l in body.split("\n")]
        for line in logical_lines("\n".join(cmds)):
            yield path, line


SOURCES = (("workflow", workflow_lines), ("gitlab-ci", gitlab_lines),
           ("makefile", makefile_lines), ("readme", readme_lines))


# ---- expect=hold -----------------------------------------------------------

PUBLISH = [
    ("npm", "publish"), ("pnpm", "publish"), ("yarn", "publish"),
    ("cargo", "publish"), ("twine", "upload"), ("gem", "push"),
    ("docker", "push"), ("poetry", "publish"), ("uv", "publish"),
    ("flit", "publish"), ("hatch", "publish"), ("mkdocs", "gh-deploy"),
]
PKG_MANAGERS = {"apt-get", "apt", "aptitude", "dnf", "yum", "zypper", "apk",
                "snap", "port", "brew"}
PKG_VERBS = {"install", "remove", "purge", "upgrade", "add", "del",
             "uninstall", "reinstall", "autoremove"}
FS_CMDS = {"rm", "rmdir", "cp", "mv", "ln", "install", "tee", "chmod",
           "chown", "mkdir", "touch"}
SEPARATORS = {";", "&&", "||", "|", "&", "(", ")", "\n", "|&", ";;"}
REDIRS = {">", ">>", ">|", "&>", "&>>", "1>", "2>", "1>>", "2>>"}


def outside(word):
    if word in ("/dev/null", "/dev/stdout", "/dev/stderr") \
            or word.startswith("/tmp/"):
        return False
    return word.startswith(("/", "~", "$HOME", "${HOME}"))


def simple_commands(line):
    lex = shlex.shlex(line, posix=True, punctuation_chars=True)
    lex.whitespace_split = True
    lex.commenters = ""
    try:
        tokens = list(lex)
    except ValueError:
        tokens = line.split()
    cmd = []
    for tok in tokens:
        if tok in SEPARATORS:
            if cmd:
                yield cmd
            cmd = []
        else:
            cmd.append(tok)
    if cmd:
        yield cmd


def risky_command(words, line):
    while words and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", words[0]):
        words = words[1:]
    if not words:
        return False
    name, args = Path(words[0]).name, words[1:]
    if name in ("sudo", "doas", "su", "goreleaser", "ghp-import"):
        return True
    if name == "git" and "push" in args:
        return True
    if any(name == n and verb in args for n, verb in PUBLISH):
        return True
    if name == "docker" and "--push" in args:
        return True
    if name == "gh" and args[:1] == ["release"] and \
            set(args[1:2]) & {"create", "upload", "edit", "delete"}:
        return True
    if name in ("mvn", "./mvnw", "mvnw") and "deploy" in args:
        return True
    if name in ("gradle", "gradlew") and any(a.startswith("publish") for a in args):
        return True
    if name in ("aws", "gcloud", "az"):
        return True
    if (name, args[:1]) in [("kubectl", [v]) for v in
                            ("apply", "delete", "create", "replace", "patch")]:
        return True
    if name == "terraform" and set(args) & {"apply", "destroy"}:
        return True
    if name == "helm" and set(args[:1]) & {"install", "upgrade", "uninstall", "push"}:
        return True
    if name in PKG_MANAGERS and set(args) & PKG_VERBS:
        return True
    if name == "pacman" and any(re.match(r"-[SRU]", a) for a in args):
        return True
    if name == "choco" and set(args[:1]) & {"install", "uninstall"}:
        return True
    if name in FS_CMDS and any(outside(a) for a in args if not a.startswith("-")):
        return True
    for i, tok in enumerate(words[:-1]):
        if tok in REDIRS and outside(words[i + 1]):
            return True
    return False


def expect_hold(line):
    if re.search(r"\b(curl|wget)\b[^|\n]*\|\s*(sudo\s+(-\S+\s+)*)?(ba|z|da)?sh\b", line):
        return True
    if re.search(r"\b(ba|z|da)?sh\s+<\(\s*(curl|wget)\b", line):
        return True
    if re.search(r"(^|[\s;&|])(>>?|&>)\s*(/(?!dev/null|dev/std|tmp/)|~|\$\{?HOME)",
                 line):
        return True
    return any(risky_command(c, line) for c in simple_commands(line))


# ---- output ----------------------------------------------------------------

def escape(s):
    return (s.replace("\\", "\\\\").replace("\t", "\\t")
            .replace("\n", "\\n").replace("\r", "\\r"))


def repo_rows(repo, name):
    files = set(repo.files())
    for kind, source in SOURCES:
        n = 0
        for path, line in source(repo, files):
            if n == CAP[kind]:
                break
            n += 1
            yield line, name, path, kind


def main():
    mirror = Path(sys.argv[1])
    seen = set()
    for name in REPOS:
        gitdir = mirror / name.replace("/", "+") / "repo"
        if not gitdir.is_dir():
            print(f"skipped (no snapshot): {name}", file=sys.stderr)
            continue
        for line, repo, path, kind in repo_rows(Repo(gitdir), name):
            if line in seen:
                continue
            seen.add(line)
            cols = [escape(line), repo, path, kind]
            if expect_hold(line):
                cols.append("expect=hold")
            print("\t".join(cols))


if __name__ == "__main__":
    main()
