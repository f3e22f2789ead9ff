"""The package's import graph, read from the sources with ast: no circle (module-level imports and
imports inside functions alike), and no arrow from a lower stage up (store, sensors, spec, plan
below hosts and run; store below sensors)."""

from __future__ import annotations

import ast
from pathlib import Path

import idsbench

ROOT = Path(idsbench.__file__).parent


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def _resolve(name: str, known: dict[str, Path]) -> str | None:
    """The idsbench module an import names (`a.b.C` → `a.b` when C is not a module)."""
    while name:
        if name in known:
            return name
        name = name.rpartition(".")[0]
    return None


def import_graph() -> dict[str, set[str]]:
    """module -> the idsbench modules it imports anywhere (TYPE_CHECKING blocks left out: they never run)."""
    known = _modules()
    graph: dict[str, set[str]] = {}
    for mod, path in known.items():
        tree = ast.parse(path.read_text(), str(path))
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        skip: set[int] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
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
                if name.startswith("idsbench"):
                    target = _resolve(name, known)
                    if target and target != mod:
                        targets.add(target)
        graph[mod] = targets
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
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
    return found


def _in(mod: str, *packages: str) -> bool:
    return any(mod == p or mod.startswith(p + ".") for p in packages)


def test_the_graph_is_read():
    graph = import_graph()
    # the reader sees module-level and in-function imports, relative ones and `from pkg import module`
    assert "idsbench.hosts.campaign" in graph["idsbench.dispatch"]
    assert "idsbench.setups.registry" in graph["idsbench.plan"]  # imported inside a function
    assert "idsbench.counters" in graph["idsbench.store.schema"]


def test_no_import_circle():
    assert _cycles(import_graph()) == []


def test_cycle_finder_finds_a_circle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_lower_stages_never_import_upward():
    bad = []
    for mod, targets in import_graph().items():
        for t in targets:
            lower = _in(mod, "idsbench.store", "idsbench.sensors", "idsbench.spec", "idsbench.plan",
                        "idsbench.counters", "idsbench.hostspec")
            if lower and _in(t, "idsbench.hosts", "idsbench.run", "idsbench.dispatch"):
                bad.append(f"{mod} -> {t}")
            if _in(mod, "idsbench.store") and _in(t, "idsbench.sensors"):
                bad.append(f"{mod} -> {t}")
            if _in(mod, "idsbench.counters", "idsbench.hostspec") and t != "idsbench.errors":
                bad.append(f"{mod} -> {t} (a leaf)")
    assert sorted(bad) == []
