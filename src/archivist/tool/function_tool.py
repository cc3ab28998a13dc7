"""Wraps a plain Python function as a tool, its schema derived from hints and docstring."""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Callable
from typing import Any, get_type_hints

from docstring_parser import ParseError
from docstring_parser.google import DEFAULT_SECTIONS, GoogleParser, Section, SectionType
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from archivist.tool.base import ToolArgumentError, ToolBase


class FunctionTool(ToolBase):
    """A sync or async function as a tool.

    The argument schema comes from the signature: type hints give types (through pydantic),
    defaults make arguments optional, and the docstring's `Args:` section gives each
    argument's description; the text before the first section describes the tool. Arguments
    are validated by pydantic (lax: "3" is accepted for an int) and unknown ones are refused.
    Sync functions run in a worker thread so a slow tool does not stall the event loop.
    Pass `parameters` to use a hand-written JSON schema instead (then validated by
    `ToolBase.validate_arguments`).
    """

    def __init__(
        self,
        func: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        parameters: dict[str, Any] | None = None,
    ) -> None:
        self.func = func
        self.name = name or str(getattr(func, "__name__", ""))
        summary, argument_docs = _read_docstring(inspect.getdoc(func))
        self.description = description if description is not None else summary
        self._signature = inspect.signature(func)
        self._model: type[BaseModel] | None = None
        if parameters is not None:
            self.parameters = parameters
        else:
            self._model = _arguments_model(func, self.name, self._signature, argument_docs)
            self.parameters = _clean_schema(self._model.model_json_schema(by_alias=True))

    def validate_arguments(self, arguments: dict[str, Any]) -> dict[str, Any]:
        if self._model is None:
            return super().validate_arguments(arguments)
        try:
            validated = self._model.model_validate(arguments)
        except ValidationError as exc:
            raise ToolArgumentError(self.name, [_describe(e) for e in exc.errors()]) from exc
        return {
            field.alias or key: getattr(validated, key)
            for key, field in type(validated).model_fields.items()
        }

    async def __call__(self, **kwargs: Any) -> Any:
        args, kwargs = _split_positional(self._signature, kwargs)
        if inspect.iscoroutinefunction(self.func):
            return await self.func(*args, **kwargs)
        result = await asyncio.to_thread(functools.partial(self.func, *args, **kwargs))
        if inspect.isawaitable(result):
            result = await result
        return result


_SKIPPED_KINDS = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)

# Google style as docstring_parser reads it, plus the sections it does not know by default,
# so "Keyword Args:" entries describe arguments and "Note:" text stays out of the description.
_DOCSTRING_PARSER = GoogleParser(
    [
        *DEFAULT_SECTIONS,
        *(
            Section(title, "param", SectionType.MULTIPLE)
            for title in ("Keyword Args", "Keyword Arguments")
        ),
        *(
            Section(title, "notes", SectionType.SINGULAR)
            for title in ("Note", "Notes", "Todo", "See Also", "Warning", "Warnings")
        ),
    ]
)


def _read_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """The description (text before the first section) and each `Args:` entry's text."""
    if not doc:
        return "", {}
    try:
        parsed = _DOCSTRING_PARSER.parse(doc)
    except ParseError:
        # A docstring that is not quite Google style still describes the tool.
        return doc.strip(), {}
    arguments = {
        param.arg_name.lstrip("*"): " ".join(param.description.split())
        for param in parsed.params
        if param.args[0] == "param" and param.description
    }
    return (parsed.description or "").strip(), arguments


def _arguments_model(
    func: Callable[..., Any],
    name: str,
    signature: inspect.Signature,
    descriptions: dict[str, str],
) -> type[BaseModel]:
    try:
        hints = get_type_hints(func, include_extras=True)
    except (NameError, TypeError):
        hints = {}
    fields: dict[str, Any] = {}
    for position, (param_name, param) in enumerate(signature.parameters.items()):
        if param.kind in _SKIPPED_KINDS or param_name in ("self", "cls"):
            continue
        annotation = hints.get(param_name, Any)
        default = ... if param.default is inspect.Parameter.empty else param.default
        # Internal field names sidestep clashes with BaseModel attributes ("json", "schema",
        # leading underscores); the alias is the name the model sees.
        fields[f"arg{position}"] = (
            annotation,
            Field(default, alias=param_name, description=descriptions.get(param_name)),
        )
    return create_model(
        f"{name or 'tool'}_arguments",
        __config__=ConfigDict(extra="forbid", arbitrary_types_allowed=True),
        **fields,
    )


def _clean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Drop pydantic's generated titles: noise for the model, and tokens on every call."""

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            cleaned: dict[str, Any] = {}
            for key, value in node.items():
                if key == "title" and isinstance(value, str):
                    continue
                if key in ("default", "enum", "const", "examples"):
                    cleaned[key] = value
                elif key in ("properties", "$defs") and isinstance(value, dict):
                    cleaned[key] = {name: walk(sub) for name, sub in value.items()}
                else:
                    cleaned[key] = walk(value)
            return cleaned
        if isinstance(node, list):
            return [walk(item) for item in node]
        return node

    cleaned = walk(schema)
    cleaned.setdefault("properties", {})
    return dict(cleaned)


def _describe(error: Any) -> str:
    location = ".".join(str(part) for part in error.get("loc", ())) or "arguments"
    kind = error.get("type")
    if kind == "missing":
        return f"{location}: missing required argument"
    if kind == "extra_forbidden":
        return f"{location}: unexpected argument"
    return f"{location}: {error.get('msg', 'invalid value')}"


def _split_positional(
    signature: inspect.Signature, kwargs: dict[str, Any]
) -> tuple[list[Any], dict[str, Any]]:
    """Positional-only parameters cannot be passed by keyword; pass them in order."""
    args: list[Any] = []
    for param_name, param in signature.parameters.items():
        if param.kind is inspect.Parameter.POSITIONAL_ONLY and param_name in kwargs:
            args.append(kwargs.pop(param_name))
    return args, kwargs
