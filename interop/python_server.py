"""An MCP server written with the official Python SDK (PyPI `mcp`), for the
interop tests of SPEAR's `mcp-stdio` client.

It uses the SDK's low-level `Server` because its tools/list handler sees the
client's cursor, so the list can come in several pages the way a large real
server sends it (the high-level `MCPServer` always answers in one page).

Tools:
- `echo`          text back (`message`)
- `tiny_image`    one 2x2 PNG, base64, as an image block
- `fail`          a result with `isError: true` (the tool itself failed)
- `slow`          sleeps `ms` milliseconds, then answers (multiplexing tests)
- `add`           `a + b` as text and as structured content
- `filler_NN`     plain tools that only make the list long enough to page

Run: `python python_server.py [--page-size N] [--fillers N]` (stdio).
"""

import argparse
import base64
import struct
import sys
import zlib
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

CURSOR_PREFIX = "offset:"


def png_2x2() -> str:
    """A valid 2x2 RGB PNG, built here so the server needs no image library."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        crc = zlib.crc32(kind + body) & 0xFFFFFFFF
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", 2, 2, 8, 2, 0, 0, 0)
    rows = b"\x00\xff\x00\x00\x00\xff\x00" + b"\x00\x00\x00\xff\xff\xff\xff"
    png = (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )
    return base64.b64encode(png).decode("ascii")


def obj(properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema


def all_tools(fillers: int) -> list[types.Tool]:
    tools = [
        types.Tool(
            name="echo",
            title="Echo",
            description="Returns the message it is given.",
            input_schema=obj({"message": {"type": "string"}}, ["message"]),
        ),
        types.Tool(
            name="tiny_image",
            description="Returns a 2x2 PNG image.",
            input_schema=obj({}),
        ),
        types.Tool(
            name="fail",
            description="Always fails inside the tool (isError: true).",
            input_schema=obj({"reason": {"type": "string"}}),
        ),
        types.Tool(
            name="slow",
            description="Waits `ms` milliseconds, then answers.",
            input_schema=obj({"ms": {"type": "integer", "minimum": 0}}, ["ms"]),
        ),
        types.Tool(
            name="add",
            description="Adds two numbers.",
            input_schema=obj({"a": {"type": "number"}, "b": {"type": "number"}}, ["a", "b"]),
            output_schema=obj({"sum": {"type": "number"}}, ["sum"]),
        ),
    ]
    for i in range(fillers):
        tools.append(
            types.Tool(
                name=f"filler_{i:02}",
                description=f"Filler tool number {i}; makes the list span several pages.",
                input_schema=obj({}),
            )
        )
    return tools


def build(page_size: int, fillers: int) -> Server:
    tools = all_tools(fillers)
    image = png_2x2()

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        cursor = params.cursor if params is not None else None
        start = 0
        if cursor is not None:
            if not cursor.startswith(CURSOR_PREFIX) or not cursor[len(CURSOR_PREFIX) :].isdigit():
                raise MCPError(types.INVALID_PARAMS, f"unknown cursor {cursor!r}")
            start = int(cursor[len(CURSOR_PREFIX) :])
        end = start + page_size
        next_cursor = f"{CURSOR_PREFIX}{end}" if end < len(tools) else None
        return types.ListToolsResult(tools=tools[start:end], next_cursor=next_cursor)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        args = params.arguments or {}
        name = params.name
        if name == "echo":
            return types.CallToolResult(content=[types.TextContent(text=f"Echo: {args.get('message', '')}")])
        if name == "tiny_image":
            return types.CallToolResult(
                content=[
                    types.TextContent(text="a 2x2 PNG follows"),
                    types.ImageContent(data=image, mime_type="image/png"),
                ]
            )
        if name == "fail":
            reason = args.get("reason", "it always fails")
            return types.CallToolResult(content=[types.TextContent(text=f"failed: {reason}")], is_error=True)
        if name == "slow":
            ms = int(args.get("ms", 0))
            await anyio.sleep(ms / 1000)
            return types.CallToolResult(content=[types.TextContent(text=f"slept {ms} ms")])
        if name == "add":
            total = args.get("a", 0) + args.get("b", 0)
            return types.CallToolResult(
                content=[types.TextContent(text=str(total))], structured_content={"sum": total}
            )
        if name.startswith("filler_") and any(t.name == name for t in tools):
            return types.CallToolResult(content=[types.TextContent(text=name)])
        raise MCPError(types.INVALID_PARAMS, f"unknown tool {name!r}")

    return Server("spear-interop-python", version="1.0.0", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--page-size", type=int, default=4)
    parser.add_argument("--fillers", type=int, default=18)
    args = parser.parse_args()
    if args.page_size < 1:
        parser.error("--page-size must be at least 1")
    server = build(args.page_size, args.fillers)
    print(f"python interop server: {args.page_size} tools a page", file=sys.stderr)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
