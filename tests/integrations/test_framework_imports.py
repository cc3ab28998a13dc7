"""Each framework's retriever module loads its framework, and only it does: importing
`archivist.integrations` loads none, and without the framework the import names its extra."""

from __future__ import annotations

import subprocess
import sys

import pytest

FRAMEWORKS = [
    ("archivist.integrations.llama_index", "llama_index", "llama-index"),
    ("archivist.integrations.haystack", "haystack", "haystack"),
]
"""(retriever module, the framework's top package, its extra)."""


def _python(code: str) -> str:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout


def test_importing_the_integrations_package_loads_no_framework() -> None:
    tops = [top for _, top, _ in FRAMEWORKS]
    loaded = _python(
        "import sys, archivist.integrations\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {tops!r}))"
    )
    assert loaded.strip() == "[]"


@pytest.mark.parametrize(("module", "top", "extra"), FRAMEWORKS)
def test_without_the_framework_the_import_names_its_extra(
    module: str, top: str, extra: str
) -> None:
    said = _python(
        f"import sys\nsys.modules[{top!r}] = None\n"
        f"try:\n    import {module}\n"
        "except ImportError as error:\n    print(type(error).__name__, error)\n"
    )
    assert (
        said
        == f"MissingExtraError {module} needs the {extra} extra: pip install 'archivist[{extra}]'\n"
    )
