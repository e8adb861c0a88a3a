// End-to-end tests of `harness serve` with the official MCP TypeScript SDK
// client, over stdio and over streamable HTTP, in front of the fixture
// upstream (testdata/upstream). `make e2e` builds both binaries and runs
// this with HARNESS_BIN and UPSTREAM_BIN set.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, mkdirSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const HARNESS = process.env.HARNESS_BIN;
const UPSTREAM = process.env.UPSTREAM_BIN;
assert.ok(HARNESS && UPSTREAM, "set HARNESS_BIN and UPSTREAM_BIN (make e2e does)");

// A home with its own ledger and a project with a small role.
function sandbox() {
  const home = mkdtempSync(join(tmpdir(), "harness-e2e-home-"));
  const project = mkdtempSync(join(tmpdir(), "harness-e2e-project-"));
  mkdirSync(join(project, ".lean-ctx", "roles"), { recursive: true });
  writeFileSync(join(project, ".lean-ctx", "roles", "small.toml"),
    '[role]\ninherits = "coder"\n\n[limits]\nmax_context_tokens = 1000\n');
  return { home, project };
}

async function stdioClient(args) {
  const { home, project } = sandbox();
  const transport = new StdioClientTransport({
    command: HARNESS,
    args: ["serve", "--project", project, ...args, "--", UPSTREAM],
    env: { ...process.env, HOME: home },
    stderr: "ignore",
  });
  const client = new Client({ name: "ts-e2e", version: "1.0.0" });
  await client.connect(transport);
  return client;
}

const textOf = (res) => res.content.filter((c) => c.type === "text").map((c) => c.text).join("");
const call = (client, name, args = {}) => client.callTool({ name, arguments: args });
const names = async (client) => (await client.listTools()).tools.map((t) => t.name).sort();

test("stdio: a reviewer sees no shell or edit tools, is refused ctx_edit, can read", async () => {
  const client = await stdioClient(["--role", "reviewer", "--session", "ts-reviewer"]);
  try {
    assert.deepEqual(await names(client), ["ctx_read", "ctx_session"]);
    const edit = await call(client, "ctx_edit", { path: "main.go" });
    assert.equal(edit.isError, true);
    assert.match(textOf(edit), /tool_denied: tool 'ctx_edit' is denied for role 'reviewer'/);
    // The decision rides in _meta, never in structuredContent (which the
    // SDK holds to a tool's output schema).
    assert.equal(edit.structuredContent, undefined);
    assert.equal(edit._meta["agentharness/decision"].decision, "deny");
    const read = await call(client, "ctx_read", { path: "main.go" });
    assert.equal(read.isError ?? false, false);
    assert.equal(textOf(read), "contents of main.go\n");
    // The schema passes through with the keywords SDKs do not model.
    const tool = (await client.listTools()).tools.find((t) => t.name === "ctx_read");
    assert.deepEqual(tool.inputSchema.oneOf, [{ required: ["path"] }, { required: ["bytes"] }]);
  } finally {
    await client.close();
  }
});

test("stdio: the warning at 80% and the block at 100% of a small budget; ctx_session still answers; no switch to admin", async () => {
  const client = await stdioClient(["--role", "small", "--session", "ts-budget"]);
  try {
    const seen = [];
    for (let i = 0; i < 9; i++) {
      const res = await call(client, "ctx_read", { bytes: 600 });
      seen.push(res.isError ? "deny" : textOf(res).includes("[harness] warning: tokens at") ? "warn" : "allow");
    }
    const outcomes = seen.join(" ");
    assert.match(outcomes, /allow warn/);
    assert.match(outcomes, /warn deny/);
    assert.match(outcomes, /deny deny$/);
    const budget = await call(client, "ctx_session", { action: "budget" });
    assert.equal(budget.isError ?? false, false);
    assert.match(textOf(budget), /^Budget\[small\]: tokens \d+\/1000 \(\d+%\) \| .* → EXHAUSTED$/);
    const sw = await call(client, "ctx_session", { action: "role", value: "admin" });
    assert.equal(sw.isError, true);
    assert.match(textOf(sw), /switch_denied \(privileged\)/);
  } finally {
    await client.close();
  }
});

test("stdio: an upstream killed mid-session gives a tool error, then recovers; upstream errors pass through", async () => {
  const client = await stdioClient(["--session", "ts-crash"]);
  try {
    const crash = await call(client, "ctx_shell", { command: "crash" });
    assert.equal(crash.isError, true);
    assert.match(textOf(crash), /upstream is down/);
    let res;
    for (let i = 0; i < 150; i++) {
      res = await call(client, "ctx_shell", { command: "echo back" });
      if (!res.isError) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(res.isError ?? false, false);
    assert.equal(textOf(res), "ran: echo back\n");
    // The upstream's JSON-RPC errors reach the client as they are: code, message and data.
    await assert.rejects(call(client, "ctx_shell", { command: "rpcauth" }), (err) => {
      assert.equal(err.code, -32042);
      assert.equal(err.data?.elicitations?.[0]?.elicitationId, "e-1");
      return true;
    });
  } finally {
    await client.close();
  }
});

function freePort() {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

test("http: bearer tokens name the agent, its role and its most privileged role; MCP session ids keep sessions apart", async () => {
  const { home, project } = sandbox();
  mkdirSync(join(home, ".lean-ctx"), { recursive: true });
  writeFileSync(join(home, ".lean-ctx", "harness.toml"), `
[[gateway.tokens]]
agent = "claude-code"
token = "reviewer-token-0123456789"
role = "reviewer"
max_role = "reviewer"

[[gateway.tokens]]
agent = "ci"
token = "small-token-0123456789abc"
role = "small"
`);
  const port = await freePort();
  const server = spawn(HARNESS, ["serve", "--http", `127.0.0.1:${port}`, "--project", project, "--", UPSTREAM],
    { env: { ...process.env, HOME: home }, stdio: ["ignore", "ignore", "pipe"] });
  await new Promise((resolve, reject) => {
    server.stderr.on("data", (d) => { if (String(d).includes("listening on")) resolve(); });
    server.on("exit", (code) => reject(new Error(`harness serve exited with ${code}`)));
  });
  const connect = async (token) => {
    const client = new Client({ name: "ts-http", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`),
      { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
    return client;
  };
  try {
    const reviewer = await connect("reviewer-token-0123456789");
    assert.deepEqual(await names(reviewer), ["ctx_read", "ctx_session"]);
    assert.equal((await call(reviewer, "ctx_edit", { path: "x" })).isError, true);
    // Its token's max_role keeps the agent from switching itself past reviewer.
    const sw = await call(reviewer, "ctx_session", { action: "role", value: "coder" });
    assert.equal(sw.isError, true);
    assert.match(textOf(sw), /role 'coder' is beyond 'reviewer', the most privileged role this agent may hold/);

    // What the reviewer spent: the tools it was given by tools/list.
    const spent = textOf(await call(reviewer, "ctx_session", { action: "budget" }));
    assert.match(spent, /^Budget\[reviewer\]: tokens [1-9]\d*\/150000/);
    const small = await connect("small-token-0123456789abc");
    for (let i = 0; i < 8; i++) await call(small, "ctx_read", { bytes: 600 });
    assert.match(textOf(await call(small, "ctx_session", { action: "budget" })), /^Budget\[small\].*→ EXHAUSTED$/);
    // The reviewer's session is untouched by the other agent's spending.
    assert.equal(textOf(await call(reviewer, "ctx_session", { action: "budget" })), spent);

    await assert.rejects(connect("not-a-token-000000000000"), /401|Unauthorized|token/i);
    await reviewer.close();
    await small.close();
  } finally {
    server.kill();
  }
});
