"""The sample files ship inside the package (`archivist.SAMPLES`), so the quickstart runs after
`pip install archivist` anywhere; a clone's `samples/` is a link to the same folder."""

from __future__ import annotations

import subprocess
import tarfile
import zipfile
from pathlib import Path

import pytest

import archivist

ROOT = Path(__file__).resolve().parents[2]
NAMES = {"archivist-architecture.pptx", "archivist-guide.pdf", "archivist-overview.md", "pipeline.png"}


def test_samples_is_the_package_folder_of_the_four_files() -> None:
    package = Path(archivist.__file__).resolve().parent
    assert package / "samples" == archivist.SAMPLES
    # a data folder, not a package: `archivist index` of it indexes the four files alone
    assert {path.name for path in archivist.SAMPLES.iterdir()} == NAMES


def test_the_clones_samples_is_a_link_to_the_package_folder() -> None:
    done = subprocess.run(
        ["git", "ls-files", "--stage", "samples"], cwd=ROOT, capture_output=True, text=True
    )
    if done.returncode != 0 or not done.stdout:
        pytest.skip("not a git clone")
    mode = done.stdout.split()[0]
    assert mode == "120000", "samples is committed as a symbolic link"
    assert (ROOT / "samples").resolve() == (ROOT / "src" / "archivist" / "samples").resolve()


def _wheel_samples(wheel: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(wheel) as archive:
        prefix = "archivist/samples/"
        return {
            name.removeprefix(prefix): archive.read(name)
            for name in archive.namelist()
            if name.startswith(prefix)
        }


def test_the_wheel_and_the_wheel_built_from_the_sdist_carry_the_samples(tmp_path: Path) -> None:
    """Both install routes (a wheel, or pip building one from the sdist) get the same bytes."""
    from hatchling.builders.sdist import SdistBuilder
    from hatchling.builders.wheel import WheelBuilder

    expected = {name: (archivist.SAMPLES / name).read_bytes() for name in NAMES}
    (wheel,) = WheelBuilder(str(ROOT)).build(directory=str(tmp_path / "w"), versions=["standard"])
    assert _wheel_samples(Path(wheel)) == expected

    (sdist,) = SdistBuilder(str(ROOT)).build(directory=str(tmp_path / "s"), versions=["standard"])
    with tarfile.open(sdist) as archive:
        archive.extractall(tmp_path / "unpacked", filter="data")
    (unpacked,) = (tmp_path / "unpacked").iterdir()
    (rebuilt,) = WheelBuilder(str(unpacked)).build(
        directory=str(tmp_path / "w2"), versions=["standard"]
    )
    assert _wheel_samples(Path(rebuilt)) == expected
