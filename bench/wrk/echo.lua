-- wrk script for bench/wrk/crosscheck.sh: the same 2026-07-28 echo tools/call that bench/loadgen
-- sends (its headers and _meta), with a fixed id and text: wrk does not check the answers.
wrk.method = "POST"
wrk.headers["content-type"] = "application/json"
wrk.headers["accept"] = "application/json, text/event-stream"
wrk.headers["mcp-protocol-version"] = "2026-07-28"
wrk.headers["mcp-method"] = "tools/call"
wrk.headers["mcp-name"] = "echo"
wrk.body = '{"jsonrpc":"2.0","id":1001,"method":"tools/call","params":{"name":"echo","arguments":{"text":"echo #1001 from loadgen: the quick brown fox"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"loadgen","version":"0.0.0"},"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}}}'
done = function(summary, latency, requests)
  io.write(string.format("WRK requests=%d errors=%d\n", summary.requests, summary.errors.status + summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
end
