import type { JsonObject, JsonValue, ToolBox, ToolResult } from '../contracts/index.ts';
import type { EmergentSettings } from '../manifest/index.ts';
import { MAX_REDIRECTS, REDIRECT_STATUSES, redirectedRequest, type WebRequest } from '../tools/index.ts';
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
 * How many compose tools may nest: a compose step may call a compose tool, whose steps may not
 * call a third (each level multiplies the calls one model call makes).
 */
export const MAX_COMPOSE_LEVELS = 2;

/**
 * Runs a compose tool: each step's tool is called through `toolbox` (so the agent's grants are
 * checked again at every call, exactly as if its model had made it), its input built from the
 * step's mapping. Each step is part of the tool's own call (its time limit and cancellation stop
 * the steps, and they count against the budget of nested calls). The tool's output is the last
 * step's value. A compose tool deeper than MAX_COMPOSE_LEVELS runs no step and fails.
 */
export async function runCompose(steps: readonly ComposeStep[], input: JsonObject, toolbox: ToolBox): Promise<ForgedRun> {
  const level = (toolbox.composeDepth ?? 0) + 1;
  if (level > MAX_COMPOSE_LEVELS) {
    return {
      ok: false,
      problem:
        `not run: it was called by a step of a compose tool that is itself a step of another, and compose tools nest at most ${MAX_COMPOSE_LEVELS} levels ` +
        '(a compose step may call a compose tool, whose steps may not call a third); give the calling tool the steps of this one instead',
    };
  }
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
    const result = await toolbox.invoke(step.tool, stepInput, { composeStep: true });
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
 * audit log apply. Every hop of a fetch must name a host in `fetch_domain_allowlist` (empty:
 * none): the bridge asks `http_request` not to follow redirects and follows them itself, checking
 * each one before it is requested (each is then a tool call, with its `net_connect` and the
 * address guard checked again). A refused host fails the fetch and is reported as `fetch-domain`.
 */
export function sandboxBridges(
  allowlist: readonly string[],
  settings: EmergentSettings,
  toolbox: ToolBox,
  onRefusal: (kind: 'fetch-domain' | 'bridge-refused', reason: string) => void,
): SandboxBridges {
  const allowed = (api: string): boolean => allowlist.includes(api) && (settings.allowed_sandbox_apis as readonly string[]).includes(api);
  const domains = settings.fetch_domain_allowlist;
  const refuseOutside = (hop: WebRequest, redirectedFrom: string | undefined): void => {
    const host = hop.url.hostname;
    if (domains.some((pattern) => fetchDomainCovers(pattern, host))) return;
    const reason = `fetch to "${host}" refused${redirectedFrom === undefined ? '' : ` (a redirect from "${redirectedFrom}")`}: not in [emergent].fetch_domain_allowlist${domains.length === 0 ? ' (it is empty)' : ` (${domains.join(', ')})`}`;
    onRefusal('fetch-domain', reason);
    throw new Error(reason);
  };
  const bridges: SandboxBridges = {};
  if (allowed('fetch')) {
    bridges.fetch = async (request) => {
      let hop: WebRequest;
      try {
        hop = { url: new URL(request.url), method: request.method, headers: request.headers, body: request.body };
      } catch {
        throw new Error(`fetch("${request.url}") refused: not an absolute URL`);
      }
      refuseOutside(hop, undefined);
      for (let redirects = 0; ; redirects += 1) {
        const result = await toolbox.invoke('http_request', {
          url: hop.url.href,
          method: hop.method,
          headers: hop.headers,
          ...(hop.body === undefined ? {} : { body: hop.body }),
          redirect: 'manual',
        });
        if (result.isError === true) {
          onRefusal('bridge-refused', `fetch("${hop.url.href}"): ${result.text}`);
          throw new Error(result.text);
        }
        const structured = result.structured ?? {};
        const status = typeof structured['status'] === 'number' ? structured['status'] : 0;
        const headers = structured['headers'];
        const responseHeaders: Record<string, string> =
          headers !== null && typeof headers === 'object' && !Array.isArray(headers)
            ? Object.fromEntries(Object.entries(headers).map(([key, value]) => [key, typeof value === 'string' ? value : JSON.stringify(value)]))
            : {};
        const location = responseHeaders['location'];
        if (!REDIRECT_STATUSES.has(status) || location === undefined) {
          return {
            url: typeof structured['url'] === 'string' ? structured['url'] : hop.url.href,
            status,
            statusText: '',
            headers: responseHeaders,
            body: typeof structured['body'] === 'string' ? structured['body'] : result.text,
          };
        }
        let target: URL;
        try {
          target = new URL(location, hop.url);
        } catch {
          throw new Error(`fetch("${request.url}") failed: "${hop.url.href}" redirects to "${location}", which is not a URL`);
        }
        if (redirects >= MAX_REDIRECTS) {
          const reason = `fetch("${request.url}") failed: more than ${MAX_REDIRECTS} redirects (last to "${target.href}")`;
          onRefusal('bridge-refused', reason);
          throw new Error(reason);
        }
        const from = hop.url.href;
        hop = redirectedRequest(hop, status, target);
        refuseOutside(hop, from);
      }
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
