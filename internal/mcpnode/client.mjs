// A scripted MCP client for toolguard's Go tests, built on the official
// TypeScript SDK: "1" is @modelcontextprotocol/sdk 1.x, "2" is
// @modelcontextprotocol/client 2.x (pinned to a protocol revision with
// versionNegotiation). It connects, optionally lists the tools, makes the
// given calls in order and prints one JSON object on stdout:
//   {"protocolVersion": ..., "tools": [...], "calls": [{"ok": true, "result": {...}} |
//                                                      {"ok": false, "error": "..."}]}
// A call that throws in the client (an invalid result, a JSON-RPC error) is
// reported as {"ok": false} with the client's own message.
//
// Usage: node client.mjs '<spec JSON>'
//   spec: {"sdk": "1"|"2", "pin": "2026-07-28" (sdk 2 only),
//          "stdio": ["cmd", "arg", ...] | "http": "http://...", "headers": {...},
//          "list": true, "timeoutMs": 10000,
//          "calls": [{"name": "...", "arguments": {...}, "_meta": {...}, "timeoutMs": 300}]}
// A call's timeoutMs overrides the spec's; when it passes, the client gives
// up on the call and sends notifications/cancelled.

const spec = JSON.parse(process.argv[2]);

async function load(sdk) {
  if (sdk === "1") {
    const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
    const { StdioClientTransport } = await import("@modelcontextprotocol/sdk/client/stdio.js");
    const { StreamableHTTPClientTransport } = await import("@modelcontextprotocol/sdk/client/streamableHttp.js");
    return { Client, StdioClientTransport, StreamableHTTPClientTransport, options: {} };
  }
  const { Client, StreamableHTTPClientTransport } = await import("@modelcontextprotocol/client");
  const { StdioClientTransport } = await import("@modelcontextprotocol/client/stdio");
  const options = spec.pin ? { versionNegotiation: { mode: { pin: spec.pin } } } : {};
  return { Client, StdioClientTransport, StreamableHTTPClientTransport, options };
}

function message(err) {
  return String(err && err.message ? err.message : err);
}

async function main() {
  const sdk = await load(spec.sdk);
  const client = new sdk.Client({ name: "toolguard-test-client", version: "1.0.0" }, sdk.options);
  let transport;
  if (spec.stdio) {
    transport = new sdk.StdioClientTransport({
      command: spec.stdio[0],
      args: spec.stdio.slice(1),
      env: { ...process.env },
      stderr: "inherit",
    });
  } else {
    transport = new sdk.StreamableHTTPClientTransport(new URL(spec.http), {
      requestInit: { headers: spec.headers || {} },
    });
  }
  const out = { calls: [] };
  // The 1.x client tells its transport the negotiated revision; the stdio
  // transport does not keep it, so it is noted here.
  const setVersion = transport.setProtocolVersion?.bind(transport);
  transport.setProtocolVersion = (v) => {
    out.negotiated = v;
    if (setVersion) setVersion(v);
  };
  await client.connect(transport);
  out.protocolVersion =
    (client.getNegotiatedProtocolVersion && client.getNegotiatedProtocolVersion()) ??
    transport.protocolVersion ??
    out.negotiated ??
    null;
  delete out.negotiated;
  const timeout = spec.timeoutMs || 10000;
  if (spec.list) {
    const res = await client.listTools();
    out.tools = res.tools.map((t) => ({ name: t.name, annotations: t.annotations ?? null }));
  }
  for (const call of spec.calls || []) {
    const params = { name: call.name, arguments: call.arguments || {} };
    if (call._meta) params._meta = call._meta;
    const opts = { timeout: call.timeoutMs || timeout };
    try {
      const result =
        spec.sdk === "1"
          ? await client.callTool(params, undefined, opts)
          : await client.callTool(params, opts);
      out.calls.push({ ok: true, result });
    } catch (err) {
      out.calls.push({ ok: false, error: message(err) });
    }
  }
  await client.close();
  process.stdout.write(JSON.stringify(out) + "\n");
}

main().then(
  () => process.exit(0),
  (err) => {
    process.stdout.write(JSON.stringify({ fatal: message(err) }) + "\n");
    process.exit(1);
  },
);
