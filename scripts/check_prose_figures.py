#!/usr/bin/env python3
"""Fails when README.md or a guarded docs/*.md states a figure in prose that no generator wrote.

Usage: scripts/check_prose_figures.py [--json] [--allow FILE] [ROOT | FILE.md ...]

The sibling of scripts/check_typed_figures.py (which reads tables only; issue 42, item 4).
The rule:
  PROSE is every line of a file outside ``` fences, table rows (lines starting with `|`),
  HTML comments and generated regions (between `<!-- results:NAME:begin -->` and
  `<!-- results:NAME:end -->`, or the README's `<!-- results:begin/end -->`), with code spans
  (`...`, also over a line break inside a paragraph), link targets `](...)`, heading anchors
  `{#...}` and bare URLs removed.
  A FIGURE in prose is a number not glued to a word, a dot, a comma, `/`, `^`, `-` or `§` on its
  left (`A100`, `x8`, `grpo-7b`, `2^41`, `§2.4`, `arXiv 2608.11226` are names) nor to a digit or
  `.digit` on its right (versions, addresses), with an optional sign (+ - − ±) right before it, that
  is one of
    1. a percentage: NUMBER then `%`, with or without a space (`+7.4 %`, `13.6%`, `0 %`);
    2. a number with thousands separators (`124,150`, `1,906,057`);
    3. a decimal (`0.949`, `1.88`, `$0.08`);
    4. a whole number followed by a result unit (a space or none between): tokens, tok, W, kW, MW,
       GW, Wh, kWh, MWh, J, s, ms, us, µs, ns, min, h, GPU-h, GPU-hours, °C, x or × (`1800 s`,
       `310 W`, `4 h`, `2x`).
  Plain whole numbers without a unit (seeds, counts, `gen_concurrency 16`, years) are not figures.
  Every prose figure of a guarded file must be
    a. inside a generated region (the lines scripts/results.sh and the scripts it calls rewrite;
       README's result sentences come from scripts/readme_snippets.py), or
    b. on the allowlist (scripts/prose_figures_allow.txt): `FILE :: FIGURE :: REASON`, FIGURE the
       figure's text as the rule reads it (`30 s`, `−89.8 %`), allowing every prose occurrence of
       it in FILE; REASON starts with its kind, one of
         `unit:` / `constant:` (a unit or a constant, with where it is defined),
         `hardware:` (a hardware spec),
         `published (SOURCE):` (a published figure quoted as such, SOURCE e.g. docs/sources.md §1a),
         `option:` (a default or option value, with the option's name).
       An entry that matches no figure of a scanned file fails (stale), like the table allowlist.
  docs/results.md is written whole by scripts/results.sh: there every prose line holding a figure,
  inside its block markers or not, must be a line a generator writes: it must match a string literal of scripts/*.sh or
  scripts/*.py (echo "...", jq "...", print/f-strings), read as a template whose `$VAR`,
  `${...}`, `$(...)`, jq `\\(...)` and Python `{...}` parts match anything (a template needs at
  least 12 literal characters). A prose line typed into docs/results.md by hand fails.
  Generated regions edited by hand (checked where cheap):
    - a docs/results.md section headed "... (copied into FILE)" holds the table that FILE carries
      in a generated region with the same header row; the two must be identical (README.md's
      `<!-- results:begin -->` table against "Headline table (copied into README.md)", docs/control.md's
      static-costs and static-refine regions);
    - README.md's `<!-- results:readme-NAME:begin/end -->` regions must be exactly what
      `scripts/readme_snippets.py` prints from docs/results.md now (a region it does not write
      fails too).
GUARDED: README.md and every docs/*.md except those listed "not yet guarded" below (a new doc is
guarded from its first commit).
NOT YET GUARDED (their prose still quotes typed figures; each needs its result sentences moved
into generated snippets before it can join):
{not_yet}
ROOT (default: the repository above this script) is scanned as README.md and docs/*.md; with
FILE.md arguments only those files are (names relative to the working directory, which is then
ROOT for docs/results.md). Generators (scripts/*.sh, scripts/*.py, scripts/readme_snippets.py) are
always read from this script's own directory. --allow FILE: another allowlist (default:
ROOT/scripts/prose_figures_allow.txt). --json: one JSON object on stdout.
Exit 0 when every prose figure is generated or allowed and no generated region was edited;
1 when not (each finding as FILE:LINE: ...); 2 on bad usage or a malformed allowlist line
(FILE:LINE).
"""
import glob
import importlib.util
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

# Docs whose prose is not yet under the rule: FILE -> why (printed by --help). Shrink it.
NOT_YET = {
    "docs/agent-api.md": "benchmark and latency figures typed in prose",
    "docs/agent.md": "soak-test figures typed in prose (its Dashboard and soak sections)",
    "docs/analysis.md": "parser speed figures typed in prose",
    "docs/caps.md": "capnet, Zeus and pipeline figures typed in prose around its generated tables",
    "docs/control.md": "mpc, drift and shield figures typed in prose (among them the look-ahead "
                       "shares 98.7 / 98.7 / 97.6 %)",
    "docs/fleet.md": "fleet-sim, churn and DR figures typed in prose",
    "docs/flexibility.md": "PFI, allocation and DR figures typed in prose",
    "docs/integrations.md": "trainer test timings typed in prose",
    "docs/occupancy.md": "an unsourced research figure (12-21 s batches) and option values",
    "docs/operators.md": "worked examples with typed figures",
    "docs/rl.md": "training and selection figures typed in prose",
    "docs/simulator.md": "calibration constants and fit figures typed in prose",
    "docs/sources.md": "published figures, each under its source's section (quoting them is its purpose)",
}
RESULTS = "docs/results.md"
README = "README.md"

MARK = re.compile(r"^<!-- results(?::([\w.-]+))?:(begin|end) -->$")
NUM = r"(?:\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)"
UNITS = r"(?:GPU-hours|GPU-h|tokens|tok|MWh|kWh|Wh|GW|MW|kW|W|J|ms|µs|us|ns|min|s|h|°C|x|×)"
FIGURE = re.compile(
    r"(?<![\w.,/^§-])(?<!§ )(?<!arXiv )(?:[+±−-](?=\d))?(?:"
    + NUM + r" ?%"                                   # 1. a percentage
    + r"|" + NUM + r" ?" + UNITS + r"(?![\w%])"        # 4. a number with a result unit
    + r"|\d{1,3}(?:,\d{3})+(?:\.\d+)?"                # 2. thousands separators
    + r"|\d+\.\d+"                                    # 3. a decimal
    + r")(?!\d|\.\d)")
KINDS = re.compile(r"^(unit|constant|hardware|option): \S|^published \([^)]+\): \S")


def usage(msg):
    print(f"check_prose_figures.py: {msg}\nusage: scripts/check_prose_figures.py [--json] [--allow FILE] "
          "[ROOT | FILE.md ...] (--help: the rule)", file=sys.stderr)
    sys.exit(2)


def load_allow(path):
    """{(file, figure): [reason, line, used]}; exit 2 on a malformed line."""
    allow = {}
    if not os.path.exists(path):
        return allow
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            s = line.rstrip("\n")
            if not s.strip() or s.lstrip().startswith("#"):
                continue
            parts = [p.strip() for p in s.split(" :: ")]
            if len(parts) != 3 or not parts[0] or not FIGURE.fullmatch(norm(parts[1])) or not KINDS.match(parts[2]):
                print(f"{path}:{n}: expected 'FILE :: FIGURE :: REASON', FIGURE one figure as the rule reads it, "
                      "REASON starting with unit:, constant:, hardware:, published (SOURCE): or option:",
                      file=sys.stderr)
                sys.exit(2)
            allow[(parts[0], norm(parts[1]))] = [parts[2], n, False]
    return allow


def norm(s):
    return re.sub(r"\s+", " ", s.replace("\u00a0", " ").replace("\u202f", " ")).strip()


def blank(m):
    return re.sub(r"[^\n]", " ", m.group(0))


def prose(text, in_regions=False):
    """The text with everything that is not prose blanked (line numbers kept), and the generated
    regions as [(name, begin line, end line)]. IN_REGIONS: the regions' lines count as prose too
    (docs/results.md, whose every region is a generator's block)."""
    lines = text.split("\n")
    out, regions, fence, open_region = [], [], False, None
    for n, l in enumerate(lines, 1):
        s = l.strip()
        m = MARK.match(s)
        if s.startswith("```") or s.startswith("~~~"):
            fence = not fence
            out.append("")
        elif m and not fence:
            if m.group(2) == "begin":
                open_region = (m.group(1) or "", n)
            elif open_region:
                regions.append((open_region[0], open_region[1], n))
                open_region = None
            out.append("")
        elif fence or (open_region and not in_regions) or s.startswith("|"):
            out.append("")
        else:
            out.append(l)
    p = "\n".join(out)
    p = re.sub(r"<!--.*?-->", blank, p, flags=re.S)
    p = re.sub(r"`(?:[^`\n]|\n(?![ \t]*\n))*`", blank, p)   # code spans, not across a blank line
    p = re.sub(r"\]\([^)\n]*\)", blank, p)                   # link targets
    p = re.sub(r"^\s*\[[^\]]+\]:\s*\S+.*$", blank, p, flags=re.M)  # link definitions
    p = re.sub(r"\{#[\w.-]+\}", blank, p)                    # heading anchors
    p = re.sub(r"<?https?://[^\s>)]+>?", blank, p)           # URLs
    return p, regions


def figures(text, in_regions=False):
    """[(line, figure text, line's text)] of the prose figures of TEXT."""
    p, _ = prose(text, in_regions)
    raw = text.split("\n")
    out = []
    for n, l in enumerate(p.split("\n"), 1):
        for m in FIGURE.finditer(l):
            out.append((n, norm(m.group(0)), raw[n - 1]))
    return out


# ---- docs/results.md: every prose line with a figure is a line a generator writes ----

def literals(src, py):
    """The string literals of a script's source."""
    pats = [r'"((?:[^"\\\n]|\\.)*)"']
    if py:
        pats.append(r"'((?:[^'\\\n]|\\.)*)'")
    for p in pats:
        for m in re.finditer(p, src):
            yield m.group(1)
    if not py:  # echo "<newline>text...": a literal that opens a line of its own, line by line
        for m in re.finditer(r'"\n((?:[^"\\]|\\.)*)"', src):
            yield from m.group(1).split("\n")


def template(lit, py):
    """A regex that matches what the literal may print, or None when it has too little text."""
    parts, i, lit_chars, buf = [], 0, 0, []

    def flush():
        if buf:
            parts.append(re.escape("".join(buf)))
            buf.clear()

    def skip_balanced(j, open_c, close_c):
        depth = 0
        while j < len(lit):
            if lit[j] == open_c:
                depth += 1
            elif lit[j] == close_c:
                depth -= 1
                if depth == 0:
                    return j + 1
            j += 1
        return j

    while i < len(lit):
        c = lit[i]
        two = lit[i:i + 2]
        if two in ("$(", "\\("):
            flush(); parts.append(".*?"); i = skip_balanced(i + 1, "(", ")")
        elif two == "${":
            flush(); parts.append(".*?"); i = skip_balanced(i + 1, "{", "}")
        elif c == "$" and i + 1 < len(lit) and re.match(r"[A-Za-z_0-9@*#?]", lit[i + 1]):
            flush(); parts.append(".*?")
            i += 1
            while i < len(lit) and re.match(r"\w", lit[i]):
                i += 1
        elif py and c == "{" and two != "{{":
            flush(); parts.append(".*?"); i = skip_balanced(i, "{", "}")
        elif py and two in ("{{", "}}"):
            buf.append(c); i += 2; lit_chars += 1
        elif c == "\\" and i + 1 < len(lit):
            nxt = lit[i + 1]
            buf.append({"n": "\n", "t": "\t"}.get(nxt, nxt)); i += 2; lit_chars += 1
        else:
            buf.append(c); i += 1
            if not c.isspace():
                lit_chars += 1
    flush()
    if lit_chars < 12:
        return None
    return "".join(parts)


def generator_templates(scripts_dir):
    """(compiled templates, the literals' text) of the generators in SCRIPTS_DIR."""
    pats, texts = set(), []
    for path in sorted(glob.glob(os.path.join(scripts_dir, "*.sh")) + glob.glob(os.path.join(scripts_dir, "*.py"))):
        if os.path.basename(path) in ("check_prose_figures.py", "check_typed_figures.py"):
            continue
        try:
            src = open(path, encoding="utf-8").read()
        except OSError:
            continue
        py = path.endswith(".py")
        for lit in literals(src, py):
            texts.append(lit.replace('\\"', '"').replace("\\`", "`"))
            t = template(lit, py)
            if t:
                pats.add(t)
    # One alternation per chunk keeps the matching fast.
    pats = sorted(pats)
    return [re.compile(r"(?:" + "|".join(f"(?:{p})" for p in pats[i:i + 200]) + r")\Z", re.S)
            for i in range(0, len(pats), 200)], texts


def written(line, tpls, texts):
    """Whether a generator writes LINE: it matches a template, or it is a section heading
    `## NAME: DESCRIPTION` of a run record `NAME|DESCRIPTION|...` (results.sh's runs array)."""
    if any(t.match(line) for t in tpls):
        return True
    m = re.match(r"^#{2,4} ([\w.+-]+): (.+)$", line)
    return bool(m) and any(f"{m.group(1)}|{m.group(2)}|" in t for t in texts)


def results_lines_unwritten(text, scripts_dir):
    """[(line, figures, text)] of docs/results.md prose lines with figures no generator writes."""
    by_line = {}
    for n, fig, raw in figures(text, in_regions=True):
        by_line.setdefault(n, [raw, []])[1].append(fig)
    if not by_line:
        return []
    tpls, texts = generator_templates(scripts_dir)
    bad = []
    for n, (raw, figs) in sorted(by_line.items()):
        s = raw.rstrip()
        if not written(s, tpls, texts):
            bad.append((n, figs, s))
    return bad


# ---- generated regions edited by hand ----

def region_tables(text):
    """{header row: (name, first line, table lines)} of the tables inside generated regions."""
    out = {}
    lines = text.split("\n")
    region = None
    i = 0
    while i < len(lines):
        m = MARK.match(lines[i].strip())
        if m:
            region = (m.group(1) or "") if m.group(2) == "begin" else None
        elif region is not None and lines[i].startswith("|"):
            j = i
            while j < len(lines) and lines[j].startswith("|"):
                j += 1
            out.setdefault(lines[i].strip(), (region, i + 1, [l.rstrip() for l in lines[i:j]]))
            i = j
            continue
        i += 1
    return out


def copied_sections(results_text):
    """[(target file, section title, line, table lines)] of docs/results.md's "(copied into FILE)"."""
    out = []
    lines = results_text.split("\n")
    for i, l in enumerate(lines):
        m = re.match(r"^## (.*\(copied into ([\w./-]+\.md)\))\s*$", l)
        if not m:
            continue
        j = i + 1
        while j < len(lines) and not lines[j].startswith("|") and not lines[j].startswith("## "):
            j += 1
        k = j
        while k < len(lines) and lines[k].startswith("|"):
            k += 1
        if k > j:
            out.append((m.group(2), m.group(1), j + 1, [x.rstrip() for x in lines[j:k]]))
    return out


def check_copies(root, results_text, read):
    bad = []
    for target, title, line, table in copied_sections(results_text):
        text = read(target)
        if text is None:
            continue
        regions = region_tables(text)
        got = regions.get(table[0].strip())
        if got is None:
            bad.append({"file": target, "line": 1, "what": "copy",
                        "message": f"no generated region holds the table of {RESULTS}:{line} \"{title}\""})
            continue
        name, at, rows = got
        if rows != table:
            k = next((i for i in range(max(len(rows), len(table)))
                      if i >= len(rows) or i >= len(table) or rows[i] != table[i]), 0)
            here = rows[k] if k < len(rows) else "(missing row)"
            bad.append({"file": target, "line": at + k, "what": "copy",
                        "message": f"the generated region '{name or 'results'}' differs from {RESULTS}:"
                                   f"{line + k} (\"{title}\"): {here[:90]} (a hand edit? `make results` "
                                   "writes both)"})
    return bad


def load_snippets_module():
    path = os.path.join(HERE, "readme_snippets.py")
    spec = importlib.util.spec_from_file_location("readme_snippets", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def check_snippets(readme_text, results_text):
    bad = []
    regions = {}
    lines = readme_text.split("\n")
    for n, l in enumerate(lines, 1):
        m = re.match(r"^<!-- results:readme-([\w.-]+):begin -->$", l)
        if m:
            end = next((k for k in range(n, len(lines)) if lines[k] == f"<!-- results:readme-{m.group(1)}:end -->"),
                       None)
            regions[m.group(1)] = (n, None if end is None else "\n".join(lines[n:end]))
    if not regions:
        return bad
    mod = load_snippets_module()
    try:
        want = mod.generate(results_text)
    except mod.Missing as e:
        return [{"file": README, "line": min(v[0] for v in regions.values()), "what": "snippet",
                 "message": f"scripts/readme_snippets.py cannot write the README's snippets: {RESULTS}: {e}"}]
    for name, (line, body) in sorted(regions.items(), key=lambda kv: kv[1][0]):
        if name not in want:
            bad.append({"file": README, "line": line, "what": "snippet",
                        "message": f"results:readme-{name} is a region scripts/readme_snippets.py does not write"})
        elif body is None:
            bad.append({"file": README, "line": line, "what": "snippet",
                        "message": f"results:readme-{name} has no end marker"})
        elif body != want[name]:
            got, exp = body.split("\n"), want[name].split("\n")
            k = next((i for i in range(max(len(got), len(exp)))
                      if i >= len(got) or i >= len(exp) or got[i] != exp[i]), 0)
            bad.append({"file": README, "line": line + 1 + k, "what": "snippet",
                        "message": f"results:readme-{name} is not what scripts/readme_snippets.py writes from "
                                   f"{RESULTS} (hand-edited, or {RESULTS} rerun without it: `make results BLOCK=headline`, or "
                                   "`python3 scripts/readme_snippets.py --splice README.md`)"})
    return bad


def main(argv):
    as_json, allow_path, args = False, None, []
    it = iter(argv)
    for a in it:
        if a in ("-h", "--help"):
            print(__doc__.replace("{not_yet}", "\n".join(f"  {k}: {v}" for k, v in NOT_YET.items())))
            return 0
        if a == "--json":
            as_json = True
        elif a == "--allow":
            allow_path = next(it, None)
            if allow_path is None:
                usage("--allow needs a FILE")
        elif a.startswith("-"):
            usage(f"unknown option '{a}'")
        else:
            args.append(a)
    if args and all(a.endswith(".md") for a in args):
        root, files = ".", [a.replace(os.sep, "/") for a in args]
    elif len(args) <= 1:
        root = args[0] if args else os.path.dirname(HERE)
        if not os.path.isdir(root):
            usage(f"{root}: not a directory")
        files = [os.path.relpath(p, root).replace(os.sep, "/") for p in
                 [os.path.join(root, README)] + sorted(glob.glob(os.path.join(root, "docs", "*.md")))]
        files = [f for f in files if os.path.exists(os.path.join(root, f))]
    else:
        usage("give one ROOT directory or .md files")
    allow = load_allow(allow_path or os.path.join(root, "scripts", "prose_figures_allow.txt"))

    def read(rel):
        try:
            with open(os.path.join(root, rel), encoding="utf-8") as f:
                return f.read()
        except OSError:
            return None

    bad, counts, not_yet = [], {"files": 0, "allowed": 0, "generated_regions": 0}, []
    scanned = []
    for rel in files:
        text = read(rel)
        if text is None:
            usage(f"{os.path.join(root, rel)}: cannot read")
        if rel in NOT_YET:
            not_yet.append(rel)
            continue
        scanned.append(rel)
        counts["files"] += 1
        counts["generated_regions"] += len(prose(text)[1])
        if rel == RESULTS:
            for n, figs, s in results_lines_unwritten(text, HERE):
                for f in figs:
                    if (rel, f) in allow:
                        allow[(rel, f)][2] = True
                figs = [f for f in figs if (rel, f) not in allow]
                if not figs:
                    counts["allowed"] += 1
                    continue
                bad.append({"file": rel, "line": n, "what": "results", "figure": figs[0],
                            "message": f"a prose line with figures ({', '.join(repr(f) for f in figs[:4])}) that no "
                                       f"generator in scripts/ writes ({RESULTS} is written whole by "
                                       f"scripts/results.sh; a hand edit is lost and unchecked): {s.strip()[:80]}"})
            continue
        for n, fig, raw in figures(text):
            key = (rel, fig)
            if key in allow:
                allow[key][2] = True
                counts["allowed"] += 1
                continue
            bad.append({"file": rel, "line": n, "what": "prose", "figure": fig,
                        "message": f"a figure in prose that no generator wrote: '{fig}' in: {raw.strip()[:90]}"})
    results_text = read(RESULTS)
    if results_text is not None and (RESULTS in files or len(args) == 0 or not args[0].endswith(".md")):
        bad += check_copies(root, results_text, lambda rel: read(rel) if rel in files else None)
    if README in scanned and results_text is not None:
        bad += check_snippets(read(README), results_text)
    stale = [{"allowlist_line": v[1], "file": k[0], "figure": k[1]} for k, v in allow.items()
             if not v[2] and k[0] in scanned]
    if as_json:
        print(json.dumps({"ok": not bad and not stale, "findings": bad, "stale_allow": stale,
                          "not_yet_guarded": not_yet, "guarded": scanned, **counts}, indent=1, ensure_ascii=False))
    else:
        for b in bad:
            print(f"{b['file']}:{b['line']}: {b['message']}")
        if any(b["what"] == "prose" for b in bad):
            print("  (write the sentence from a generator between results markers, e.g. a snippet of "
                  "scripts/readme_snippets.py; or, for a unit, constant, hardware spec, published figure or "
                  "option value, allowlist it with its kind in scripts/prose_figures_allow.txt)")
        for s in stale:
            print(f"prose_figures_allow.txt:{s['allowlist_line']}: no prose figure '{s['figure']}' in {s['file']} "
                  "(remove the entry)")
        print(f"check_prose_figures: {counts['files']} files guarded ({len(not_yet)} not yet: --help), "
              f"{counts['allowed']} figures allowed, {counts['generated_regions']} generated regions; "
              f"{len(bad)} findings, {len(stale)} stale allowlist entries", file=sys.stderr)
    return 1 if bad or stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
