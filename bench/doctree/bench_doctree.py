#!/usr/bin/env python3
"""Answer the 20 written questions of pip_questions.jsonl on pip's documentation tree.

    python3 bench/doctree/bench_doctree.py [--docs DIR] [--work DIR] [--out FILE]

--docs: the tree as installed (default /usr/share/doc/python3-pip/html; Debian's python3-pip);
it is copied to --work (default runs/doctree/pip) with .gz files unzipped and only .md, .rst
and .txt kept, then indexed by mini_rag with a corpus of one's own's defaults.  Prints one
line per question (right / wrong, the claim, the citations) and the count right; --out
writes the same as JSON.  Exit 0 (a measurement, not a gate); 2 when the docs are absent.
"""
import argparse
import gzip
import json
import os
import shutil
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)
HERE = os.path.dirname(os.path.abspath(__file__))
KEEP = (".md", ".rst", ".txt")


def prepare(src: str, dst: str) -> int:
    if os.path.isdir(dst):
        shutil.rmtree(dst)
    n = 0
    for dirpath, _, files in os.walk(src):
        for name in sorted(files):
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, src)
            data = None
            if name.endswith(".gz") and name[:-3].endswith(KEEP):
                with gzip.open(path, "rb") as fh:
                    data = fh.read()
                rel = rel[:-3]
            elif name.endswith(KEEP):
                with open(path, "rb") as fh:
                    data = fh.read()
            if data is None:
                continue
            out = os.path.join(dst, rel)
            os.makedirs(os.path.dirname(out), exist_ok=True)
            with open(out, "wb") as fh:
                fh.write(data)
            n += 1
    return n


def cites_doc(citation: str, doc: str) -> bool:
    """A citation ``<doc_id>#p<N>`` of the named document (path relative to the docs root;
    a doc id that is the file's stem alone, as before issue 31, matches its last part)."""
    doc_id = citation.split("#", 1)[0]
    return doc_id == doc or doc_id == doc.rsplit("/", 1)[-1]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", default="/usr/share/doc/python3-pip/html")
    ap.add_argument("--work", default=os.path.join("runs", "doctree", "pip"))
    ap.add_argument("--out", help="write the per-question results as JSON")
    args = ap.parse_args(argv)
    if not os.path.isdir(args.docs):
        print("bench_doctree: %s: no such folder (Debian's python3-pip ships it)" % args.docs, file=sys.stderr)
        return 2
    files = prepare(args.docs, args.work)
    from mini_rag.commands.runconfig import open_pipeline, resolve
    index = os.path.join(os.path.dirname(args.work), "index-%s.json.gz" % os.path.basename(args.work))
    if os.path.exists(index):
        os.remove(index)                      # always built afresh by the code under test
    config = resolve(None, args.work, index, quiet=True)
    pipeline = open_pipeline(config, quiet=True)
    rows = []
    with open(os.path.join(HERE, "pip_questions.jsonl"), encoding="utf-8") as fh:
        questions = [json.loads(line) for line in fh if line.strip()]
    right = 0
    for q in questions:
        result = pipeline.answer(q["question"], qid=q["qid"])
        aj = result.row["answer_json"]
        claim, cits = aj.get("claim") or "", aj.get("citations") or []
        ok = (any(a.casefold() in claim.casefold() for a in q["answers"])
              and any(cites_doc(c, q["doc"]) for c in cits))
        right += ok
        rows.append({"qid": q["qid"], "right": ok, "claim": claim, "citations": cits,
                     "decision": result.row.get("decision")})
        print("%s %-5s %s  %s" % (q["qid"], "right" if ok else "wrong", json.dumps(claim[:160]), " ".join(cits)))
    print("right: %d/%d (%d files of %s)" % (right, len(questions), files, args.docs))
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            json.dump({"right": right, "n": len(questions), "rows": rows}, fh, indent=1)
            fh.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
