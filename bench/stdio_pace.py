#!/usr/bin/env python3
"""Server CPU per stdio call as the client's pace changes (issue #35, item 2).

`cargo xtask bench` drives stdio with a Rust client that sends the next request the moment an
answer arrives (about 15,000 round trips/s); a client written in Python sends one about every
200 µs; a client that pipelines keeps the pipe full. This drives the release echo servers of
`bench/` (build them with `cargo xtask bench --quick` first) all three ways and prints the
server's CPU time per call (utime + stime from /proc, read before and after) beside its rate:

    python3 bench/stdio_pace.py [--calls N] [--servers our-echo,floor]

Every answer is read; the sequential mode checks each one's id.
"""

import argparse
import json
import os
import subprocess
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def call(i):
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "stdio-pace", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
    }
    params = {"name": "echo", "arguments": {"text": f"hello {i}"}, "_meta": meta}
    message = {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": params}
    return (json.dumps(message) + "\n").encode()


def measure(server, calls, mode):
    binary = os.path.join(ROOT, "bench", "target", "release", server)
    child = subprocess.Popen([binary, "--stdio"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, bufsize=0)
    try:
        child.stdin.write(call(0))
        first = child.stdout.readline()
        if b'"result"' not in first:
            raise SystemExit(f"{server}: the first call was not answered: {first!r}")
        before, started = cpu_seconds(child.pid), time.monotonic()
        if mode == "pipelined":
            def write_all():
                for i in range(1, calls + 1):
                    child.stdin.write(call(i))
            writer = threading.Thread(target=write_all)
            writer.start()
            answered = 0
            while answered < calls:
                chunk = os.read(child.stdout.fileno(), 1 << 16)
                if not chunk:
                    raise SystemExit(f"{server}: stdout closed after {answered} answers")
                answered += chunk.count(b"\n")
            writer.join()
        else:
            for i in range(1, calls + 1):
                child.stdin.write(call(i))
                answer = json.loads(child.stdout.readline())
                if answer.get("id") != i:
                    raise SystemExit(f"{server}: answer {answer!r} to call {i}")
        elapsed = time.monotonic() - started
        spent = cpu_seconds(child.pid) - before
    finally:
        child.stdin.close()
        child.wait(timeout=5)
    return spent / calls * 1e6, calls / elapsed


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20_000)
    parser.add_argument("--servers", default="our-echo,floor")
    args = parser.parse_args()
    print(f"load average before: {open('/proc/loadavg').read().split()[0]}")
    for mode, calls in [("sequential", args.calls), ("pipelined", args.calls * 5)]:
        for server in args.servers.split(","):
            us, rate = measure(server, calls, mode)
            print(f"{mode:10} {server:9} {us:6.1f} µs CPU per call  {rate:9,.0f} calls/s")


if __name__ == "__main__":
    main()
