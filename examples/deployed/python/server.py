"""The deployed base's Python server: examples/interop_server.rs's tools, prompt and resource, with
the same names, questions, schemas and texts, written with the Python SDK 1.x (`mcp` 1.30.0,
FastMCP), the line most Python MCP servers in the wild are built on.

    python server.py [--stdio | --http PORT]

It speaks 2025-11-25 only: over HTTP it is a stateful Streamable HTTP server (sessions minted by
`initialize`) at http://127.0.0.1:PORT/mcp, and it asks its questions live, mid-call. It knows
nothing of `server/discover`: a 2026-07-28 probe is answered HTTP 400 "Missing session ID", which
a client must read as "a legacy server: fall back to initialize".
"""

import argparse

from pydantic import BaseModel

from mcp.server.elicitation import AcceptedElicitation, CancelledElicitation, DeclinedElicitation
from mcp.server.fastmcp import Context, FastMCP
from mcp.server.fastmcp.prompts.base import UserMessage
from mcp.types import SamplingMessage, TextContent

mcp = FastMCP("interop-deployed-python")

FOLDERS: dict[str, list[str]] = {"/tmp/empty": [], "/tmp/project": ["main.py", "README.md"]}


class Confirm(BaseModel):
    ok: bool


@mcp.tool()
async def delete_folder(path: str, ctx: Context) -> str:
    """Delete a folder, asking for confirmation when it is not empty."""
    count = len(FOLDERS.get(path, []))
    if count == 0:
        return f"deleted {path}"
    answer = await ctx.elicit(f"{path} has {count} file(s). Delete anyway?", Confirm)
    match answer:
        case AcceptedElicitation(data=Confirm(ok=True)):
            return f"deleted {path}"
        case AcceptedElicitation():
            return "kept the folder"
        case DeclinedElicitation():
            return "declined: folder not deleted"
        case CancelledElicitation():
            return "cancelled: folder not deleted"
    raise AssertionError("unreachable")


@mcp.tool()
async def plan_trip(city: str, ctx: Context) -> str:
    """Plan a day trip and say where it is saved."""
    message = SamplingMessage(role="user", content=TextContent(type="text", text=f"Plan a day in {city}"))
    plan = await ctx.session.create_message(messages=[message], max_tokens=100, related_request_id=ctx.request_id)
    roots = await ctx.session.list_roots()
    if not isinstance(plan.content, TextContent):
        raise ValueError("the model did not answer with text")
    if not roots.roots:
        raise ValueError("the client has no roots")
    return f"{plan.content.text} (saved to {roots.roots[0].uri})"


class Audience(BaseModel):
    audience: str


@mcp.prompt()
async def briefing(ctx: Context) -> list[UserMessage]:
    """Draft a briefing tuned to its audience."""
    answer = await ctx.elicit("Who is the briefing for?", Audience)
    if not isinstance(answer, AcceptedElicitation):
        raise ValueError(f"elicitation was {answer.action}")
    return [UserMessage(f"Write a briefing for {answer.data.audience}.")]


@mcp.resource("vault://{item}", name="vault", mime_type="text/plain")
async def vault(item: str, ctx: Context) -> str:
    """Secrets, after confirmation."""
    answer = await ctx.elicit(f"Unlock {item}?", Confirm)
    if not isinstance(answer, AcceptedElicitation):
        raise ValueError(f"elicitation was {answer.action}")
    return f"the {item} secret" if answer.data.ok else "locked"


class Region(BaseModel):
    region: str


@mcp.tool(description="Provision a database. Asks which region to put it in.")
async def provision(name: str, ctx: Context) -> str:
    answer = await ctx.elicit("Which region should the database live in?", Region)
    if not isinstance(answer, AcceptedElicitation):
        raise ValueError("no region given")
    return f"Provisioned {name!r} in {answer.data.region}."


class Name(BaseModel):
    name: str


class Color(BaseModel):
    color: str


class Size(BaseModel):
    size: int


@mcp.tool()
async def order(ctx: Context) -> str:
    """Order something, after three questions."""
    name = await ctx.elicit("Your name?", Name)
    if not isinstance(name, AcceptedElicitation):
        raise ValueError("no name given")
    color = await ctx.elicit(f"{name.data.name}, your favourite colour?", Color)
    if not isinstance(color, AcceptedElicitation):
        raise ValueError("no colour given")
    size = await ctx.elicit(f"How big, in {color.data.color}?", Size)
    if not isinstance(size, AcceptedElicitation):
        raise ValueError("no size given")
    return f"{name.data.name} ordered size {size.data.size} in {color.data.color}."


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stdio", action="store_true", help="serve on stdin/stdout (the default)")
    parser.add_argument("--http", type=int, metavar="PORT", help="serve Streamable HTTP on 127.0.0.1:PORT/mcp")
    args = parser.parse_args()
    if args.http is not None:
        mcp.settings.host = "127.0.0.1"
        mcp.settings.port = args.http
        mcp.run("streamable-http")
    else:
        mcp.run()


if __name__ == "__main__":
    main()
