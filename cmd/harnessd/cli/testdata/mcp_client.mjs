// A real MCP client no one here wrote: the reference TypeScript SDK
// (@modelcontextprotocol/sdk, installed by mcp_test.go into SDK_DIR)
// spawns `harnessd mcp --embedded` over stdio and uses its tools.
// It prints one JSON object with what it saw; mcp_test.go checks it.
import { createRequire } from "node:module";
import path from "node:path";

const require = createRequire(path.join(process.env.SDK_DIR, "noop.js"));
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = require("@modelcontextprotocol/sdk/client/stdio.js");
const Ajv2020 = require("ajv/dist/2020").default;
const AjvDraft7 = require("ajv").default;

const out = { tools: {}, schemaErrors: [] };
const transport = new StdioClientTransport({
  command: process.env.HARNESSD_BIN,
  args: ["mcp", "--embedded"],
  env: { ...process.env },
  stderr: "inherit",
});
const client = new Client({ name: "ts-sdk-test", version: "1.0.0" });
await client.connect(transport);
out.pid = transport.pid;
out.server = client.getServerVersion();

const { tools } = await client.listTools();
for (const t of tools) {
  out.tools[t.name] = t.annotations ?? {};
  for (const [which, schema] of [["input", t.inputSchema], ["output", t.outputSchema]]) {
    if (!schema) { out.schemaErrors.push(`${t.name}: no ${which} schema`); continue; }
    const Ajv = (schema.$schema ?? "").includes("2020-12") ? Ajv2020 : AjvDraft7;
    try {
      new Ajv({ strict: false }).compile(schema);
    } catch (e) {
      out.schemaErrors.push(`${t.name} ${which}: ${e.message}`);
    }
  }
}
const execTool = tools.find((t) => t.name === "exec");
const Ajv = (execTool.inputSchema.$schema ?? "").includes("2020-12") ? Ajv2020 : AjvDraft7;
const validExec = new Ajv({ strict: false }).compile(execTool.inputSchema);
out.execAcceptsCommand = validExec({ command: "ls" });
out.execRejectsEmpty = !validExec({});

// callTool validates structuredContent against each tool's outputSchema.
const call = async (name, args) => {
  const r = await client.callTool({ name, arguments: args });
  return { isError: !!r.isError, text: r.content.map((c) => c.text).join(""), data: r.structuredContent };
};
out.cd = await call("exec", { command: "cd /tmp && export X=1" });
out.echo = await call("exec", { command: "echo $X $PWD" });
out.seq = await call("exec", { command: "seq 1 5000" });
out.page = await call("output_read", { output_id: out.seq.data.output_id, from_line: 100, to_line: 102 });
out.unknown = await call("exec", { session: "no-such-session", command: "true" });
out.session = out.echo.data.session;

await client.close();
out.closed = true;
process.stdout.write(JSON.stringify(out) + "\n");
