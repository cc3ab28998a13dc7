"""Shared by the MCP tests: the documents they index and how to start `archivist mcp`."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from mcp import StdioServerParameters

DOCS = {
    "cats.md": "# Cats\n\nCats purr when they are content. A cat sleeps sixteen hours a day.\n",
    "dogs.md": "# Dogs\n\nDogs bark at strangers. A dog needs a long walk every day.\n",
    "fish.txt": "Goldfish remember things for months, not seconds. Change a third of the water weekly.\n",
    "panda.txt": "大熊猫主要吃竹子，每天要吃十几个小时。熊猫生活在四川的山里。\n",
}
SECRET = "The acme launch code word is heliotrope."


def server(home: Path, *args: str) -> StdioServerParameters:
    env = dict(os.environ, ARCHIVIST_HOME=str(home))
    return StdioServerParameters(
        command=sys.executable, args=["-m", "archivist", "mcp", *args], env=env
    )
