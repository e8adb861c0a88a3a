// The tallies of a conformance run (run.sh): node summary.mjs OUT, where
// OUT/RUN/server-SCENARIO-TIME/checks.json are the suite's results.
//
// A scenario passes when none of its checks is a FAILURE, the suite's own
// rule for server scenarios (warnings and info do not fail it). Exits 1
// unless the fixture passes every scenario directly and every scenario that
// passes directly passes through the gateway too; writes OUT/summary.txt and
// OUT/summary.json.
import { readdirSync, readFileSync, writeFileSync, existsSync } from "node:fs";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";

const out = process.argv[2];
if (!out) {
  console.error("usage: node summary.mjs OUT");
  process.exit(2);
}
const here = dirname(fileURLToPath(import.meta.url));
const version = JSON.parse(readFileSync(join(here, "node_modules/@modelcontextprotocol/conformance/package.json"), "utf8")).version;

const servers = [
  { name: "fixture upstream", direct: "fixture", gateway: "fixture-gateway", mustPassAll: true },
  { name: "server-everything", direct: "everything", gateway: "everything-gateway" },
];

// results of one run: scenario → {pass, failures: [messages]}.
function results(run) {
  const dir = join(out, run);
  const byScenario = new Map();
  if (!existsSync(dir)) return byScenario;
  for (const entry of readdirSync(dir).sort()) {
    const m = /^server-(.+)-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$/.exec(entry);
    if (!m) continue;
    let checks;
    try {
      checks = JSON.parse(readFileSync(join(dir, entry, "checks.json"), "utf8"));
    } catch (err) {
      checks = [{ status: "FAILURE", name: "checks.json", errorMessage: `unreadable: ${err.message}` }];
    }
    const failures = checks.filter((c) => c.status === "FAILURE")
      .map((c) => `${c.name}: ${c.errorMessage ?? c.description ?? ""}`.replace(/\s+/g, " ").trim());
    byScenario.set(m[1], { pass: failures.length === 0, failures });
  }
  return byScenario;
}

const cut = (s, n = 200) => (s.length > n ? s.slice(0, n - 1) + "…" : s);
const lines = [];
const problems = [];
const summary = { suite: `@modelcontextprotocol/conformance ${version}`, runs: {} };

lines.push(`MCP conformance (${summary.suite}, server scenarios; a scenario passes when none of its checks is a FAILURE)`);
lines.push("");
const tallies = [];
for (const s of servers) {
  for (const [how, run] of [["directly", s.direct], ["through the gateway", s.gateway]]) {
    const r = results(run);
    const passed = [...r].filter(([, v]) => v.pass).map(([k]) => k);
    const failed = [...r].filter(([, v]) => !v.pass).map(([k]) => k);
    summary.runs[run] = { passed, failed, failures: Object.fromEntries([...r].filter(([, v]) => !v.pass).map(([k, v]) => [k, v.failures])) };
    tallies.push([`${s.name}, ${how}`, `${passed.length}/${r.size}`]);
  }
}
const width = Math.max(...tallies.map(([l]) => l.length));
for (const [label, tally] of tallies) lines.push(`  ${label.padEnd(width)}  ${tally.padStart(5)}`);

for (const s of servers) {
  const direct = results(s.direct);
  const gateway = results(s.gateway);
  if (direct.size === 0) problems.push(`${s.name}: the direct run has no results (see ${join(out, s.direct, "suite.log")})`);
  if (s.mustPassAll) {
    for (const [scenario, r] of direct) {
      if (!r.pass) problems.push(`${s.name} fails ${scenario} directly: ${cut(r.failures.join("; "))}`);
    }
  }
  const lost = [...direct].filter(([k, v]) => v.pass && !gateway.get(k)?.pass).map(([k]) => k);
  summary.runs[s.gateway].lost = lost;
  if (lost.length > 0) {
    lines.push("");
    lines.push(`${s.name}: ${lost.length} scenario(s) pass directly but not through the gateway:`);
    for (const k of lost) {
      const why = gateway.get(k)?.failures.join("; ") ?? "no result";
      lines.push(`  ${k}: ${cut(why)}`);
    }
    problems.push(`${s.name}: ${lost.length} scenario(s) that pass directly fail through the gateway`);
  }
}

lines.push("");
if (problems.length === 0) {
  lines.push("ok: the fixture passes every scenario directly, and every scenario that passes directly passes through the gateway");
} else {
  lines.push("FAIL:");
  for (const p of problems) lines.push(`  ${p}`);
}
lines.push(`(the suite's results per scenario: ${out}/RUN/server-SCENARIO-TIME/checks.json; its output: ${out}/RUN/suite.log)`);
const text = lines.join("\n") + "\n";
process.stdout.write(text);
writeFileSync(join(out, "summary.txt"), text);
writeFileSync(join(out, "summary.json"), JSON.stringify({ ...summary, ok: problems.length === 0, problems }, null, 2) + "\n");
process.exit(problems.length === 0 ? 0 : 1);
