"""Where the service keeps uploaded files: a local directory, or an S3-compatible bucket.

Every replica and worker of one deployment opens the same store (`--files-url`). A file is
addressed by its key, the relative path `KB_ID/UPLOAD_ID/NAME` recorded with the document.

Each key also has a *local path*: where the file is (directory store) or is staged while it
is received or indexed (S3 store). Document ids derive from that path (see
`archivist.rag.knowledge.ingest.document_id_for`), so every process of a deployment must see
the same local path for a key: the same mounted directory for a directory store, the same
staging directory (`--files-url s3://...` stages under the system temporary directory by default)
for S3.

S3 goes through boto3: the AWS SDK itself, maintained by AWS, reading the standard
environment (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_REGION`, `AWS_ENDPOINT_URL`
for MinIO, R2, Ceph or moto), with multipart transfers for large files. Its calls block, like
the rest of the service's file handling, which runs in worker threads.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import uuid
from abc import ABC, abstractmethod
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO

from archivist.service.errors import FileStoreError
from archivist.service.files_url import files_location

DOWNLOAD_BLOCK = 1 << 20
"""Bytes per read when streaming a stored file out."""


def check_key(key: str) -> PurePosixPath:
    """`key` as a relative path without '..', or ValueError: keys come from the catalog, but
    a store never reaches outside itself."""
    path = PurePosixPath(key)
    if not key or path.is_absolute() or ".." in path.parts or "\\" in key:
        raise ValueError(f"invalid file key {key!r}")
    return path


class FileStore(ABC):
    """Uploaded files by key, shared by every process of a deployment."""

    url: str
    """The `--files-url` this store was opened from (for messages)."""

    @abstractmethod
    def local_path(self, key: str) -> Path:
        """The local path of `key`: where an upload is received and a worker reads it."""

    @abstractmethod
    def save(self, key: str) -> None:
        """Make the file received at `local_path(key)` durable in the store (and, for a
        remote store, remove the local copy)."""

    @abstractmethod
    @contextmanager
    def fetched(self, key: str) -> Iterator[Path]:
        """The file of `key` at `local_path(key)` for the block's duration (a remote store
        downloads it and removes it afterwards); FileNotFoundError if the store lacks it."""

    @abstractmethod
    def open(self, key: str) -> tuple[BinaryIO, int] | None:
        """A binary reader of the file of `key` and its size, or None if it is gone."""

    @abstractmethod
    def delete_folder(self, key: str) -> None:
        """Delete every file under folder `key` (an upload's or a knowledge base's),
        including the parts of an upload to it that was cut short."""

    def prepare(self) -> None:
        """Check the store is reachable and create what it needs (at start-up)."""
        return None


class LocalFileStore(FileStore):
    """Files under one directory (a local disk, or a network file system every machine
    mounts at the same path)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.url = str(root)

    def prepare(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)

    def local_path(self, key: str) -> Path:
        return self.root / check_key(key)

    def save(self, key: str) -> None:
        return None  # received in place, fsynced by the upload handler

    @contextmanager
    def fetched(self, key: str) -> Iterator[Path]:
        path = self.local_path(key)
        if not path.is_file():
            raise FileNotFoundError(f"{key}: not in the file store")
        yield path

    def open(self, key: str) -> tuple[BinaryIO, int] | None:
        path = self.local_path(key)
        try:
            reader = open(path, "rb")  # noqa: SIM115 - the caller closes it
        except (FileNotFoundError, IsADirectoryError):
            return None
        return reader, os.fstat(reader.fileno()).st_size

    def delete_folder(self, key: str) -> None:
        shutil.rmtree(self.local_path(key), ignore_errors=True)


class S3FileStore(FileStore):
    """Files as objects under `prefix` in an S3 bucket; received and indexed files are staged
    on local disk under `staging` only while they are being handled."""

    def __init__(self, bucket: str, prefix: str, staging: Path, client: Any = None) -> None:
        self.bucket = bucket
        self.prefix = prefix.strip("/")
        self.staging = staging
        self.url = f"s3://{bucket}/{self.prefix}" if self.prefix else f"s3://{bucket}"
        self._client = client

    @property
    def client(self) -> Any:
        """The boto3 S3 client, made on first use from the standard AWS environment."""
        if self._client is None:
            try:
                import boto3
            except ImportError:
                raise FileStoreError(
                    f"--files-url {self.url} needs boto3: pip install 'archivist[s3]'"
                ) from None
            self._client = boto3.client("s3")
        return self._client

    def _object(self, key: str) -> str:
        name = str(check_key(key))
        return f"{self.prefix}/{name}" if self.prefix else name

    def prepare(self) -> None:
        self.staging.mkdir(parents=True, exist_ok=True)
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            self.client.head_bucket(Bucket=self.bucket)
        except (BotoCoreError, ClientError) as exc:
            raise FileStoreError(
                f"--files-url {self.url}: the bucket is not usable: {exc}"
            ) from exc

    def local_path(self, key: str) -> Path:
        return self.staging / check_key(key)

    def save(self, key: str) -> None:
        path = self.local_path(key)
        self.client.upload_file(str(path), self.bucket, self._object(key))
        _remove_staged(path, self.staging)

    @contextmanager
    def fetched(self, key: str) -> Iterator[Path]:
        from botocore.exceptions import ClientError

        path = self.local_path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{uuid.uuid4().hex}.part")
        try:
            self.client.download_file(self.bucket, self._object(key), str(partial))
        except ClientError as exc:
            partial.unlink(missing_ok=True)
            if _is_missing(exc):
                self._bucket_answers()  # a lost bucket is an outage, not a lost file
                raise FileNotFoundError(f"{key}: not in {self.url}") from None
            raise
        os.replace(partial, path)
        try:
            yield path
        finally:
            _remove_staged(path, self.staging)

    def _bucket_answers(self) -> None:
        """Return if the bucket is there, else raise S3's NoSuchBucket (a download's HEAD
        answers a plain 404 for a missing bucket and a missing key alike)."""
        self.client.list_objects_v2(Bucket=self.bucket, MaxKeys=1)

    def open(self, key: str) -> tuple[BinaryIO, int] | None:
        from botocore.exceptions import ClientError

        try:
            found = self.client.get_object(Bucket=self.bucket, Key=self._object(key))
        except ClientError as exc:
            if _is_missing(exc):
                return None
            raise
        return found["Body"], int(found["ContentLength"])

    def delete_folder(self, key: str) -> None:
        folder = self._object(key).rstrip("/") + "/"
        shutil.rmtree(self.local_path(key), ignore_errors=True)  # whatever S3 answers
        paginator = self.client.get_paginator("list_objects_v2")
        for page in paginator.paginate(Bucket=self.bucket, Prefix=folder):
            objects = [{"Key": item["Key"]} for item in page.get("Contents", [])]
            if objects:
                self.client.delete_objects(Bucket=self.bucket, Delete={"Objects": objects})
        # Parts of a multipart upload cut short are stored (and billed) until aborted.
        unfinished = self.client.get_paginator("list_multipart_uploads")
        for page in unfinished.paginate(Bucket=self.bucket, Prefix=folder):
            for upload in page.get("Uploads", []):
                self.client.abort_multipart_upload(
                    Bucket=self.bucket, Key=upload["Key"], UploadId=upload["UploadId"]
                )


def _is_missing(error: Any) -> bool:
    code = str(error.response.get("Error", {}).get("Code", ""))
    return code in {"404", "NoSuchKey", "NotFound"}


def _remove_staged(path: Path, staging: Path) -> None:
    """Remove a staged file and the folders above it that it leaves empty."""
    path.unlink(missing_ok=True)
    folder = path.parent
    while folder != staging and staging in folder.parents:
        with contextlib.suppress(OSError):
            folder.rmdir()  # only when empty
        folder = folder.parent


def open_file_store(files_url: str | None, default_dir: Path) -> FileStore:
    """The store `files_url` names (see `files_location`, which raises FileStoreError for a
    URL of neither kind); an S3 store stages files under the temporary directory (or
    `$ARCHIVIST_S3_STAGING`)."""
    where = files_location(files_url, default_dir)
    if isinstance(where, Path):
        return LocalFileStore(where)
    staging_root = os.environ.get("ARCHIVIST_S3_STAGING") or os.path.join(
        tempfile.gettempdir(), "archivist-s3"
    )
    return S3FileStore(where.name, where.prefix, Path(staging_root) / where.name / where.prefix)
