#!/usr/bin/env python3
"""Check a status document against the schema table in docs/status.md.

usage: tests/status_schema.py STATUS.json docs/status.md"""
import json
import re
import sys

TYPES = {"int": int, "number": (int, float), "string": str, "bool": bool, "object": dict, "array": list,
         "null": type(None)}


def values(doc, path):
    """All values at a path like .checks[].name (one per array element)."""
    out = [doc]
    for part in path.lstrip(".").split("."):
        arr = part.endswith("[]")
        key = part[:-2] if arr else part
        nxt = []
        for o in out:
            if not isinstance(o, dict) or key not in o:
                raise KeyError(path)
            v = o[key]
            if arr:
                if not isinstance(v, list):
                    raise TypeError(f"{path}: {key} is not an array")
                nxt.extend(v)
            else:
                nxt.append(v)
        out = nxt
    return out


def main():
    doc = json.load(open(sys.argv[1]))
    rows = re.findall(r"^\| `(\.[a-z_.\[\]]+)` \| ([a-z/]+) \|", open(sys.argv[2]).read(), re.M)
    if len(rows) < 20:
        sys.exit("schema table not found in " + sys.argv[2])
    for path, typ in rows:
        allowed = tuple(TYPES[t] for t in typ.split("/"))
        flat = tuple(x for a in allowed for x in (a if isinstance(a, tuple) else (a,)))
        for v in values(doc, path):
            if isinstance(v, bool) and bool not in flat:
                sys.exit(f"{path}: bool where {typ} expected")
            if not isinstance(v, flat):
                sys.exit(f"{path}: {type(v).__name__} where {typ} expected: {v!r}")
    if doc["schema_version"] != 2:
        sys.exit("schema_version")
    print(f"{len(rows)} keys checked")


if __name__ == "__main__":
    main()
