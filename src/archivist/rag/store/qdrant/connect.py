"""Which Qdrant engine a `QdrantStore` runs on: Qdrant Edge in-process (`:memory:`, `path=`)
or a server through qdrant-client (`url=`), with the layout options checked."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from archivist._util.extras import require
from archivist.errors import InvalidArgumentError
from archivist.rag.store.core.datatype import check_vector_datatype
from archivist.rag.store.qdrant.backend import QdrantBackend, StoreLayout
from archivist.rag.store.qdrant.edge.backend import EdgeBackend
from archivist.rag.store.qdrant.edge.collection import SEARCH_THREADS
from archivist.rag.store.qdrant.edge.open_shards import MAX_OPEN_COLLECTIONS
from archivist.rag.store.qdrant.edge.optimizer import SEGMENT_POINTS
from archivist.rag.store.qdrant.filter import metadata_path
from archivist.validation import check_optional_positive_int

if TYPE_CHECKING:
    from qdrant_client import AsyncQdrantClient


def engine_for(
    location: str | None,
    url: str | None,
    path: str | os.PathLike[str] | None,
    api_key: str | None,
    client_kwargs: Mapping[str, Any] | None,
    auto_optimize_threshold: int | None,
    layout: StoreLayout,
    search_threads: int | None,
    max_open_collections: int | None,
) -> QdrantBackend:
    """The engine `QdrantStore(...)`'s arguments name (see its docstring), each checked."""
    given = [
        name
        for name, value in (("location", location), ("url", url), ("path", path))
        if value is not None
    ]
    if len(given) != 1:
        raise InvalidArgumentError(
            f"give exactly one of location, url or path; got {', '.join(given) or 'none'}",
            argument="location",
        )
    check_optional_positive_int(auto_optimize_threshold, "auto_optimize_threshold")
    segment_points = auto_optimize_threshold or SEGMENT_POINTS
    if location is not None:
        if isinstance(location, str) and location.startswith(("http://", "https://")):
            url = location
        elif location != ":memory:":
            raise InvalidArgumentError(
                f"location must be ':memory:' or an http(s):// URL, got {location!r}",
                argument="location",
            )
    if url is None:
        if api_key is not None or client_kwargs is not None:
            raise InvalidArgumentError(
                "api_key and client_kwargs apply only to a url store", argument="api_key"
            )
        check_optional_positive_int(search_threads, "search_threads")
        check_optional_positive_int(max_open_collections, "max_open_collections")
        directory = None if path is None else Path(path)
        return EdgeBackend(
            directory,
            segment_points,
            auto_optimize_threshold is not None,
            layout,
            search_threads or SEARCH_THREADS,
            max_open_collections or MAX_OPEN_COLLECTIONS,
        )
    for name, value in (
        ("search_threads", search_threads),
        ("max_open_collections", max_open_collections),
    ):
        if value is not None:
            raise InvalidArgumentError(
                f"{name} applies only to an in-process store (path= or ':memory:'), "
                "not to a server",
                argument=name,
            )
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise InvalidArgumentError(f"url must be an http(s):// URL, got {url!r}", argument="url")
    require("server", "qdrant_client", "QdrantStore(url=...)")
    address, options = url, dict(client_kwargs or {})

    def connect() -> AsyncQdrantClient:
        from qdrant_client import AsyncQdrantClient

        return AsyncQdrantClient(url=address, api_key=api_key, **options)

    return client_backend(connect, layout, owns_client=True)


def store_layout(
    quantization: object, vector_datatype: object, tenant_key: object, tenants_only: object
) -> StoreLayout:
    """The checked layout options of the collections a store creates."""
    if quantization is not None and quantization != "int8":
        raise InvalidArgumentError(
            f"quantization must be 'int8' or None; got {quantization!r}", argument="quantization"
        )
    datatype = check_vector_datatype(vector_datatype)
    if tenant_key is not None and (not isinstance(tenant_key, str) or not tenant_key):
        raise InvalidArgumentError(
            f"tenant_key must be a metadata key or None; got {tenant_key!r}", argument="tenant_key"
        )
    if not isinstance(tenants_only, bool):
        raise InvalidArgumentError(
            f"tenants_only must be a bool; got {tenants_only!r}", argument="tenants_only"
        )
    if tenants_only and tenant_key is None:
        raise InvalidArgumentError("tenants_only needs a tenant_key", argument="tenants_only")
    return StoreLayout(
        quantization="int8" if quantization is not None else None,
        vector_datatype=datatype,
        tenant_key=None if tenant_key is None else metadata_path(tenant_key),
        tenants_only=tenants_only,
    )


def client_backend(
    connect: Callable[[], AsyncQdrantClient], layout: StoreLayout, *, owns_client: bool
) -> QdrantBackend:
    """A qdrant-client backend over the client `connect` makes (owned: closed with it)."""
    # Imported on demand: qdrant-client takes about two seconds to import.
    from archivist.rag.store.qdrant.client.backend import ClientBackend

    return ClientBackend(connect, owns_client, layout)
