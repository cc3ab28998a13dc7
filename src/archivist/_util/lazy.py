"""Lazy package exports: `from package import Name` imports Name's module on first use.

Keeps `import archivist.x` cheap, so the CLI's `--version` and `--help` load nothing heavy
and each command loads only the modules it runs.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any


def lazy_exports(
    package: str, exports: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """`__getattr__` and `__dir__` for `package`, where `exports` maps each exported name to
    the module that defines it; a loaded name is kept on the package."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(exports))

    return __getattr__, __dir__


def lazy_submodule_exports(
    package: str, modules: Mapping[str, Sequence[str]]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """`lazy_exports` from a table of `package`'s submodules, named relative to it
    (`"store.qdrant"`), each with the names it exports."""
    return lazy_exports(
        package,
        {name: f"{package}.{module}" for module, names in modules.items() for name in names},
    )
