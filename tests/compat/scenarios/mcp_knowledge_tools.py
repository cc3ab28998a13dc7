"""An MCPClient mounting the tools of `archivist mcp` (a knowledge base indexed by the
archivist CLI) into a Toolkit and searching through them: the hits must be the ones the
archivist library itself returns (`archivist search`)."""

import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from agentscope.mcp import MCPClient, StdioMCPConfig
from agentscope.tool import Toolkit

# The interpreter that has archivist installed (the test sets it; by hand: this one).
ARCHIVIST = os.environ.get("ARCHIVIST_PYTHON", sys.executable)
QUERY = "how long does a cat sleep"
DOCS = {
    "cats.md": "# Cats\n\nCats purr when content. A cat sleeps sixteen hours a day.\n",
    "dogs.md": "# Dogs\n\nDogs bark at strangers and need a long walk every day.\n",
    "fish.txt": "Goldfish remember things for months. Change a third of the water weekly.\n",
    "birds.txt": "Owls hunt at night; parrots can learn words.\n",
    "kittens.md": "# Kittens\n\nA kitten sleeps even longer than an adult cat.\n",
}
LABEL = re.compile(
    r"^\[(\d+)\] (.+) \(knowledge base: ([^,]+), (?:score|relevance) [0-9.]+\)$", re.MULTILINE
)


def archivist(home: str, *args: str) -> str:
    env = {**os.environ, "ARCHIVIST_HOME": home}
    done = subprocess.run(
        [ARCHIVIST, "-m", "archivist", *args], env=env, capture_output=True, text=True, check=True
    )
    return done.stdout


async def main() -> None:
    out: dict = {}
    with tempfile.TemporaryDirectory() as home:
        docs = Path(home) / "docs"
        docs.mkdir()
        for name, text in DOCS.items():
            (docs / name).write_text(text)
        archivist(home, "index", str(docs), "--kb", "pets")
        library = json.loads(archivist(home, "search", QUERY, "--kb", "pets", "-k", "2", "--json"))
        out["library_hits"] = [[hit["source"], hit["chunk_index"]] for hit in library]

        client = MCPClient(
            name="archivist",
            is_stateful=True,
            mcp_config=StdioMCPConfig(
                command=ARCHIVIST,
                args=["-m", "archivist", "mcp", "--kb", "pets"],
                env={"ARCHIVIST_HOME": home, "PYTHONPATH": os.environ.get("PYTHONPATH", "")},
            ),
        )
        await client.connect()
        try:
            tools = await client.list_tools()
            Toolkit(tools=tools)
            out["tools"] = sorted(tool.name for tool in tools)
            search = await client.get_tool("search_knowledge")
            out["lists_the_kb"] = "- pets: Files indexed into pets" in search.description
            result = await search(query=QUERY, top_k=2)
            blocks = getattr(result, "content", result)
            text = "".join(block.text for block in blocks)
        finally:
            await client.close()
        labels = LABEL.findall(text)
        out["mcp_hits"] = [
            [citation.split(", ")[0], int(citation.rsplit("chunk ", 1)[1])]
            for _, citation, _ in labels
        ]
        out["mcp_knowledge_bases"] = sorted({kb for _, _, kb in labels})
        out["same_hits"] = out["mcp_hits"] == out["library_hits"]
    assert len(out["mcp_hits"]) == 2 and out["same_hits"], out
    print(json.dumps(out))


asyncio.run(main())
