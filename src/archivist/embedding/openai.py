"""`OpenAIEmbeddingModel`: the `/embeddings` wire format of OpenAI and compatible servers."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import httpx

from archivist._http.clock import Clock
from archivist.credential import OpenAICredential
from archivist.embedding import _wire
from archivist.embedding._http_errors import embedding_session
from archivist.embedding.base import BatchItem, EmbeddingModelBase, InputType
from archivist.embedding.response import EmbeddingResponse
from archivist.errors import InvalidArgumentError


class OpenAIEmbeddingModel(EmbeddingModelBase):
    """Embeds text through any OpenAI-compatible `/embeddings` endpoint.

    Covers OpenAI, vLLM, Ollama, llama.cpp server and DashScope compatible mode. The base URL
    is `base_url`, else the credential's (which falls back to `OPENAI_BASE_URL`, then
    OpenAI). `dimensions` is sent unless `send_dimensions=False` (for servers and models that
    reject it). The API has no query/document switch, so `query_prefix` / `document_prefix`
    are prepended instead for models that expect them (e5, nomic, ...). DashScope's
    compatible mode takes at most 10 inputs per request: pass `batch_size=10` there.
    """

    credential: OpenAICredential

    def __init__(
        self,
        model: str,
        dimensions: int,
        *,
        credential: OpenAICredential | None = None,
        base_url: str | None = None,
        send_dimensions: bool = True,
        query_prefix: str = "",
        document_prefix: str = "",
        batch_size: int = 64,
        max_concurrency: int = 4,
        max_retries: int = 5,
        retry_base_delay: float = 0.5,
        retry_max_delay: float = 60.0,
        timeout: float = 60.0,
        http_client: httpx.AsyncClient | None = None,
        clock: Clock | None = None,
    ) -> None:
        if credential is not None and not isinstance(credential, OpenAICredential):
            raise TypeError(
                f"credential must be an OpenAICredential, got {type(credential).__name__}"
            )
        super().__init__(
            model=model,
            dimensions=dimensions,
            supports_multimodal=False,
            batch_size=batch_size,
            max_concurrency=max_concurrency,
            max_retries=max_retries,
            retry_base_delay=retry_base_delay,
            retry_max_delay=retry_max_delay,
            clock=clock,
        )
        self.credential = credential if credential is not None else OpenAICredential()
        if base_url is not None and not base_url.startswith(("http://", "https://")):
            raise InvalidArgumentError(
                f"base_url must start with http:// or https://, got {base_url!r}",
                argument="base_url",
            )
        self.base_url = (base_url or self.credential.base_url).rstrip("/")
        self.send_dimensions = send_dimensions
        self.query_prefix = query_prefix
        self.document_prefix = document_prefix
        self._session = embedding_session(
            self, _read_error, timeout=timeout, http_client=http_client
        )

    @property
    def cache_identity(self) -> str:
        return f"{super().cache_identity}|{self.query_prefix!r}|{self.document_prefix!r}"

    @property
    def endpoint(self) -> str:
        """The URL this model posts to."""
        return self.base_url + "/embeddings"

    async def _embed_batch(
        self, batch: Sequence[BatchItem], input_type: InputType
    ) -> EmbeddingResponse:
        prefix = self.query_prefix if input_type == "query" else self.document_prefix
        body: dict[str, Any] = {
            "model": self.model,
            "input": [prefix + item for item in batch if isinstance(item, str)],
            "encoding_format": "float",
        }
        if self.send_dimensions:
            body["dimensions"] = self.dimensions
        headers = {"Content-Type": "application/json", **self.credential.headers()}
        answer = await self._session.post_json(self.endpoint, body, headers)
        return _wire.response(
            answer,
            _wire.field(answer, "data", self.model, "response"),
            index_key="index",
            expected=len(batch),
            model=self.model,
            where="data",
            token_keys=("prompt_tokens", "total_tokens"),
        )

    async def aclose(self) -> None:
        """Close the HTTP client this model opened (a caller-given `http_client` stays open)."""
        await self._session.aclose()


def _read_error(body: Any) -> tuple[str | None, str | None]:
    """OpenAI errors look like `{"error": {"message": "...", "type": "...", "code": ...}}`."""
    if not isinstance(body, dict):
        return None, None
    error = body.get("error", body)
    if isinstance(error, str):  # some compatible servers answer {"error": "text"}
        return None, error
    if not isinstance(error, dict):
        return None, None
    code = error.get("code") or error.get("type")
    message = error.get("message")
    return (str(code) if code else None), (str(message) if message else None)
