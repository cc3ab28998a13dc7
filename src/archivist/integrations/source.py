"""Where a framework's retriever gets its passages: a local `KnowledgeBase` or a knowledge base
of a running Archivist service, behind one `PassageSource` protocol.

A retriever of LangChain, LlamaIndex or Haystack holds a `PassageSource` and a
`SearchOptions`, calls `search` (or `search_sync` from synchronous code) and turns each
`Passage` into its framework's document. Nothing here imports a framework, and the HTTP
source speaks the service's JSON without importing the service.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections.abc import Coroutine, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, get_args, runtime_checkable
from urllib.parse import quote

import httpx
from pydantic import ValidationError

from archivist._http.clock import SYSTEM_CLOCK
from archivist._http.retry import RetryPolicy, call_with_retries, should_retry
from archivist._http.session import HttpSession
from archivist.errors import (
    ConfigurationError,
    InvalidArgumentError,
    StoreError,
)
from archivist.message import TextBlock
from archivist.rag.knowledge.citation import citation
from archivist.rag.store.base import SearchMode
from archivist.rag.store.search_filter import SearchFilter
from archivist.validation import (
    check_kb_name,
    check_optional_positive_int,
    check_positive_int,
)

if TYPE_CHECKING:
    from archivist.rag.knowledge.knowledge_base import KnowledgeBase
    from archivist.rag.record import VectorSearchResult

__all__ = [
    "LocalSource",
    "Passage",
    "PassageSource",
    "SearchOptions",
    "ServiceSource",
    "ServiceUnavailableError",
    "search_sync",
]

T = TypeVar("T")

_SERVICE_FILTER_NAMES = {"path": "paths", "type": "types"}
"""The service's names of `SearchFilter` fields, accepted in a filter's dict form too."""


@dataclass(frozen=True)
class Passage:
    """One chunk a search found: its text, how likely it is relevant, and where it is from.

    `relevance` is the estimated probability (0..1) that the passage is relevant, comparable
    across queries (None from a store that cannot tell); `source` is the file name and
    `citation` the label to cite ("guide.pdf, page 4, chunk 7"); `page` is the chunk's page
    when its file has pages; `metadata` is the chunk's metadata.
    """

    text: str
    relevance: float | None
    document_id: str
    source: str
    chunk_index: int
    page: int | None
    citation: str
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def id(self) -> str:
        """The same for the same chunk on every search, so frameworks that deduplicate by id
        see one chunk as one item."""
        return f"{self.document_id}:{self.chunk_index}"

    def labelled_metadata(self) -> dict[str, Any]:
        """The chunk's metadata with where the passage is from (`source`, `page`,
        `document_id`, `chunk_index`, `citation`), those winning over chunk keys of the same
        names."""
        return {
            **self.metadata,
            "source": self.source,
            "page": self.page,
            "document_id": self.document_id,
            "chunk_index": self.chunk_index,
            "citation": self.citation,
        }


@dataclass(frozen=True)
class SearchOptions:
    """How a retriever searches: the `top_k` best passages, in `mode` ("hybrid", "dense",
    "sparse"; None is the knowledge base's default, hybrid where it can), narrowed by `filters`,
    at most `max_per_document` from one document, none below `min_relevance` (0..1).

    `filters` is a `SearchFilter` or its dict form (`paths`, `types`, `since`, `where`; the
    service's `path` and `type` are read as `paths` and `types`); it is checked here and
    held as a `SearchFilter`, so a bad filter fails when the retriever is made.
    """

    top_k: int = 5
    mode: SearchMode | None = None
    filters: SearchFilter | Mapping[str, Any] | None = None
    max_per_document: int | None = None
    min_relevance: float | None = None

    def __post_init__(self) -> None:
        check_positive_int(self.top_k, "top_k")
        if self.mode is not None and self.mode not in get_args(SearchMode):
            raise InvalidArgumentError(
                f"mode must be one of {', '.join(get_args(SearchMode))} or None, got {self.mode!r}",
                argument="mode",
            )
        check_optional_positive_int(self.max_per_document, "max_per_document")
        relevance = self.min_relevance
        if relevance is not None and (
            not isinstance(relevance, int | float)
            or isinstance(relevance, bool)
            or not 0 <= relevance <= 1
        ):
            raise InvalidArgumentError(
                f"min_relevance must be a number from 0 to 1 or None, got {relevance!r}",
                argument="min_relevance",
            )
        object.__setattr__(self, "filters", _search_filter(self.filters))

    @property
    def search_filter(self) -> SearchFilter | None:
        """`filters` as the store-neutral value (None: everything)."""
        assert self.filters is None or isinstance(self.filters, SearchFilter)
        return self.filters


def _search_filter(filters: object) -> SearchFilter | None:
    if filters is None or isinstance(filters, SearchFilter):
        return filters
    if not isinstance(filters, Mapping):
        raise InvalidArgumentError(
            f"filters must be a SearchFilter, a dict or None, got {type(filters).__name__}",
            argument="filters",
        )
    renamed = {_SERVICE_FILTER_NAMES.get(key, key): value for key, value in filters.items()}
    try:
        return SearchFilter.model_validate(renamed)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in problem['loc']) or 'filters'}: {problem['msg']}"
            for problem in error.errors()
        )
        raise InvalidArgumentError(f"filters: {problems}", argument="filters") from None


@runtime_checkable
class PassageSource(Protocol):
    """Anything a retriever can search: a local knowledge base or one of a service."""

    async def search(self, query: str, options: SearchOptions) -> list[Passage]:
        """The passages best matching `query`, best first."""
        ...


class LocalSource:
    """Searches a `KnowledgeBase` in this process; the caller keeps its store open (`async
    with store:`) for as long as the source is used.

    Hits without text (a picture's chunk) are left out: a retriever hands on text.
    """

    def __init__(self, knowledge_base: KnowledgeBase) -> None:
        self.knowledge_base = knowledge_base

    def __repr__(self) -> str:
        return f"LocalSource({self.knowledge_base!r})"

    async def search(self, query: str, options: SearchOptions) -> list[Passage]:
        """`KnowledgeBase.search` with `options`, as passages."""
        results = await self.knowledge_base.search(
            query,
            options.top_k,
            mode=options.mode,
            max_per_document=options.max_per_document,
            search_filter=options.search_filter,
            min_relevance=options.min_relevance,
        )
        return [passage for result in results if (passage := _passage_of(result)) is not None]


def _passage_of(result: VectorSearchResult) -> Passage | None:
    chunk = result.chunk
    if not isinstance(chunk.content, TextBlock):
        return None
    return Passage(
        text=chunk.content.text,
        relevance=result.relevance,
        document_id=result.document_id,
        source=chunk.source,
        chunk_index=chunk.chunk_index,
        page=_page(chunk.metadata),
        citation=citation(chunk),
        metadata=dict(chunk.metadata),
    )


def _page(metadata: Mapping[str, Any]) -> int | None:
    page = metadata.get("page")
    return page if isinstance(page, int) and not isinstance(page, bool) else None


class ServiceSource:
    """Searches the knowledge base `knowledge_base` of an Archivist service at `url` through
    its HTTP API (`POST /v1/knowledge-bases/{name}/search`), as the tenant of `api_key`.

    Failures are Archivist errors: a refused key (401, 403) or an unknown knowledge base (404)
    a `ConfigurationError` naming the setting, a refused request (400, 413, 422) an
    `InvalidArgumentError`, an unreachable service a `StoreError`; each carries the service's
    own `detail`. A busy or failing service (429, 5xx) is tried again as `retry` says (after
    the `Retry-After` it asks for), then is a `ServiceUnavailableError`. The service searches
    in its default mode, so `SearchOptions.mode` must be None here.

    One connection pool is kept, until `aclose()`, for the event loop that searches first (or
    next, once that loop has closed); a search from another loop while that one is open (a
    sync call made inside it, see `search_sync`) uses a connection of its own. A given
    `http_client` is used for every search instead, and never closed here.
    """

    def __init__(
        self,
        url: str,
        api_key: str,
        knowledge_base: str,
        *,
        timeout: float = 30.0,
        retry: RetryPolicy | None = None,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise InvalidArgumentError(
                f"url must be the service's http(s):// address, got {url!r}", argument="url"
            )
        if not isinstance(api_key, str) or not api_key.strip():
            raise InvalidArgumentError("api_key must be a non-empty string", argument="api_key")
        try:
            self.knowledge_base = check_kb_name(knowledge_base)
        except ValueError as error:
            raise InvalidArgumentError(str(error), argument="knowledge_base") from None
        self.url = url.rstrip("/")
        self._api_key = api_key
        self._endpoint = f"{self.url}/v1/knowledge-bases/{quote(self.knowledge_base)}/search"
        self._timeout = timeout
        self._retry = retry if retry is not None else RetryPolicy()
        self._borrowed = http_client is not None
        self._session = self._session_over(http_client)
        self._home: asyncio.AbstractEventLoop | None = None
        self._home_lock = threading.Lock()

    def __repr__(self) -> str:  # never the key
        return f"ServiceSource(url={self.url!r}, knowledge_base={self.knowledge_base!r})"

    async def search(self, query: str, options: SearchOptions) -> list[Passage]:
        """One search request with `options` as its body's fields."""
        if options.mode is not None:
            raise InvalidArgumentError(
                f"the service searches in its default mode; mode must be None, "
                f"got {options.mode!r}",
                argument="mode",
            )
        body = _request_body(query, options)
        loop = asyncio.get_running_loop()
        with self._home_lock:  # threads searching side by side (a framework's batch) agree
            if self._home is None or self._home.is_closed():
                self._home = loop
            home = self._home
        if loop is home or self._borrowed:
            answer = await self._post(self._session, body)
        else:  # the pool is another loop's, which may be blocked waiting for this very call
            async with httpx.AsyncClient(timeout=self._timeout) as client:
                answer = await self._post(self._session_over(client), body)
        try:
            return [_passage_of_hit(hit) for hit in answer["hits"] if hit.get("text") is not None]
        except (TypeError, KeyError, AttributeError) as error:
            raise StoreError(
                f"{self.url}: the search answer is not the service's shape "
                f"({type(error).__name__}: {error})"
            ) from None

    async def aclose(self) -> None:
        """Close the connection pool (the source may still be used: it opens a new one)."""
        await self._session.aclose()

    def _session_over(self, client: httpx.AsyncClient | None) -> HttpSession:
        """A session through `client`, or (None) through a pool of its own."""
        return HttpSession(
            timeout=self._timeout,
            http_client=client,
            now=time.time,
            errors=_ServiceErrors(self.url, self.knowledge_base),
        )

    async def _post(self, session: HttpSession, body: dict[str, Any]) -> Any:
        headers = {"Authorization": f"Bearer {self._api_key}"}
        return await call_with_retries(
            lambda: session.post_json(self._endpoint, body, headers),
            policy=self._retry,
            clock=SYSTEM_CLOCK,
            service=f"the Archivist service at {self.url}",
            retryable=lambda error: isinstance(error, ServiceUnavailableError),
        )


class ServiceUnavailableError(StoreError):
    """The service could not search now (429 too many requests, 5xx) and retries did not
    help; `status` is its answer's, `retry_after` the seconds it asked to wait, if it did."""

    def __init__(self, message: str, *, status: int, retry_after: float | None) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after


def _request_body(query: str, options: SearchOptions) -> dict[str, Any]:
    body: dict[str, Any] = {"query": query, "top_k": options.top_k}
    if options.max_per_document is not None:
        body["max_per_document"] = options.max_per_document
    if options.min_relevance is not None:
        body["min_relevance"] = options.min_relevance
    chosen = options.search_filter
    if chosen is not None:
        wire = chosen.model_dump(mode="json", exclude_defaults=True)
        for field_name, service_name in (("paths", "path"), ("types", "type")):
            if field_name in wire:
                body[service_name] = wire.pop(field_name)
        if "where" in wire:
            wire["where"] = {
                key: {k: v for k, v in value.items() if v is not None}
                if isinstance(value, dict)
                else value
                for key, value in wire["where"].items()
            }
        body.update(wire)
    return body


def _passage_of_hit(hit: Mapping[str, Any]) -> Passage:
    metadata = dict(hit.get("metadata") or {})
    return Passage(
        text=hit["text"],
        relevance=hit.get("relevance"),
        document_id=hit["document_id"],
        source=hit["filename"],
        chunk_index=hit["chunk_index"],
        page=_page(metadata),
        citation=hit["citation"],
        metadata=metadata,
    )


class _ServiceErrors:
    """Names a service's failed search as the Archivist error a caller can act on."""

    def __init__(self, url: str, knowledge_base: str) -> None:
        self.url = url
        self.knowledge_base = knowledge_base

    def unreachable(self, url: str, error: httpx.TransportError, timeout: float) -> Exception:
        if isinstance(error, httpx.TimeoutException):
            reason = f"no answer within {timeout:g}s"
        else:
            reason = f"{type(error).__name__}: {error}"
        return StoreError(f"the Archivist service at {self.url} cannot be reached: {reason}")

    def rejected(self, response: httpx.Response, retry_after: float | None) -> Exception:
        status = response.status_code
        said = f"HTTP {status}: {_detail(response)}"
        if status in (401, 403):
            return ConfigurationError(
                f"the Archivist service at {self.url} refused the API key ({said})",
                setting="api_key",
            )
        if status == 404:
            return ConfigurationError(
                f"the Archivist service at {self.url} has no knowledge base "
                f"{self.knowledge_base!r} for this API key ({said})",
                setting="knowledge_base",
            )
        if status in (400, 413, 422):
            return InvalidArgumentError(
                f"the Archivist service at {self.url} refused the search ({said})"
            )
        message = f"the Archivist service at {self.url} could not search {self.knowledge_base!r}"
        if should_retry(status, None):
            return ServiceUnavailableError(
                f"{message} ({said})", status=status, retry_after=retry_after
            )
        return StoreError(f"{message} ({said})")

    def malformed(self, url: str, response: httpx.Response) -> Exception:
        return StoreError(
            f"the Archivist service at {self.url} answered the search with no JSON: "
            f"{response.text[:200]!r}"
        )


def _detail(response: httpx.Response) -> str:
    """The problem's `detail` (and its field errors), else the start of the body."""
    with contextlib.suppress(ValueError, TypeError, AttributeError):
        problem = json.loads(response.content)
        detail = str(problem.get("detail") or problem.get("title") or "")
        errors = problem.get("errors") or []
        fields = "; ".join(
            f"{'.'.join(str(part) for part in error.get('loc', []))}: {error.get('msg')}"
            for error in errors
            if isinstance(error, dict)
        )
        if detail or fields:
            return f"{detail} ({fields})" if fields else detail
    return response.text[:300] or response.reason_phrase or "no detail"


def search_sync(
    source: PassageSource, query: str, options: SearchOptions | None = None
) -> list[Passage]:
    """`source.search(query, options)` from synchronous code.

    With no event loop running in this thread the search runs in a new loop here; with one
    running (sync code called from async code, as a framework's `invoke` inside a notebook or
    an async app) it runs in a worker thread with its own loop, since this thread's loop is
    blocked until the answer comes. A `LocalSource` may be searched so: its store may have
    been opened in another loop.
    """
    return run_sync(source.search(query, options or SearchOptions()))


def run_sync(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run `coroutine` to its end from synchronous code, as `search_sync` does."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    with ThreadPoolExecutor(1, thread_name_prefix="archivist-sync") as worker:
        return worker.submit(asyncio.run, coroutine).result()
