"""`OnnxEmbeddingModel`: any sentence-embedding ONNX export, run on CPU by onnxruntime."""

from __future__ import annotations

import asyncio
import functools
import logging
import math
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from tokenizers import Encoding, Tokenizer

from archivist._util.file_digest import file_sha256
from archivist._util.thread_priority import lower_this_thread
from archivist.embedding.base import BatchItem, EmbeddingModelBase, InputType
from archivist.embedding.errors import EmbeddingError
from archivist.embedding.response import EmbeddingResponse, EmbeddingUsage
from archivist.embedding.tokenizer import ModelTokenizer
from archivist.errors import ConfigurationError, InvalidArgumentError
from archivist.validation import (
    check_non_negative_int,
    check_optional_positive_int,
)

if TYPE_CHECKING:  # numpy and onnxruntime load with the first session: a cached query
    # never needs them, and they are most of a one-search process's start
    import numpy as np
    import numpy.typing as npt
    import onnxruntime as ort  # type: ignore[import-untyped]

logger = logging.getLogger(__name__)

Pooling = Literal["mean", "cls"]

_Result = TypeVar("_Result")

_TOKEN_OUTPUTS = ("last_hidden_state", "token_embeddings")
_KNOWN_INPUTS = frozenset({"input_ids", "attention_mask", "token_type_ids"})
_INT_TYPES = {"tensor(int64)": "int64", "tensor(int32)": "int32"}
"""The numpy dtype of each integer input type a graph may declare."""


@dataclass(frozen=True)
class _Runtime:
    """What loading produces: the tokenizer, the session and how to feed and read it."""

    tokenizer: Tokenizer
    session: ort.InferenceSession
    input_types: dict[str, str]
    output_name: str
    pad_id: int


class OnnxEmbeddingModel(EmbeddingModelBase):
    """Embeds text with an ONNX sentence-embedding model and its `tokenizer.json`.

    Works with any BERT-style export (MiniLM, bge, e5, gte ...): pooling is `"mean"` over
    the attention mask or `"cls"`, vectors are L2-normalised when `normalize`. Inputs longer
    than `max_length` tokens are truncated, logged and counted in `usage.truncated_inputs`.
    `query_prefix` / `document_prefix` are prepended according to `input_type` (e.g.
    `"query: "` / `"passage: "` for e5). `sha256` maps `"model"` and/or `"tokenizer"` to the
    expected hex digest of that file, checked before the file is first read. The model loads
    lazily, once, on first use; inference runs in a worker thread so the event loop stays free.

    Inputs are cut into batches of neighbouring token lengths that cost the least compute:
    padded tokens plus a fixed cost per run (`plan_by_length`). `token_budget` caps the padded
    tokens of one run (batch × longest input), since onnxruntime's working memory follows that
    shape: long inputs go in small batches, short ones in batches of up to `batch_size`.
    `None` sets no cap (and a document call of at most `batch_size` inputs is one run).
    `fold_constants=False` turns off onnxruntime's constant folding, which, for an export that
    casts int8 weights to float at run time, keeps float copies of them (less memory; each run
    then does the cast).

    Queries and documents may run on differently tuned sessions: `fold_constants` and
    `threads` set the document session, `query_fold_constants` and `query_threads` (default:
    the document settings) the query session. Where they differ, the query session is a
    second session over the same file and tokenizer, built once `query_session_after`
    queries were answered on the document session, so a process that only ingests never pays
    for it and one that answers a single query (a CLI call) does not pay a build that costs
    more than the query; from then on documents run on it too and the document session is
    released, so no process holds both.

    `allow_spinning=False` makes onnxruntime's intra-op threads sleep between runs instead of
    busy-waiting for the next one, so an idle model leaves its cores to the rest of the
    process and to other processes.

    With `document_niceness`, documents are embedded on a thread of their own that many steps
    nicer (Linux, see `lower_this_thread`), so a process that also answers queries gives
    them the CPU first; queries keep the shared worker threads.
    """

    def __init__(
        self,
        model_path: str | os.PathLike[str],
        tokenizer_path: str | os.PathLike[str],
        *,
        model: str | None = None,
        dimensions: int | None = None,
        pooling: Pooling = "mean",
        max_length: int = 256,
        normalize: bool = True,
        query_prefix: str = "",
        document_prefix: str = "",
        sha256: Mapping[str, str] | None = None,
        batch_size: int = 16,
        token_budget: int | None = None,
        fold_constants: bool = True,
        threads: int | None = None,
        query_fold_constants: bool | None = None,
        query_threads: int | None = None,
        query_session_after: int = 0,
        allow_spinning: bool = True,
        document_niceness: int = 0,
    ) -> None:
        self.model_path = Path(model_path)
        self.tokenizer_path = Path(tokenizer_path)
        for role, path in (
            ("model_path", self.model_path),
            ("tokenizer_path", self.tokenizer_path),
        ):
            if not path.is_file():
                raise FileNotFoundError(f"{role}: no such file: {path}")
        if pooling not in ("mean", "cls"):
            raise InvalidArgumentError(
                f"pooling must be 'mean' or 'cls', got {pooling!r}", argument="pooling"
            )
        if not isinstance(max_length, int) or isinstance(max_length, bool) or max_length < 2:
            raise InvalidArgumentError(
                f"max_length must be an integer >= 2, got {max_length!r}", argument="max_length"
            )
        check_optional_positive_int(token_budget, "token_budget")
        check_optional_positive_int(threads, "threads")
        check_optional_positive_int(query_threads, "query_threads")
        check_non_negative_int(query_session_after, "query_session_after")
        check_non_negative_int(document_niceness, "document_niceness")
        self.sha256 = _check_digests(sha256)
        super().__init__(
            model=model or _default_name(self.model_path),
            dimensions=dimensions,
            supports_multimodal=False,
            batch_size=batch_size,
            # One inference at a time: each already uses every core through intra-op threads.
            max_concurrency=1,
        )
        self.pooling: Pooling = pooling
        self.max_length = max_length
        self.normalize = normalize
        self.query_prefix = query_prefix
        self.document_prefix = document_prefix
        self.token_budget = token_budget
        self.fold_constants = fold_constants
        self.threads = threads or _available_cores()
        self.query_fold_constants = (
            fold_constants if query_fold_constants is None else query_fold_constants
        )
        self.query_threads = query_threads or self.threads
        self.query_session_after = query_session_after
        self.allow_spinning = allow_spinning
        self.document_niceness = document_niceness
        self._document_thread: ThreadPoolExecutor | None = None
        self._document_thread_lock = threading.Lock()
        self._queries_answered = 0
        self._tokenizer: tuple[Tokenizer, int] | None = None
        self._verified: set[str] = set()
        self._runtime: _Runtime | None = None
        self._query_runtime: _Runtime | None = None
        self._load_lock = threading.Lock()
        self._chunk_tokenizer: ModelTokenizer | None = None

    @property
    def cache_identity(self) -> str:
        settings = (
            self.sha256.get("model", str(self.model_path)),
            self.pooling,
            self.max_length,
            self.normalize,
            self.query_prefix,
            self.document_prefix,
        )
        return f"{super().cache_identity}|{settings!r}"

    def _load(self) -> _Runtime:
        """The session documents run on, built once, thread-safe: the lean document session,
        or the query session once that exists (two resident sessions cost more memory than
        the query session's working memory for documents)."""
        with self._load_lock:
            return self._document_runtime()

    def _document_runtime(self) -> _Runtime:
        """`_load`'s session; callers hold the lock."""
        if self._query_runtime is not None:
            return self._query_runtime
        if self._runtime is None:
            self._runtime = self._build_runtime(self.fold_constants, self.threads)
        return self._runtime

    def _load_query(self, queries: int) -> _Runtime:
        """The session a run of `queries` queries goes to: the document session for the first
        `query_session_after` queries (and always when both are tuned alike), then the query
        session."""
        if self._query_settings_shared:
            return self._load()
        with self._load_lock:
            if self._query_runtime is None:
                if self._queries_answered < self.query_session_after:
                    self._queries_answered += queries
                    return self._document_runtime()
                self._query_runtime = self._build_runtime(
                    self.query_fold_constants, self.query_threads
                )
                # Documents move to the query session; a run still in flight keeps its own
                # reference to the document session, which is freed when that run ends.
                self._runtime = None
            return self._query_runtime

    @property
    def _query_settings_shared(self) -> bool:
        return (self.query_fold_constants, self.query_threads) == (
            self.fold_constants,
            self.threads,
        )

    def _verify(self, role: str) -> None:
        """Check the `role` file ("model" or "tokenizer") against `sha256`, once, before it is
        read; callers hold the lock. Each file is checked only when it is first needed: a
        search answered from the embedding cache reads the tokenizer, never the model."""
        if role in self._verified:
            return
        path = self.model_path if role == "model" else self.tokenizer_path
        expected = self.sha256.get(role)
        if expected is not None:
            actual = file_sha256(path)
            if actual != expected:
                raise ConfigurationError(
                    f"sha256 mismatch for {role} file {path}: expected {expected}, got {actual}",
                    setting="sha256",
                )
        self._verified.add(role)

    def _load_tokenizer(self) -> tuple[Tokenizer, int]:
        """The tokenizer (its file verified first) and its pad id; callers hold the lock."""
        if self._tokenizer is None:
            self._verify("tokenizer")
            tokenizer = Tokenizer.from_file(str(self.tokenizer_path))
            padding = tokenizer.padding
            pad_id = int(padding["pad_id"]) if padding else 0
            tokenizer.no_padding()
            tokenizer.enable_truncation(self.max_length)
            self._tokenizer = (tokenizer, pad_id)
        return self._tokenizer

    def _build_runtime(self, fold_constants: bool, threads: int) -> _Runtime:
        import onnxruntime as ort

        tokenizer, pad_id = self._load_tokenizer()
        self._verify("model")
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        if not self.allow_spinning:
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        # A memory pattern is planned and kept per input shape; batch shapes vary with every
        # call, so the patterns only add up.
        options.enable_mem_pattern = False
        session = ort.InferenceSession(
            str(self.model_path),
            sess_options=options,
            providers=["CPUExecutionProvider"],
            disabled_optimizers=[] if fold_constants else ["ConstantFolding"],
        )
        input_types: dict[str, str] = {}
        for node in session.get_inputs():
            if node.name not in _KNOWN_INPUTS:
                raise ConfigurationError(
                    f"{self.model_path}: graph input {node.name!r} is not one of "
                    f"{sorted(_KNOWN_INPUTS)}",
                    setting="model_path",
                )
            input_types[node.name] = _INT_TYPES.get(node.type, "int64")
        if "input_ids" not in input_types:
            raise ConfigurationError(
                f"{self.model_path}: the graph has no 'input_ids' input", setting="model_path"
            )
        outputs = {node.name: node for node in session.get_outputs()}
        output_name = next(
            (name for name in _TOKEN_OUTPUTS if name in outputs), session.get_outputs()[0].name
        )
        shape = outputs[output_name].shape
        if len(shape) not in (2, 3):
            raise ConfigurationError(
                f"{self.model_path}: output {output_name!r} has shape {shape}; "
                "expected (batch, tokens, dim) or (batch, dim)",
                setting="model_path",
            )
        runtime = _Runtime(tokenizer, session, input_types, output_name, pad_id)
        last = shape[-1]
        if self._dimensions is None:
            self._dimensions = last if isinstance(last, int) else self._probe(runtime)
        elif isinstance(last, int) and last != self._dimensions:
            raise ConfigurationError(
                f"dimensions={self._dimensions} but {self.model_path} outputs {last}-d vectors",
                setting="dimensions",
            )
        return runtime

    def chunk_tokenizer(self) -> ModelTokenizer:
        """This model's tokenizer (its file verified), with the document prefix deducted."""
        if self._chunk_tokenizer is None:
            with self._load_lock:
                self._verify("tokenizer")
            self._chunk_tokenizer = ModelTokenizer.from_file(
                str(self.tokenizer_path), self.max_length, self.document_prefix
            )
        return self._chunk_tokenizer

    def _detect_dimensions(self) -> int:
        self._load()
        assert self._dimensions is not None
        return self._dimensions

    def _probe(self, runtime: _Runtime) -> int:
        vectors, _, _ = self._run(runtime, runtime.tokenizer.encode_batch(["probe"]))
        return int(vectors.shape[1])

    async def _plan_batches(
        self, items: Sequence[BatchItem], input_type: InputType
    ) -> list[list[int]]:
        """Batch inputs of similar token length together, so little compute goes to padding,
        each batch within `batch_size` inputs and `token_budget` padded tokens."""
        if len(items) <= 1 or (self.token_budget is None and len(items) <= self.batch_size):
            return [list(range(len(items)))]
        return await self._document_work(self._plan_by_length, self._prefixed(items, input_type))

    def _plan_by_length(self, texts: list[str]) -> list[list[int]]:
        with self._load_lock:
            tokenizer, _ = self._load_tokenizer()
        lengths = [len(e.ids) for e in tokenizer.encode_batch(texts)]
        return plan_by_length(lengths, self.batch_size, self.token_budget)

    async def _embed_batch(
        self, batch: Sequence[BatchItem], input_type: InputType
    ) -> EmbeddingResponse:
        return await self._document_work(
            self._embed_sync, self._prefixed(batch, input_type), input_type
        )

    async def _document_work(self, work: Callable[..., _Result], *args: Any) -> _Result:
        """`work(*args)` in a worker thread, or on the documents' own nicer thread when
        `document_niceness` asks for one (its sessions' threads, started there, inherit it).
        Queries never come here: they take one hop of their own (`_embed_items`)."""
        if not self.document_niceness:
            return await asyncio.to_thread(work, *args)
        with self._document_thread_lock:
            if self._document_thread is None:
                self._document_thread = ThreadPoolExecutor(
                    1,
                    thread_name_prefix="archivist-embed-documents",
                    initializer=lower_this_thread,
                    initargs=(self.document_niceness,),
                )
            executor = self._document_thread
        return await asyncio.get_running_loop().run_in_executor(
            executor, functools.partial(work, *args)
        )

    def _prefixed(self, items: Sequence[BatchItem], input_type: InputType) -> list[str]:
        prefix = self.query_prefix if input_type == "query" else self.document_prefix
        texts: list[str] = []
        for item in items:
            if not isinstance(item, str):
                raise TypeError(f"{self.model} embeds text only, got {type(item).__name__}")
            texts.append(prefix + item)
        return texts

    async def _embed_items(
        self, items: Sequence[BatchItem], input_type: InputType
    ) -> EmbeddingResponse:
        if input_type == "query":
            # Queries take one hop to a worker thread, which tokenizes once and runs every
            # batch: a query waits on no batch planning and no retry machinery (a local model
            # has no transient failures).
            response = await asyncio.to_thread(
                self._embed_queries_sync, self._prefixed(items, input_type)
            )
            self._check_output(response, len(items))
        else:
            response = await super()._embed_items(items, input_type)
        if response.usage.truncated_inputs:
            logger.warning(
                "%s: %d of %d inputs exceeded max_length=%d tokens and were truncated",
                self.model,
                response.usage.truncated_inputs,
                len(items),
                self.max_length,
            )
        return response

    def _embed_sync(
        self, texts: list[str], input_type: InputType = "document"
    ) -> EmbeddingResponse:
        runtime = self._load_query(len(texts)) if input_type == "query" else self._load()
        vectors, tokens, truncated = self._run(runtime, runtime.tokenizer.encode_batch(texts))
        return EmbeddingResponse(
            embeddings=vectors.tolist(),
            usage=EmbeddingUsage(input_tokens=tokens, truncated_inputs=truncated),
        )

    def _embed_queries_sync(self, texts: list[str]) -> EmbeddingResponse:
        """Every query on the query session, batched by token length like documents."""
        import numpy as np

        runtime = self._load_query(len(texts))
        encodings = runtime.tokenizer.encode_batch(texts)
        plan = plan_by_length([len(e.ids) for e in encodings], self.batch_size, self.token_budget)
        vectors = np.empty((len(texts), self.dimensions), dtype=np.float32)
        tokens = truncated = 0
        for batch in plan:
            pooled, batch_tokens, batch_truncated = self._run(
                runtime, [encodings[i] for i in batch]
            )
            vectors[batch] = pooled
            tokens += batch_tokens
            truncated += batch_truncated
        return EmbeddingResponse(
            embeddings=vectors.tolist(),
            usage=EmbeddingUsage(input_tokens=tokens, truncated_inputs=truncated),
        )

    def _run(
        self, runtime: _Runtime, encodings: list[Encoding]
    ) -> tuple[npt.NDArray[np.float32], int, int]:
        """Pad, run the graph, pool; return vectors, real token count and truncation count."""
        import numpy as np

        width = max(len(e.ids) for e in encodings)
        ids = np.full((len(encodings), width), runtime.pad_id, dtype=np.int64)
        mask = np.zeros((len(encodings), width), dtype=np.int64)
        type_ids = np.zeros((len(encodings), width), dtype=np.int64)
        for row, encoding in enumerate(encodings):
            n = len(encoding.ids)
            ids[row, :n] = encoding.ids
            mask[row, :n] = 1
            type_ids[row, :n] = encoding.type_ids
        arrays = {"input_ids": ids, "attention_mask": mask, "token_type_ids": type_ids}
        feed = {name: arrays[name].astype(dtype) for name, dtype in runtime.input_types.items()}
        try:
            (output,) = runtime.session.run([runtime.output_name], feed)
        except Exception as error:
            raise EmbeddingError(f"{self.model}: onnxruntime failed: {error}") from error
        hidden = np.asarray(output, dtype=np.float32)
        if hidden.ndim == 3:
            if self.pooling == "cls":
                pooled = hidden[:, 0, :]
            else:
                weights = mask[:, :, None].astype(np.float32)
                pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        else:
            pooled = hidden
        if self.normalize:
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)
            pooled = pooled / np.maximum(norms, 1e-12)
        truncated = sum(1 for e in encodings if e.overflowing)
        return pooled.astype(np.float32), int(mask.sum()), truncated


RUN_COST_TOKENS = 20
"""One more run of the graph costs about as much compute as this many more padded tokens (the
default model on CPU; `benchmarks/search/bench_query_speed.py plan`)."""


def plan_by_length(
    lengths: Sequence[int],
    batch_size: int,
    token_budget: int | None,
    run_cost: int = RUN_COST_TOKENS,
) -> list[list[int]]:
    """Indices of `lengths` cut into the batches that cost the least compute: the padded
    tokens of every batch (count × longest) plus `run_cost` tokens per batch. A batch holds
    inputs of neighbouring lengths, at most `batch_size` of them, and at most `token_budget`
    padded tokens unless it is one input longer than that. The longest batches come first.

    Padding is most of what a mixed batch wastes (queries of 10 and 60 tokens in one run
    cost 60 each), while every further run pays a fixed cost; the cheapest cut between the
    two is found exactly, by dynamic programming over the sorted lengths.
    """
    order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    widths = [lengths[i] for i in order]
    # cost[i]: the cheapest plan of the inputs from the i-th longest on; stop[i]: where the
    # first batch of that plan ends.
    count = len(order)
    cost: list[float] = [math.inf] * count + [0.0]
    stop = [count] * (count + 1)
    for start in range(count - 1, -1, -1):
        for end in range(start + 1, min(start + batch_size, count) + 1):
            padded = (end - start) * widths[start]  # widths fall: the first is the longest
            if end - start > 1 and token_budget is not None and padded > token_budget:
                break  # a longer batch only grows
            total = run_cost + padded + cost[end]
            if total <= cost[start]:  # on a tie, the fuller first batch
                cost[start], stop[start] = total, end
    batches: list[list[int]] = []
    start = 0
    while start < count:
        batches.append(order[start : stop[start]])
        start = stop[start]
    return batches


def _check_digests(sha256: Mapping[str, str] | None) -> dict[str, str]:
    if sha256 is None:
        return {}
    if not isinstance(sha256, Mapping):
        raise TypeError(f"sha256 must be a mapping, got {type(sha256).__name__}")
    unknown = set(sha256) - {"model", "tokenizer"}
    if unknown:
        raise InvalidArgumentError(
            f"sha256 keys must be 'model' and/or 'tokenizer', got {sorted(unknown)}",
            argument="sha256",
        )
    digests: dict[str, str] = {}
    for role, digest in sha256.items():
        if not isinstance(digest, str) or len(digest) != 64:
            raise InvalidArgumentError(
                f"sha256[{role!r}] must be a 64-character hex digest, got {digest!r}",
                argument="sha256",
            )
        digests[role] = digest.lower()
    return digests


def _default_name(model_path: Path) -> str:
    return model_path.parent.name if model_path.stem == "model" else model_path.stem


def _available_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1
