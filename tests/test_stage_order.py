"""mini_rag's stage order (issue 40 item 6): no import circle, no import from a later stage
into an earlier one.

Every module under ``mini_rag/`` is parsed with :mod:`ast` (nothing is imported); every
``import`` / ``from ... import`` statement counts, at module level and inside functions alike,
so a lazy import cannot hide a circle.  ``from P import name`` is an edge to the module
``P.name`` when that is a module, else to ``P``.  Importing ``P.m`` also runs ``P/__init__.py``;
that implicit edge is left out (every stage's ``__init__.py`` is in its own stage, and
``embed/__init__.py``'s lazy imports are inside the stage).  ``commands/cli.py`` loads its
subcommand modules with ``importlib.import_module("." + name)``: names built at run time, all
inside ``commands/``, not an edge here.
"""
import ast
import os
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = os.path.join(ROOT, "mini_rag")

#: The stages in data-flow order; a module may import only from its own stage or an earlier
#: one.  A module belongs to the stage of the longest prefix below that names it.
STAGES = (
    ("base", ("mini_rag", "mini_rag.errors", "mini_rag.records", "mini_rag.fileio", "mini_rag.config",
              "mini_rag.progress")),
    ("text", ("mini_rag.text",)),
    ("query", ("mini_rag.query",)),
    ("indexing", ("mini_rag.indexing",)),
    ("embed", ("mini_rag.embed",)),      # dense vectors over the index; search and answer read them
    ("search", ("mini_rag.search",)),
    ("answer", ("mini_rag.answer",)),
    ("guard", ("mini_rag.guard",)),
    ("pipeline", ("mini_rag.question", "mini_rag.pipeline", "mini_rag.trace")),
    ("eval", ("mini_rag.eval",)),
    ("commands", ("mini_rag.commands", "mini_rag.__main__")),
)


def module_files(package_dir=PACKAGE, name="mini_rag"):
    """``{dotted module name: file path}`` of every ``.py`` file under ``package_dir``."""
    out = {}
    for folder, dirs, files in os.walk(package_dir):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        rel = os.path.relpath(folder, package_dir)
        parts = [name] + ([] if rel == "." else rel.split(os.sep))
        for f in sorted(files):
            if f.endswith(".py"):
                mod = parts if f == "__init__.py" else parts + [f[:-3]]
                out[".".join(mod)] = os.path.join(folder, f)
    return out


def imports_of(module, path, known):
    """The ``mini_rag`` modules ``module`` (its source at ``path``) imports, anywhere in it."""
    with open(path, encoding="utf-8") as fh:
        tree = ast.parse(fh.read(), path)
    package = module if os.path.basename(path) == "__init__.py" else module.rsplit(".", 1)[0]
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "mini_rag":
                    out.add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "mini_rag":
                continue
            for alias in node.names:
                sub = "%s.%s" % (target, alias.name)
                out.add(sub if sub in known else target)
    return out


def import_graph(files):
    """``{module: set of mini_rag modules it imports}`` for ``files`` (see module_files)."""
    known = set(files)
    return {m: imports_of(m, p, known) for m, p in sorted(files.items())}


def stage_of(module, stages=STAGES):
    """The index in ``stages`` of ``module``'s stage (longest matching prefix); None if none."""
    best, best_len = None, -1
    for i, (_, prefixes) in enumerate(stages):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and len(p) > best_len:
                best, best_len = i, len(p)
    return best


def cycles(graph):
    """Each import circle once, as a list of modules (strongly connected components of more
    than one module, or a module importing itself); Tarjan's algorithm, iterative."""
    index, low, on_stack, stack, out = {}, {}, set(), [], []
    counter = [0]
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter[0]
                    counter[0] += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    comp.append(top)
                    if top == node:
                        break
                if len(comp) > 1 or node in graph.get(node, ()):
                    out.append(sorted(comp))
    return sorted(out)


def upward(graph, stages=STAGES):
    """``(importer, imported)`` pairs where the imported module's stage comes later."""
    return sorted((a, b) for a, targets in graph.items() for b in targets
                  if stage_of(b, stages) is not None and stage_of(a, stages) is not None
                  and stage_of(b, stages) > stage_of(a, stages))


class Checker(unittest.TestCase):
    """The graph reader and both checks on small hand-made inputs."""

    def test_cycles_found(self):
        g = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}, "f": set()}
        self.assertEqual(cycles(g), [["a", "b", "c"], ["e"]])
        self.assertEqual(cycles({"a": {"b"}, "b": set(), "c": {"a", "b"}}), [])

    def test_upward_found(self):
        stages = (("low", ("p.low",)), ("high", ("p.high", "p.top")))
        g = {"p.low.x": {"p.high.y", "p.low.z"}, "p.high.y": {"p.low.x"}, "p.low.z": set(), "p.top": {"p.low.z"}}
        self.assertEqual(upward(g, stages), [("p.low.x", "p.high.y")])
        self.assertEqual(stage_of("p.lowish", stages), None)

    def test_function_level_and_relative_imports_read(self):
        import tempfile
        with tempfile.TemporaryDirectory() as tmp:
            pkg = os.path.join(tmp, "mini_rag")
            os.makedirs(os.path.join(pkg, "a"))
            for rel, text in (("__init__.py", ""), ("errors.py", ""), ("a/__init__.py", ""),
                              ("a/one.py", "from ..errors import X\n\ndef f():\n    from . import two\n"
                                           "    from mini_rag.a.two import g\n    import json\n"),
                              ("a/two.py", "def g():\n    from .. import errors, a\n    from .one import f\n")):
                with open(os.path.join(pkg, rel), "w", encoding="utf-8") as fh:
                    fh.write(text)
            g = import_graph(module_files(pkg))
        self.assertEqual(g["mini_rag.a.one"], {"mini_rag.errors", "mini_rag.a.two"})
        self.assertEqual(g["mini_rag.a.two"], {"mini_rag.errors", "mini_rag.a", "mini_rag.a.one"})
        self.assertEqual(cycles(g), [["mini_rag.a.one", "mini_rag.a.two"]])


class StageOrder(unittest.TestCase):
    """The checks on mini_rag itself."""

    @classmethod
    def setUpClass(cls):
        cls.files = module_files()
        cls.graph = import_graph(cls.files)

    def test_graph_is_read(self):
        # known edges, one module-level and one function-level, so an empty graph cannot pass
        self.assertIn("mini_rag.text.markup", self.graph["mini_rag.text.corpus"])
        self.assertIn("mini_rag.search.retrieve", self.graph["mini_rag.pipeline"])
        self.assertGreater(len(self.files), 50)

    def test_every_module_has_a_stage(self):
        self.assertEqual([m for m in self.files if stage_of(m) is None], [])

    def test_no_import_circle(self):
        self.assertEqual(cycles(self.graph), [])

    def test_no_import_from_a_later_stage(self):
        names = [s for s, _ in STAGES]
        found = ["%s (%s) imports %s (%s)" % (a, names[stage_of(a)], b, names[stage_of(b)])
                 for a, b in upward(self.graph)]
        self.assertEqual(found, [])

    def test_the_scorer_only_by_its_package_public_names(self):
        """mini_rag reaches the scorer through ``import referee`` and its public names (issue 40
        item 6): never a module loaded from a path, never a private name of the package."""
        import referee
        public = set(referee.__all__) | {"__file__", "__version__"}
        found = []
        for mod, path in sorted(self.files.items()):
            with open(path, encoding="utf-8") as fh:
                tree = ast.parse(fh.read(), path)
            for node in ast.walk(tree):
                if isinstance(node, ast.Attribute) and node.attr in ("spec_from_file_location", "run_path"):
                    found.append("%s:%d loads a module from a path" % (mod, node.lineno))
                if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "referee":
                    if node.module != "referee" or any(a.name not in public for a in node.names):
                        found.append("%s:%d imports %s" % (mod, node.lineno, node.module))
                if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Call) and \
                        getattr(node.value.func, "id", "") == "scorer" and node.attr not in public:
                    found.append("%s:%d uses the private scorer().%s" % (mod, node.lineno, node.attr))
                if isinstance(node, ast.Attribute) and getattr(node.value, "id", "") in ("se", "referee") and \
                        node.attr not in public:
                    found.append("%s:%d uses %s.%s" % (mod, node.lineno, node.value.id, node.attr))
        self.assertEqual(found, [])


if __name__ == "__main__":
    sys.exit(unittest.main())
