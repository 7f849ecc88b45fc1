"""The Python twin of examples/interop_server.rs: the same tools, prompt and resource, with the
same names, questions, schemas and texts, written with the Python SDK (`mcp` 2.3.0).

    python interop_server.py [--stdio | --http PORT]

Over HTTP it serves Streamable HTTP at http://127.0.0.1:PORT/mcp. Both eras work on either
transport: a 2025-11-25 client gets an initialize handshake and live questions, a 2026-07-28
client gets InputRequiredResult rounds.

- delete_folder(path): a resolver that asks only when the folder is not empty.
- plan_trip(city): two resolvers (Sample and ListRoots) asked in the same round.
- prompt briefing and template resource vault://{item}: a prompt and a resource that ask.
- provision(name): the Provisioner's round built by hand (key "region", state
  "provision-v1"); a 2025-11-25 session cannot carry an InputRequiredResult, so there it asks
  the same question live.
- order(): three questions, each depending on the answer before, so three rounds.
- show_dashboard(): linked to the MCP App ui://interop/dashboard (the `Apps` extension), whose
  HTML declares one connect origin and asks for a border.
"""

import argparse
from typing import Annotated

from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel

from mcp.server.apps import Apps, ResourceCsp
from mcp.server.mcpserver import (
    AcceptedElicitation,
    CancelledElicitation,
    Context,
    DeclinedElicitation,
    Elicit,
    ElicitationResult,
    ListRoots,
    MCPServer,
    Resolve,
    Sample,
    UserMessage,
)
from mcp.types import (
    CreateMessageResult,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitResult,
    InputRequiredResult,
    ListRootsResult,
    SamplingMessage,
    TextContent,
)

DASHBOARD_URI = "ui://interop/dashboard"
DASHBOARD_HTML = "<!doctype html><html><body><h1>Orders</h1><p>3 open orders</p></body></html>"

apps = Apps()


@apps.tool(resource_uri=DASHBOARD_URI, description="Show the orders dashboard.")
def show_dashboard() -> str:
    return "Dashboard: 3 open orders."


apps.add_html_resource(
    DASHBOARD_URI,
    DASHBOARD_HTML,
    name="dashboard",
    csp=ResourceCsp(connect_domains=["https://api.example.com"]),
    prefers_border=True,
)

mcp = MCPServer("interop", extensions=[apps])


def is_legacy(ctx: Context) -> bool:
    """A 2025-11-25 session: questions go over the back-channel, not in an InputRequiredResult."""
    return ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS


def ask(message: str, field: str) -> ElicitRequest:
    """A form question with one required string field."""
    return ElicitRequest(
        params=ElicitRequestFormParams(
            message=message,
            requested_schema={
                "type": "object",
                "properties": {field: {"type": "string"}},
                "required": [field],
            },
        )
    )


def accepted(answer: object, field: str) -> str | None:
    """The accepted value of `field` in a retry's answer, if there is one."""
    if isinstance(answer, ElicitResult) and answer.action == "accept" and answer.content:
        value = answer.content.get(field)
        if isinstance(value, str):
            return value
    return None


# --------------------------------------------------------------------------------------------
# (a) Files: a resolver that asks only when it must.

_FOLDERS: dict[str, list[str]] = {"/tmp/empty": [], "/tmp/project": ["main.py", "README.md"]}


class Confirm(BaseModel):
    ok: bool


async def confirm_delete(path: str) -> Confirm | Elicit[Confirm]:
    """Ask for confirmation only when the folder is not empty."""
    file_count = len(_FOLDERS.get(path, []))
    if file_count == 0:
        return Confirm(ok=True)
    return Elicit(f"{path} has {file_count} file(s). Delete anyway?", Confirm)


@mcp.tool()
async def delete_folder(
    path: str,
    confirm: Annotated[ElicitationResult[Confirm], Resolve(confirm_delete)],
) -> str:
    """Delete a folder, asking for confirmation when it is not empty."""
    match confirm:
        case AcceptedElicitation(data=Confirm(ok=True)):
            return f"deleted {path}"
        case AcceptedElicitation():
            return "kept the folder"
        case DeclinedElicitation():
            return "declined: folder not deleted"
        case CancelledElicitation():
            return "cancelled: folder not deleted"
    raise AssertionError("unreachable")


# --------------------------------------------------------------------------------------------
# (b) Sampling and roots, two independent questions in one round.


async def plan(city: str) -> Sample:
    """Ask the client's model for a plan."""
    message = SamplingMessage(role="user", content=TextContent(type="text", text=f"Plan a day in {city}"))
    return Sample([message], max_tokens=100)


async def roots() -> ListRoots:
    """Ask where the client keeps its files."""
    return ListRoots()


@mcp.tool()
async def plan_trip(
    city: str,
    plan: Annotated[CreateMessageResult, Resolve(plan)],
    roots: Annotated[ListRootsResult, Resolve(roots)],
) -> str:
    """Plan a day trip and say where it is saved."""
    if not isinstance(plan.content, TextContent):
        raise ValueError("the model did not answer with text")
    if not roots.roots:
        raise ValueError("the client has no roots")
    return f"{plan.content.text} (saved to {roots.roots[0].uri})"


# --------------------------------------------------------------------------------------------
# (c) A prompt and a template resource that ask. Resolvers serve tools only in the Python SDK,
# so these build their round by hand (and ask live on a 2025-11-25 session).


class Audience(BaseModel):
    audience: str


@mcp.prompt()
async def briefing(ctx: Context) -> list[UserMessage] | InputRequiredResult:
    """Draft a briefing tuned to its audience."""
    if is_legacy(ctx):
        result = await ctx.elicit("Who is the briefing for?", Audience)
        if not isinstance(result, AcceptedElicitation):
            raise ValueError(f"elicitation was {result.action}")
        audience = result.data.audience
    else:
        audience = accepted((ctx.input_responses or {}).get("audience"), "audience")
        if audience is None:
            return InputRequiredResult(input_requests={"audience": ask("Who is the briefing for?", "audience")})
    return [UserMessage(f"Write a briefing for {audience}.")]


@mcp.resource("vault://{item}", name="vault", mime_type="text/plain")
async def vault(item: str, ctx: Context) -> str | InputRequiredResult:
    """Secrets, after confirmation."""
    message = f"Unlock {item}?"
    if is_legacy(ctx):
        result = await ctx.elicit(message, Confirm)
        if not isinstance(result, AcceptedElicitation):
            raise ValueError(f"elicitation was {result.action}")
        ok = result.data.ok
    else:
        answer = (ctx.input_responses or {}).get("unlock")
        if not (isinstance(answer, ElicitResult) and answer.action == "accept" and answer.content):
            question = ElicitRequest(
                params=ElicitRequestFormParams(
                    message=message,
                    requested_schema={
                        "type": "object",
                        "properties": {"ok": {"type": "boolean"}},
                        "required": ["ok"],
                    },
                )
            )
            return InputRequiredResult(input_requests={"unlock": question})
        ok = answer.content.get("ok") is True
    return f"the {item} secret" if ok else "locked"


# --------------------------------------------------------------------------------------------
# (d) The Provisioner: a round built by hand.

ASK_REGION = "Which region should the database live in?"


class Region(BaseModel):
    region: str


@mcp.tool(description="Provision a database. Asks which region to put it in.")
async def provision(name: str, ctx: Context) -> str | InputRequiredResult:
    if is_legacy(ctx):
        result = await ctx.elicit(ASK_REGION, Region)
        if not isinstance(result, AcceptedElicitation):
            raise ValueError("no region given")
        return f"Provisioned {name!r} in {result.data.region}."
    region = accepted((ctx.input_responses or {}).get("region"), "region")
    if region is None:
        return InputRequiredResult(input_requests={"region": ask(ASK_REGION, "region")}, request_state="provision-v1")
    return f"Provisioned {name!r} in {region}."


# --------------------------------------------------------------------------------------------
# (e) Three questions, each needing the answer before it: three rounds.


class Name(BaseModel):
    name: str


class Color(BaseModel):
    color: str


class Size(BaseModel):
    size: int


async def ask_name() -> Elicit[Name]:
    return Elicit("Your name?", Name)


async def ask_color(name: Annotated[Name, Resolve(ask_name)]) -> Elicit[Color]:
    return Elicit(f"{name.name}, your favourite colour?", Color)


async def ask_size(color: Annotated[Color, Resolve(ask_color)]) -> Elicit[Size]:
    return Elicit(f"How big, in {color.color}?", Size)


@mcp.tool()
async def order(
    name: Annotated[Name, Resolve(ask_name)],
    color: Annotated[Color, Resolve(ask_color)],
    size: Annotated[Size, Resolve(ask_size)],
) -> str:
    """Order something, after three questions."""
    return f"{name.name} ordered size {size.size} in {color.color}."


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stdio", action="store_true", help="serve on stdin/stdout (the default)")
    parser.add_argument("--http", type=int, metavar="PORT", help="serve Streamable HTTP on 127.0.0.1:PORT/mcp")
    args = parser.parse_args()
    if args.http is not None:
        mcp.run("streamable-http", host="127.0.0.1", port=args.http)
    else:
        mcp.run()


if __name__ == "__main__":
    main()
