"""Instructions per request of a benchmark server, counted by callgrind (repeatable on a busy
machine, unlike wall-clock CPU time). Python standard library only; not run by CI.

    python3 bench/callgrind.py [--requests N] [--warmup W] [--tool echo|confirm_echo|tasks/get]
                               [--conns C] [--stdio] [--out FILE] -- SERVER ARGS...

`{port}` in the server's arguments becomes a free loopback port. The server runs under
`valgrind --tool=callgrind`; after W warm-up requests the counters are zeroed
(`callgrind_control -z`), N more are sent (a `confirm_echo` flow counts as one: call,
`input_required`, retry, result), then the counters are dumped (`callgrind_control -d`) and the
server is stopped by its PID. It prints the instructions per request (or flow) and leaves the
profile in FILE for `callgrind_annotate --inclusive=yes FILE`.

`--tool tasks/get` (ours only) first creates one `task_wait` task per connection (it stays
`working` until cancelled), then counts `tasks/get` polls of it, each checked (id, task id,
status `working`); the tasks are cancelled at the end. `--fill N` first creates N more
`task_wait` tasks and cancels each at once, so the store holds N finished tasks (they stay until
their TTL) while the polls are counted.

With --conns C > 1 the requests go out C at a time on C keep-alive connections (one thread per
connection), so the per-wake-up costs are shared the way they are under load.
Every answer is checked: its id, and the echoed text.
"""

import argparse
import glob
import http.client
import json
import os
import socket
import subprocess
import sys
import threading
import time

VERSION = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": VERSION,
    "io.modelcontextprotocol/clientInfo": {"name": "loadgen", "version": "0.0.0"},
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
}


TASKS_META = dict(
    META,
    **{
        "io.modelcontextprotocol/clientCapabilities": {
            "elicitation": {"form": {}},
            "extensions": {"io.modelcontextprotocol/tasks": {}},
        }
    },
)


def task_body(request_id, method, params):
    message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": dict(params, _meta=TASKS_META)}
    return json.dumps(message, separators=(",", ":")).encode()


def body(request_id, tool, text, retry=None):
    params = {"name": tool, "arguments": {"text": text}, "_meta": META}
    if retry is not None:
        responses, state = retry
        params["inputResponses"] = responses
        if state is not None:
            params["requestState"] = state
    message = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
    return json.dumps(message, separators=(",", ":")).encode()


def check(message, request_id, text):
    """The retry to send, or None when the call completed with the right echo."""
    if message.get("id") != request_id:
        raise RuntimeError(f"response id {message.get('id')} is not {request_id}")
    result = message.get("result")
    if not isinstance(result, dict):
        raise RuntimeError(f"no result: {message}")
    if result.get("resultType") == "input_required":
        responses = {key: {"action": "accept", "content": {"ok": True}} for key in result["inputRequests"]}
        return responses, result.get("requestState")
    echoed = result["content"][0]["text"]
    if echoed != text:
        raise RuntimeError(f"echoed {echoed!r}, sent {text!r}")
    return None


class HttpClient:
    def __init__(self, port):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)

        self.task = None

    def send(self, request_id, tool, text, retry):
        return self.post(body(request_id, tool, text, retry), "tools/call", tool)

    def rpc(self, request_id, method, name, params):
        """A Tasks-extension request: its result, after checking the id."""
        message = self.post(task_body(request_id, method, params), method, name)
        if message.get("id") != request_id or "result" not in message:
            raise RuntimeError(f"{method}: {message}")
        return message["result"]

    def post(self, data, method, name):
        self.conn.request(
            "POST",
            "/mcp",
            body=data,
            headers={
                "content-type": "application/json",
                "accept": "application/json, text/event-stream",
                "mcp-protocol-version": VERSION,
                "mcp-method": method,
                "mcp-name": name,
            },
        )
        response = self.conn.getresponse()
        data = response.read()
        if response.status != 200:
            raise RuntimeError(f"HTTP {response.status}: {data!r}")
        return json.loads(data)


class StdioClient:
    def __init__(self, process):
        self.process = process

    def send(self, request_id, tool, text, retry):
        self.process.stdin.write(body(request_id, tool, text, retry) + b"\n")
        self.process.stdin.flush()
        while True:
            line = self.process.stdout.readline()
            if not line:
                raise RuntimeError("the server closed stdout")
            message = json.loads(line)
            if "id" in message:
                return message


class Ids:
    def __init__(self):
        self.lock = threading.Lock()
        self.next = 1000

    def take(self):
        with self.lock:
            self.next += 1
            return self.next


def one(client, ids, tool):
    request_id = ids.take()
    if tool == "tasks/get":
        if client.task is None:
            created = client.rpc(request_id, "tools/call", "task_wait", {"name": "task_wait", "arguments": {}})
            if created.get("resultType") != "task" or created.get("status") != "working":
                raise RuntimeError(f"task_wait did not create a working task: {created}")
            client.task = created["taskId"]
            request_id = ids.take()
        got = client.rpc(request_id, "tasks/get", client.task, {"taskId": client.task})
        if got.get("taskId") != client.task or got.get("status") != "working":
            raise RuntimeError(f"tasks/get of {client.task}: {got}")
        return
    text = f"echo #{request_id} from loadgen: the quick brown fox"
    retry = check(client.send(request_id, tool, text, None), request_id, text)
    if retry is not None:
        request_id = ids.take()
        if check(client.send(request_id, tool, text, retry), request_id, text) is not None:
            raise RuntimeError("asked again after the answer")
    elif tool != "echo":
        raise RuntimeError(f"{tool} completed without asking")


def batch(clients, ids, tool, count):
    """`count` requests (flows) spread over the clients, all connections busy at once."""
    errors = []

    def work(client, n):
        try:
            for _ in range(n):
                one(client, ids, tool)
        except Exception as e:  # reported below; the run fails
            errors.append(e)

    share = [count // len(clients) + (1 if i < count % len(clients) else 0) for i in range(len(clients))]
    threads = [threading.Thread(target=work, args=(c, n)) for c, n in zip(clients, share)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--tool", default="echo")
    parser.add_argument("--conns", type=int, default=1)
    parser.add_argument("--fill", type=int, default=0)
    parser.add_argument("--stdio", action="store_true")
    parser.add_argument("--out", default="target/callgrind.out")
    parser.add_argument("server", nargs="+")
    args = parser.parse_args()
    port = free_port()
    server = [a.replace("{port}", str(port)) for a in args.server]
    out = os.path.abspath(args.out)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    for old in glob.glob(out + "*"):
        os.remove(old)
    command = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *server]
    process = subprocess.Popen(
        command,
        stdin=subprocess.PIPE if args.stdio else subprocess.DEVNULL,
        stdout=subprocess.PIPE if args.stdio else subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        ids = Ids()
        if args.stdio:
            clients = [StdioClient(process)]
        else:
            deadline = time.time() + 120
            while True:
                try:
                    probe = HttpClient(port)
                    one(probe, ids, "echo")
                    break
                except (OSError, http.client.HTTPException):
                    if time.time() > deadline or process.poll() is not None:
                        raise RuntimeError("the server did not answer")
                    time.sleep(0.2)
            clients = [HttpClient(port) for _ in range(args.conns)]
            for _ in range(args.fill):
                created = probe.rpc(ids.take(), "tools/call", "task_wait", {"name": "task_wait", "arguments": {}})
                probe.rpc(ids.take(), "tasks/cancel", created["taskId"], {"taskId": created["taskId"]})
        batch(clients, ids, args.tool, max(args.warmup, len(clients)))
        subprocess.run(["callgrind_control", "-z", str(process.pid)], check=True, capture_output=True)
        batch(clients, ids, args.tool, args.requests)
        subprocess.run(["callgrind_control", "-d", str(process.pid)], check=True, capture_output=True)
        for client in clients:
            if getattr(client, "task", None) is not None:
                client.rpc(ids.take(), "tasks/cancel", client.task, {"taskId": client.task})
    finally:
        process.kill()
        process.wait()
    dumps = sorted(glob.glob(out + "*"), key=os.path.getmtime)
    total = None
    with open(dumps[-1]) as f:
        for line in f:
            if line.startswith(("summary:", "totals:")):
                total = int(line.split()[1])
    if total is None:
        raise RuntimeError(f"no totals in {dumps[-1]}")
    unit = "flow" if args.tool not in ("echo", "tasks/get") else "request"
    print(json.dumps({"ir_per_" + unit: round(total / args.requests), "profile": dumps[-1]}))


if __name__ == "__main__":
    sys.exit(main())
