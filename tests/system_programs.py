"""The system programs (and fonts) some tests need, and what a test does where one is missing.

A test marked with a need (`@needs_tesseract`, `pytestmark = needs_chromium`, ...) or calling
`require(NEED)` is skipped where the need is missing, its reason naming the Debian packages
that give it. With ARCHIVIST_SYSTEM_TESTS=required (CI sets it in `.ci/run`) the same test
fails with the same message instead: a machine meant to run every test cannot skip one
quietly. Python packages are not needs: what `[dev]` installs is always there.

tests/conftest.py loads this module as a pytest plugin (the marker and its check).
"""

from __future__ import annotations

import functools
import glob
import os
import pwd
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

VARIABLE = "ARCHIVIST_SYSTEM_TESTS"
"""Set to `required` to fail, not skip, a test whose system program is missing."""
MARKER = "system_program"
CJK_FONT = Path("/usr/share/fonts/truetype/wqy/wqy-microhei.ttc")
"""WenQuanYi Micro Hei, the font the tests draw Chinese scans in."""


@dataclass(frozen=True)
class Need:
    """What some tests need from the system: `what` it is, the Debian `packages` that give
    it, and `present()`, whether this machine has it."""

    what: str
    packages: tuple[str, ...]
    present: Callable[[], bool]

    @property
    def reason(self) -> str:
        return f"needs {self.what}: apt-get install -y {' '.join(self.packages)}"

    @property
    def mark(self) -> pytest.MarkDecorator:
        """The marker for a test (or a module's `pytestmark`) that needs this."""
        return pytest.mark.system_program(self)


def required() -> bool:
    """Whether a missing need fails the test (ARCHIVIST_SYSTEM_TESTS=required)."""
    value = os.environ.get(VARIABLE, "")
    if value not in ("", "required"):
        raise pytest.UsageError(f"{VARIABLE}={value!r}: expected 'required' or nothing")
    return value == "required"


def require(*needs: Need) -> None:
    """Skip the running test unless each of `needs` is present; under
    ARCHIVIST_SYSTEM_TESTS=required, fail it with the same reason."""
    missing = [need for need in needs if not need.present()]
    if not missing:
        return
    reason = "; ".join(need.reason for need in missing)
    if required():
        pytest.fail(f"{reason} ({VARIABLE}=required)", pytrace=False)
    pytest.skip(reason)


def chromium() -> str | None:
    """Debian's chromium: /usr/bin/chromium, else `chromium` on PATH."""
    if os.access("/usr/bin/chromium", os.X_OK):
        return "/usr/bin/chromium"
    return shutil.which("chromium")


@functools.cache
def tesseract_languages() -> frozenset[str]:
    """The languages `tesseract --list-langs` names (none without the command)."""
    command = shutil.which("tesseract")
    if command is None:
        return frozenset()
    try:
        listed = subprocess.run(
            [command, "--list-langs"], capture_output=True, text=True, timeout=60, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return frozenset()
    # The first line says where the languages are ("List of available languages in ...").
    return frozenset(line.strip() for line in listed.stdout.splitlines()[1:] if line.strip())


def postgres_bin() -> Path | None:
    """The newest installed `.../lib/postgresql/N/bin` holding initdb and pg_ctl, else the
    folder of `initdb` on PATH, if any."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=_version)
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def _version(path: str) -> int:
    part = Path(path).parts[-3]
    return int(part) if part.isdigit() else 0


def _postgres_server() -> bool:
    bin_dir = postgres_bin()
    if bin_dir is None or not (bin_dir / "pg_ctl").exists():
        return False
    if os.geteuid() != 0:
        return True
    try:  # as root the server runs as `postgres` (it refuses root)
        pwd.getpwnam("postgres")
    except KeyError:
        return False
    return True


TESSERACT = Need(
    "Tesseract with eng and chi_sim",
    ("tesseract-ocr", "tesseract-ocr-eng", "tesseract-ocr-chi-sim"),
    lambda: {"eng", "chi_sim"} <= tesseract_languages(),
)
CHROMIUM = Need("Debian's Chromium", ("chromium",), lambda: chromium() is not None)
POSTGRES_SERVER = Need(
    "a PostgreSQL server to start (initdb, pg_ctl)", ("postgresql",), _postgres_server
)
CHINESE_FONT = Need(
    "the WenQuanYi Micro Hei font to draw Chinese scans", ("fonts-wqy-microhei",), CJK_FONT.is_file
)
JQ_AND_CURL = Need(
    "jq and curl", ("jq", "curl"), lambda: all(shutil.which(c) for c in ("jq", "curl"))
)
NEEDS = (TESSERACT, CHROMIUM, POSTGRES_SERVER, CHINESE_FONT, JQ_AND_CURL)
"""Every need; `.ci/run` installs the packages of each."""

# The markers tests use; the `postgres_url` fixture requires POSTGRES_SERVER, and scans.py
# requires CHINESE_FONT where it draws Chinese.
needs_tesseract = TESSERACT.mark
needs_chromium = CHROMIUM.mark
needs_jq_and_curl = JQ_AND_CURL.mark


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(need): the test needs a system program; skipped without it, failed "
        f"without it under {VARIABLE}=required",
    )
    required()  # a wrong value stops the run at once


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Before the test's fixtures start anything: skip (or fail) for a missing need."""
    require(*(need for mark in item.iter_markers(MARKER) for need in mark.args))
