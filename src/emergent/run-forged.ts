import type { JsonObject, JsonValue, ToolBox, ToolResult } from '../contracts/index.ts';
import type { EmergentSettings } from '../manifest/index.ts';
import { fetchDomainCovers } from './fetch-domain.ts';
import type { ComposeStep } from './forge-request.ts';
import { MappingReferenceError, resolveMapping } from './references.ts';
import type { SandboxBridges, SandboxedProgram, SandboxFailure } from './sandbox.ts';

/** What running a forged tool once gave: its output, or why it failed. */
export type ForgedRun = { ok: true; output: JsonValue } | { ok: false; problem: string; fault?: SandboxFailure['kind'] | 'fetch-domain' };

/** The value a step's result stands for in references: its structured output with its text as `output`. */
function stepValue(result: ToolResult): JsonValue {
  return { output: result.text, ...(result.structured ?? {}) };
}

/**
 * Runs a compose tool: each step's tool is called through `toolbox` (so the agent's grants are
 * checked again at every call, exactly as if its model had made it), its input built from the
 * step's mapping. The tool's output is the last step's value.
 */
export async function runCompose(steps: readonly ComposeStep[], input: JsonObject, toolbox: ToolBox): Promise<ForgedRun> {
  const outputs = new Map<string, JsonValue>();
  let prev: JsonValue | undefined;
  for (const [index, step] of steps.entries()) {
    const where = `step ${index + 1} "${step.name}" (${step.tool})`;
    let stepInput: JsonObject;
    try {
      stepInput = resolveMapping(step.inputMapping, { input, steps: outputs, prev });
    } catch (error) {
      if (error instanceof MappingReferenceError) return { ok: false, problem: `${where}: ${error.message}` };
      throw error;
    }
    const result = await toolbox.invoke(step.tool, stepInput);
    if (result.isError === true) return { ok: false, problem: `${where} failed: ${result.text}` };
    prev = stepValue(result);
    outputs.set(step.name, prev);
  }
  return { ok: true, output: prev ?? null };
}

/**
 * The host bridges a sandboxed tool gets: only the APIs both its allowlist and the agent's
 * `allowed_sandbox_apis` name. `fetch` is the agent's `http_request` tool and `fs.readFile` its
 * `file_read`, both through `toolbox`, so capabilities, exec policy, the address guard and the
 * audit log apply; a fetch must also name a host in `fetch_domain_allowlist` (empty: none).
 */
export function sandboxBridges(allowlist: readonly string[], settings: EmergentSettings, toolbox: ToolBox, onRefusal: (kind: 'fetch-domain' | 'bridge-refused', reason: string) => void): SandboxBridges {
  const allowed = (api: string): boolean => allowlist.includes(api) && (settings.allowed_sandbox_apis as readonly string[]).includes(api);
  const bridges: SandboxBridges = {};
  if (allowed('fetch')) {
    bridges.fetch = async (request) => {
      let host: string;
      try {
        host = new URL(request.url).hostname;
      } catch {
        throw new Error(`fetch("${request.url}") refused: not an absolute URL`);
      }
      if (!settings.fetch_domain_allowlist.some((pattern) => fetchDomainCovers(pattern, host))) {
        const reason = `fetch to "${host}" refused: not in [emergent].fetch_domain_allowlist${settings.fetch_domain_allowlist.length === 0 ? ' (it is empty)' : ` (${settings.fetch_domain_allowlist.join(', ')})`}`;
        onRefusal('fetch-domain', reason);
        throw new Error(reason);
      }
      const result = await toolbox.invoke('http_request', { url: request.url, method: request.method, headers: request.headers, ...(request.body === undefined ? {} : { body: request.body }) });
      if (result.isError === true) {
        onRefusal('bridge-refused', `fetch("${request.url}"): ${result.text}`);
        throw new Error(result.text);
      }
      const structured = result.structured ?? {};
      const headers = structured['headers'];
      return {
        url: typeof structured['url'] === 'string' ? structured['url'] : request.url,
        status: typeof structured['status'] === 'number' ? structured['status'] : 0,
        statusText: '',
        headers: headers !== null && typeof headers === 'object' && !Array.isArray(headers) ? Object.fromEntries(Object.entries(headers).map(([key, value]) => [key, typeof value === 'string' ? value : JSON.stringify(value)])) : {},
        body: typeof structured['body'] === 'string' ? structured['body'] : result.text,
      };
    };
  }
  if (allowed('fs.readFile')) {
    bridges.readFile = async (path) => {
      const result = await toolbox.invoke('file_read', { path });
      if (result.isError === true) {
        onRefusal('bridge-refused', `fs.readFile("${path}"): ${result.text}`);
        throw new Error(result.text);
      }
      return result.text;
    };
  }
  if (allowed('crypto')) bridges.crypto = true;
  return bridges;
}

/** Runs a sandboxed tool once in its program (a fresh context on a warm isolate). */
export async function runSandboxed(program: SandboxedProgram, input: JsonObject, bridges: SandboxBridges, signal: AbortSignal): Promise<ForgedRun> {
  const outcome = await program.run(input, { bridges, signal });
  if (outcome.ok) return { ok: true, output: outcome.output };
  return { ok: false, problem: outcome.error.message, fault: outcome.error.kind };
}
