// A small MCP server that misbehaves on request, for pp-mcp's client tests.
//
//   node misbehaving.mjs [stdio]          tools below, over stdio
//   node misbehaving.mjs crash-on-start   writes to stderr and exits 3 before any answer
//   node misbehaving.mjs http             tools below over streamable HTTP on a free
//                                         127.0.0.1 port, printed as {"port": N} on stdout
//
// Tools: echo, env (the names of its environment variables), crash (exits mid-call),
// hang (never answers; records a cancellation in `cancelled`), cancelled, flood (`bytes`
// of text), spawn_child (starts `sleep 1000`, returns its pid), headers (the HTTP
// request's headers), cwd. With PP_STARTS_DIR set, each start leaves a file named after
// its pid there; with PP_MARK_DIR set, `hang` leaves a file `hanging` there once it has
// the call.
import fs from "node:fs";
import http from "node:http";
import { spawn } from "node:child_process";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import {
  CallToolRequestSchema,
  ListToolsRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";

const mode = process.argv[2] ?? "stdio";
let cancellations = 0;

const object = (properties = {}) => ({ type: "object", properties });
const TOOLS = [
  { name: "echo", description: "Echoes `message`.", inputSchema: object({ message: { type: "string" } }) },
  { name: "env", description: "The names of this process's environment variables.", inputSchema: object() },
  { name: "crash", description: "Exits in the middle of the call.", inputSchema: object() },
  { name: "hang", description: "Never answers.", inputSchema: object() },
  { name: "cancelled", description: "How many calls were cancelled.", inputSchema: object() },
  { name: "flood", description: "Returns `bytes` bytes of text.", inputSchema: object({ bytes: { type: "integer" } }) },
  { name: "spawn_child", description: "Starts `sleep 1000`; returns its pid.", inputSchema: object() },
  { name: "headers", description: "The HTTP request's headers.", inputSchema: object() },
  { name: "cwd", description: "The working directory.", inputSchema: object() },
];

const text = (value) => ({ content: [{ type: "text", text: String(value) }] });

function makeServer() {
  const server = new Server(
    { name: "misbehaving", version: "1.0.0" },
    { capabilities: { tools: {} }, instructions: "A server for tests." },
  );
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: TOOLS }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const args = request.params.arguments ?? {};
    switch (request.params.name) {
      case "echo":
        return text(`Echo: ${args.message}`);
      case "env":
        return text(JSON.stringify(Object.keys(process.env).sort()));
      case "crash":
        process.stderr.write("crashing on purpose\n");
        process.exit(7);
        break;
      case "hang":
        if (process.env.PP_MARK_DIR) fs.writeFileSync(`${process.env.PP_MARK_DIR}/hanging`, "");
        return await new Promise((resolve) => {
          extra.signal.addEventListener("abort", () => {
            cancellations += 1;
            resolve(text("cancelled"));
          });
        });
      case "cancelled":
        return text(cancellations);
      case "flood":
        return text("x".repeat(Number(args.bytes ?? 1024)));
      case "spawn_child": {
        const child = spawn("sleep", ["1000"], { stdio: "ignore" });
        return text(child.pid);
      }
      case "headers":
        return text(JSON.stringify(extra.requestInfo?.headers ?? {}));
      case "cwd":
        return text(process.cwd());
      default:
        return { content: [{ type: "text", text: `unknown tool ${request.params.name}` }], isError: true };
    }
  });
  return server;
}

// Each start leaves its pid in PP_STARTS_DIR when set (tests count the starts).
if (process.env.PP_STARTS_DIR) {
  fs.writeFileSync(`${process.env.PP_STARTS_DIR}/${process.pid}`, "");
}

if (mode === "crash-on-start") {
  process.stderr.write("refusing to start\n");
  process.exit(3);
} else if (mode === "http") {
  const listener = http.createServer(async (req, res) => {
    let body = "";
    for await (const chunk of req) body += chunk;
    const server = makeServer();
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on("close", () => {
      transport.close();
      server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, body ? JSON.parse(body) : undefined);
  });
  listener.listen(0, "127.0.0.1", () => {
    process.stdout.write(`${JSON.stringify({ port: listener.address().port })}\n`);
  });
} else {
  await makeServer().connect(new StdioServerTransport());
}
