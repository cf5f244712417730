#!/usr/bin/env python3
"""The README's result sentences, generated from docs/results.md (issue 42).

Usage: scripts/readme_snippets.py [--name NAME] [--body] [INPUT...] [RESULTS_MD...]
       scripts/readme_snippets.py --out-dir DIR [INPUT...] [RESULTS_MD...]
       scripts/readme_snippets.py --splice README_MD [INPUT...] [RESULTS_MD...]
       scripts/readme_snippets.py --list
INPUT: --eval-dir DIR --run 'NAME|DESCRIPTION|EVAL ARGS' [--run ...]

Each snippet is the text between `<!-- results:readme-NAME:begin -->` and
`<!-- results:readme-NAME:end -->` in README.md. It is written from what `make results` wrote:
docs/results.md's "Headline table (copied into README.md)" and the eval text tables of the runs
(7b-knobs, 7b-cap, 7b-cap-minus10, 7b-cap-plus10, 7b-grid-event, 7b-grid-event-scheduled, every
7b-grid-event-unannounced* run, 72b-long, fleet: each row's step tokens, tokens/MWh,
offset-averaged violations, steps violating, the static rows' calibrated settings, and the
command, whose shield flag names the shield), so a README sentence cannot quote a figure that
the tables do not hold. Every figure is simulated, as docs/results.md says. The published
targets quoted beside them are the paper's (docs/sources.md §1a).

Inputs, read in this order (a later section of the same name replaces an earlier one):
  --eval-dir DIR --run 'NAME|DESCRIPTION|ARGS': the section scripts/results.sh writes for the run
    (`## NAME: DESCRIPTION`, `flexwatt eval ARGS`, DIR/NAME.txt: eval's text output), for a
    results.sh block whose work directory holds the runs' outputs (the headline block);
  RESULTS_MD...: markdown as docs/results.md holds it (default: docs/results.md when no input
    is given).
Output:
  default: every snippet (or only --name NAME) on stdout between its markers (--body: without);
  --out-dir DIR: DIR/readme-NAME.md per snippet, without markers (for results.sh's splice);
  --splice README_MD: README_MD's readme-* regions rewritten in place; a README_MD without one of
    the markers, or with a readme-* region this script does not write, fails;
  --list: the snippet names.
Exit 0 on success; 1 when the inputs lack a table or row a snippet needs (named) or a file
cannot be read; 2 on bad usage.
scripts/check_prose_figures.py compares README.md's readme-* regions with what this script
writes from docs/results.md: a hand edit inside one, or a docs/results.md rerun without this
script, fails `make test`.
"""
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from results_summary import wide_rows  # noqa: E402  (an eval table's rows, shared)

# The paper's targets (docs/sources.md §1a: the 7B trajectory and the rebuilt 72B controller).
TARGET_TOKENS_7B = 18.1       # % more tokens
TARGET_TPM_7B = 26.2          # % more tokens/MWh
TARGET_STEPS_VIOL_7B = -89.8  # % change in violating steps against uncontrolled
TARGET_TOKENS_72B = 35.7      # % more output
TARGET_VIOL_72B = 2.27        # % violations at most

HEADLINE = "Headline table (copied into README.md)"
NAMES = ["winners", "7b-knobs", "7b-cap", "grid-event", "72b", "fleet"]


class Missing(Exception):
    pass


def sections(text):
    """{name: body} of docs/results.md's `## name: ...` / `## title` sections."""
    out = {}
    for sec in re.split(r"\n(?=## )", text):
        if not sec.startswith("## "):
            continue
        head, _, body = sec.partition("\n")
        title = head[3:].strip()
        out[title.split(":", 1)[0] if ":" in title and " " not in title.split(":", 1)[0] else title] = body
    return out


def eval_run(body):
    """(command, {controller: figures}, {controller: setting}) of one eval section."""
    cmd = re.search(r"```\n(flexwatt eval [^\n]*)\n```", body)
    block = re.search(r"```\nflexwatt eval — SIMULATED.*?\n```", body, re.S)
    if not block:
        return None
    lines = block.group(0).split("\n")
    hi = next((i for i, l in enumerate(lines) if l.startswith("controller ") and "step tokens" in l), None)
    rows = wide_rows(lines, hi) if hi is not None else {}
    settings = {}
    # Calibration notes: "NAME: calibrated ..." then "  joint search of ...: setting {...};"
    current = None
    for l in lines:
        m = re.match(r"^(\S+): calibrated ", l)
        if m:
            current = m.group(1)
            continue
        m = re.search(r"joint search of \S+: setting (\{[^}]*\})", l)
        if m and current:
            settings[current] = json.loads(m.group(1))
    return (cmd.group(1) if cmd else ""), rows, settings


def headline(body):
    """{label: {column: text}} of the headline table."""
    lines = [l for l in body.split("\n") if l.startswith("|")]
    if len(lines) < 3:
        return {}
    cols = [c.strip() for c in lines[0].strip("|").split("|")]
    out = {}
    for l in lines[2:]:
        cells = [c.strip() for c in l.strip().strip("|").split("|")]
        out[cells[0]] = dict(zip(cols, cells))
    return out


class Data:
    def __init__(self, text):
        self.secs = sections(text)
        self.runs = {}
        for name, body in self.secs.items():
            r = eval_run(body)
            if r:
                self.runs[name] = r
        self.head = headline(self.secs.get(HEADLINE, ""))

    def row(self, run, prefix):
        if run not in self.runs:
            raise Missing(f"no eval table of the run '{run}'")
        rows = self.runs[run][1]
        for n, r in rows.items():
            if n == prefix or (prefix.endswith(":") and n.startswith(prefix)):
                return r
        raise Missing(f"the run '{run}' has no row '{prefix}'")

    def setting(self, run, name):
        s = self.runs.get(run, (None, {}, {}))[2].get(name)
        if s is None:
            raise Missing(f"the run '{run}' has no calibrated setting of '{name}'")
        return s

    def cmd(self, run):
        if run not in self.runs:
            raise Missing(f"no eval table of the run '{run}'")
        return self.runs[run][0]

    def h(self, label, col):
        if label not in self.head:
            raise Missing(f"the headline table has no row '{label}'")
        return self.head[label][col]

    def hpct(self, label, col):
        v = self.h(label, col)
        m = re.match(r"^([-−+]?\d+(?:\.\d+)?) %$", v)
        if not m:
            raise Missing(f"the headline row '{label}' has no percentage in '{col}' ({v!r})")
        return float(m.group(1).replace("−", "-"))


def sgn(p):
    """+7.4 % / −0.4 % (a change in percent, one decimal)."""
    r = round(p, 1)
    if r == 0:
        return "±0.0 %"
    return ("+" if r > 0 else "−") + f"{abs(r):.1f} %"


def ratio_pct(x):
    return sgn((x - 1) * 100)


def viol(v):
    return "0 %" if v == 0 else f"{v:.2f} %"


def steps(v):
    return "0 %" if v == 0 else f"{v:.1f} %"


def tok(v):
    return f"{round(v):,}"


def fmt_setting(s):
    parts = []
    for k in ("caps", "gen_concurrency", "group_size"):
        if k in s:
            v = s[k]
            v = int(v) if float(v).is_integer() else v
            parts.append(f"{k} {v}{' W' if k == 'caps' else ''}")
    return ", ".join(parts)


def verdict(win):
    """The headline's 'wins on step tokens' cell as a clause."""
    if win == "this row":
        return "the row wins"
    if win.startswith("the fixed reference (this row breaks"):
        return "more step tokens only by breaking the budget more"
    if win.startswith("the fixed reference"):
        return "a fixed setting wins"
    if win.startswith("neither"):
        return "neither wins outright"
    return win


def snip_winners(d):
    ctl, fixed = [], []
    for label, row in d.head.items():
        if "uncontrolled" in label:
            continue
        (fixed if "(fixed)" in label else ctl).append((label, row.get("wins on step tokens", "")))
    wins = [l for l, w in ctl if w == "this row"]
    more = [l for l, w in ctl if w.startswith("the fixed reference (this row breaks")]
    ref = [l for l, w in ctl if w == "the fixed reference"]
    neither = [l for l, w in ctl if w.startswith("neither")]
    fixed_wins = [l for l, w in fixed if w == "this row"]

    def q(ls):
        return "; ".join(f"“{l}”" for l in ls)

    n = len(ctl)
    if wins:
        head = (f"**{len(wins)} of the {n} controller rows {'wins' if len(wins) == 1 else 'win'} "
                f"outright** (at least its reference's step tokens at no more violations): {q(wins)}.")
    else:
        head = f"**None of the {n} controller rows wins outright.**"
    out = [head]
    if ref:
        out.append(f"In {len(ref)} the fixed reference makes more step tokens at no more violations.")
    if more:
        out.append(f"In {len(more)} the row makes more step tokens only by breaking the budget more: {q(more)}.")
    if neither:
        out.append(f"In {len(neither)} neither wins (each is better on one of the two): {q(neither)}.")
    if fixed_wins:
        out.append(f"Fixed rows that match or beat their reference: {q(fixed_wins)}.")
    return wrap(" ".join(out))


def snip_7b_knobs(d):
    ppo = d.row("7b-knobs", "ppo:")
    unc = d.row("7b-knobs", "uncontrolled")
    ref = d.row("7b-knobs", "static:knob=gen_concurrency+group_size")
    setting = fmt_setting(d.setting("7b-knobs", "static:knob=gen_concurrency+group_size"))
    L = "7B, PPO knobs only"
    t, p = d.hpct(L, "vs reference"), d.hpct(L, "tokens/MWh vs reference")
    red = (ppo["steps_viol"] / unc["steps_viol"] - 1) * 100 if unc["steps_viol"] else 0.0
    tok_ok = t >= TARGET_TOKENS_7B and p >= TARGET_TPM_7B
    viol_ok = red <= TARGET_STEPS_VIOL_7B
    pid_t, thr_t = d.hpct("7B, pid (knobs)", "vs reference"), d.hpct("7B, threshold (knobs)", "vs reference")
    pid, thr = d.row("7b-knobs", "pid"), d.row("7b-knobs", "threshold")
    gs = d.row("7b-knobs", "static:knob=group_size")
    tail = ""
    if pid_t > 0 and thr_t > 0 and pid["viol"] > gs["viol"] and thr["viol"] > gs["viol"]:
        tail = ": more tokens, more violations"
    text = (f"- **7B, knobs only: tokens {'met' if tok_ok else 'missed'}, violations "
            f"{'met' if viol_ok else 'missed'} in the published unit.** The knob-only policy makes {sgn(t)} "
            f"step tokens and {sgn(p)} tokens/MWh against the joint knob static (gen_concurrency and "
            f"group_size searched together; it holds {setting}; targets +{TARGET_TOKENS_7B} % / "
            f"+{TARGET_TPM_7B} %). Its steps violating {'fall' if red < 0 else 'go'} from uncontrolled's "
            f"{steps(unc['steps_viol'])} to {steps(ppo['steps_viol'])} ({sgn(red)}; target "
            f"−{abs(TARGET_STEPS_VIOL_7B)} %), {'but' if ppo['viol'] > ref['viol'] else 'and'} on 30 s windows "
            f"it breaks {viol(ppo['viol'])} (offset mean) against the static's {viol(ref['viol'])}. pid makes "
            f"{sgn(pid_t)} at {viol(pid['viol'])}, threshold {sgn(thr_t)} at {viol(thr['viol'])} against the "
            f"group-size static{tail}.")
    return wrap(text, "  ")


def snip_7b_cap(d):
    st = d.row("7b-cap", "static")
    setting = fmt_setting(d.setting("7b-cap", "static"))
    L = "7B, PPO knobs + cap"
    t, p = d.hpct(L, "vs reference"), d.hpct(L, "tokens/MWh vs reference")
    ppo = d.row("7b-cap", "ppo:")
    unc = d.row("7b-cap", "uncontrolled")
    red = (ppo["steps_viol"] / unc["steps_viol"] - 1) * 100 if unc["steps_viol"] else 0.0
    m10 = d.hpct("7B, PPO knobs + cap, budget −10 %", "vs reference")
    p10 = d.hpct("7B, PPO knobs + cap, budget +10 %", "vs reference")
    tok_ok = t >= TARGET_TOKENS_7B and p >= TARGET_TPM_7B
    ref_label = d.h(L, "reference")
    ref = "" if ref_label == "static" else (
        f"; PPO's reference is `{ref_label}`, which makes {tok(d.row('7b-cap', ref_label)['tokens'])} at "
        f"{viol(d.row('7b-cap', ref_label)['viol'])} (`--reference auto` takes a listed fixed setting of "
        f"PPO's actuators that made more step tokens at no more violations)")
    text = (f"- **7B, knobs + cap: violations {'met' if red <= TARGET_STEPS_VIOL_7B else 'missed'}, tokens "
            f"{'met' if tok_ok else 'missed'}; {verdict(d.h(L, 'wins on step tokens'))}.** The joint static "
            f"(both knobs and the cap: {setting}) makes {tok(st['tokens'])} step tokens at {viol(st['viol'])}"
            f"{ref}; PPO makes {sgn(t)} ({sgn(p)} tokens/MWh) at {viol(ppo['viol'])} against it, and "
            f"{sgn(m10)} / {sgn(p10)} at a budget 10 % lower / higher (each against the strongest fixed "
            f"setting at that budget).")
    return wrap(text, "  ")


def shield_words(cmd):
    if "--shield-on-caps" in cmd:
        return ("the budget shield on the GPUs' caps (`--shield-on-caps`), which at every tick lowers a "
                "ceiling on the caps by as many notches as the excess draw needs")
    if "--shield" in cmd:
        return ("the default budget shield (`--shield`), which at every tick lowers a ceiling on the job's "
                "gen_concurrency (its knob of lowest shield rank) by as many notches as the excess draw "
                "needs")
    return "no budget shield"


def unannounced_label(d, run):
    """The headline row of RUN's PPO: the label of an unannounced-drop PPO row, the knob-shield
    one for a run named ...-knob-shield, the other one else (None when the table has none)."""
    knob = run.endswith("knob-shield")
    for label in d.head:
        if label.startswith("7B, PPO knobs + cap, unannounced drop") and ("knob shield" in label) == knob:
            return label
    return None


def unannounced(d, run, first):
    """One sentence per unannounced-drop run: the nominal setting and PPO under the same shield."""
    nom = d.row(run, "static:schedule=nominal")
    ppo = d.row(run, "ppo:")
    label = unannounced_label(d, run)
    if label:
        t, p = d.hpct(label, "vs reference"), d.hpct(label, "tokens/MWh vs reference")
        win = d.h(label, "wins on step tokens")
    else:
        t, p = (ppo["tok_ref"] - 1) * 100, (ppo["tpm_ref"] - 1) * 100
        win = ""
    if nom["viol"] > 0 and ppo["viol"] == 0:
        concl = ": there the controller holds the budget and the fixed setting does not"
    elif win == "this row" or (not win and t >= 0 and ppo["viol"] <= nom["viol"]):
        concl = ": PPO makes more step tokens at no more violations"
    elif win == "the fixed reference" or (not win and t < 0 and nom["viol"] <= ppo["viol"]):
        concl = ": the fixed setting makes more step tokens at no more violations"
    else:
        concl = ": neither wins outright"
    lead = (f"For an unannounced drop, every row runs with {shield_words(d.cmd(run))}. The nominal setting "
            "held with that shield" if first else f"Instead with {shield_words(d.cmd(run))}, the nominal setting")
    return (f"{lead} makes {tok(nom['tokens'])} step tokens at {viol(nom['viol'])} of windows (offset mean); "
            f"PPO under the same shield makes {tok(ppo['tokens'])}, {sgn(t)} ({sgn(p)} tokens/MWh), at "
            f"{viol(ppo['viol'])}{concl}.")


def snip_grid_event(d):
    ppo = d.row("7b-grid-event", "ppo:")
    La = "7B, PPO knobs + cap, grid event, vs the setting safe all through"
    Ls = "7B, PPO knobs + cap, grid event, vs the per-level schedule"
    lv = d.row("7b-grid-event-scheduled", "static:schedule=levels")
    ppo_s = d.row("7b-grid-event-scheduled", "ppo:")
    ws = d.h(Ls, "wins on step tokens")
    title = ("a fixed setting wins once it has the same information" if ws.startswith("the fixed reference")
             else f"against the same-information schedule, {verdict(ws)}")
    runs = [r for r in d.runs if r.startswith("7b-grid-event-unannounced")]
    if not runs:
        raise Missing("no eval table of an unannounced-drop run (7b-grid-event-unannounced...)")
    # The caps shield first (the unannounced-drop row of the table), the knob shield after it.
    runs.sort(key=lambda r: r.endswith("knob-shield"))
    text = (f"- **7B, grid event: {title}.** The event scenario is the base scenario plus the event. PPO "
            f"makes {tok(ppo['tokens'])} step tokens, {sgn(d.hpct(La, 'vs reference'))} against the fixed "
            f"setting safe all through ({sgn(d.hpct(La, 'tokens/MWh vs reference'))} tokens/MWh); the "
            f"same-information baseline, a joint setting per budget level switched at the announced times "
            f"(`static:schedule=levels`), makes {tok(lv['tokens'])} at {viol(lv['viol'])}, so PPO is "
            f"{sgn(d.hpct(Ls, 'vs reference'))} ({sgn(d.hpct(Ls, 'tokens/MWh vs reference'))} tokens/MWh) at "
            f"{viol(ppo_s['viol'])}. " + " ".join(unannounced(d, r, i == 0) for i, r in enumerate(runs)))
    return wrap(text, "  ")


def snip_72b(d):
    L = "72B, PPO occupancy, 4 h"
    ppo = d.row("72b-long", "ppo:")
    knob = d.row("72b-long", "static:knob=gen_concurrency+group_size")
    st = d.row("72b-long", "static")
    rec = d.hpct("72B, 7B static-cap recipe (fixed), 4 h", "vs reference")
    t, p = d.hpct(L, "vs reference"), d.hpct(L, "tokens/MWh vs reference")
    ratio = st["tokens"] / ppo["tokens"] if ppo["tokens"] else float("inf")
    met_knob = t >= TARGET_TOKENS_72B and ppo["viol"] <= TARGET_VIOL_72B
    met_all = (ppo["tokens"] / st["tokens"] - 1) * 100 >= TARGET_TOKENS_72B and ppo["viol"] <= TARGET_VIOL_72B
    target = "met" if met_all else ("met only against the knob-only reference" if met_knob else "missed")
    if ratio >= 1.5:
        title = "a fixed setting wins by far"
    elif ratio > 1:
        title = "a fixed setting wins"
    else:
        title = verdict(d.h(L, "wins on step tokens"))
    text = (f"- **72B: {title}.** Over 4 h (about 25 completed steps for the fixed settings; 1800 s gives "
            f"about 3, too lumpy to rank on), the occupancy policy, which claims both knobs and not the cap, "
            f"makes {sgn(t)} step tokens and {sgn(p)} tokens/MWh against the joint knob static, "
            f"{'but' if ppo['viol'] > knob['viol'] else 'and'} at {viol(ppo['viol'])} of windows (offset mean) "
            f"against {viol(knob['viol'])}; the joint static over both knobs and the cap makes "
            f"{tok(st['tokens'])} at {viol(st['viol'])}, {ratio:.2f} × PPO's {tok(ppo['tokens'])}, and the 7B "
            f"static-cap recipe {sgn(rec)} against that. Target +{TARGET_TOKENS_72B} % at ≤ {TARGET_VIOL_72B} %: "
            f"{target}.")
    return wrap(text, "  ")


def snip_fleet(d):
    L = "16-GPU fleet, fleet controller"
    ref_name = d.h(L, "reference")
    ref = d.row("fleet", ref_name)
    fl = d.row("fleet", "fleet")
    t, p = d.hpct(L, "vs reference"), d.hpct(L, "tokens/MWh vs reference")
    text = (f"- **Fleet: {verdict(d.h(L, 'wins on step tokens'))}.** `fleet` claims the caps and gen_concurrency; "
            f"the joint static over those two (`{ref_name}`) makes {tok(ref['tokens'])} step tokens at "
            f"{viol(ref['viol'])}, and `fleet` makes {tok(fl['tokens'])}, {sgn(t)} ({sgn(p)} tokens/MWh), at "
            f"{viol(fl['viol'])}.")
    return wrap(text, "  ")


def wrap(text, indent="", width=98):
    """Greedy wrap at spaces, outside code spans; continuation lines get INDENT."""
    words, lines, cur = text.split(" "), [], ""
    for w in words:
        # Never between a number and its unit ("0 %", "1.88 ×", "310 W").
        glued = re.match(r"^(%|×|W|s|h)[),.;:]*$", w) is not None
        if cur and len(cur) + 1 + len(w) > width and cur.count("`") % 2 == 0 and not glued:
            lines.append(cur)
            cur = indent + w
        else:
            cur = f"{cur} {w}" if cur else w
    lines.append(cur)
    return "\n".join(lines)


SNIPPETS = {"winners": snip_winners, "7b-knobs": snip_7b_knobs, "7b-cap": snip_7b_cap,
            "grid-event": snip_grid_event, "72b": snip_72b, "fleet": snip_fleet}


def generate(results_text):
    """{name: text} of every snippet; raises Missing naming what the results lack."""
    d = Data(results_text)
    if not d.head:
        raise Missing(f"no '{HEADLINE}' section")
    return {n: SNIPPETS[n](d) for n in NAMES}


def marker(name, which):
    return f"<!-- results:readme-{name}:{which} -->"


def splice(readme_text, snippets):
    """README text with every readme-* region replaced; raises Missing for a marker not found or
    a region no snippet writes."""
    found = set(re.findall(r"^<!-- results:readme-([\w.-]+):begin -->$", readme_text, re.M))
    extra = found - set(snippets)
    if extra:
        raise Missing(f"README has readme-* regions this script does not write: {', '.join(sorted(extra))}")
    for n, body in snippets.items():
        b, e = marker(n, "begin"), marker(n, "end")
        pat = re.compile(r"^" + re.escape(b) + r"\n.*?^" + re.escape(e) + r"$", re.S | re.M)
        if not pat.search(readme_text):
            raise Missing(f"README has no region {b} ... {e}")
        readme_text = pat.sub(lambda _m: f"{b}\n{body}\n{e}", readme_text, count=1)
    return readme_text


def run_section(eval_dir, record):
    """The docs/results.md section of one results.sh run record NAME|DESCRIPTION|ARGS."""
    name, desc, args = (record.split("|", 2) + ["", ""])[:3]
    with open(os.path.join(eval_dir, f"{name}.txt"), encoding="utf-8") as f:
        table = "".join(l for l in f if not l.startswith("(wall "))
    return f"## {name}: {desc}\n\n```\nflexwatt eval {args}\n```\n\n```\n{table}```\n\n"


def main(argv):
    name, splice_to, out_dir, eval_dir, body, lst = None, None, None, None, False, False
    records, args = [], []
    it = iter(argv)

    def bad(msg):
        print(f"readme_snippets.py: {msg} (--help: usage)", file=sys.stderr)
        return 2

    for a in it:
        if a in ("-h", "--help"):
            print(__doc__)
            return 0
        if a in ("--name", "--splice", "--out-dir", "--eval-dir", "--run"):
            v = next(it, None)
            if v is None:
                return bad(f"{a} needs a value")
            if a == "--name":
                if v not in SNIPPETS:
                    return bad(f"--name needs one of {', '.join(NAMES)}")
                name = v
            elif a == "--splice":
                splice_to = v
            elif a == "--out-dir":
                out_dir = v
            elif a == "--eval-dir":
                eval_dir = v
            else:
                if v.count("|") < 2:
                    return bad(f"--run '{v}': expected NAME|DESCRIPTION|ARGS")
                records.append(v)
        elif a == "--body":
            body = True
        elif a == "--list":
            lst = True
        elif a.startswith("-"):
            return bad(f"unknown option '{a}'")
        else:
            args.append(a)
    if lst:
        print("\n".join(NAMES))
        return 0
    if records and eval_dir is None:
        return bad("--run needs --eval-dir")
    if not records and not args:
        args = [os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs", "results.md")]
    parts = []
    try:
        parts += [run_section(eval_dir, r) for r in records]
        for path in args:
            with open(path, encoding="utf-8") as f:
                parts.append(f.read())
    except OSError as e:
        print(f"readme_snippets.py: {e.filename}: {e.strerror}", file=sys.stderr)
        return 1
    text = "\n".join(parts)
    where = ", ".join(args + ([f"{eval_dir} (--run)"] if records else []))
    try:
        snips = generate(text)
        if splice_to:
            with open(splice_to, encoding="utf-8") as f:
                readme = f.read()
            new = splice(readme, snips)
            if new != readme:
                with open(splice_to, "w", encoding="utf-8") as f:
                    f.write(new)
            return 0
        if out_dir:
            for n in ([name] if name else NAMES):
                with open(os.path.join(out_dir, f"readme-{n}.md"), "w", encoding="utf-8") as f:
                    f.write(snips[n] + "\n")
            return 0
    except Missing as e:
        print(f"readme_snippets.py: {where}: {e}", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"readme_snippets.py: {e.filename}: {e.strerror}", file=sys.stderr)
        return 1
    for n in ([name] if name else NAMES):
        print(snips[n] if body else f"{marker(n, 'begin')}\n{snips[n]}\n{marker(n, 'end')}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
