"""Where `--files-url` points, read from the URL alone: a directory or an S3 bucket."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from archivist.service.errors import FileStoreError


@dataclass(frozen=True)
class Bucket:
    """`s3://NAME/PREFIX`: the objects under `prefix` in bucket `name`."""

    name: str
    prefix: str


def files_location(files_url: str | None, default_dir: Path) -> Path | Bucket:
    """The directory or bucket `files_url` names: None or a path → a directory (default
    `default_dir`); `file://DIR` → DIR; `s3://BUCKET[/PREFIX]` → that bucket. FileStoreError
    for anything else."""
    if files_url is None or not files_url.strip():
        return default_dir
    if files_url.startswith("file://"):
        return Path(urlparse(files_url).path)
    if files_url.startswith("s3://"):
        parsed = urlparse(files_url)
        if not parsed.netloc:
            raise FileStoreError(f"--files-url {files_url}: name a bucket, s3://BUCKET/PREFIX")
        return Bucket(parsed.netloc, parsed.path.strip("/"))
    if "://" in files_url:
        raise FileStoreError(
            f"--files-url {files_url}: give a directory, file://DIR or s3://BUCKET/PREFIX"
        )
    return Path(files_url).expanduser()
