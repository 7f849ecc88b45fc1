"""The deployed base's Python client: drives an interop server (examples/interop_server.rs) through
every 2025-11-25 flow with the Python SDK 1.x's `ClientSession` (`mcp` 1.30.0), answering its
live questions from a script and checking the exact texts. One line per flow; exit status 1 on
any mismatch.

    python client.py --url http://127.0.0.1:8000/mcp
    python client.py -- path/to/interop-server --stdio

The SDK 1.x client knows only the `initialize` handshake: against a dual-era server it must end
up in a 2025-11-25 session, which is what every deployed Python host does.
"""

import argparse
import sys
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from typing import Any

import anyio

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamablehttp_client
from mcp.shared.context import RequestContext
from mcp.types import (
    CallToolResult,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestParams,
    ElicitResult,
    ListRootsResult,
    Root,
    TextContent,
)

LEGACY = "2025-11-25"


class Mismatch(Exception):
    """What a flow got differs from what it expected."""


def expect(what: str, got: object, want: object) -> None:
    if got != want:
        raise Mismatch(f"{what}: got {got!r}, want {want!r}")


class Script:
    """The answers the callbacks give, set by each flow, and the questions they saw."""

    def __init__(self) -> None:
        self.reset()

    def reset(self, *answers: ElicitResult) -> None:
        self.answers = list(answers)
        self.asked: list[str] = []
        self.schemas: list[dict[str, Any]] = []
        self.sampled: list[str] = []
        self.rooted = 0

    async def elicit(self, context: RequestContext[Any, Any], params: ElicitRequestParams) -> ElicitResult:
        self.asked.append(params.message)
        self.schemas.append(dict(getattr(params, "requestedSchema", {}) or {}))
        return self.answers.pop(0) if self.answers else ElicitResult(action="cancel")

    async def sample(self, context: RequestContext[Any, Any], params: CreateMessageRequestParams) -> CreateMessageResult:
        content = params.messages[0].content
        self.sampled.append(content.text if isinstance(content, TextContent) else repr(content))
        return CreateMessageResult(
            role="assistant",
            content=TextContent(type="text", text="Tram 28, then the castle"),
            model="interop-model",
            stopReason="endTurn",
        )

    async def list_roots(self, context: RequestContext[Any, Any]) -> ListRootsResult:
        self.rooted += 1
        return ListRootsResult(roots=[Root(uri="file:///trips", name="trips")])


def accept(**content: Any) -> ElicitResult:
    return ElicitResult(action="accept", content=content)


def tool_text(result: CallToolResult) -> str:
    if result.isError:
        raise Mismatch(f"tool error: {result.content}")
    first = result.content[0]
    if not isinstance(first, TextContent):
        raise Mismatch(f"not text: {first!r}")
    return first.text


def fields(schema: dict[str, Any]) -> list[tuple[str, str]]:
    return sorted((name, prop.get("type")) for name, prop in schema.get("properties", {}).items())


Flow = Callable[[ClientSession, Script], Awaitable[None]]


async def delete_empty(session: ClientSession, script: Script) -> None:
    script.reset()
    got = tool_text(await session.call_tool("delete_folder", {"path": "/tmp/empty"}))
    expect("questions", script.asked, [])
    expect("text", got, "deleted /tmp/empty")


def delete_project(answer: ElicitResult, want: str) -> Flow:
    async def flow(session: ClientSession, script: Script) -> None:
        script.reset(answer)
        got = tool_text(await session.call_tool("delete_folder", {"path": "/tmp/project"}))
        expect("questions", script.asked, ["/tmp/project has 2 file(s). Delete anyway?"])
        expect("schema", fields(script.schemas[0]), [("ok", "boolean")])
        expect("text", got, want)

    return flow


async def plan_trip(session: ClientSession, script: Script) -> None:
    script.reset()
    got = tool_text(await session.call_tool("plan_trip", {"city": "Lisbon"}))
    expect("sampled", script.sampled, ["Plan a day in Lisbon"])
    expect("roots asked", script.rooted, 1)
    expect("text", got, "Tram 28, then the castle (saved to file:///trips)")


async def briefing(session: ClientSession, script: Script) -> None:
    script.reset(accept(audience="the board"))
    result = await session.get_prompt("briefing", {})
    expect("questions", script.asked, ["Who is the briefing for?"])
    expect("schema", fields(script.schemas[0]), [("audience", "string")])
    messages = [m.model_dump(mode="json", exclude_none=True) for m in result.messages]
    expect("messages", messages, [{"role": "user", "content": {"type": "text", "text": "Write a briefing for the board."}}])


async def vault(session: ClientSession, script: Script) -> None:
    script.reset(accept(ok=True))
    result = await session.read_resource("vault://keys")  # type: ignore[arg-type]
    expect("questions", script.asked, ["Unlock keys?"])
    contents = [c.model_dump(mode="json", exclude_none=True) for c in result.contents]
    expect("contents", contents, [{"uri": "vault://keys", "mimeType": "text/plain", "text": "the keys secret"}])


async def provision(session: ClientSession, script: Script) -> None:
    script.reset(accept(region="eu-west-1"))
    got = tool_text(await session.call_tool("provision", {"name": "orders"}))
    expect("questions", script.asked, ["Which region should the database live in?"])
    expect("schema", fields(script.schemas[0]), [("region", "string")])
    expect("text", got, "Provisioned 'orders' in eu-west-1.")


async def order(session: ClientSession, script: Script) -> None:
    script.reset(accept(name="Ada"), accept(color="green"), accept(size=3))
    got = tool_text(await session.call_tool("order", {}))
    expect("questions", script.asked, ["Your name?", "Ada, your favourite colour?", "How big, in green?"])
    expect("text", got, "Ada ordered size 3 in green.")


FLOWS: list[tuple[str, Flow]] = [
    ("a. delete_folder /tmp/empty (no question)", delete_empty),
    ("a. delete_folder accept", delete_project(accept(ok=True), "deleted /tmp/project")),
    ("a. delete_folder accept ok=false", delete_project(accept(ok=False), "kept the folder")),
    ("a. delete_folder decline", delete_project(ElicitResult(action="decline"), "declined: folder not deleted")),
    ("a. delete_folder cancel", delete_project(ElicitResult(action="cancel"), "cancelled: folder not deleted")),
    ("b. plan_trip (sampling + roots)", plan_trip),
    ("c. prompt briefing", briefing),
    ("c. resource vault://{item}", vault),
    ("d. provision (asked live)", provision),
    ("e. order (three questions)", order),
]


async def run(url: str | None, command: list[str]) -> int:
    script = Script()
    async with AsyncExitStack() as stack:
        if url is not None:
            read, write, _ = await stack.enter_async_context(streamablehttp_client(url))
        else:
            params = StdioServerParameters(command=command[0], args=command[1:])
            read, write = await stack.enter_async_context(stdio_client(params))
        session = await stack.enter_async_context(
            ClientSession(
                read,
                write,
                sampling_callback=script.sample,
                elicitation_callback=script.elicit,
                list_roots_callback=script.list_roots,
            )
        )
        try:
            init = await session.initialize()
        except Exception as e:  # noqa: BLE001 - any failure to connect is the cell's result
            print(f"FAIL  connect: {e!r}")
            return 1
        failures = 0
        if init.protocolVersion != LEGACY:
            print(f"FAIL  negotiated version: got {init.protocolVersion}, want {LEGACY}")
            failures += 1
        for name, flow in FLOWS:
            try:
                with anyio.fail_after(60):
                    await flow(session, script)
                print(f"ok    {name}")
            except Exception as e:  # noqa: BLE001 - every failure is reported, then counted
                failures += 1
                print(f"FAIL  {name}: {e!r}")
        print(f"python 1.x client, era {LEGACY}: {len(FLOWS) - failures} passed, {failures} failed")
        return 0 if failures == 0 else 1


def main() -> None:
    argv = sys.argv[1:]
    command: list[str] = []
    if "--" in argv:
        split = argv.index("--")
        argv, command = argv[:split], argv[split + 1 :]
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", help="the server's Streamable HTTP endpoint")
    args = parser.parse_args(argv)
    if (args.url is None) == (not command):
        parser.error("give exactly one of --url URL or -- COMMAND ARGS...")
    sys.exit(anyio.run(run, args.url, command))


if __name__ == "__main__":
    main()
