"""Docs that are true (issue 19 item 8): every file path README.md and gold/README.md name
exists, and the README glossary explains every metric of both registries once."""
import os
import re
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
import score_eval  # noqa: E402

DOCS = ("README.md", os.path.join("gold", "README.md"))
EXTENSIONS = ("py", "toml", "jsonl", "json", "md", "txt", "yml", "yaml", "sh", "gz", "cfg")
# Outputs (runs/), the data beside the repository and placeholders are not files of the repository.
NOT_IN_REPO = ("runs/", "../", "./runs/")


def named_paths(text):
    """Backticked tokens that look like file paths: a '/' or a known extension, no
    placeholders (upper-case stems such as G.jsonl or QRELS, <...>, *, {...})."""
    out = set()
    for token in re.findall(r"`([^`\s]+)`", text):
        if not re.fullmatch(r"[\w./-]+", token) or token.startswith(("-",) + NOT_IN_REPO):
            continue
        if re.fullmatch(r"\.\w+", token):      # an extension alone: `.md`
            continue
        if "/" not in token and not re.search(r"\.(%s)$" % "|".join(EXTENSIONS), token):
            continue
        stem = os.path.basename(token.rstrip("/")).split(".")[0]
        folders = token.strip("/").split("/")[:-1]
        if not re.search(r"\w", token) or (stem.isupper() and stem not in ("README", "CHANGELOG", "LICENSE")) \
                or stem.startswith(("my", "index-")):
            continue
        if any(f.isupper() for f in folders) or (folders and folders[0].startswith("my")):
            continue        # DIR/gates.toml, mydocs/leave.md, my-gates/gates.toml: the reader's own files
        out.add(token)
    return out


def resolves(doc, token):
    here = os.path.dirname(os.path.join(ROOT, doc))
    for base in (ROOT, here, os.path.join(ROOT, "gold")):
        if os.path.exists(os.path.join(base, token)):
            return True
    return False


class DocPaths(unittest.TestCase):
    def test_every_named_path_exists(self):
        for doc in DOCS:
            with open(os.path.join(ROOT, doc), encoding="utf-8") as fh:
                paths = named_paths(fh.read())
            self.assertGreater(len(paths), 5, doc)
            for token in sorted(paths):
                with self.subTest(doc=doc, path=token):
                    self.assertTrue(resolves(doc, token), "%s names %s, which does not exist" % (doc, token))

    def test_the_checker_catches_a_missing_file(self):
        paths = named_paths("see `gold/gold.policies.jsonl`, `G.jsonl`, `runs/report.json`, `DIR/gates.toml`, "
                            "`mydocs/leave.md` and `mini_rag/commands/cli.py`")
        self.assertEqual(paths, {"gold/gold.policies.jsonl", "mini_rag/commands/cli.py"})
        self.assertFalse(resolves("README.md", "gold/gold.policies.jsonl"))


class Glossary(unittest.TestCase):
    def test_every_metric_and_decision_term_is_explained(self):
        with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as fh:
            text = fh.read()
        glossary = text.split("## Glossary", 1)[1].split("\n## ", 1)[0]
        terms = [m.name for m in score_eval.REGISTRY] + [m.name for m in score_eval.TREC_MEASURES]
        terms = [t.replace("trec_", "") for t in terms] + ["ANSWER", "ABSTAIN", "CLARIFY", "BLOCK", "shipped",
                                                          "refusal token", "gate", "as_of", "stale", "perturbation set"]
        rows = [line for line in glossary.splitlines() if line.startswith("| ") and not line.startswith("| term")]
        for term in terms:
            with self.subTest(term=term):
                spelled = [t for t in (term, term.replace(".K", ""), term.rstrip("K").rstrip("@"))]
                self.assertTrue(any(re.search(r"(`|\b)%s(`|\b)" % re.escape(s), " ".join(rows)) for s in spelled),
                                "%s is not in the README glossary" % term)


if __name__ == "__main__":
    unittest.main()
