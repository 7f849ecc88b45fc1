"""The benchmark's echo server on the Python SDK (`mcp` 2.3.0), for `cargo xtask bench`.

    python echo_server.py --http PORT   Streamable HTTP (stateless, JSON responses) at http://127.0.0.1:PORT/mcp
    python echo_server.py --stdio       newline-delimited JSON-RPC on stdin/stdout

Tools: echo(text) -> text, and confirm_echo(text), which asks the client to confirm through a
resolver (one InputRequiredResult round, requestState sealed by the SDK) and then echoes.
"""

import argparse
from typing import Annotated

from pydantic import BaseModel

from mcp.server.mcpserver import AcceptedElicitation, Elicit, ElicitationResult, MCPServer, Resolve

# Per-request logging would dominate the measurement; the Rust servers log nothing per request.
mcp = MCPServer("python-echo", log_level="WARNING")


@mcp.tool()
async def echo(text: str) -> str:
    """Echo the text back."""
    return text


class Confirm(BaseModel):
    ok: bool


async def confirm(text: str) -> Elicit[Confirm]:
    """Always asks: the benchmark measures one full round."""
    return Elicit(f"Echo {len(text)} character(s)?", Confirm)


@mcp.tool()
async def confirm_echo(
    text: str,
    answer: Annotated[ElicitationResult[Confirm], Resolve(confirm)],
) -> str:
    """Echo the text back after the client confirms."""
    match answer:
        case AcceptedElicitation(data=Confirm(ok=True)):
            return text
        case _:
            return ""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--stdio", action="store_true")
    parser.add_argument("--http", type=int, metavar="PORT")
    args = parser.parse_args()
    if args.http is not None:
        mcp.run("streamable-http", host="127.0.0.1", port=args.http, stateless_http=True, json_response=True)
    else:
        mcp.run()


if __name__ == "__main__":
    main()
