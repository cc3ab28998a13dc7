"""`EmbeddingModelBase`: input checks, batching, bounded concurrency, retries, output checks.

A provider implements only its per-batch hook (`_embed_batch`, or AgentScope's name `_call_api`);
everything that makes a call safe and fast lives here, once, so every model behaves the same way.
A subclass may instead override `__call__` whole, as AgentScope's custom-model example does.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from abc import ABC
from collections.abc import Sequence
from typing import Literal, TypeAlias, get_args

from pydantic import BaseModel, ConfigDict

from archivist._http.clock import SYSTEM_CLOCK, Clock
from archivist._http.retry import RetryPolicy, call_with_retries, check_delay, should_retry
from archivist._util.closable import AsyncClosable
from archivist.credential.base import CredentialBase
from archivist.embedding.errors import (
    EmbeddingAPIError,
    EmbeddingError,
    InvalidVectorError,
    TransientEmbeddingError,
)
from archivist.embedding.relevance import (
    RelevanceCurves,
    Script,
    is_calibrated,
    relevance_curves,
)
from archivist.embedding.response import EmbeddingResponse, EmbeddingUsage
from archivist.embedding.tokenizer import ModelTokenizer
from archivist.errors import InvalidArgumentError
from archivist.message import DataBlock, TextBlock
from archivist.validation import check_optional_positive_int, check_positive_int, vector_problem

logger = logging.getLogger(__name__)

InputType: TypeAlias = Literal["query", "document"]
EmbeddingInput: TypeAlias = str | TextBlock | DataBlock
BatchItem: TypeAlias = str | DataBlock
"""What `_embed_batch` receives: a TextBlock arrives as its text."""


class EmbeddingModelBase(AsyncClosable, ABC):
    """Turns texts (and, for multimodal models, DataBlocks) into vectors of `dimensions` floats.

    `await model(inputs, input_type="query" | "document")` checks the inputs, splits them into
    batches of `batch_size`, runs at most `max_concurrency` batches at once, retries transient
    failures with exponential backoff, checks every vector and returns them in input order.
    Retries wait on `clock` (the system clock unless given). `await model.aclose()`, or
    `async with model:`, releases what the model holds, such as its HTTP connections.
    """

    class Parameters(BaseModel):
        """Provider-specific settings; a subclass extends it with its own fields."""

        model_config = ConfigDict(extra="allow")

    model: str
    supports_multimodal: bool
    batch_size: int
    max_concurrency: int
    max_retries: int
    retry_base_delay: float
    retry_max_delay: float
    credential: CredentialBase | None
    parameters: BaseModel
    context_size: int | None
    clock: Clock

    def __init__(
        self,
        credential: CredentialBase | None = None,
        model: str | None = None,
        dimensions: int | None = None,
        parameters: BaseModel | None = None,
        context_size: int | None = None,
        batch_size: int = 32,
        max_retries: int = 5,
        retry_delay: float | None = None,
        *,
        supports_multimodal: bool = False,
        max_concurrency: int = 4,
        retry_base_delay: float = 0.5,
        retry_max_delay: float = 60.0,
        clock: Clock | None = None,
    ) -> None:
        """Takes AgentScope's arguments in AgentScope's order (`credential, model, dimensions,
        parameters, context_size, batch_size, max_retries, retry_delay`), so a subclass written
        for it calls `super().__init__` unchanged. `retry_delay` is the first wait of the
        backoff (the same as `retry_base_delay`); `dimensions` may also come from a
        `parameters.dimensions` field; `context_size` is the model's input limit in tokens."""
        if not isinstance(model, str) or not model:
            raise InvalidArgumentError(
                f"model must be a non-empty string, got {model!r}", argument="model"
            )
        resolved = parameters if parameters is not None else self.Parameters()
        if not isinstance(resolved, BaseModel):
            raise TypeError(f"parameters must be a pydantic model, got {type(resolved).__name__}")
        extra = resolved.model_dump()
        if "dimensions" in extra:
            legacy = extra.pop("dimensions")
            if dimensions is None and legacy is not None:
                dimensions = legacy
            resolved = type(resolved)(**extra)
        check_optional_positive_int(dimensions, "dimensions")
        check_optional_positive_int(context_size, "context_size")
        check_positive_int(batch_size, "batch_size")
        check_positive_int(max_concurrency, "max_concurrency")
        if retry_delay is not None:
            retry_base_delay = check_delay(retry_delay, "retry_delay")
        RetryPolicy(max_retries, retry_base_delay, retry_max_delay)  # checks the settings
        self.credential = credential
        self.model = model
        self._dimensions = dimensions
        self.parameters = resolved
        self.context_size = context_size
        self.supports_multimodal = supports_multimodal
        self.batch_size = batch_size
        self.max_concurrency = max_concurrency
        self.max_retries = max_retries
        self.retry_base_delay = float(retry_base_delay)
        self.retry_max_delay = float(retry_max_delay)
        self.clock = clock if clock is not None else SYSTEM_CLOCK
        self._semaphores: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, asyncio.Semaphore
        ] = weakref.WeakKeyDictionary()

    @property
    def dimensions(self) -> int:
        """Length of every vector this model returns; settable (`self.dimensions = 768`)."""
        known: int | None = getattr(self, "_dimensions", None)
        if known is None:
            known = self._dimensions = self._detect_dimensions()
        return known

    @dimensions.setter
    def dimensions(self, value: int) -> None:
        check_positive_int(value, "dimensions")
        self._dimensions = value

    def _detect_dimensions(self) -> int:
        """Find `dimensions` when the constructor was not told; models that can, override."""
        raise EmbeddingError(f"{self.model}: dimensions were not given and cannot be detected")

    def chunk_tokenizer(self) -> ModelTokenizer | None:
        """The model's own tokenizer, when it is known locally: chunkers use it so that no
        chunk exceeds the model's input, and ingestion to spot text the model cannot read."""
        return None

    @property
    def cache_identity(self) -> str:
        """Everything besides the input that decides a vector; a cache keys on it."""
        return f"{type(self).__qualname__}|{self.model}|{self.dimensions}"

    @property
    def relevance_calibrated(self) -> bool:
        """Whether search relevance has curves fitted for this model's vectors (shipped models
        do); without, a documented default judges its similarities (`embedding.relevance`)."""
        return is_calibrated(self.cache_identity)

    def relevance_curves(self, script: Script) -> RelevanceCurves:
        """How a hit's evidence becomes its relevance for a query in `script`."""
        return relevance_curves(self.cache_identity, script)

    def __repr__(self) -> str:
        dims = getattr(self, "_dimensions", None) or "?"
        return f"{type(self).__name__}(model={getattr(self, 'model', '?')!r}, dimensions={dims})"

    async def __call__(
        self, inputs: Sequence[EmbeddingInput], input_type: InputType = "document"
    ) -> EmbeddingResponse:
        """Embed `inputs`; `input_type` says whether they are search queries or documents."""
        items = self._check_inputs(inputs, input_type)
        if not items:
            return EmbeddingResponse(embeddings=[], usage=EmbeddingUsage())
        return await self._embed_items(items, input_type)

    async def _embed_batch(
        self, batch: Sequence[BatchItem], input_type: InputType
    ) -> EmbeddingResponse:
        """Embed one batch (at most `batch_size` items) in one provider call.

        Raise `TransientEmbeddingError` (or `TimeoutError`) for failures worth retrying and
        `EmbeddingAPIError` for permanent ones. By default this calls `_call_api(batch)`,
        AgentScope's name for the hook; a subclass defines one of the two or `__call__`.
        """
        call_api = getattr(self, "_call_api", None)
        if call_api is None:
            raise NotImplementedError(
                f"{type(self).__name__} must define _embed_batch, _call_api or __call__"
            )
        result = await call_api(list(batch))
        if isinstance(result, EmbeddingResponse):
            return result
        return EmbeddingResponse(embeddings=[list(map(float, v)) for v in result])

    async def _plan_batches(
        self, items: Sequence[BatchItem], input_type: InputType
    ) -> list[list[int]]:
        """Group item indices into batches; consecutive slices of `batch_size` by default."""
        return [
            list(range(start, min(start + self.batch_size, len(items))))
            for start in range(0, len(items), self.batch_size)
        ]

    async def _embed_items(
        self, items: Sequence[BatchItem], input_type: InputType
    ) -> EmbeddingResponse:
        """Run every planned batch under the concurrency bound and reassemble input order."""
        plan = await self._plan_batches(items, input_type)
        semaphore = self._semaphore()

        async def run(indices: list[int]) -> EmbeddingResponse:
            async with semaphore:
                return await self._embed_with_retry([items[i] for i in indices], input_type)

        tasks = [asyncio.ensure_future(run(indices)) for indices in plan]
        try:
            results = await asyncio.gather(*tasks)
        except BaseException:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise
        vectors: list[list[float] | None] = [None] * len(items)
        usage = EmbeddingUsage()
        for indices, result in zip(plan, results, strict=True):
            for index, vector in zip(indices, result.embeddings, strict=True):
                vectors[index] = vector
            usage = usage + result.usage
        missing = [i for i, v in enumerate(vectors) if v is None]
        if missing:
            raise EmbeddingError(f"{self.model}: no vector was produced for inputs {missing}")
        return EmbeddingResponse(embeddings=[v for v in vectors if v is not None], usage=usage)

    async def _embed_with_retry(
        self, batch: Sequence[BatchItem], input_type: InputType
    ) -> EmbeddingResponse:
        """One batch through the shared retry loop, then the output checks."""
        response = await call_with_retries(
            lambda: self._embed_batch(batch, input_type),
            policy=RetryPolicy(self.max_retries, self.retry_base_delay, self.retry_max_delay),
            clock=getattr(self, "clock", SYSTEM_CLOCK),
            service=self.model,
            retryable=self._is_retryable,
        )
        self._check_output(response, len(batch))
        return response

    @classmethod
    def _get_retryable_exceptions(cls) -> tuple[type[Exception], ...]:
        """Further exception types a provider's per-batch hook raises for failures worth
        retrying (AgentScope's hook); none by default."""
        return ()

    def _is_retryable(self, error: BaseException) -> bool:
        return _is_transient(error) or isinstance(error, self._get_retryable_exceptions())

    def _check_output(self, response: EmbeddingResponse, expected: int) -> None:
        """Reject a batch whose vectors are missing, mis-sized or not finite numbers."""
        if len(response.embeddings) != expected:
            miscount = f"returned {len(response.embeddings)} vectors for {expected} inputs"
            raise InvalidVectorError(
                f"{self.model}: {miscount}", model=self.model, problem=miscount
            )
        dimensions = self.dimensions
        for position, vector in enumerate(response.embeddings):
            problem = vector_problem(vector, dimensions)
            if problem is not None:
                raise InvalidVectorError(
                    f"{self.model}: vector {position} of the batch {problem}",
                    model=self.model,
                    problem=problem,
                )

    def _check_inputs(
        self, inputs: Sequence[EmbeddingInput], input_type: InputType
    ) -> list[BatchItem]:
        if input_type not in get_args(InputType):
            raise InvalidArgumentError(
                f"input_type must be 'query' or 'document', got {input_type!r}",
                argument="input_type",
            )
        if isinstance(inputs, str | bytes) or not isinstance(inputs, Sequence):
            raise TypeError(
                "inputs must be a sequence of str, TextBlock or DataBlock, "
                f"got {type(inputs).__name__}"
            )
        items: list[BatchItem] = []
        for index, item in enumerate(inputs):
            if isinstance(item, str):
                items.append(item)
            elif isinstance(item, TextBlock):
                items.append(item.text)
            elif isinstance(item, DataBlock):
                if not self.supports_multimodal:
                    raise InvalidArgumentError(
                        f"inputs[{index}] is a DataBlock but {self.model} embeds text only",
                        argument="inputs",
                    )
                items.append(item)
            else:
                raise TypeError(
                    f"inputs[{index}] is {type(item).__name__}; "
                    "expected str, TextBlock or DataBlock"
                )
        return items

    def _semaphore(self) -> asyncio.Semaphore:
        """The concurrency bound shared by all calls on the running event loop."""
        loop = asyncio.get_running_loop()
        semaphore = self._semaphores.get(loop)
        if semaphore is None:
            semaphore = asyncio.Semaphore(self.max_concurrency)
            self._semaphores[loop] = semaphore
        return semaphore


def _is_transient(error: BaseException) -> bool:
    """Whether a failed batch is worth another try: a provider error status that
    `should_retry` accepts, or a transient error or timeout without a status."""
    if isinstance(error, EmbeddingAPIError) and error.status is not None:
        return should_retry(error.status, error.code)
    return isinstance(error, TransientEmbeddingError | TimeoutError)
