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
    ("options", ("archivist.options",)),  # the settings shells share, read from the stages below
    ("stores", ("archivist.rag.store",)),
    (
        "knowledge",
        (
            "archivist.rag.knowledge",
            "archivist.rag",  # the package's lazy exports
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
    ("integrations", ("archivist.integrations",)),  # retrievers of other frameworks
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
    assert stage_of("archivist.rag") == stage_of("archivist.rag.knowledge")
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


# The shells turn their arguments into a profile and open it through the factories: none of
# them builds an embedding model, a chunker, a store or a KnowledgeBase itself.
SHELLS = ("archivist.cli", "archivist.mcp", "archivist.service", "archivist.eval")
BUILT_BY_THE_FACTORIES = {
    "LocalEmbeddingModel",
    "DashScopeEmbeddingModel",
    "OpenAIEmbeddingModel",
    "CachedEmbeddingModel",
    "chunker_for",
    "TokenChunker",
    "ApproxTokenChunker",
    "QdrantStore",
    "PgVectorStore",
    "ProcessStore",
    "KnowledgeBase",
    "Ocr",
}


def built_outside_the_factories(modules: dict[str, Path]) -> list[str]:
    """Each call under the shells that names a class or function the factories own (a
    constructor, or a classmethod on it such as `ProcessStore.of`)."""
    found = []
    for name, path in modules.items():
        if not name.startswith(SHELLS):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            called = node.func
            if isinstance(called, ast.Attribute) and isinstance(called.value, ast.Name):
                called = called.value if called.value.id in BUILT_BY_THE_FACTORIES else called
            if isinstance(called, ast.Attribute):
                named = called.attr
            elif isinstance(called, ast.Name):
                named = called.id
            else:
                continue
            if named in BUILT_BY_THE_FACTORIES:
                found.append(f"{name}:{node.lineno} {named}")
    return sorted(found)


def test_shells_open_knowledge_bases_only_through_the_factories(tmp_path: Path) -> None:
    modules = module_names()
    assert built_outside_the_factories(modules) == []
    shell = tmp_path / "shell.py"
    shell.write_text(
        "from archivist.rag.store.process import ProcessStore\n"
        "from archivist.rag import QdrantStore\n"
        "ProcessStore.of(QdrantStore, path='x')\n"
        "store = QdrantStore(location=':memory:')\n"
    )
    fake = {**modules, "archivist.service.shell": shell}
    assert built_outside_the_factories(fake) == [
        "archivist.service.shell:3 ProcessStore",
        "archivist.service.shell:4 QdrantStore",
    ]

# The service's layers, top first: a folder or root module of `archivist.service` imports only
# from lower layers, or from its own layer without a loop, so requests flow one way
# (routers -> operations -> storage) and the settings and errors sit at the bottom.
SERVICE_LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("edge", ("app", "mcp_endpoint", "listener", "collector")),
    ("http", ("routers", "dependencies", "problems", "guards")),
    ("operations", ("operations", "chat", "state")),
    ("assembly", ("runtime",)),
    ("indexing", ("indexing",)),
    ("retrieval", ("retrieval", "schemas", "openai_schemas")),
    ("storage", ("storage",)),
    (
        "bottom",
        (
            "settings",
            "quota",
            "files_url",
            "errors",
            "public_detail",
            "outages",
            "telemetry",
            "attributes",
        ),
    ),
]


def service_unit(name: str) -> str | None:
    """The folder or root module of `archivist.service` that module `name` is in, if any."""
    parts = name.split(".")
    return parts[2] if len(parts) > 2 and parts[:2] == ["archivist", "service"] else None


def service_layer_of(unit: str) -> int:
    """The index in SERVICE_LAYERS of the layer holding `unit`."""
    for index, (_, units) in enumerate(SERVICE_LAYERS):
        if unit in units:
            return index
    raise AssertionError(f"archivist.service.{unit} belongs to no layer; add it to SERVICE_LAYERS")


def service_edges(modules: dict[str, Path]) -> dict[tuple[str, str], list[str]]:
    """Each import from one service folder or root module into another, with the module
    imports that make it."""
    edges: dict[tuple[str, str], list[str]] = {}
    for name, path in modules.items():
        source = service_unit(name)
        if source is None:
            continue
        for target in imports_of(name, path, modules):
            unit = service_unit(target)
            if unit is not None and unit != source:
                edges.setdefault((source, unit), []).append(f"{name} -> {target}")
    return edges


def against_the_layers(edges: dict[tuple[str, str], list[str]]) -> list[tuple[str, str]]:
    """The edges that go up a layer, or sideways within a layer into a loop."""
    sideways: dict[str, set[str]] = {}
    for source, target in edges:
        if service_layer_of(source) == service_layer_of(target):
            sideways.setdefault(source, set()).add(target)

    def reaches(start: str, goal: str) -> bool:
        seen, todo = {start}, [start]
        while todo:
            for unit in sideways.get(todo.pop(), set()) - seen:
                if unit == goal:
                    return True
                seen.add(unit)
                todo.append(unit)
        return False

    return sorted(
        (source, target)
        for source, target in edges
        if service_layer_of(target) < service_layer_of(source)
        or (target in sideways.get(source, set()) and reaches(target, source))
    )


def test_every_service_module_belongs_to_a_layer_and_the_rule_can_fail() -> None:
    for name in module_names():
        unit = service_unit(name)
        if unit is not None:
            service_layer_of(unit)
    assert against_the_layers({("storage", "routers"): []}) == [("storage", "routers")]
    assert against_the_layers({("routers", "storage"): []}) == []
    loop = {("problems", "guards"): [], ("guards", "problems"): [], ("routers", "guards"): []}
    assert against_the_layers(loop) == [("guards", "problems"), ("problems", "guards")]


def test_the_service_imports_only_down_its_layers() -> None:
    edges = service_edges(module_names())
    against = [f"{s} -> {t}: " + ", ".join(edges[s, t]) for s, t in against_the_layers(edges)]
    assert not against, "imports against the service's layers:\n" + "\n".join(against)


def test_no_router_touches_storage() -> None:
    edges = service_edges(module_names())
    assert edges.get(("routers", "storage"), []) == [], "routers reach storage through operations"


def test_events_carry_what_models_report_without_importing_the_models() -> None:
    """An event names a model's usage (`archivist.message.usage`), not the model package, so a
    consumer of events loads no provider code."""
    modules = module_names()
    reached = sorted(
        f"{name} -> {target}"
        for name, path in modules.items()
        if name.startswith("archivist.event")
        for target in imports_of(name, path, modules)
        if target.startswith("archivist.model")
    )
    assert reached == []
