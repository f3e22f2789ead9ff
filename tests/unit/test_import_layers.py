"""The package's import graph, read from the sources with ast: no circle between modules or between
packages, and no arrow from a lower stage up (store, sensors, plan, campaign_settings, accounting and the
leaves below hosts and run; store below sensors, probe and accounting; sensors below probe; the leaves — counters,
hostspec, probemodel, spec — import nothing of idsbench but errors, each other and their own modules).

An import runs more than the module it names: `import a.b.c` (or `from a.b.c import x`) runs
`a/__init__` and `a/b/__init__` first, unless the importer is inside them already. The graph holds those
implicit edges too — a package `__init__` that re-exports its collectors makes every importer of a
leaf model import the collectors (and what they import).

Module-level imports, imports inside functions (a function's import runs when it is called) and
imports under `if TYPE_CHECKING:` count alike: a typing-only import never runs, but the module still
depends on the one it names (its types are part of its contract), so a circle through one is a circle.
`runtime_only=True` reads the graph as the interpreter runs it (what a fresh interpreter loads)."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

import idsbench

ROOT = Path(idsbench.__file__).parent
Graph = Mapping[str, Iterable[str]]


def _module_name(path: Path, root: Path = ROOT) -> str:
    rel = path.relative_to(root.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules(root: Path = ROOT) -> dict[str, Path]:
    return {_module_name(p, root): p for p in sorted(root.rglob("*.py"))}


def _resolve(name: str, known: Mapping[str, Path]) -> str | None:
    """The module an import names (`a.b.C` → `a.b` when C is not a module)."""
    while name:
        if name in known:
            return name
        name = name.rpartition(".")[0]
    return None


def ancestors(mod: str) -> list[str]:
    """The packages whose `__init__` runs before `mod` (outermost first): a.b.c → [a, a.b]."""
    parts = mod.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def with_init_edges(direct: Graph, known: Iterable[str]) -> dict[str, set[str]]:
    """`direct` plus the implicit edges: importing t runs every package `__init__` above t that the
    importer is not already inside (its own ancestors have run before it)."""
    names = set(known)
    out: dict[str, set[str]] = {}
    for mod, targets in direct.items():
        own = set(ancestors(mod)) | {mod}
        edges: set[str] = set()
        for t in targets:
            edges.add(t)
            edges.update(p for p in ancestors(t) if p in names and p not in own)
        edges.discard(mod)
        out[mod] = edges
    return out


def direct_imports(root: Path = ROOT, top: str = "idsbench", *, runtime_only: bool = False) -> dict[str, set[str]]:
    """module -> the modules of `top` it names in an import anywhere (`runtime_only`: TYPE_CHECKING
    blocks left out)."""
    known = _modules(root)
    graph: dict[str, set[str]] = {}
    for mod, path in known.items():
        tree = ast.parse(path.read_text(), str(path))
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        skip: set[int] = set()
        for node in ast.walk(tree):
            if runtime_only and isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                skip.update(id(n) for n in ast.walk(node))
        targets: set[str] = set()
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    base = ".".join(anchor + ([base] if base else []))
                # `from pkg import module` imports that module; `from mod import name`, the module
                names = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
            for name in names:
                if name == top or name.startswith(top + "."):
                    target = _resolve(name, known)
                    if target and target != mod:
                        targets.add(target)
        graph[mod] = targets
    return graph


def import_graph(root: Path = ROOT, top: str = "idsbench", *, runtime_only: bool = False) -> dict[str, set[str]]:
    """Every module's imports, the implicit `__init__` edges included (typing-only ones too unless
    `runtime_only`)."""
    direct = direct_imports(root, top, runtime_only=runtime_only)
    return with_init_edges(direct, direct)


def package_graph(graph: Graph, top: str = "idsbench") -> dict[str, set[str]]:
    """The graph between the top package's children (`idsbench.probemodel` counts as `idsbench.probe`;
    a top-level module is its own node)."""
    depth = len(top.split(".")) + 1

    def node(mod: str) -> str:
        return ".".join(mod.split(".")[:depth])

    out: dict[str, set[str]] = {}
    for mod, targets in graph.items():
        if mod == top:
            continue
        src = node(mod)
        out.setdefault(src, set()).update(node(t) for t in targets if t != top and node(t) != src)
    return out


def cycles(graph: Graph) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def path_between(graph: Graph, start: str, goal: str) -> list[str] | None:
    """One shortest import chain start → … → goal (for a readable failure), None if there is none."""
    seen = {start: ""}
    queue = [start]
    while queue:
        v = queue.pop(0)
        if v == goal:
            chain = [v]
            while seen[chain[-1]]:
                chain.append(seen[chain[-1]])
            return chain[::-1]
        for w in sorted(graph.get(v, ())):
            if w not in seen:
                seen[w] = v
                queue.append(w)
    return None


def _explain(graph: Graph, found: list[list[str]]) -> list[str]:
    """Each circle as one chain a → … → a."""
    out = []
    for comp in found:
        a, b = comp[0], comp[1]
        there, back = path_between(graph, a, b), path_between(graph, b, a)
        out.append(f"{{{', '.join(comp)}}}: " + " -> ".join([*(there or [a]), *(back or [b])[1:]]))
    return out


def _in(mod: str, *packages: str) -> bool:
    return any(mod == p or mod.startswith(p + ".") for p in packages)


# --- the checker itself, on small synthetic graphs ------------------------------------------------
def test_cycle_finder_finds_a_circle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_init_edges_run_the_parents_of_the_imported_module():
    # p.leaf is a leaf, but importing it runs p/__init__, which imports p.collect → q.x → p.leaf:
    # the direct graph has no circle, the real one does (q.x imports p.leaf, which runs p/__init__)
    direct = {"p": {"p.collect"}, "p.leaf": set(), "p.collect": {"q.x"}, "q": set(), "q.x": {"p.leaf"}}
    assert cycles(direct) == []
    full = with_init_edges(direct, direct)
    assert full["q.x"] == {"p.leaf", "p"}
    assert cycles(full) == [["p", "p.collect", "q.x"]]
    # a module inside the package does not re-run its own parents
    assert with_init_edges({"p.a": {"p.b"}, "p.b": set(), "p": set()}, ["p", "p.a", "p.b"])["p.a"] == {"p.b"}
    assert ancestors("a.b.c") == ["a", "a.b"]


def test_package_graph_collapses_to_the_top_packages():
    graph = {"t.a.x": {"t.b.y", "t.a.z"}, "t.a.z": set(), "t.b.y": {"t.c"}, "t.c": {"t.a.z"}, "t": set()}
    pkgs = package_graph(graph, top="t")
    assert pkgs == {"t.a": {"t.b"}, "t.b": {"t.c"}, "t.c": {"t.a"}}
    assert cycles(pkgs) == [["t.a", "t.b", "t.c"]]
    assert _explain(pkgs, cycles(pkgs)) == ["{t.a, t.b, t.c}: t.a -> t.b -> t.c -> t.a"]


def test_the_reader_sees_every_kind_of_import(tmp_path: Path):
    pkg = tmp_path / "tp"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("from tp.sub import deep\n")
    (pkg / "sub" / "deep.py").write_text("")
    (pkg / "leaf.py").write_text("")
    (pkg / "user.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from tp import leaf\n"
        "def f():\n    from .sub.deep import x\n")
    (pkg / "other.py").write_text("from . import leaf\n")
    graph = import_graph(pkg, top="tp")
    assert graph["tp.user"] == {"tp.sub.deep", "tp.sub", "tp.leaf"}  # in a function; sub/__init__ implied; typing
    assert graph["tp.other"] == {"tp.leaf"}
    assert graph["tp.sub"] == {"tp.sub.deep"}
    assert import_graph(pkg, top="tp", runtime_only=True)["tp.user"] == {"tp.sub.deep", "tp.sub"}


def test_a_circle_through_a_typing_only_import_is_a_circle(tmp_path: Path):
    """Two modules that name each other, one of them only for the type checker: no circle at run time,
    one in the graph the layer tests read (module- and package-level)."""
    pkg = tmp_path / "tp"
    for sub in ("low", "high"):
        (pkg / sub).mkdir(parents=True)
        (pkg / sub / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "low" / "model.py").write_text(
        "from __future__ import annotations\nfrom typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from tp.high.use import Thing\n")
    (pkg / "high" / "use.py").write_text("from tp.low.model import x\n")
    assert cycles(import_graph(pkg, top="tp", runtime_only=True)) == []
    graph = import_graph(pkg, top="tp")
    assert _explain(graph, cycles(graph)) == ["{tp.high.use, tp.low.model}: tp.high.use -> tp.low.model -> tp.high.use"]
    pkgs = package_graph(graph, top="tp")
    assert cycles(pkgs) == [["tp.high", "tp.low"]]


# --- the tree -------------------------------------------------------------------------------------
def test_the_graph_is_read():
    graph = import_graph()
    # the reader sees module-level and in-function imports, relative ones and `from pkg import module`
    assert "idsbench.hosts.campaign" in graph["idsbench.dispatch"]
    assert "idsbench.setups.registry" in graph["idsbench.plan"]  # imported inside a function
    assert "idsbench.counters" in graph["idsbench.store.schema"]
    assert "idsbench.sensors" in graph["idsbench.plan"]  # sensors/__init__ runs before sensors.registry


def test_no_import_circle_between_modules():
    graph = import_graph()
    assert _explain(graph, cycles(graph)) == []


def test_no_import_circle_between_packages():
    pkgs = package_graph(import_graph())
    assert _explain(pkgs, cycles(pkgs)) == []


# Leaves: models every stage may use, importing nothing of idsbench but errors, the other leaves and (a
# leaf package) their own modules. `spec` is one: the campaign file's reader types its stored spec with it;
# `legacy` (older names as today's) is read by the spec and the store alike; `capture`, the capture axis' types,
# by every engine's declaration and the plan.
LEAVES = ("idsbench.counters", "idsbench.hostspec", "idsbench.probemodel", "idsbench.spec", "idsbench.legacy",
          "idsbench.capture")


def _top(mod: str) -> str:
    return ".".join(mod.split(".")[:2])


def leaf_breaches(graph: Graph, leaves: Iterable[str] = LEAVES) -> list[str]:
    """The imports of a leaf that name something other than errors, a leaf or its own package's modules."""
    leaves = tuple(leaves)
    return sorted(f"{mod} -> {t} (a leaf)" for mod, targets in graph.items() if _in(mod, *leaves)
                  for t in targets
                  if t not in ("idsbench.errors", "idsbench") and not _in(t, *leaves) and _top(t) != _top(mod))


def test_the_leaf_rule_sees_a_leaf_that_imports_a_stage():
    graph = {"idsbench.spec.load": {"idsbench.spec.model", "idsbench.errors", "idsbench.hostspec"},
             "idsbench.spec.model": {"idsbench.plan"}, "idsbench.plan": {"idsbench.spec"}}
    assert leaf_breaches(graph) == ["idsbench.spec.model -> idsbench.plan (a leaf)"]


def test_lower_stages_never_import_upward():
    graph = import_graph()
    bad = leaf_breaches(graph)
    assert "idsbench.spec.duet" in graph and "idsbench.spec.model" in graph["idsbench.spec.duet"]  # spec is read
    for mod, targets in graph.items():
        for t in targets:
            lower = _in(mod, "idsbench.store", "idsbench.sensors", "idsbench.plan", "idsbench.campaign_settings",
                        "idsbench.accounting", *LEAVES)
            if lower and _in(t, "idsbench.hosts", "idsbench.run", "idsbench.dispatch"):
                bad.append(f"{mod} -> {t}")
            if _in(mod, "idsbench.store") and _in(t, "idsbench.sensors", "idsbench.probe", "idsbench.accounting"):
                bad.append(f"{mod} -> {t}")
            if _in(mod, "idsbench.sensors") and _in(t, "idsbench.probe"):
                bad.append(f"{mod} -> {t}")
    assert sorted(bad) == []


def test_the_store_reader_loads_no_sensor_and_no_numpy():
    """Reading a campaign needs the store's models only: not the Suricata adapter (which loads numpy
    for its eve reader) nor the probe's collectors. In a fresh interpreter, as a user's script runs."""
    code = ("import idsbench.store.reader, sys; "
            "bad = sorted(m for m in sys.modules if m == 'numpy' or m.startswith(('idsbench.sensors', "
            "'idsbench.probe.'))); print(bad); assert not bad, bad")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
