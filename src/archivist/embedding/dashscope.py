"""`DashScopeEmbeddingModel`: DashScope's native text and multimodal embedding HTTP APIs."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import httpx

from archivist._http.clock import Clock
from archivist.credential import DashScopeCredential
from archivist.embedding import _wire
from archivist.embedding._http_errors import embedding_session
from archivist.embedding.base import BatchItem, EmbeddingInput, EmbeddingModelBase, InputType
from archivist.embedding.errors import EmbeddingAPIError
from archivist.embedding.response import EmbeddingResponse
from archivist.errors import InvalidArgumentError
from archivist.message import Base64Source

TEXT_PATH = "/services/embeddings/text-embedding/text-embedding"
MULTIMODAL_PATH = "/services/embeddings/multimodal-embedding/multimodal-embedding"

_MULTIMODAL_NAME = re.compile(
    r"^(multimodal-embedding-.*|tongyi-embedding-vision-.*|qwen[\w.-]*-vl-embedding.*)$"
)
_FIXED_DIMENSION_MODELS = frozenset(
    {"text-embedding-v1", "text-embedding-v2", "multimodal-embedding-v1"}
)
_MEDIA_KEYS = {"image": "image", "video": "video"}


def is_multimodal_model(model: str) -> bool:
    """True for DashScope's multimodal embedding models, which also embed images and video."""
    return bool(_MULTIMODAL_NAME.match(model))


class DashScopeEmbeddingModel(EmbeddingModelBase):
    """Embeds through DashScope (Alibaba Cloud Model Studio) over its native HTTP API.

    Text models (`text-embedding-v4` ...) are told `text_type` = query/document and the
    requested `dimension`. Models named `multimodal-embedding-*`, `tongyi-embedding-vision-*`
    or `qwen*-vl-embedding` use the multimodal endpoint and embed image/video DataBlocks too
    (a base64 image becomes a data URL, a URLSource is passed by URL; video must be a
    URLSource, as the API takes video by URL only). `batch_size` defaults to
    10 for text models (the API's row limit) and 1 for multimodal models (one image per call
    is the strictest documented limit).
    """

    credential: DashScopeCredential

    def __init__(
        self,
        credential: DashScopeCredential,
        model: str = "text-embedding-v4",
        dimensions: int = 1024,
        *,
        base_url: str | None = None,
        batch_size: int | None = None,
        max_concurrency: int = 4,
        max_retries: int = 5,
        retry_base_delay: float = 0.5,
        retry_max_delay: float = 60.0,
        timeout: float = 60.0,
        send_dimension: bool | None = None,
        http_client: httpx.AsyncClient | None = None,
        clock: Clock | None = None,
    ) -> None:
        if not isinstance(credential, DashScopeCredential):
            raise TypeError(
                f"credential must be a DashScopeCredential, got {type(credential).__name__}"
            )
        multimodal = is_multimodal_model(model)
        super().__init__(
            model=model,
            dimensions=dimensions,
            supports_multimodal=multimodal,
            batch_size=batch_size if batch_size is not None else (1 if multimodal else 10),
            max_concurrency=max_concurrency,
            max_retries=max_retries,
            retry_base_delay=retry_base_delay,
            retry_max_delay=retry_max_delay,
            clock=clock,
        )
        self.credential = credential
        self.base_url = (base_url or credential.base_url).rstrip("/")
        self.send_dimension = (
            model not in _FIXED_DIMENSION_MODELS if send_dimension is None else send_dimension
        )
        self._session = embedding_session(
            self, _read_error, timeout=timeout, http_client=http_client
        )

    @property
    def endpoint(self) -> str:
        """The URL this model posts to."""
        return self.base_url + (MULTIMODAL_PATH if self.supports_multimodal else TEXT_PATH)

    def _check_inputs(
        self, inputs: Sequence[EmbeddingInput], input_type: InputType
    ) -> list[BatchItem]:
        items = super()._check_inputs(inputs, input_type)
        for index, item in enumerate(items):
            if not isinstance(item, str):
                try:
                    _content(item)
                except ValueError as error:
                    raise InvalidArgumentError(
                        f"inputs[{index}]: {error}", argument="inputs"
                    ) from None
        return items

    async def _embed_batch(
        self, batch: Sequence[BatchItem], input_type: InputType
    ) -> EmbeddingResponse:
        parameters: dict[str, Any] = {}
        if self.send_dimension:
            parameters["dimension"] = self.dimensions
        if self.supports_multimodal:
            body_input: dict[str, Any] = {"contents": [_content(item) for item in batch]}
        else:
            body_input = {"texts": [item for item in batch if isinstance(item, str)]}
            parameters["text_type"] = input_type
            parameters["output_type"] = "dense"
        body = {"model": self.model, "input": body_input, "parameters": parameters}
        answer = await self._session.post_json(self.endpoint, body, self.credential.headers())

        if isinstance(answer, dict) and answer.get("code") and "output" not in answer:
            code, message = _read_error(answer)
            raise EmbeddingAPIError(200, message or "error", code=code, model=self.model)
        output = _wire.field(answer, "output", self.model, "response")
        entries = _wire.field(output, "embeddings", self.model, "output")
        return _wire.response(
            answer,
            entries,
            index_key="index" if self.supports_multimodal else "text_index",
            expected=len(batch),
            model=self.model,
            where="output.embeddings",
            token_keys=("input_tokens", "total_tokens"),
        )

    async def aclose(self) -> None:
        """Close the HTTP client this model opened (a caller-given `http_client` stays open)."""
        await self._session.aclose()


def _content(item: BatchItem) -> dict[str, str]:
    """One entry of a multimodal request's `contents`."""
    if isinstance(item, str):
        return {"text": item}
    source = item.source
    kind = source.media_type.split("/", 1)[0]
    key = _MEDIA_KEYS.get(kind)
    if key is None:
        raise InvalidArgumentError(
            f"DataBlock {item.name or item.id} has media type {source.media_type}; "
            "DashScope embeds image/* and video/* only",
            argument="inputs",
        )
    if isinstance(source, Base64Source):
        if key == "video":
            raise InvalidArgumentError(
                f"DataBlock {item.name or item.id} is a base64 {source.media_type} video; "
                "DashScope takes video by URL only: pass a URLSource",
                argument="inputs",
            )
        return {key: f"data:{source.media_type};base64,{source.data}"}
    return {key: source.url}


def _read_error(body: Any) -> tuple[str | None, str | None]:
    """DashScope errors look like `{"code": "...", "message": "...", "request_id": "..."}`."""
    if not isinstance(body, dict):
        return None, None
    code, message = body.get("code"), body.get("message")
    request_id = body.get("request_id")
    if message and request_id:
        message = f"{message} (request_id {request_id})"
    return (str(code) if code else None), (str(message) if message else None)
