"""An MCP client as agents run it: the official Python SDK, whichever release this
environment holds (2.x speaks the stateless revision 2026-07-28 and falls back to the
handshake; 1.x speaks the handshake of 2025-11-25). It connects to URL with a bearer
token, lists the tools, calls one, and prints what it saw as one JSON object.

    python client.py URL TOKEN TOOL ARGUMENTS_JSON
"""

import asyncio
import json
import os
import sys
from importlib.metadata import version

SDK = version("mcp")


def result_of(result):
    """A tool result's fields, named the same whichever SDK made it."""
    structured = getattr(result, "structured_content", None)
    if structured is None:
        structured = getattr(result, "structuredContent", None)
    is_error = getattr(result, "is_error", None)
    if is_error is None:
        is_error = getattr(result, "isError", False)
    texts = [block.text for block in result.content if getattr(block, "type", "") == "text"]
    return {"structured": structured, "isError": bool(is_error), "texts": texts}


async def modern(url, token, tool, arguments):
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {token}"}
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30)) as http:
        async with Client(streamable_http_client(url, http_client=http)) as client:
            listed = await client.list_tools()
            called = await client.call_tool(tool, arguments)
            return {
                "protocol": client.protocol_version,
                "tools": [t.name for t in listed.tools],
                "call": result_of(called),
            }


async def handshake(url, token, tool, arguments):
    import httpx
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(headers=headers, timeout=httpx.Timeout(30)) as http:
        async with streamable_http_client(url, http_client=http) as (read, write, _):
            async with ClientSession(read, write) as session:
                initialized = await session.initialize()
                listed = await session.list_tools()
                called = await session.call_tool(tool, arguments)
                return {
                    "protocol": initialized.protocolVersion,
                    "tools": [t.name for t in listed.tools],
                    "call": result_of(called),
                }


def main():
    url, tool, arguments = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    token = os.environ["MCP_BEARER_TOKEN"]
    run = modern if int(SDK.split(".")[0]) >= 2 else handshake
    seen = asyncio.run(run(url, token, tool, arguments))
    seen["sdk"] = SDK
    print(json.dumps(seen))


if __name__ == "__main__":
    main()
