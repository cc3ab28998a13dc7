"""Tools: functions and tool objects the model can call, gathered in a Toolkit."""

from archivist.tool.base import ToolArgumentError, ToolBase
from archivist.tool.function_tool import FunctionTool
from archivist.tool.output import normalize_output
from archivist.tool.toolkit import Toolkit

__all__ = ["FunctionTool", "ToolArgumentError", "ToolBase", "Toolkit", "normalize_output"]
