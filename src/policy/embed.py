#!/usr/bin/env python3
"""Turn the default policy YAML into a C source file (a byte array), so the
built-in policy is compiled into the binary. Usage: embed.py INPUT OUTPUT"""
import sys


def main() -> int:
    src, dst = sys.argv[1], sys.argv[2]
    with open(src, "rb") as f:
        data = f.read()
    lines = [
        "/* Generated from policy/default.yaml by src/policy/embed.py. Do not edit. */",
        '#include "policy/internal.h"',
        "",
        "const char policy_default_yaml[] = {",
    ]
    for i in range(0, len(data), 16):
        lines.append("\t" + ", ".join("0x%02x" % b for b in data[i:i + 16]) + ",")
    lines.append("\t0x00,")
    lines.append("};")
    lines.append("const size_t policy_default_yaml_len = %d;" % len(data))
    with open(dst, "w") as f:
        f.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
