#!/usr/bin/env python3
"""Generate shell command lines for the differential test (deterministic).

Every case consists only of `printf '%s\\0' @K@ WORDS…` commands joined by
`;`, `&&`, `||`, `|`, newlines, `( … )` or `{ …; }`. Words exercise every
quoting form ('…', "…", backslashes, $'…' with escapes, $"…"), brace
expansion, concatenation and line continuations. No case contains a
substitution, parameter expansion, redirection or tilde: bash runs them
with nothing but printf.

Each case is returned as (text, commands) where commands is a list of
(sentinel, visible): visible is False when bash will not print it (left
side of a pipe, right side of ||).
"""
import random

SAFE_PLAIN = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.,:+@%=/^"
GLOB = "*?["
QUOTABLE = SAFE_PLAIN + " \t;|&()<>!#\"'{},*?[]$\\" + "é€" + "\u00a0"
ESCAPABLE = SAFE_PLAIN + " ;|&()<>!#\"'{},*?[]$\\" + "\n"
FORBIDDEN = ("$(", "`", "<(", ">(", "${", "~")


def plain(r):
    s = "".join(r.choice(SAFE_PLAIN) for _ in range(r.randint(1, 5)))
    if r.random() < 0.1:
        s += r.choice(GLOB)  # globbing is disabled (bash -f), kept literal
    return s


def squote(r):
    body = "".join(r.choice(QUOTABLE.replace("'", "")) for _ in range(r.randint(0, 6)))
    return "'" + body + "'"


def dquote(r, dollar=False):
    out = []
    for _ in range(r.randint(0, 6)):
        k = r.random()
        if k < 0.15:
            out.append("\\" + r.choice('$"\\'))
        elif k < 0.25:
            out.append("\\" + r.choice("abnt'{}x"))  # backslash stays
        elif k < 0.28:
            out.append("\\\n")  # continuation inside quotes
        else:
            c = r.choice(QUOTABLE.replace('"', "").replace("\\", "").replace("$", ""))
            out.append(c)
    return ('$"' if dollar else '"') + "".join(out) + '"'


def ansi_c(r):
    out = []
    for _ in range(r.randint(1, 5)):
        k = r.random()
        if k < 0.35:
            out.append("\\" + r.choice("abeEfnrtv\\'\"?"))
        elif k < 0.45:
            out.append("\\" + "".join(r.choice("01234567") for _ in range(r.randint(1, 3))))
        elif k < 0.55:
            out.append("\\x" + "".join(r.choice("0123456789abcdefABCDEF") for _ in range(r.randint(1, 2))))
        elif k < 0.62:
            cp = r.choice([0x41, 0xe9, 0x20ac, 0x3b1, 0x4e2d, 0x1f600, 0x7f, 0x80])
            if cp > 0xFFFF or r.random() < 0.3:
                out.append("\\U%08x" % cp if r.random() < 0.5 else "\\U%x" % cp)
            else:
                out.append("\\u%04x" % cp if r.random() < 0.5 else "\\u%x" % cp)
        elif k < 0.68:
            out.append("\\c" + r.choice("abcxyzABC?["))
        elif k < 0.70:
            out.append("\\q")  # unknown escape keeps the backslash
        elif k < 0.71:
            out.append("\\0")  # NUL ends the string
        else:
            out.append(r.choice(SAFE_PLAIN + " ;|&\"{},"))
    return "$'" + "".join(out) + "'"


def escaped(r):
    return "\\" + r.choice(ESCAPABLE)


def fragment(r, depth=0):
    k = r.random()
    if k < 0.30:
        return plain(r)
    if k < 0.45:
        return squote(r)
    if k < 0.60:
        return dquote(r)
    if k < 0.68:
        return ansi_c(r)
    if k < 0.72:
        return dquote(r, dollar=True)
    if k < 0.80:
        return escaped(r)
    if k < 0.95 and depth < 2:
        return brace(r, depth + 1)
    return r.choice(['""', "''", "\\\n" + plain(r)])


def brace(r, depth):
    k = r.random()
    if k < 0.25:
        a, b = r.randint(-12, 12), r.randint(-12, 12)
        if r.random() < 0.3:
            w = r.randint(2, 3)
            sa, sb = str(a).zfill(w) if a >= 0 else "-" + str(-a).zfill(w), str(b)
        else:
            sa, sb = str(a), str(b)
        inc = "" if r.random() < 0.6 else ".." + str(r.choice([-3, -1, 0, 1, 2, 5]))
        return "{%s..%s%s}" % (sa, sb, inc)
    if k < 0.40:
        # both ends in one case: a range across 'Z'..'a' yields '\\' and '`',
        # which bash re-reads (the parser marks such words unresolved)
        letters = r.choice(["abcxyz", "ABCXYZ"])
        a, b = r.choice(letters), r.choice(letters)
        inc = "" if r.random() < 0.7 else ".." + str(r.choice([1, 2, 3]))
        return "{%s..%s%s}" % (a, b, inc)
    if k < 0.48:
        return "{" + plain(r) + "}"  # not an expansion
    n = r.randint(1, 3)
    parts = []
    for _ in range(n + 1):
        if r.random() < 0.15:
            parts.append("")
        else:
            parts.append("".join(fragment(r, depth) for _ in range(r.randint(1, 2))))
    return "{" + ",".join(parts) + "}"


def word(r):
    w = "".join(fragment(r) for _ in range(r.randint(1, 4)))
    # a word must not start a comment or contain forbidden sequences
    if w.startswith("#") or any(f in w for f in FORBIDDEN):
        return word(r)
    return w


class Case:
    def __init__(self):
        self.n = 0
        self.cmds = []

    def printf(self, r, visible, nwords):
        self.n += 1
        sent = "@%d@" % self.n
        self.cmds.append((sent, visible))
        words = " ".join(word(r) for _ in range(nwords))
        sep = r.choice([" ", " ", "  ", "\t", " \\\n "])
        return "printf '%s\\0' " + sent + sep + words


def line(r, single):
    c = Case()
    if single:
        return c.printf(r, True, r.randint(1, 4)), c.cmds
    parts = []
    for i in range(r.randint(2, 4)):
        conn = "" if i == 0 else r.choice(["; ", " && ", " || ", "\n", " ;\n", " &&\n "])
        invisible = conn.strip().startswith("||")
        n = r.randint(1, 3)  # pipeline length
        cmds = []
        for j in range(n):
            cmds.append(c.printf(r, (j == n - 1) and not invisible, r.randint(0, 3)))
        pipe = " | ".join(cmds)
        g = r.random()
        if g < 0.1:
            pipe = "( " + pipe + " )"
        elif g < 0.2:
            pipe = "{ " + pipe + "; }"
        parts.append(conn + pipe)
    text = "".join(parts)
    if r.random() < 0.1:
        text += " # trailing comment"
    return text, c.cmds


def generate(seed=20240601, singles=1600, lines=700):
    r = random.Random(seed)
    cases = [line(r, True) for _ in range(singles)]
    cases += [line(r, False) for _ in range(lines)]
    return cases


if __name__ == "__main__":
    import sys
    for text, _ in generate():
        sys.stdout.write(text + "\0")
