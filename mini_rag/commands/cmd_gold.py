"""Commands for gold data: ``check-gold`` (mini_rag.eval.goldcheck) and ``perturb`` (mini_rag.eval.perturb).

Exit status: 0 clean / written, 2 on any problem in the input (every problem is listed on
stderr as ``path:line: what is wrong, got <value>``, then a summary line).
"""
from __future__ import annotations

import sys

from ..eval.perturb import KINDS


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "check-gold", help="check gold files: format, qids, citations and substrings against the corpus",
        description="Check gold JSONL files against the gold contract and the corpus they cite. "
                    "Lists every problem as path:line on stderr and exits 2; prints a one-line "
                    "OK summary with counts per category on stdout and exits 0 when clean.")
    p.add_argument("files", nargs="+", metavar="FILE", help="gold JSONL files to check")
    p.add_argument("--corpus", metavar="DIR",
                   help="corpus folder or BEIR .jsonl the citations refer to (default: [corpus] path "
                        "of the config)")
    p.add_argument("--config", metavar="F",
                   help="TOML config overriding the defaults (corpus path, max_chunk_chars)")
    p.add_argument("--source", metavar="FILE",
                   help="baseline gold file: perturbed rows' source_qid must be a qid there and "
                        "their gold fields must equal the source row's")
    p.set_defaults(func=main_check_gold)

    kinds = ", ".join("%s (%s)" % (k.name, k.description) for k in KINDS.values())
    p = subparsers.add_parser(
        "perturb", help="derive a perturbation gold set from a gold file, deterministically",
        description="Write perturbed copies of the rows of GOLD (new qid <qid>-<kind>, "
                    "source_qid and perturbation added, gold fields unchanged), followed by "
                    "the rows of the hand-written paraphrase files. Kinds: " + kinds + ".")
    p.add_argument("gold", nargs="+", metavar="GOLD",
                   help="the gold JSONL file(s) to perturb, read as one file in the order given")
    p.add_argument("--out", required=True, metavar="FILE", help="output JSONL file (written atomically)")
    p.add_argument("--force", action="store_true",
                   help="replace an existing --out file that is not a perturbation set (never an input)")
    p.add_argument("--paraphrases", nargs="+", metavar="FILE", default=[],
                   help="hand-written paraphrase JSONL files appended after the perturbed rows; "
                        "each row must carry source_qid (a qid of GOLD) and perturbation")
    p.add_argument("--kinds", metavar="K1,K2",
                   help="comma-separated perturbation kinds to use (default: all: %s)" % ",".join(KINDS))
    p.add_argument("--per-item", type=int, default=1, metavar="N",
                   help="perturbed rows per gold row, each of a different kind (default: 1)")
    p.add_argument("--config", metavar="F",
                   help="TOML config whose [expansion.*] rules the expansion kind inverts")
    p.set_defaults(func=main_perturb)


def main_check_gold(args) -> int:
    from ..config import load_config
    from ..text.corpus import _syntax, chunk_document, load_corpus
    from ..eval.goldcheck import check_files, load_source

    config = load_config(args.config)
    corpus = args.corpus or config["corpus"]["path"]
    chunks, markup = {}, set()          # markup: the chunks of Markdown and reST files (read as plain text)
    for doc in load_corpus(corpus):
        for c in chunk_document(doc, config["corpus"]["max_chunk_chars"]):
            chunks[c.chunk_id] = c.text
            if _syntax(doc.path) in ("md", "rst"):     # a BEIR row's path is "<file>.jsonl:<line>"
                markup.add(c.chunk_id)
    source = load_source(args.source) if args.source else None
    report = check_files(args.files, chunks, source, markup)
    if report.problems:
        for p in report.problems:
            print(p, file=sys.stderr)
        print(report.problem_line(), file=sys.stderr)
        return 2
    print(report.ok_line())
    return 0


def main_perturb(args) -> int:
    from ..eval.perturb import main_perturb as run
    from ..fileio import check_outputs
    check_outputs([("--out", args.out, "perturb")],
                  [("gold", g) for g in args.gold] + [("--paraphrases", f) for f in args.paraphrases or ()]
                  + [("--config", args.config)], args.force)
    return run(args)
