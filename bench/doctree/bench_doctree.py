#!/usr/bin/env python3
"""Answer the written questions of documentation trees nobody here wrote.

    python3 bench/doctree/bench_doctree.py [--tree NAME|all] [--docs DIR] [--work DIR] [--out FILE]

Trees (bench/doctree/README.md):

* ``pip``: pip 23.0.1's docs as Debian's python3-pip installs them (--docs, default
  /usr/share/doc/python3-pip/html); questions pip_questions.jsonl.
* ``flask``: the ``docs/`` folder of Flask 3.0.3's sdist, fetched once with
  ``pip download --no-deps --no-binary :all: flask==3.0.3`` into runs/doctree/src/ (the
  only network use; its sha256 is checked, so the tree is always the same); questions
  flask_questions.jsonl.
* ``click``: the ``docs/`` folder of click 8.1.7's sdist, fetched the same way; questions
  click_questions.jsonl (written by someone who had not seen the answerer's changes, before
  any run on the tree).
* ``werkzeug``: the ``docs/`` folder of Werkzeug 3.0.3's sdist (BSD-3-Clause, "Copyright 2007
  Pallets"), fetched the same way; questions werkzeug_questions.jsonl, written the same way
  (with the sentence that states each answer), committed before any run on the tree.
* ``marshmallow`` (3.22.0, MIT) and ``structlog`` (24.4.0, MIT OR Apache-2.0): the same, the
  first trees not by the Pallets team; questions written blind in session 16.
* ``anyio`` (4.4.0, MIT) and ``attrs`` (24.2.0, MIT): the same, each with 12 unanswerable
  questions as well.
* ``itsdangerous`` (2.2.0, BSD-3-Clause), ``pluggy`` (1.5.0, MIT) and ``jinja2`` (3.1.4,
  BSD-3-Clause): the same, 20 answerable and 12 unanswerable questions each, written blind
  for issue 43 (documentation-shaped answers).

A tree may also have ``<tree>_unanswerable.jsonl``: questions its documents do not answer
(written the same way, after the answerable ones); right = refused.  They are counted apart.

Each tree is copied to --work (default runs/doctree/<tree>) with .gz files unzipped and
only .md, .rst and .txt kept, then indexed by mini_rag with a corpus of one's own's
defaults.  Prints one line per question (right / wrong, the claim, the citations) and the
count right per tree, next to the naive baseline's (bench/naive_baseline.py on the same
index); --out writes the same as JSON.  Exit 0 (a measurement, not a gate);
2 when a tree cannot be had.
"""
import argparse
import gzip
import json
import os
import hashlib
import shutil
import subprocess
import sys
import tarfile

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


#: The trees read from a package's sdist: name -> (version, sha256 of the sdist).
SDISTS = {
    "flask": ("3.0.3", "ceb27b0af3823ea2737928a4d99d125a06175b8512c445cbd9a9ce200ef76842"),
    "click": ("8.1.7", "ca9853ad459e787e2192211578cc907e7594e294c7ccc834310722b41b9ca6de"),
    "werkzeug": ("3.0.3", "097e5bfda9f0aba8da6b8545146def481d06aa7d3266e7448e2cccf67dd8bd18"),
    "marshmallow": ("3.22.0", "4972f529104a220bb8637d595aa4c9762afbe7f7a77d82dc58c1615d70c5823e"),
    "structlog": ("24.4.0", "b27bfecede327a6d2da5fbc96bd859f114ecc398a6389d664f62085ee7ae6fc4"),
    "anyio": ("4.4.0", "5aadc6a1bbb7cdb0bede386cac5e2940f5e2ff3aa20277e991cf028e0585ce94"),
    "attrs": ("24.2.0", "5cfb1b9148b5b086569baec03f20d7b6bf3bcacc9a42bebf87ffaaca362f6346"),
    "itsdangerous": ("2.2.0", "e0050c0b7da1eea53ffaf149c0cfbb5c6e2e2b69c4bef22c81fa6eb73e5f6173"),
    "pluggy": ("1.5.0", "2cffa88e94fdc978c4c574f15f9e59b7f4201d439195c3715ca9e2486f1d0cf1"),
    "jinja2": ("3.1.4", "4a3aee7acbbe7303aede8e9648d13b8bf88a429282aa6122a993f0ac800cb369"),
}


def fetch_sdist(name: str, src_dir: str, dst: str) -> int:
    """A package's sdist (downloaded once, sha256 checked); its docs/ text files copied to dst."""
    version, sha = SDISTS[name]
    tar_path = os.path.join(src_dir, "%s-%s.tar.gz" % (name, version))
    if not os.path.exists(tar_path):
        os.makedirs(src_dir, exist_ok=True)
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:",
                        "%s==%s" % (name, version), "-d", src_dir], check=False)
    if not os.path.exists(tar_path):
        raise OSError("%s: not downloaded (pip download %s==%s failed)" % (tar_path, name, version))
    with open(tar_path, "rb") as fh:
        got = hashlib.sha256(fh.read()).hexdigest()
    if got != sha:
        raise OSError("%s: sha256 %s, expected %s" % (tar_path, got, sha))
    if os.path.isdir(dst):
        shutil.rmtree(dst)
    prefix = "%s-%s/docs/" % (name, version)
    n = 0
    with tarfile.open(tar_path, "r:gz") as tf:
        for m in sorted(tf.getmembers(), key=lambda m: m.name):
            rel = m.name[len(prefix):] if m.name.startswith(prefix) else ""
            if not (m.isfile() and rel.endswith(KEEP)) or ".." in rel.split("/") or rel.startswith("/"):
                continue
            out = os.path.join(dst, rel)
            os.makedirs(os.path.dirname(out), exist_ok=True)
            with tf.extractfile(m) as fin, open(out, "wb") as fout:
                fout.write(fin.read())
            n += 1
    return n


def cites_doc(citation: str, doc) -> bool:
    """A citation ``<doc_id>#p<N>`` of the named document (path relative to the docs root,
    or a list of them; a doc id that is the file's stem alone, as before issue 31, matches
    its last part)."""
    doc_id = citation.split("#", 1)[0]
    docs = [doc] if isinstance(doc, str) else doc
    return any(doc_id == d or doc_id == d.rsplit("/", 1)[-1] for d in docs)


def is_right(claim: str, citations, q) -> bool:
    """Right: the claim holds one of the answers (case-insensitive) and a citation is a chunk
    of the named document."""
    return (any(a.casefold() in claim.casefold() for a in q["answers"])
            and any(cites_doc(c, q["doc"]) for c in citations))


def run_tree(tree: str, docs: str, work: str, quiet_files: str, config_path: str = None) -> dict:
    """Index ``work`` afresh and answer the tree's questions; prints a line per question."""
    from mini_rag.commands.runconfig import resolve
    from mini_rag.pipeline import open_pipeline
    index = os.path.join(os.path.dirname(work), "index-%s.json.gz" % os.path.basename(work))
    if os.path.exists(index):
        os.remove(index)                      # always built afresh by the code under test
    config = resolve(config_path, work, index, quiet=True)
    pipeline = open_pipeline(config, quiet=True)
    rows = []
    with open(os.path.join(HERE, "%s_questions.jsonl" % tree), encoding="utf-8") as fh:
        questions = [json.loads(line) for line in fh if line.strip()]
    sys.path.insert(0, os.path.dirname(HERE))
    from naive_baseline import Naive
    naive = Naive(pipeline.retriever, refusal=pipeline.refusal)
    right = naive_right = 0
    for q in questions:
        nrow = naive.answer(q["question"], q["qid"])
        naive_right += is_right(nrow["answer_json"].get("claim") or "", nrow["answer_json"]["citations"], q)
        result = pipeline.answer(q["question"], qid=q["qid"])
        aj = result.row["answer_json"]
        claim, cits = aj.get("claim") or "", aj.get("citations") or []
        ok = is_right(claim, cits, q)
        right += ok
        rows.append({"qid": q["qid"], "right": ok, "claim": claim, "citations": cits,
                     "decision": result.row.get("decision")})
        print("%s %-5s %s  %s" % (q["qid"], "right" if ok else "wrong", json.dumps(claim[:160]), " ".join(cits)))
    print("%s right: %d/%d (%s); naive %d/%d" % (tree, right, len(questions), quiet_files, naive_right,
                                                 len(questions)))
    result = {"right": right, "n": len(questions), "naive_right": naive_right, "rows": rows}
    # the tree's unanswerable questions, when written: right = refused (no answer shipped)
    unans = os.path.join(HERE, "%s_unanswerable.jsonl" % tree)
    if os.path.isfile(unans):
        with open(unans, encoding="utf-8") as fh:
            questions = [json.loads(line) for line in fh if line.strip()]
        refused = naive_refused = 0
        urows = []
        for q in questions:
            naive_refused += naive.answer(q["question"], q["qid"])["answer_json"]["citations"] == []
            result_u = pipeline.answer(q["question"], qid=q["qid"])
            ok = result_u.row.get("decision") != "ANSWER"
            refused += ok
            claim = result_u.row["answer_json"].get("claim") or ""
            urows.append({"qid": q["qid"], "right": ok, "claim": claim,
                          "decision": result_u.row.get("decision")})
            print("%s %-5s %s" % (q["qid"], "right" if ok else "wrong", json.dumps(claim[:160])))
        print("%s unanswerable refused: %d/%d; naive %d/%d" % (tree, refused, len(questions), naive_refused,
                                                              len(questions)))
        result.update(refused=refused, n_unanswerable=len(questions), naive_refused=naive_refused,
                      unanswerable=urows)
    return result


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", choices=("pip",) + tuple(SDISTS) + ("all",), default="all")
    ap.add_argument("--docs", default="/usr/share/doc/python3-pip/html", help="pip's installed docs")
    ap.add_argument("--work", help="where a tree is copied (default runs/doctree/<tree>)")
    ap.add_argument("--out", help="write the per-question results as JSON")
    ap.add_argument("--config", help="a mini_rag config for the answerer (default: the committed defaults); "
                    "its corpus and index are the tree's")
    args = ap.parse_args(argv)
    trees = ("pip",) + tuple(SDISTS) if args.tree == "all" else (args.tree,)
    results, code = {}, 0
    for tree in trees:
        work = args.work if args.work and len(trees) == 1 else os.path.join("runs", "doctree", tree)
        try:
            if tree == "pip":
                if not os.path.isdir(args.docs):
                    raise OSError("%s: no such folder (Debian's python3-pip ships it)" % args.docs)
                files = "%d files of %s" % (prepare(args.docs, work), args.docs)
            else:
                files = "%d files of %s %s's sdist docs/" % (
                    fetch_sdist(tree, os.path.join("runs", "doctree", "src"), work), tree, SDISTS[tree][0])
        except OSError as e:
            print("bench_doctree: %s" % e, file=sys.stderr)
            code = 2
            continue
        results[tree] = run_tree(tree, args.docs, work, files, args.config)
    if len(results) > 1:
        print("total: " + ", ".join("%s %d/%d" % (t, r["right"], r["n"]) for t, r in results.items()))
        print("naive: " + ", ".join("%s %d/%d" % (t, r["naive_right"], r["n"]) for t, r in results.items()))
        if any("refused" in r for r in results.values()):
            print("unanswerable refused: " + ", ".join("%s %d/%d" % (t, r["refused"], r["n_unanswerable"])
                                                       for t, r in results.items() if "refused" in r))
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            json.dump(results, fh, indent=1)
            fh.write("\n")
    return code


if __name__ == "__main__":
    sys.exit(main())
