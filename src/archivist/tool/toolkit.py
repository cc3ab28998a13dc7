"""The set of tools an agent offers its model, and the safe way to call one."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from archivist.message import ToolResultBlock, ToolUseBlock
from archivist.tool.base import ToolArgumentError, ToolBase
from archivist.tool.function_tool import FunctionTool
from archivist.tool.output import normalize_output

ToolLike = ToolBase | Callable[..., Any]


class Toolkit:
    """Tools by name. Functions are wrapped as FunctionTools; ToolBase objects are kept.

    `call` never raises for the model's mistakes or the tool's failures: an unknown tool,
    arguments that break the schema, or an exception inside the tool all come back as a
    ToolResultBlock with `is_error=True` and a message the model can act on. Cancellation
    (a BaseException) still propagates.
    """

    def __init__(self, tools: Iterable[ToolLike] | None = None) -> None:
        self._tools: dict[str, ToolBase] = {}
        for tool in tools or []:
            self.register(tool)

    def register(
        self, tool: ToolLike, *, name: str | None = None, description: str | None = None
    ) -> ToolBase:
        """Add a tool; a name already taken raises ValueError. Returns the registered tool."""
        if isinstance(tool, ToolBase):
            if name is not None or description is not None:
                raise ValueError("name/description overrides apply to functions, not tool objects")
            registered = tool
        elif callable(tool):
            registered = FunctionTool(tool, name=name, description=description)
        else:
            raise TypeError(f"not a tool or a function: {tool!r}")
        if not getattr(registered, "name", ""):
            raise ValueError(f"tool {tool!r} has no name")
        if registered.name in self._tools:
            raise ValueError(f"a tool named {registered.name!r} is already registered")
        self._tools[registered.name] = registered
        return registered

    def remove(self, name: str) -> None:
        """Unregister a tool; KeyError if there is none by that name."""
        del self._tools[name]

    def get(self, name: str) -> ToolBase | None:
        """The tool called `name`, or None."""
        return self._tools.get(name)

    @property
    def names(self) -> list[str]:
        """Registered tool names, in registration order."""
        return list(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __len__(self) -> int:
        return len(self._tools)

    def __iter__(self) -> Iterator[ToolBase]:
        return iter(list(self._tools.values()))

    def schemas(self) -> list[dict[str, Any]]:
        """OpenAI-style function schemas of every tool, in registration order."""
        return [tool.schema() for tool in self._tools.values()]

    async def call(self, tool_use: ToolUseBlock) -> ToolResultBlock:
        """Run the call the model asked for; the result answers its id."""

        def result(output: Any, *, is_error: bool = False) -> ToolResultBlock:
            return ToolResultBlock(
                id=tool_use.id, name=tool_use.name, output=output, is_error=is_error
            )

        tool = self._tools.get(tool_use.name)
        if tool is None:
            available = ", ".join(self._tools) or "none"
            return result(
                f"Error: there is no tool named {tool_use.name!r}. Available tools: {available}.",
                is_error=True,
            )
        try:
            arguments = tool.validate_arguments(dict(tool_use.input))
        except ToolArgumentError as exc:
            return result(f"Error: {exc}", is_error=True)
        try:
            output = await tool(**arguments)
            return result(normalize_output(output))
        except Exception as exc:
            return result(
                f"Error: tool {tool.name!r} failed: {type(exc).__name__}: {exc}", is_error=True
            )
