"""The service answers a library error with a status chosen by its class, in the problem
shape, and with a detail built from the error's fields: a server path never reaches the
client, whatever the message held."""

from __future__ import annotations

import errno

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from archivist.errors import (
    ArchivistError,
    ChatModelAPIError,
    ConfigurationError,
    DocumentNotFoundError,
    DocumentParseError,
    EmbeddingAPIError,
    InvalidArgumentError,
    InvalidVectorError,
    StoreLockedError,
    TransientEmbeddingError,
    UnsupportedFileTypeError,
)
from archivist.service.errors import (
    Conflict,
    InvalidRequest,
    KBExistsError,
    NotFound,
    QuotaExceeded,
    UploadRejected,
)
from archivist.service.problems import PROBLEM_JSON, install_problem_handlers, public_detail

SECRET = "/srv/archivist-home/service/files/tenant-7"

CASES: list[tuple[ArchivistError, int, str]] = [
    (DocumentNotFoundError("gone", document_id="d-1", knowledge_base="t7:kb"), 404, "'d-1'"),
    (
        UnsupportedFileTypeError(
            "media type 'video/x-matroska' is not supported",
            path=f"{SECRET}/movie.mkv",
            supported=[".md"],
        ),
        415,
        "movie.mkv: media type 'video/x-matroska' is not supported",
    ),
    (DocumentParseError("corrupt PDF", path=f"{SECRET}/a.pdf"), 422, "a.pdf: corrupt PDF"),
    (InvalidArgumentError("top_k must be a positive int", argument="top_k"), 422, "top_k"),
    (StoreLockedError(SECRET, "PID 4242"), 503, "busy"),
    (TransientEmbeddingError("overloaded", status=529, retry_after=2.4), 503, "overloaded"),
    (EmbeddingAPIError(400, "input rejected", model="emb"), 502, "input rejected"),
    (InvalidVectorError("emb: vector 0 holds nan", problem="holds nan"), 502, "nan"),
    (ChatModelAPIError(500, "upstream broke"), 502, "upstream broke"),
    (ConfigurationError(f"{SECRET}/settings.json: bad"), 500, "ConfigurationError"),
    (QuotaExceeded("quota: acme has 3 documents", quota="documents"), 403, "3 documents"),
    (UploadRejected(413, "a.pdf: larger than the limit"), 413, "a.pdf: larger"),
    (UploadRejected(415, "tool.exe: unsupported file type"), 415, "tool.exe"),
    (KBExistsError("knowledge base 'kb' already exists"), 409, "'kb' already exists"),
    (NotFound("no knowledge base 'kb'"), 404, "no knowledge base 'kb'"),
    (Conflict("no chat model is configured"), 409, "no chat model"),
    (InvalidRequest("ids: give between 1 and 1000 document ids"), 422, "ids: give"),
]


@pytest.fixture(scope="module")
def http() -> TestClient:
    app = FastAPI()
    install_problem_handlers(app)

    @app.get("/raise/{index}")
    async def raise_one(index: int) -> None:
        raise CASES[index][0]

    return TestClient(app, raise_server_exceptions=False)


@pytest.mark.parametrize("index", range(len(CASES)), ids=[type(c[0]).__name__ for c in CASES])
def test_the_status_follows_the_class_and_no_path_leaks(http: TestClient, index: int) -> None:
    _, status, shown = CASES[index]
    response = http.get(f"/raise/{index}")
    assert response.status_code == status
    assert response.headers["content-type"] == PROBLEM_JSON
    problem = response.json()
    assert problem["status"] == status and shown in problem["detail"]
    assert SECRET not in response.text and "PID" not in response.text


def test_a_provider_asking_to_wait_passes_retry_after_on(http: TestClient) -> None:
    index = next(i for i, c in enumerate(CASES) if isinstance(c[0], TransientEmbeddingError))
    assert http.get(f"/raise/{index}").headers["retry-after"] == "2"


def test_an_upload_refused_as_too_large_closes_the_connection(http: TestClient) -> None:
    index = next(i for i, c in enumerate(CASES) if c[1] == 413)
    assert http.get(f"/raise/{index}").headers["connection"] == "close"


def test_anything_else_stays_a_500_without_its_message() -> None:
    app = FastAPI()
    install_problem_handlers(app)

    @app.get("/bug")
    async def bug() -> None:
        raise KeyError(SECRET)

    response = TestClient(app, raise_server_exceptions=False).get("/bug")
    assert response.status_code == 500 and SECRET not in response.text


@pytest.mark.parametrize(
    ("error", "shown"),
    [
        (DocumentParseError("empty", path=f"{SECRET}/x.txt"), "x.txt: empty"),
        (FileNotFoundError(errno.ENOENT, "No such file", f"{SECRET}/y.pdf"), "y.pdf: No such file"),
        (PermissionError(errno.EACCES, "Permission denied"), "Permission denied"),
        (ValueError(f"{SECRET}/z.md is bad"), "ValueError; the service log has the details"),
    ],
)
def test_a_failed_documents_error_is_rendered_from_fields(error: Exception, shown: str) -> None:
    assert public_detail(error) == shown
