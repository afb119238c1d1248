"""External answering sets, split into a fit half and a held-out half (issue 17).

Nothing here is tuned on; it only converts third-party data into the project's corpus and
gold formats, deterministically:

* **SQuAD 2.0 dev** (``../shared/data/squad2``): articles numbered in file order from 0;
  even = ``fit``, odd = ``held``.  Each half's corpus is its own articles (one document per
  article, one chunk per paragraph, as ``bench_squad.py``); the questions are every third
  question of the half in file order (``i % 3 == 0``), so a run takes about a minute.
* **ContractNLI dev** (``../shared/data/contractnli``): contract ``cnli-N``, even N = ``fit``,
  odd N = ``held``.  One document per contract, its passages as paragraphs, so passage
  ``cnli-N-pK`` is chunk ``cnli-N#pK``; every question carries ``doc_scope`` = its contract.

``prepare(name, half, out_dir)`` writes ``corpus.jsonl`` and ``gold.jsonl`` under
``out_dir`` and returns their paths and counts; ``None`` when the data is absent.

``prepare(..., perturb=True)`` writes the same half with every question rewritten once the way
real users write it (``mini_rag.eval.perturb``: one of ``PERTURB_KINDS`` per question, chosen
deterministically; the ``synonym`` and ``expansion`` kinds are left out, as they draw on
word tables the answerer shares).  The seed's perturbation gate (QA contract) asks for this
robustness; these sets measure it on questions nobody here wrote.

``prepare(..., perturb="scenario")`` writes the scenario variant (issue 30): every question
after one or two sentences of the asker's situation, from ``mini_rag.eval.perturb.SCENARIOS``
(general sentences about why one asks; the choice seeded by the qid).
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import sys
from typing import Any, Dict, List, Optional

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_squad import answer_substrings, doc_id_of  # noqa: E402
from mini_rag.errors import MiniRagError  # noqa: E402
from mini_rag.fileio import atomic_write_text, dumps_jsonl  # noqa: E402

DATA = os.environ.get("MINI_RAG_DATA") or os.path.join(os.path.dirname(ROOT), "shared", "data")
SQUAD = os.path.join(DATA, "squad2", "dev-v2.0.explorer-derived.json")
CNLI_CORPUS = os.path.join(DATA, "contractnli", "corpus_dev.jsonl")
CNLI_GOLD = os.path.join(DATA, "contractnli", "gold_dev.jsonl")
SETS = ("squad", "cnli")
#: Perturbation kinds of the perturbed external sets (mini_rag.eval.perturb.KINDS).
PERTURB_KINDS = ("typo", "casing", "word_order", "distractor")
HALVES = ("fit", "held")
_SPACE = re.compile(r"\s")
_CNLI_DOC = re.compile(r"cnli-(\d+)\Z")
_CNLI_PASSAGE = re.compile(r"(cnli-\d+)-p(\d+)\Z")


def sources(name: str) -> List[str]:
    return [SQUAD] if name == "squad" else [CNLI_CORPUS, CNLI_GOLD]


def sha256_of(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def available(name: str) -> bool:
    return all(os.path.isfile(p) for p in sources(name))


def _squad(half: str):
    with open(SQUAD, encoding="utf-8") as fh:
        squad = json.load(fh)
    docs, gold, used = [], [], {}
    n_q = 0
    for a_no, article in enumerate(squad["data"]):
        if a_no % 2 != (0 if half == "fit" else 1):
            continue
        doc_id = doc_id_of(article["title"])
        used[doc_id] = used.get(doc_id, 0) + 1
        if used[doc_id] > 1:
            doc_id = "%s-%d" % (doc_id, used[doc_id])
        paragraphs = []
        for p_no, para in enumerate(article["paragraphs"]):
            context = _SPACE.sub(" ", para["context"]).strip()
            paragraphs.append(context)
            for qa in para["qas"]:
                keep = n_q % 3 == 0
                n_q += 1
                if not keep:
                    continue
                answerable = not qa.get("is_impossible", False) and bool(qa.get("answers"))
                subs = answer_substrings(context, qa["answers"]) if answerable else []
                if answerable and not subs:
                    continue
                gold.append({"qid": qa["id"], "question": qa["question"].strip(), "answerable": answerable,
                             "gold_claim_substr": subs,
                             "gold_citations": ["%s#p%d" % (doc_id, p_no)] if answerable else [],
                             "category": "answerable" if answerable else "unanswerable"})
        docs.append({"_id": doc_id, "title": article["title"].replace("_", " "),
                     "text": "\n\n".join(paragraphs), "metadata": {}})
    return docs, gold


def _cnli(half: str):
    want = 0 if half == "fit" else 1
    passages: Dict[str, List[tuple]] = {}
    titles: Dict[str, str] = {}
    with open(CNLI_CORPUS, encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            m = _CNLI_PASSAGE.match(row["_id"])
            doc = row["doc_id"]
            if m is None or m.group(1) != doc:
                raise MiniRagError("%s: unexpected passage id %r" % (CNLI_CORPUS, row["_id"]))
            if int(_CNLI_DOC.match(doc).group(1)) % 2 != want:
                continue
            text = _SPACE.sub(" ", row["text"]).strip()
            passages.setdefault(doc, []).append((int(m.group(2)), text))
            titles[doc] = row.get("title") or doc
    docs = []
    for doc in sorted(passages):
        paras = [t for _, t in sorted(passages[doc])]
        if [k for k, _ in sorted(passages[doc])] != list(range(len(paras))):
            raise MiniRagError("%s: passages of %s are not numbered 0..n-1" % (CNLI_CORPUS, doc))
        # The title is a file name, not words to index: leave it out.
        docs.append({"_id": doc, "title": "", "text": "\n\n".join(paras), "metadata": {}})
    gold = []
    with open(CNLI_GOLD, encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            if row["doc_scope"] not in passages:
                continue
            cites = []
            for c in row["gold_citations"]:
                m = _CNLI_PASSAGE.match(c)
                cites.append("%s#p%s" % (m.group(1), m.group(2)))
            gold.append({"qid": row["qid"], "question": row["question"], "answerable": row["answerable"],
                         "gold_claim_substr": [_SPACE.sub(" ", s).strip() for s in row["gold_claim_substr"]],
                         "gold_citations": cites, "doc_scope": row["doc_scope"],
                         "category": row["label"]})
    return docs, gold


def prepare(name: str, half: str, out_dir: str, perturb: Any = False) -> Optional[Dict[str, Any]]:
    """Write ``corpus.jsonl`` and ``gold.jsonl`` for one half; None when the data is absent.
    ``perturb``: True, every question perturbed once (``PERTURB_KINDS``); ``"scenario"``, every
    question after one or two sentences of the asker's situation (``perturb.SCENARIOS``)."""
    if not available(name):
        return None
    docs, gold = (_squad if name == "squad" else _cnli)(half)
    if perturb:
        from mini_rag.eval.perturb import perturb_rows
        gold = perturb_rows(gold, ("scenario",) if perturb == "scenario" else PERTURB_KINDS, 1, ())
    os.makedirs(out_dir, exist_ok=True)
    corpus = os.path.join(out_dir, "corpus.jsonl")
    gold_path = os.path.join(out_dir, "gold.jsonl")
    atomic_write_text(corpus, dumps_jsonl(docs))
    atomic_write_text(gold_path, dumps_jsonl(gold))
    return {"corpus": corpus, "gold": gold_path, "documents": len(docs), "questions": len(gold),
            "answerable": sum(1 for g in gold if g["answerable"])}
