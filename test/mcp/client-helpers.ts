/** Helpers for the MCP client tests: real peer processes, free ports, a quiet manager. */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { vi } from 'vitest';
import { createFakeClock, type FakeClock } from '../../src/clock/index.ts';
import type { Logger, Tool, ToolContext, ToolResult } from '../../src/contracts/index.ts';
import { createSilentLogger } from '../../src/logging/index.ts';
import { createMcpClientManager, type McpClientManager, type McpServerEntry } from '../../src/mcp/client/index.ts';
import type { HostResolver } from '../../src/tools/builtin/net-guard.ts';
import { checkToolInput } from '../../src/runtime/index.ts';
import { freePort } from '../support/free-port.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));
export const EVERYTHING_BIN = `${root}node_modules/@modelcontextprotocol/server-everything/dist/index.js`;
export const FILESYSTEM_BIN = `${root}node_modules/@modelcontextprotocol/server-filesystem/dist/index.js`;
export const FIXTURE_SERVER = fileURLToPath(new URL('./client-fixture-server.ts', import.meta.url));

/** A stdio entry running `script` with this Node. */
export function stdioEntry(name: string, args: string[], extra: Partial<McpServerEntry> = {}): McpServerEntry {
  return { name, timeout_secs: 30, env: [], allow_private_network: false, transport: { type: 'stdio', command: process.execPath, args }, ...extra };
}

/** A manager on a fake clock with a silent logger, resolving host names with `resolve` when given (the system resolver otherwise), keeping OAuth sessions in `oauthDir`. */
export function makeManager(
  servers: McpServerEntry[],
  env: Record<string, string | undefined> = process.env,
  logger: Logger = createSilentLogger(),
  resolve?: HostResolver,
  oauthDir?: string,
): { manager: McpClientManager; clock: FakeClock } {
  const clock = createFakeClock();
  const manager = createMcpClientManager({ servers, env, logger, clock, resolve, oauthDir });
  return { manager, clock };
}

/** Waits (bounded) until `server` has status `status`. */
export async function waitForStatus(manager: McpClientManager, server: string, status: 'connecting' | 'connected' | 'failed', timeout = 20_000): Promise<void> {
  await vi.waitFor(
    () => {
      const found = manager.servers().find((entry) => entry.name === server);
      if (found?.status !== status) throw new Error(`server "${server}" is ${found?.status} (${found?.error}), not ${status}`);
    },
    { timeout, interval: 20 },
  );
}

/** The tool named `name` of the manager, failing when absent. */
export function toolNamed(manager: McpClientManager, name: string): Tool<never> {
  const tool = manager.tools().find((candidate) => candidate.name === name);
  if (tool === undefined)
    throw new Error(
      `no tool ${name}; have ${manager
        .tools()
        .map((entry) => entry.name)
        .join(', ')}`,
    );
  return tool;
}

/** Calls `tool` as the tool runner would: input checked against its schema, then executed. */
export async function callTool(tool: Tool<never>, input: unknown, signal: AbortSignal = new AbortController().signal): Promise<ToolResult> {
  const checked = checkToolInput(tool, input);
  if (!checked.ok) throw new Error(checked.problems);
  return tool.execute(checked.input as never, { signal } as unknown as ToolContext);
}

/** Starts server-everything in `mode` (sse or streamableHttp) on a free port; resolves once it listens. */
export async function startEverythingServer(mode: 'sse' | 'streamableHttp'): Promise<{ child: ChildProcess; port: number }> {
  const port = await freePort();
  const child = spawn(process.execPath, [EVERYTHING_BIN, mode], { env: { ...process.env, PORT: String(port) }, stdio: ['ignore', 'ignore', 'pipe'] });
  await new Promise<void>((resolve, reject) => {
    let output = '';
    const timer = setTimeout(() => reject(new Error(`server-everything ${mode} did not start: ${output}`)), 15_000);
    child.stderr?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (/listening on port|running on port/i.test(output)) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`server-everything ${mode} exited with ${code}: ${output}`));
    });
  });
  child.stderr?.resume();
  return { child, port };
}
