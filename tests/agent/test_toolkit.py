"""Toolkit: schemas from hints and docstrings, argument validation, error results."""

from __future__ import annotations

import threading
from typing import Any, Literal

import pytest
from pydantic import BaseModel

from archivist.message import DataBlock, TextBlock, ToolUseBlock, URLSource
from archivist.middleware import MiddlewareBase
from archivist.tool import FunctionTool, ToolArgumentError, ToolBase, Toolkit


def search(query: str, top_k: int = 5, mode: Literal["fast", "exact"] = "fast") -> list[str]:
    """Search the documents.

    Finds passages by meaning.

    Args:
        query (str): What to look for,
            in plain words.
        top_k: How many hits to return.
        mode: Trade speed for recall.

    Returns:
        The matching passages.
    """
    return [f"{query}:{top_k}:{mode}"]


def call(name: str, **arguments: Any) -> ToolUseBlock:
    return ToolUseBlock(id="call_1", name=name, input=arguments)


def test_schema_comes_from_hints_and_docstring() -> None:
    (schema,) = Toolkit([search]).schemas()
    assert schema == {
        "type": "function",
        "function": {
            "name": "search",
            "description": "Search the documents.\n\nFinds passages by meaning.",
            "parameters": {
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "What to look for, in plain words."},
                    "top_k": {
                        "type": "integer",
                        "default": 5,
                        "description": "How many hits to return.",
                    },
                    "mode": {
                        "type": "string",
                        "enum": ["fast", "exact"],
                        "default": "fast",
                        "description": "Trade speed for recall.",
                    },
                },
                "required": ["query"],
                "additionalProperties": False,
            },
        },
    }


def test_parameter_names_that_clash_with_pydantic_still_work() -> None:
    def f(json: str, schema: int = 1) -> str:
        return f"{json}-{schema}"

    tool = FunctionTool(f)
    assert set(tool.parameters["properties"]) == {"json", "schema"}
    assert tool.validate_arguments({"json": "x"}) == {"json": "x", "schema": 1}


async def test_sync_and_async_functions_are_called_with_validated_arguments() -> None:
    threads: list[str] = []

    def add(a: int, b: int) -> int:
        threads.append(threading.current_thread().name)
        return a + b

    async def shout(text: str) -> str:
        return text.upper()

    toolkit = Toolkit([add, shout])
    added = await toolkit.call(call("add", a="2", b=3))
    shouted = await toolkit.call(call("shout", text="hi"))

    assert (added.output, added.is_error, added.id, added.name) == ("5", False, "call_1", "add")
    assert shouted.output == "HI"
    # Sync tools run off the event loop's thread.
    assert threads and threads[0] != threading.main_thread().name


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"top_k": 3}, "query: missing required argument"),
        ({"query": "x", "top_k": "many"}, "top_k: Input should be a valid integer"),
        ({"query": "x", "mode": "slow"}, "mode: Input should be 'fast' or 'exact'"),
        ({"query": "x", "limit": 2}, "limit: unexpected argument"),
    ],
)
async def test_invalid_arguments_give_an_error_result_naming_the_argument(
    arguments: dict[str, Any], expected: str
) -> None:
    ran: list[str] = []

    def tracked(query: str, top_k: int = 5, mode: Literal["fast", "exact"] = "fast") -> str:
        ran.append(query)
        return "ran"

    result = await Toolkit([FunctionTool(tracked, name="search")]).call(call("search", **arguments))

    assert result.is_error
    assert isinstance(result.output, str)
    assert expected in result.output
    assert ran == []


async def test_unknown_tool_is_an_error_result_listing_the_tools() -> None:
    result = await Toolkit([search]).call(call("browse", url="x"))
    assert result.is_error
    assert result.output == "Error: there is no tool named 'browse'. Available tools: search."


async def test_a_tool_that_raises_gives_an_error_result() -> None:
    async def flaky(x: int) -> int:
        raise RuntimeError(f"backend down for {x}")

    result = await Toolkit([flaky]).call(call("flaky", x=4))
    assert result.is_error
    assert result.output == "Error: tool 'flaky' failed: RuntimeError: backend down for 4"


def test_duplicate_names_are_refused_at_registration() -> None:
    def other() -> None:
        """Another search."""

    toolkit = Toolkit([search])
    with pytest.raises(ValueError, match="already registered"):
        toolkit.register(other, name="search")
    with pytest.raises(ValueError, match="already registered"):
        Toolkit([search, search])
    assert toolkit.names == ["search"]


class Point(BaseModel):
    x: int
    y: int


IMAGE = DataBlock(source=URLSource(url="https://x.test/a.png", media_type="image/png"))


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("plain", "plain"),
        (None, ""),
        ({"hits": [1, 2], "ok": True}, '{"hits":[1,2],"ok":true}'),
        ([1, "a"], '[1,"a"]'),
        (Point(x=1, y=2), '{"x":1,"y":2}'),
        (IMAGE, [IMAGE]),
        ([TextBlock(text="t"), IMAGE], [TextBlock(text="t"), IMAGE]),
    ],
)
async def test_tool_output_may_be_text_blocks_or_json_values(value: Any, expected: Any) -> None:
    def produce() -> Any:
        return value

    result = await Toolkit([produce]).call(call("produce"))
    assert not result.is_error
    if isinstance(expected, list):
        assert [b.model_dump(exclude={"id", "created_at"}) for b in result.output] == [
            b.model_dump(exclude={"id", "created_at"}) for b in expected
        ]
    else:
        assert result.output == expected


class KnowledgeSearch(ToolBase):
    """A tool object with a hand-written schema, as a middleware would offer."""

    def __init__(self, names: list[str]) -> None:
        self.name = "search_knowledge"
        self.description = "Search: " + ", ".join(names)
        self.parameters = {
            "type": "object",
            "properties": {
                "query": {"type": "string", "minLength": 1},
                "knowledge_bases": {"type": "array", "items": {"type": "string", "enum": names}},
            },
            "required": ["query"],
            "additionalProperties": False,
        }
        self.calls: list[dict[str, Any]] = []

    async def __call__(self, **kwargs: Any) -> Any:
        self.calls.append(kwargs)
        return {"hits": []}


class ToolOffering(MiddlewareBase):
    def __init__(self, tool: ToolBase) -> None:
        self.tool = tool

    async def list_tools(self) -> list[ToolBase]:
        return [self.tool]


async def test_toolkit_takes_the_tool_objects_a_middleware_lists() -> None:
    tool = KnowledgeSearch(["manuals", "faq"])
    toolkit = Toolkit(tools=await ToolOffering(tool).list_tools())

    ok = await toolkit.call(call("search_knowledge", query="reset", knowledge_bases=["faq"]))
    wrong = await toolkit.call(call("search_knowledge", query="reset", knowledge_bases=["wiki"]))

    assert toolkit.schemas()[0]["function"]["parameters"] is tool.parameters
    assert (ok.is_error, ok.output) == (False, '{"hits":[]}')
    assert wrong.is_error
    assert "knowledge_bases[0]: 'wiki' is not one of ['manuals', 'faq']" in str(wrong.output)
    assert tool.calls == [{"query": "reset", "knowledge_bases": ["faq"]}]


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ({}, "arguments: 'query' is a required property"),
        ({"query": 3}, "query: 3 is not of type 'string'"),
        ({"query": ""}, "query: '' should be non-empty"),
        ({"query": "q", "knowledge_bases": "faq"}, "knowledge_bases: 'faq' is not of type 'array'"),
        (
            {"query": "q", "extra": True},
            "arguments: Additional properties are not allowed ('extra' was unexpected)",
        ),
    ],
)
def test_hand_written_schemas_are_enforced(arguments: dict[str, Any], problem: str) -> None:
    with pytest.raises(ToolArgumentError) as caught:
        KnowledgeSearch(["faq"]).validate_arguments(arguments)
    assert caught.value.problems == [problem]


def test_function_tool_accepts_an_explicit_schema() -> None:
    def lookup(**kwargs: Any) -> str:
        return "x"

    schema = {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}
    tool = FunctionTool(lookup, description="Look up by id.", parameters=schema)
    assert tool.schema()["function"] == {
        "name": "lookup",
        "description": "Look up by id.",
        "parameters": schema,
    }
    with pytest.raises(ToolArgumentError, match="id: True is not of type 'integer'"):
        tool.validate_arguments({"id": True})


def test_docstring_sections_other_than_args_are_not_descriptions() -> None:
    def f(a: int, *args: int, b: int = 0) -> None:
        """Summary.

        Args:
            a: First.
            *args: Rest.

        Keyword Args:
            b: Second,
                on two lines.

        Note:
            Not for the model.

        Raises:
            ValueError: never.
        """

    tool = FunctionTool(f)
    assert tool.description == "Summary."
    properties = tool.parameters["properties"]
    assert set(properties) == {"a", "b"}
    assert properties["a"]["description"] == "First."
    assert properties["b"]["description"] == "Second, on two lines."


def test_a_docstring_that_is_not_google_style_still_describes_the_tool() -> None:
    def g(a: int) -> None:
        """Summary.
        Args:
          not an entry
        """

    tool = FunctionTool(g)
    assert tool.description.startswith("Summary.")
    assert "description" not in tool.parameters["properties"]["a"]
