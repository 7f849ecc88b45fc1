"""Drives an interop server (examples/interop_server.rs or interop_server.py) through every flow
with the Python SDK's `Client`, checking the exact texts. One line per flow; exit status 1 on
any mismatch.

    python interop_client.py --era 2026-07-28 --url http://127.0.0.1:8000/mcp
    python interop_client.py --era 2025-11-25 -- path/to/interop-server --stdio

`--era 2026-07-28` pins the stateless revision (no probe); `--era 2025-11-25` runs the legacy
initialize handshake.
"""

import argparse
import sys
import traceback
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from mcp import Client
from mcp.client import ClientRequestContext
from mcp.client.extension import advertise
from mcp.client.stdio import StdioServerParameters
from mcp.types import (
    CallToolResult,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequest,
    ElicitResult,
    InputRequiredResult,
    ListRootsRequest,
    ListRootsResult,
    Root,
    TextContent,
)

MODERN = "2026-07-28"
LEGACY = "2025-11-25"


class Mismatch(Exception):
    """What a flow got differs from what it expected."""


def expect(what: str, got: object, want: object) -> None:
    if got != want:
        raise Mismatch(f"{what}: got {got!r}, want {want!r}")


class Script:
    """The answers the callbacks give, set by each flow, and the questions they saw."""

    def __init__(self) -> None:
        self.answers: list[ElicitResult] = []
        self.asked: list[str] = []
        self.schemas: list[dict[str, Any]] = []
        self.sampled: list[str] = []
        self.rooted = 0

    def reset(self, *answers: ElicitResult) -> None:
        self.answers = list(answers)
        self.asked = []
        self.schemas = []
        self.sampled = []
        self.rooted = 0

    async def elicit(self, context: ClientRequestContext, params: Any) -> ElicitResult:
        self.asked.append(params.message)
        self.schemas.append(dict(getattr(params, "requested_schema", {}) or {}))
        if not self.answers:
            return ElicitResult(action="cancel")
        return self.answers.pop(0)

    async def sample(self, context: ClientRequestContext, params: CreateMessageRequestParams) -> CreateMessageResult:
        message = params.messages[0].content
        self.sampled.append(message.text if isinstance(message, TextContent) else repr(message))
        return CreateMessageResult(
            role="assistant",
            content=TextContent(type="text", text="Tram 28, then the castle"),
            model="interop-model",
            stop_reason="endTurn",
        )

    async def list_roots(self, context: ClientRequestContext) -> ListRootsResult:
        self.rooted += 1
        return ListRootsResult(roots=[Root(uri="file:///trips", name="trips")])


def accept(**content: Any) -> ElicitResult:
    return ElicitResult(action="accept", content=content)


def tool_text(result: CallToolResult) -> str:
    if result.is_error:
        raise Mismatch(f"tool error: {result.content}")
    first = result.content[0]
    if not isinstance(first, TextContent):
        raise Mismatch(f"not text: {first!r}")
    return first.text


def required_fields(schema: dict[str, Any]) -> tuple[list[str], dict[str, str]]:
    properties = schema.get("properties", {})
    return sorted(schema.get("required", [])), {k: v.get("type") for k, v in properties.items()}


Flow = Callable[[Client, Script, str], Awaitable[None]]


async def delete_empty(client: Client, script: Script, era: str) -> None:
    script.reset()
    expect("text", tool_text(await client.call_tool("delete_folder", {"path": "/tmp/empty"})), "deleted /tmp/empty")
    expect("questions", script.asked, [])


def delete_project(answer: ElicitResult, want: str) -> Flow:
    async def flow(client: Client, script: Script, era: str) -> None:
        script.reset(answer)
        text = tool_text(await client.call_tool("delete_folder", {"path": "/tmp/project"}))
        expect("questions", script.asked, ["/tmp/project has 2 file(s). Delete anyway?"])
        expect("schema", required_fields(script.schemas[0]), (["ok"], {"ok": "boolean"}))
        expect("text", text, want)

    return flow


async def plan_trip(client: Client, script: Script, era: str) -> None:
    if era == MODERN:
        # Both questions come back in the first round, side by side.
        script.reset()
        first = await client.session.call_tool("plan_trip", {"city": "Lisbon"}, allow_input_required=True)
        if not isinstance(first, InputRequiredResult):
            raise Mismatch(f"first round is not input_required: {first!r}")
        methods = sorted(r.method for r in (first.input_requests or {}).values())
        expect("methods of the first round", methods, ["roots/list", "sampling/createMessage"])
    script.reset()
    text = tool_text(await client.call_tool("plan_trip", {"city": "Lisbon"}))
    expect("sampled", script.sampled, ["Plan a day in Lisbon"])
    expect("roots asked", script.rooted, 1)
    expect("text", text, "Tram 28, then the castle (saved to file:///trips)")


async def briefing(client: Client, script: Script, era: str) -> None:
    script.reset(accept(audience="the board"))
    result = await client.get_prompt("briefing")
    expect("questions", script.asked, ["Who is the briefing for?"])
    expect("schema", required_fields(script.schemas[0]), (["audience"], {"audience": "string"}))
    expect("messages", len(result.messages), 1)
    message = result.messages[0]
    expect("role", message.role, "user")
    content = message.content
    expect("text", content.text if isinstance(content, TextContent) else content, "Write a briefing for the board.")


async def vault(client: Client, script: Script, era: str) -> None:
    script.reset(accept(ok=True))
    result = await client.read_resource("vault://keys")
    expect("questions", script.asked, ["Unlock keys?"])
    expect("contents", len(result.contents), 1)
    contents = result.contents[0]
    expect("uri", str(contents.uri), "vault://keys")
    expect("mimeType", contents.mime_type, "text/plain")
    expect("text", getattr(contents, "text", None), "the keys secret")


async def provision(client: Client, script: Script, era: str) -> None:
    if era == MODERN:
        # The hand-built round: key "region", the form question, and a requestState.
        script.reset()
        first = await client.session.call_tool("provision", {"name": "orders"}, allow_input_required=True)
        if not isinstance(first, InputRequiredResult):
            raise Mismatch(f"first round is not input_required: {first!r}")
        requests = first.input_requests or {}
        expect("keys", sorted(requests), ["region"])
        request = requests["region"]
        if not isinstance(request, ElicitRequest):
            raise Mismatch(f"not an elicitation: {request!r}")
        expect("question", request.params.message, "Which region should the database live in?")
        if not first.request_state:
            raise Mismatch("no requestState in the hand-built round")
    script.reset(accept(region="eu-west-1"))
    text = tool_text(await client.call_tool("provision", {"name": "orders"}))
    expect("questions", script.asked, ["Which region should the database live in?"])
    expect("schema", required_fields(script.schemas[0]), (["region"], {"region": "string"}))
    expect("text", text, "Provisioned 'orders' in eu-west-1.")


APPS = "io.modelcontextprotocol/ui"
APP_MIME = "text/html;profile=mcp-app"
DASHBOARD_URI = "ui://interop/dashboard"
DASHBOARD_HTML = "<!doctype html><html><body><h1>Orders</h1><p>3 open orders</p></body></html>"


async def apps(client: Client, script: Script, era: str) -> None:
    # The client declared MCP Apps: the tool's link, the app with its MIME type and _meta.ui.
    tools = {t.name: t for t in (await client.list_tools()).tools}
    if "show_dashboard" not in tools:
        raise Mismatch(f"show_dashboard is not listed: {sorted(tools)}")
    # The link, and the same link under the flat key hosts written before `_meta.ui` read.
    expect(
        "tool _meta",
        tools["show_dashboard"].meta,
        {"ui": {"resourceUri": DASHBOARD_URI}, "ui/resourceUri": DASHBOARD_URI},
    )
    result = await client.read_resource(DASHBOARD_URI)
    expect("contents", len(result.contents), 1)
    contents = result.contents[0]
    expect("uri", str(contents.uri), DASHBOARD_URI)
    expect("mimeType", contents.mime_type, APP_MIME)
    expect("text", getattr(contents, "text", None), DASHBOARD_HTML)
    expect(
        "contents _meta",
        contents.meta,
        {"ui": {"csp": {"connectDomains": ["https://api.example.com"]}, "prefersBorder": True}},
    )
    expect("text of the linked tool", tool_text(await client.call_tool("show_dashboard", {})), "Dashboard: 3 open orders.")


ORDER_QUESTIONS = ["Your name?", "Ada, your favourite colour?", "How big, in green?"]
ORDER_ANSWERS = [{"name": "Ada"}, {"color": "green"}, {"size": 3}]


async def order(client: Client, script: Script, era: str) -> None:
    if era == MODERN:
        # Drive the rounds by hand to count them: one question per round, three rounds.
        rounds = 0
        responses: dict[str, Any] | None = None
        state: str | None = None
        while True:
            result = await client.session.call_tool(
                "order", {}, input_responses=responses, request_state=state, allow_input_required=True
            )
            if not isinstance(result, InputRequiredResult):
                break
            requests = result.input_requests or {}
            if len(requests) != 1 or rounds >= len(ORDER_QUESTIONS):
                raise Mismatch(f"round {rounds + 1} asked {requests!r}")
            ((key, request),) = requests.items()
            if not isinstance(request, ElicitRequest):
                raise Mismatch(f"not an elicitation: {request!r}")
            expect(f"question {rounds + 1}", request.params.message, ORDER_QUESTIONS[rounds])
            responses = {key: accept(**ORDER_ANSWERS[rounds])}
            state = result.request_state
            rounds += 1
        expect("rounds", rounds, 3)
        expect("text (manual loop)", tool_text(result), "Ada ordered size 3 in green.")
    script.reset(*(accept(**a) for a in ORDER_ANSWERS))
    text = tool_text(await client.call_tool("order", {}))
    expect("questions", script.asked, ORDER_QUESTIONS)
    expect("text", text, "Ada ordered size 3 in green.")


FLOWS: list[tuple[str, Flow]] = [
    ("a. delete_folder /tmp/empty (no question)", delete_empty),
    ("a. delete_folder accept", delete_project(accept(ok=True), "deleted /tmp/project")),
    ("a. delete_folder accept ok=false", delete_project(accept(ok=False), "kept the folder")),
    ("a. delete_folder decline", delete_project(ElicitResult(action="decline"), "declined: folder not deleted")),
    ("a. delete_folder cancel", delete_project(ElicitResult(action="cancel"), "cancelled: folder not deleted")),
    ("b. plan_trip (sampling + roots in one round)", plan_trip),
    ("c. prompt briefing", briefing),
    ("c. resource vault://{item}", vault),
    ("d. provision (hand-built state)", provision),
    ("e. order (three rounds)", order),
    ("f. MCP Apps: the tool's app, read with its MIME type and _meta.ui", apps),
]


async def run(target: str | StdioServerParameters, era: str) -> int:
    script = Script()
    failures = 0
    async with Client(
        target,
        mode="legacy" if era == LEGACY else era,
        elicitation_callback=script.elicit,
        sampling_callback=script.sample,
        list_roots_callback=script.list_roots,
        extensions=[advertise(APPS, {"mimeTypes": [APP_MIME]})],
        read_timeout_seconds=30,
    ) as client:
        expect("negotiated version", client.protocol_version, era)
        for name, flow in FLOWS:
            try:
                with anyio.fail_after(60):
                    await flow(client, script, era)
                print(f"ok    {name}", flush=True)
            except Exception as e:  # a flow's failure is reported, then the next one runs
                failures += 1
                detail = str(e) if isinstance(e, Mismatch) else "".join(traceback.format_exception_only(e)).strip()
                print(f"FAIL  {name}: {detail}", flush=True)
    return failures


def main() -> None:
    parser = argparse.ArgumentParser(description="Run every interop flow against a server.")
    parser.add_argument("--era", choices=[MODERN, LEGACY], default=MODERN)
    parser.add_argument("--url", help="Streamable HTTP endpoint, e.g. http://127.0.0.1:8000/mcp")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND ARGS...: a stdio server to spawn")
    args = parser.parse_args()
    command = [c for c in args.command if c != "--"] if args.command else []
    if bool(args.url) == bool(command):
        parser.error("give exactly one of --url URL or -- COMMAND ARGS...")
    target: str | StdioServerParameters = (
        args.url if args.url else StdioServerParameters(command=command[0], args=command[1:])
    )
    try:
        failures = anyio.run(run, target, args.era)
    except Exception as e:
        print(f"FAIL  connect: {''.join(traceback.format_exception_only(e)).strip()}", flush=True)
        sys.exit(1)
    print(f"python client, era {args.era}: {len(FLOWS) - failures} passed, {failures} failed", flush=True)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
