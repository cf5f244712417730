#!/usr/bin/env python3
"""Each scenario of docs/results.md, every controller against the joint-grid fixed setting it
was compared with: step tokens, tokens/MWh, offset-averaged violations (of the row and of its
reference), read from the tables `make results` wrote (eval's text tables: the reference of each
row from the table's `reference (tok/ref, tpm/ref): auto, ...` header; the non-stationary
markdown tables: their stated reference). Simulated figures, as docs/results.md says.

Usage: scripts/results_summary.py [RESULTS_MD]   (default docs/results.md); markdown on stdout.
Exit 2 on bad arguments, 1 when the file is missing or holds no eval table.
"""
import os
import re
import sys


def parse_refs(header, names):
    """{row: reference} from the eval header's `auto, each row against ... (A for B C; D for E)`."""
    m = re.search(r"reference \(tok/ref, tpm/ref\): (.*?); tok/look", header, re.S)
    if not m:
        m = re.search(r"reference \(tok/ref, tpm/ref\): (\S+)", header)
        return {n: m.group(1) for n in names} if m else {}
    text = " ".join(m.group(1).split())
    if not text.startswith("auto"):
        ref = text.split()[0].rstrip(";,")
        return {n: ref for n in names}
    body = text[text.index("(") + 1:]
    if body.endswith(")"):
        body = body[:-1]
    refs = {}
    for part in body.split(";"):
        part = part.strip()
        if " for " not in part:
            continue
        ref, rows = part.split(" for ", 1)
        for r in rows.split():
            refs[r] = ref.strip()
    return refs


def num(s):
    s = s.strip()
    mult = 1.0
    if s[-1:] in ("k", "M", "G"):
        mult, s = {"k": 1e3, "M": 1e6, "G": 1e9}[s[-1]], s[:-1]
    try:
        return float(s) * mult
    except ValueError:
        return None


def wide_rows(lines, hi):
    """{name: figures} of a --wide eval table whose header is lines[hi], up to the first blank line."""
    rows = {}
    for l in lines[hi + 1:]:
        if not l.strip():
            break
        # name, tokens ±ci, steps/h, tok/step, tpm ±ci, viol ±ci, slide ±ci, steps ±ci, tok/ref, tpm/ref ...
        f = re.sub(r" ±\s*\S+", "", l).split()
        if len(f) < 10:
            continue
        rows[f[0]] = {"tokens": num(f[1]), "tpm": num(f[4]), "viol": num(f[5]), "steps_viol": num(f[7]),
                      "tok_ref": num(f[8]), "tpm_ref": num(f[9])}
    return rows


def eval_tables(text):
    """Yields (section title, command, rows {name: {...}}, refs) per eval text table."""
    for sec in re.split(r"\n(?=## |### )", text):
        title = sec.split("\n", 1)[0].lstrip("# ").strip()
        cmd = re.search(r"```\n(flexwatt eval [^\n]*)\n```", sec)
        m = re.search(r"```\nflexwatt eval — SIMULATED.*?\n```", sec, re.S)
        if not m:
            continue
        block = m.group(0)
        lines = block.split("\n")
        hi = next((i for i, l in enumerate(lines) if l.startswith("controller ") and "step tokens" in l), None)
        if hi is None or "steps/h" not in lines[hi]:
            continue  # the columns below are --wide's; a narrower table (drift-stationary) is left out
        header = "\n".join(lines[:hi])
        rows = wide_rows(lines, hi)
        yield title, cmd.group(1) if cmd else "", rows, parse_refs(header, list(rows))


def pct(x):
    return "-" if x is None else f"{(x - 1) * 100:+.1f} %"


def main(argv):
    if len(argv) > 1 or (argv and argv[0].startswith("-")):
        print(__doc__ if argv and argv[0] in ("-h", "--help") else "usage: scripts/results_summary.py [RESULTS_MD]",
              file=sys.stdout if argv and argv[0] in ("-h", "--help") else sys.stderr)
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    path = argv[0] if argv else "docs/results.md"
    if not os.path.exists(path):
        print(f"results_summary.py: {path}: no such file", file=sys.stderr)
        return 1
    text = open(path, encoding="utf-8").read()
    head = re.search(r"written by `scripts/results.sh` \(([0-9a-f]+)\)", text)
    print(f"From {path} ({'results.sh at ' + head.group(1) if head else 'commit unknown'}); simulated; "
          "each row against the reference it was compared with (eval's tok/ref, tpm/ref); viol = "
          "offset-averaged tumbling-window violation rate, the row's / its reference's; the last column "
          "sets a row whose reference lacks an actuator beside plain `static` (every actuator, joint "
          "grid) where the table has it (tokens/MWh from the table's rounded column).")
    print()
    n = 0
    for title, cmd, rows, refs in eval_tables(text):
        n += 1
        print(f"### {title}")
        print()
        full = rows.get("static")
        print("| controller | reference | step tokens (row / ref) | vs ref | tokens/MWh vs ref | viol row / ref |"
              " vs `static` (every actuator; tokens, tokens/MWh) |")
        print("|---|---|---|---|---|---|---|")
        for name, r in rows.items():
            ref = refs.get(name)
            if ref is None or ref == name:
                continue
            rr = rows.get(ref, {})
            rt = rr.get("tokens")
            vs_full = "-"
            if full and ref != "static" and name != "static" and full["tokens"] and full["tpm"]:
                vs_full = f"{pct(r['tokens'] / full['tokens'])}, {pct(r['tpm'] / full['tpm'])}"
            elif ref == "static":
                vs_full = "(the reference)"
            print(f"| `{name}` | `{ref}` | {r['tokens']:,.0f} / {'-' if rt is None else f'{rt:,.0f}'} | "
                  f"{pct(r['tok_ref'])} | {pct(r['tpm_ref'])} | {r['viol']:.2f} / "
                  f"{'-' if rr.get('viol') is None else format(rr['viol'], '.2f')} % | {vs_full} |")
        print()
    if n == 0:
        print(f"results_summary.py: {path}: no eval table", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
