"""The tool contract: a name, a description, a JSON schema for arguments, an async call."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from archivist.errors import InvalidArgumentError
from archivist.tool.json_schema import schema_errors


class ToolArgumentError(InvalidArgumentError):
    """The model's arguments do not fit the tool's schema; each problem names its argument."""

    def __init__(self, tool_name: str, problems: list[str]) -> None:
        self.tool_name = tool_name
        self.problems = problems
        super().__init__(f"invalid arguments for tool {tool_name!r}: " + "; ".join(problems))


class ToolBase(ABC):
    """A tool the model can call. Subclasses set `name`, `description` and `parameters`
    (a JSON schema of type object) as class or instance attributes and implement `__call__`.

    `__call__` may return a str, a TextBlock/DataBlock or a list of them, or any
    JSON-serialisable value; raising is fine — the Toolkit turns it into an error result.
    """

    name: str
    description: str = ""
    parameters: dict[str, Any] = {"type": "object", "properties": {}}  # noqa: RUF012

    def schema(self) -> dict[str, Any]:
        """The OpenAI-style function schema offered to the model."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }

    def validate_arguments(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """The arguments to call with, after checking them against `parameters`."""
        problems = schema_errors(arguments, self.parameters)
        if problems:
            raise ToolArgumentError(self.name, problems)
        return arguments

    @abstractmethod
    async def __call__(self, **kwargs: Any) -> Any:
        """Run the tool with validated keyword arguments."""
