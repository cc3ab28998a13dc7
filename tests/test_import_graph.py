"""The modules of `archivist` import each other without a cycle.

Every import counts, including those under `TYPE_CHECKING` and inside functions: a cycle
there is still two modules that each need the other. An edge goes to the module named
(`from archivist.a import b` reaches `archivist.a.b` when that is a module, else `archivist.a`).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import archivist

ROOT = Path(archivist.__file__).parent


def module_names() -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its own name)."""
    modules: dict[str, Path] = {}
    for path in ROOT.rglob("*.py"):
        parts = ["archivist", *path.relative_to(ROOT).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The archivist modules that module `name` imports."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                candidate = f"{base}.{alias.name}"
                found.add(candidate if candidate in modules else base)
    return {target for target in found if target in modules and target != name}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of `graph` as a list of names (first == last), or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for target in sorted(graph[node]):
            if state.get(target) == 1:
                return [*stack[stack.index(target) :], target]
            if target not in state:
                cycle = visit(target)
                if cycle is not None:
                    return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            cycle = visit(node)
            if cycle is not None:
                return cycle
    return None


def test_the_walk_sees_imports_and_finds_cycles() -> None:
    modules = module_names()
    agent = imports_of("archivist.agent.agent", modules["archivist.agent.agent"], modules)
    assert "archivist.middleware.base" in agent
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_the_import_graph_of_archivist_has_no_cycle() -> None:
    modules = module_names()
    graph = {name: imports_of(name, path, modules) for name, path in modules.items()}
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


# The pipeline's stages, lowest first: a module imports only from its own stage or below, so
# data flows one way (documents -> chunking -> embedding -> stores -> knowledge -> agents).
STAGES: list[tuple[str, tuple[str, ...]]] = [
    (
        "foundation",
        (
            "archivist._http",
            "archivist._util",
            "archivist.credential",
            "archivist.errors",
            "archivist.message",
            "archivist.validation",
        ),
    ),
    ("embedding", ("archivist.embedding",)),
    ("records", ("archivist.rag.cjk", "archivist.rag.document", "archivist.rag.record")),
    ("documents", ("archivist.rag.parser",)),
    ("chunking", ("archivist.rag.chunker", "archivist.chunk_defaults")),
    ("stores", ("archivist.rag.store",)),
    (
        "knowledge",
        (
            "archivist.rag.knowledge",
            "archivist.rag",  # the package's lazy exports and its old import paths
        ),
    ),
    (
        "agents",
        (
            "archivist.model",
            "archivist.tool",
            "archivist.event",
            "archivist.middleware",
            "archivist.agent",
            "archivist.mcp",
        ),
    ),
    ("tools", ("archivist.testing", "archivist.eval")),
    ("service", ("archivist.service",)),
    ("cli", ("archivist.cli", "archivist.__main__")),
]


def stage_of(name: str) -> int:
    """The index in STAGES of the longest prefix that names `name`'s stage."""
    best: tuple[int, int] | None = None
    for index, (_, prefixes) in enumerate(STAGES):
        for prefix in prefixes:
            if (name == prefix or name.startswith(prefix + ".")) and (
                best is None or len(prefix) > best[1]
            ):
                best = (index, len(prefix))
    if best is None:
        raise AssertionError(f"{name} belongs to no stage; add it to STAGES")
    return best[0]


def test_every_module_belongs_to_a_stage_and_the_rule_can_fail() -> None:
    assert stage_of("archivist.rag.store.qdrant.store") > stage_of("archivist.rag.chunker.token")
    assert stage_of("archivist.rag.knowledge.ingest") > stage_of("archivist.rag.store")
    assert stage_of("archivist.rag.knowledge_base") == stage_of("archivist.rag.knowledge")
    modules = module_names()
    for name in modules:
        if name != "archivist":
            stage_of(name)


def test_no_module_imports_a_later_stage() -> None:
    modules = module_names()
    upward = sorted(
        f"{name} ({STAGES[stage_of(name)][0]}) -> {target} ({STAGES[stage_of(target)][0]})"
        for name, path in modules.items()
        if name != "archivist"
        for target in imports_of(name, path, modules)
        if target != "archivist" and stage_of(target) > stage_of(name)
    )
    assert not upward, "imports against the pipeline's direction:\n" + "\n".join(upward)


# Store engines are adapters over the shared core: none imports another, and no shared store
# module (the core, the contract, the package itself) imports one, so a third engine copies
# nothing from the others and importing one engine loads no other.
ENGINES = ("archivist.rag.store.qdrant", "archivist.rag.store.pgvector")


def _engine_of(name: str) -> str | None:
    return next((e for e in ENGINES if name == e or name.startswith(e + ".")), None)


def crossings(modules: dict[str, Path]) -> list[str]:
    """Every import from one store engine into another, or from the shared store modules
    (`archivist.rag.store` and everything under it outside the engines) into an engine."""
    found = []
    for name, path in modules.items():
        if name != "archivist.rag.store" and not name.startswith("archivist.rag.store."):
            continue
        source = _engine_of(name)
        for target in imports_of(name, path, modules):
            engine = _engine_of(target)
            if engine is not None and engine != source:
                found.append(f"{name} -> {target}")
    return sorted(found)


def test_store_engines_import_neither_each_other_nor_the_core_them(tmp_path: Path) -> None:
    modules = module_names()
    assert crossings(modules) == []
    crossing = tmp_path / "fake.py"
    crossing.write_text("from archivist.rag.store.qdrant.backend import SPARSE_VECTOR\n")
    fake = {**modules, "archivist.rag.store.pgvector.fake": crossing}
    assert crossings(fake) == [
        "archivist.rag.store.pgvector.fake -> archivist.rag.store.qdrant.backend"
    ]
    package = tmp_path / "__init__.py"
    package.write_text("from archivist.rag.store.qdrant import QdrantStore\n")
    eager = {**modules, "archivist.rag.store": package}
    assert crossings(eager) == ["archivist.rag.store -> archivist.rag.store.qdrant"]


def test_importing_one_store_engine_loads_no_other() -> None:
    """PgVectorStore's import leaves Qdrant unloaded, in a fresh interpreter."""
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, archivist.rag.store.pgvector\n"
            "print(*sorted(m for m in sys.modules if 'qdrant' in m))",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert loaded == []
