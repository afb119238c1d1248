#!/usr/bin/env python3
"""Refusal reading against people's labels (``make bench-refusal``), next to baselines.

Sets: the fit and dev halves of the labelled real LLM responses (``refusal_data.py``,
labels in ``bench/labels/``), and the written multilingual / safety set
(``tests/data/refusal_written.jsonl``), reported separately.  Readers:

* ``reader``: score_eval.py's built-in reader (``read_refusal``), as `make eval` runs it;
* ``issue20_patterns``: the refusal and cutoff patterns gates.toml shipped before issue 28,
  matched anywhere (``ISSUE20_REFUSAL`` / ``ISSUE20_CUTOFF`` below, copied from it);
* ``exact_token``: seed 002's rule (the claim, stripped and lower-cased, is the token);
* ``prefix_list``: a plain prefix list (the response starts with "I'm sorry", "I cannot", ...).

Figures: refusal recall (refusals read as refusals / refusals), answers taken for refusals
(answers and partial refusals read as refusals / those), and partial refusals (read as
partial / labelled partial, and labelled partial / read as partial).  ``--rate`` adds the
reader's speed in responses per second (CPU time) on the real responses.
``--json`` prints the figures as JSON (tests compare them with docs/refusals.md).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import refusal_data as rd  # noqa: E402
import score_eval  # noqa: E402

A = "['\u2019]"
# gates.toml's [scorer] refusal_patterns and cutoff_patterns before issue 28 (commit 653c122).
ISSUE20_REFUSAL = [
    r"\bi(?: am|[\x27\u2019]m) (?:unable|not able) to\b",
    r"\bi (?:cannot|can not|can[\x27\u2019]t|could not|couldn[\x27\u2019]t|won[\x27\u2019]t be able to|will not be able to) (?:answer|help|provide|find|determine|say|tell|confirm|give|respond|locate|speak|assist|comment)\b",
    r"\bi (?:do not|don[\x27\u2019]t) (?:know|have (?:enough |sufficient |any )?(?:information|data|details|context|knowledge))\b",
    r"\bi (?:have no|lack) (?:information|knowledge|data|details)\b",
    r"\bi(?: am|[\x27\u2019]m) (?:sorry|afraid|not sure|not certain)\b",
    r"\b(?:documents?|sources?|context|passages?|excerpts?|materials?)(?: provided| given| available| available to me| retrieved)? (?:do not|does not|did not|don[\x27\u2019]t|doesn[\x27\u2019]t) (?:contain|mention|include|specify|cover|address|discuss|say|state|answer|provide|describe)\b",
    r"\b(?:there is|there[\x27\u2019]s|there are) (?:no|not enough|insufficient) (?:relevant )?(?:information|data|details|mention|evidence|context)\b",
    r"\b(?:no|insufficient|not enough) (?:relevant )?(?:information|context|details|answer) (?:was |is |were )?(?:found|available|provided|given|in the)\b",
    r"\b(?:cannot|can not|can[\x27\u2019]t) be (?:answered|determined)\b",
    r"\bnot (?:available|present|found|mentioned|covered|included|addressed) in the (?:provided |given |available |retrieved )?(?:context|documents?|sources?|passages?)\b",
    r"\b(?:outside|beyond) the scope of (?:the |these |this )?(?:provided |given )?(?:documents?|context|sources?)\b",
    r"\bnothing in the (?:provided |given |retrieved |available )?(?:context|documents?|sources?|passages?) (?:addresses|answers|mentions|covers|says)\b",
    r"\bi can only (?:answer|help|respond)\b",
    r"\bas an ai\b",
]
ISSUE20_CUTOFF = [
    r"\bmy training data\b", r"\b(?:training|knowledge) cut-?off\b",
    r"\bmy knowledge (?:ends|ended|stops|only goes|goes up to|extends|is limited)\b",
    r"\bas of my (?:last )?(?:training|knowledge)\b",
    r"\bi (?:was|have been) trained (?:on|up to|until|through)\b",
    r"\bi (?:do not|don[\x27\u2019]t) have (?:access to )?(?:real-time|realtime|current|up-to-date|live) (?:information|data)\b",
    r"\b(?:events|information|data|changes) (?:after|since|beyond) my (?:training|knowledge|last update)\b",
]
_ISSUE20 = [re.compile(p, re.I) for p in ISSUE20_REFUSAL + ISSUE20_CUTOFF]
PREFIXES = ("i'm sorry", "i am sorry", "sorry", "i apologize", "i apologise", "i cannot", "i can't", "i can not",
            "i'm unable", "i am unable", "i'm not able", "i am not able", "unfortunately", "as an ai",
            "i don't know", "i do not know", "i'm afraid", "i am afraid")


def reader(text):
    return score_eval.read_refusal(text)[0]


def issue20(text):
    return "refusal" if any(rx.search(text) for rx in _ISSUE20) else "answer"


def exact(text):
    return "refusal" if text.strip().lower() == score_eval.REFUSAL else "answer"


def prefix(text):
    t = text.strip().lower().replace("\u2019", "'")
    return "refusal" if t.startswith(PREFIXES) else "answer"


READERS = (("reader", reader), ("issue20_patterns", issue20), ("exact_token", exact), ("prefix_list", prefix))


def figures(rows, fn):
    """rows: (text, label).  Counts and rates of one reader."""
    r = rr = a = ar = p = pp = pred_p = 0
    for text, label in rows:
        got = fn(text)
        if got == "partial_refusal":
            pred_p += 1
        if label == "refusal":
            r += 1
            rr += got == "refusal"
        else:
            a += 1
            ar += got == "refusal"
            if label == "partial_refusal":
                p += 1
                pp += got == "partial_refusal"
    return {"refusals": r, "recall": rr, "answers": a, "answers_as_refusals": ar,
            "partials": p, "partials_read": pp, "read_as_partial": pred_p}


def real_rows(split):
    out = []
    for name in sorted(rd.SETS):
        out.extend((text, label) for _, _, text, label in rd.labelled(name, split))
    return out


def written_rows(kind=None):
    return [(r["text"], r["label"]) for r in rd.written() if kind is None or r["kind"] == kind]


def all_figures():
    out = {}
    if rd.available("refchecker") and rd.available("evouna"):
        for split in ("fit", "dev"):
            rows = real_rows(split)
            out[split] = {name: figures(rows, fn) for name, fn in READERS}
    for key, kind in (("written", None), ("written_safety", "safety")):
        rows = written_rows(kind)
        out[key] = {name: figures(rows, fn) for name, fn in READERS}
    return out


def rate(n_min: int = 20000):
    rows = real_rows("fit") + real_rows("dev")
    texts = [t for t, _ in rows]
    done = 0
    start = time.process_time()
    while done < n_min:
        for t in texts:
            score_eval.read_refusal(t)
        done += len(texts)
    spent = time.process_time() - start
    return done / spent


def fmt(f):
    def pct(a, b):
        return "%d/%d = %.3f" % (a, b, a / b) if b else "0/0"
    return "recall %-18s answers->refusal %-18s partial %d/%d (read partial %d)" % (
        pct(f["recall"], f["refusals"]), pct(f["answers_as_refusals"], f["answers"]),
        f["partials_read"], f["partials"], f["read_as_partial"])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--rate", action="store_true")
    ap.add_argument("--errors", choices=("fit", "dev"), help="list the reader's disagreements on a half")
    args = ap.parse_args(argv)
    figs = all_figures()
    if args.rate:
        figs["responses_per_second"] = round(rate())
    if args.json:
        print(json.dumps(figs, indent=1, sort_keys=True))
    else:
        for key, per in figs.items():
            if not isinstance(per, dict):
                print("%s: %s" % (key, per))
                continue
            print(key)
            for name, f in per.items():
                print("  %-17s %s" % (name, fmt(f)))
    if args.errors:
        for name in sorted(rd.SETS):
            for rid, _, text, label in rd.labelled(name, args.errors):
                kind, why, _ = score_eval.read_refusal(text)
                if kind != label:
                    print("%s label=%s read=%s  %s" % (rid, label, kind, why))
    return 0


if __name__ == "__main__":
    sys.exit(main())
