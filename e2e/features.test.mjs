// The whole of MCP through `harness serve`, with the official TypeScript SDK
// client, over stdio and streamable HTTP: resources, templates, prompts,
// completions, logging, progress, subscriptions, and the requests an
// upstream makes of the agent (sampling, elicitation, roots), in front of
// the fixture upstream; and the official filesystem server, every tool of
// which declares an output schema, behind the gateway: its refusals and
// cut results stay readable tool errors.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, mkdirSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { createRequire } from "node:module";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  CreateMessageRequestSchema, ElicitRequestSchema, ListRootsRequestSchema,
  LoggingMessageNotificationSchema, ResourceUpdatedNotificationSchema, McpError,
} from "@modelcontextprotocol/sdk/types.js";

const HARNESS = process.env.HARNESS_BIN;
const UPSTREAM = process.env.UPSTREAM_BIN;
assert.ok(HARNESS && UPSTREAM, "set HARNESS_BIN and UPSTREAM_BIN (make e2e does)");
const require = createRequire(import.meta.url);
const FILESYSTEM = join(dirname(require.resolve("@modelcontextprotocol/server-filesystem/package.json")), "dist", "index.js");
const EVERYTHING = join(dirname(require.resolve("@modelcontextprotocol/server-everything/package.json")), "dist", "index.js");

// A home with its own ledger, and a project with roles of the test's.
function sandbox(roles = {}, policies = {}) {
  const home = mkdtempSync(join(tmpdir(), "harness-e2e-home-"));
  const project = mkdtempSync(join(tmpdir(), "harness-e2e-project-"));
  mkdirSync(join(project, ".lean-ctx", "roles"), { recursive: true });
  mkdirSync(join(project, ".lean-ctx", "policies"), { recursive: true });
  for (const [name, body] of Object.entries(roles)) writeFileSync(join(project, ".lean-ctx", "roles", name), body);
  for (const [name, body] of Object.entries(policies)) writeFileSync(join(project, ".lean-ctx", "policies", name), body);
  return { home, project };
}

const textOf = (res) => res.content.filter((c) => c.type === "text").map((c) => c.text).join("");

function freePort() {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

// A client that can answer sampling, elicitation and roots requests.
function capableClient() {
  const client = new Client({ name: "ts-features", version: "1.0.0" },
    { capabilities: { sampling: {}, elicitation: {}, roots: { listChanged: true } } });
  client.setRequestHandler(CreateMessageRequestSchema, async () =>
    ({ role: "assistant", content: { type: "text", text: "four" }, model: "claude-sonnet-4-5" }));
  client.setRequestHandler(ElicitRequestSchema, async () =>
    ({ action: "accept", content: { username: "ada", email: "ada@example.test" } }));
  // Its roots: the project (connect says where it is) and a directory
  // outside it, which the gateway keeps from the upstream.
  client.setRequestHandler(ListRootsRequestSchema, async () =>
    ({ roots: [{ uri: "file:///repo", name: "repo" }, { uri: `file://${client.project}`, name: "project" }] }));
  return client;
}

// connect starts harness serve in front of command over the transport
// ("stdio" or "http") and connects client to it; stop ends both.
async function connect(transport, client, { args = [], upstream = [UPSTREAM], roles, policies, box } = {}) {
  const { home, project } = box ?? sandbox(roles, policies);
  client.project = project;
  const serveArgs = ["serve", "--project", project, ...args];
  if (transport === "stdio") {
    await client.connect(new StdioClientTransport({
      command: HARNESS, args: [...serveArgs, "--", ...upstream], env: { ...process.env, HOME: home }, stderr: "ignore",
    }));
    return { stop: () => client.close() };
  }
  const port = await freePort();
  const server = spawn(HARNESS, [...serveArgs, "--http", `127.0.0.1:${port}`, "--", ...upstream],
    { env: { ...process.env, HOME: home }, stdio: ["ignore", "ignore", "pipe"] });
  await new Promise((resolve, reject) => {
    server.stderr.on("data", (d) => { if (String(d).includes("listening on")) resolve(); });
    server.on("exit", (code) => reject(new Error(`harness serve exited with ${code}`)));
  });
  await client.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`)));
  return { stop: async () => { await client.close(); server.kill(); } };
}

const noImage = {
  "noimage.toml": '[role]\ninherits = "coder"\n\n[tools]\ndenied = ["resource:test://static-binary", "prompt:test_prompt_with_image"]\n',
};

for (const transport of ["stdio", "http"]) {
  test(`${transport}: resources, templates, prompts and completions pass through, governed`, async () => {
    const client = capableClient();
    const { stop } = await connect(transport, client, { args: ["--role", "noimage"], roles: noImage });
    try {
      const caps = client.getServerCapabilities();
      for (const c of ["tools", "resources", "prompts", "logging", "completions"]) assert.ok(caps[c], `capability ${c}`);

      const uris = (await client.listResources()).resources.map((r) => r.uri).sort();
      assert.deepEqual(uris, ["test://static-text", "test://watched-resource"]);
      const text = await client.readResource({ uri: "test://static-text" });
      assert.equal(text.contents[0].text, "This is the content of the static text resource.");
      // A resource the role may not read is refused with the reasons.
      await assert.rejects(client.readResource({ uri: "test://static-binary" }), (err) => {
        assert.ok(err instanceof McpError);
        assert.equal(err.code, -32003);
        assert.match(err.message, /tool_denied: tool 'resource:test:\/\/static-binary' is denied for role 'noimage'/);
        assert.equal(err.data["agentharness/decision"].decision, "deny");
        return true;
      });
      const templates = (await client.listResourceTemplates()).resourceTemplates;
      assert.equal(templates[0].uriTemplate, "test://template/{id}/data");
      const data = await client.readResource({ uri: "test://template/7/data" });
      assert.match(data.contents[0].text, /Data for ID: 7/);

      const prompts = (await client.listPrompts()).prompts.map((p) => p.name);
      assert.ok(prompts.includes("test_prompt_with_arguments") && !prompts.includes("test_prompt_with_image"), prompts.join(" "));
      const got = await client.getPrompt({ name: "test_prompt_with_arguments", arguments: { arg1: "a", arg2: "b" } });
      assert.equal(got.messages[0].content.text, "Prompt with arguments: arg1='a', arg2='b'");
      await assert.rejects(client.getPrompt({ name: "test_prompt_with_image" }), /tool_denied/);

      const done = await client.complete({ ref: { type: "ref/prompt", name: "test_prompt_with_arguments" }, argument: { name: "arg1", value: "p" } });
      assert.ok(Array.isArray(done.completion.values));
    } finally {
      await stop();
    }
  });

  test(`${transport}: sampling, elicitation and roots reach the agent; progress, logs and updates come back`, async () => {
    const client = capableClient();
    const logs = [];
    client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => { logs.push(n.params); });
    const updated = new Promise((resolve) => client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => resolve(n.params.uri)));
    const { stop } = await connect(transport, client);
    try {
      const names = (await client.listTools()).tools.map((t) => t.name);
      for (const n of ["test_sampling", "test_elicitation", "ctx_session"]) assert.ok(names.includes(n), `tool ${n}`);

      assert.equal(textOf(await client.callTool({ name: "test_sampling", arguments: { prompt: "two and two?" } })), "LLM response: four");
      assert.match(textOf(await client.callTool({ name: "test_elicitation", arguments: { message: "who?" } })), /action=accept.*ada@example.test/);
      // Roots beyond the project are not the upstream's to touch.
      assert.equal(textOf(await client.callTool({ name: "ctx_shell", arguments: { command: "roots" } })), `roots: file://${client.project}`);

      const progress = [];
      const res = await client.callTool({ name: "test_tool_with_progress", arguments: {} }, undefined,
        { onprogress: (p) => progress.push(p.progress) });
      assert.equal(textOf(res), "Tool with progress executed successfully");
      assert.deepEqual(progress, [0, 50, 100]);

      await client.setLoggingLevel("info");
      await client.callTool({ name: "test_tool_with_logging", arguments: {} });
      assert.ok(logs.some((l) => l.data === "Tool execution started"), JSON.stringify(logs));

      await client.subscribeResource({ uri: "test://watched-resource" });
      assert.equal(await updated, "test://watched-resource");
      await client.unsubscribeResource({ uri: "test://watched-resource" });
    } finally {
      await stop();
    }
  });
}

// A role that asks for ctx_shell: the gateway asks the person at the
// client, by an elicitation; accepted the call runs, declined it does not,
// and a client without elicitation gets the refusal with its reason.
const careful = { "careful.toml": '[role]\ninherits = "coder"\n\n[tools]\nask = ["ctx_shell"]\n' };

for (const transport of ["stdio", "http"]) {
  test(`${transport}: a call the role asks for is an elicitation of the agent's client`, async () => {
    for (const action of ["accept", "decline"]) {
      const client = new Client({ name: "ts-ask", version: "1.0.0" }, { capabilities: { elicitation: {} } });
      const asked = [];
      client.setRequestHandler(ElicitRequestSchema, async (req) => { asked.push(req.params.message); return { action }; });
      const { stop } = await connect(transport, client, { args: ["--role", "careful"], roles: careful });
      try {
        const res = await client.callTool({ name: "ctx_shell", arguments: { command: "make deploy" } });
        assert.equal(asked.length, 1);
        assert.match(asked[0], /ctx_shell.*make deploy.*needs a person's approval/);
        if (action === "accept") {
          assert.ok(!res.isError, textOf(res));
          assert.equal(textOf(res), "ran: make deploy\n");
        } else {
          assert.ok(res.isError);
          assert.match(textOf(res), /approval_required[\s\S]*The person declined the call/);
          assert.equal(res._meta["agentharness/decision"].decision, "ask");
        }
        // What the role does not ask for is not asked about.
        await client.callTool({ name: "ctx_read", arguments: { path: "x" } });
        assert.equal(asked.length, 1);
      } finally {
        await stop();
      }
    }
    const plain = new Client({ name: "ts-no-ask", version: "1.0.0" });
    const { stop } = await connect(transport, plain, { args: ["--role", "careful"], roles: careful });
    try {
      const res = await plain.callTool({ name: "ctx_shell", arguments: { command: "make deploy" } });
      assert.ok(res.isError);
      assert.match(textOf(res), /cannot ask a person/);
    } finally {
      await stop();
    }
  });
}

// The filesystem server declares an output schema for every tool: the
// gateway's refusals (a custom policy's, an exhausted budget's) and the
// results it cuts are tool errors with their reasons in text, never a
// result the SDK throws at for not matching the schema.
test("filesystem server: refusals and cut results stay readable; roots are relayed", async () => {
  const roles = { "fs.toml": '[role]\ninherits = "coder"\n\n[limits]\nmax_context_tokens = 3000\n' };
  const policies = {
    "secrets.rego": `package harness.custom.secrets

deny contains "reading secrets is not allowed" if {
	endswith(input.arguments.path, "secret.txt")
}
`,
  };
  const box = sandbox(roles, policies);
  const files = mkdtempSync(join(box.project, "files-"));
  writeFileSync(join(files, "small.txt"), "a small file\n");
  writeFileSync(join(files, "secret.txt"), "the secret\n");
  writeFileSync(join(files, "big.txt"), "the quick brown fox jumps over the lazy dog\n".repeat(2000));
  const client = new Client({ name: "ts-fs", version: "1.0.0" }, { capabilities: { roots: { listChanged: true } } });
  const roots = mkdtempSync(join(box.project, "root-"));
  client.setRequestHandler(ListRootsRequestSchema, async () => ({ roots: [{ uri: `file://${roots}`, name: "root" }] }));
  const { stop } = await connect("stdio", client, { args: ["--role", "fs"], upstream: ["node", FILESYSTEM, files], box });
  try {
    const tools = (await client.listTools()).tools;
    const read = tools.find((t) => t.name === "read_text_file");
    assert.ok(read?.outputSchema, "read_text_file declares an output schema");

    // The server asks for the client's roots, through the gateway.
    let allowed = "";
    for (let i = 0; i < 100 && !allowed.includes(roots); i++) {
      allowed = textOf(await client.callTool({ name: "list_allowed_directories", arguments: {} }));
      if (!allowed.includes(roots)) await new Promise((r) => setTimeout(r, 50));
    }
    assert.match(allowed, new RegExp(roots.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")));
    // Back to the files' directory: the server takes a new root list.
    client.setRequestHandler(ListRootsRequestSchema, async () => ({ roots: [{ uri: `file://${files}`, name: "files" }] }));
    await client.sendRootsListChanged();
    for (let i = 0; i < 100 && !allowed.includes(files); i++) {
      allowed = textOf(await client.callTool({ name: "list_allowed_directories", arguments: {} }));
      if (!allowed.includes(files)) await new Promise((r) => setTimeout(r, 50));
    }

    const ok = await client.callTool({ name: "read_text_file", arguments: { path: join(files, "small.txt") } });
    assert.equal(ok.isError ?? false, false);
    assert.equal(ok.structuredContent.content, "a small file\n");

    const secret = await client.callTool({ name: "read_text_file", arguments: { path: join(files, "secret.txt") } });
    assert.equal(secret.isError, true);
    assert.match(textOf(secret), /reading secrets is not allowed/);
    assert.equal(secret.structuredContent, undefined);

    // 20,000 tokens into a budget of 3,000: cut, and the structured
    // content (past the budget) withheld, so the result is an error.
    const big = await client.callTool({ name: "read_text_file", arguments: { path: join(files, "big.txt") } });
    assert.equal(big.isError, true);
    assert.match(textOf(big), /withheld/);

    const after = await client.callTool({ name: "read_text_file", arguments: { path: join(files, "small.txt") } });
    assert.equal(after.isError, true);
    assert.match(textOf(after), /budget_exhausted/);
  } finally {
    await stop();
  }
});

// An upstream that offers some tools only to clients that can answer
// sampling or elicitation (server-everything) offers the same tools
// through the gateway as directly: the gateway tells it what the agent's
// client can do.
test("server-everything: the same tools through the gateway as directly, for a capable client", async () => {
  const direct = capableClient();
  await direct.connect(new StdioClientTransport({ command: "node", args: [EVERYTHING, "stdio"], stderr: "ignore" }));
  const want = (await direct.listTools()).tools.map((t) => t.name).sort();
  await direct.close();
  assert.ok(want.includes("trigger-sampling-request"), want.join(" "));

  const client = capableClient();
  const { stop } = await connect("stdio", client, { upstream: ["node", EVERYTHING, "stdio"] });
  try {
    const got = (await client.listTools()).tools.map((t) => t.name).filter((n) => n !== "ctx_session").sort();
    assert.deepEqual(got, want);
    const res = await client.callTool({ name: "trigger-sampling-request", arguments: { prompt: "hi", maxTokens: 10 } });
    assert.match(textOf(res), /four/);
  } finally {
    await stop();
  }
});
