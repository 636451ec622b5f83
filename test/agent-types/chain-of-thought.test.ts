import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { confidenceThreshold, planLayers } from '../../src/agent-types/index.ts';
import type { AgentEvent } from '../../src/runtime/index.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { waitFor } from '../support/wait-for.ts';
import { openTestHost, type TestHost } from '../support/test-host.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';

const server = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let host: TestHost;

beforeEach(async () => {
  dir = await makeTempDir('loom-cot-');
  host = await openTestHost(dir.path);
});
afterEach(async () => {
  await host.close();
  await dir.remove();
});

const thinker = (settings = '') =>
  manifest(
    `name = "thinker"\nmodule = "builtin:chain-of-thought"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${server.url}"\nsystem_prompt = "You think carefully."\n[chain_of_thought]\n${settings}`,
  );
const json = (value: unknown) => ({ text: JSON.stringify(value) });
const step = (id: string, dependsOn: string[] = [], parallel = false) => ({
  id,
  prompt: `do ${id}`,
  depends_on: dependsOn,
  can_parallelize: parallel,
  needs_tools: false,
});

async function collect(events: AsyncIterable<AgentEvent>): Promise<AgentEvent[]> {
  const all: AgentEvent[] = [];
  for await (const event of events) all.push(event);
  return all;
}
const bodyOf = (index: number): string => JSON.stringify(server.requests[index]?.body ?? {});
const phases = (events: readonly AgentEvent[]) => events.flatMap((event) => (event.type === 'phase' ? [`${event.phase}: ${event.detail}`] : []));

describe('the decaying threshold', () => {
  it("is spec/03's table with the default settings", () => {
    const settings = { max_loops: 8, initial_confidence_threshold: 0.75, min_confidence_threshold: 0.4 };
    expect(Array.from({ length: 8 }, (_, loop) => Number(confidenceThreshold(loop, settings).toFixed(2)))).toEqual([
      0.75, 0.7, 0.65, 0.6, 0.55, 0.5, 0.45, 0.4,
    ]);
  });

  it('orders steps in layers after their dependencies, and names a cycle', () => {
    expect(planLayers([step('c', ['a', 'b']), step('a'), step('b', ['a'])]).map((layer) => layer.map((entry) => entry.id))).toEqual([['a'], ['b'], ['c']]);
    expect(() => planLayers([step('a', ['c']), step('b', ['a']), step('c', ['b'])])).toThrow("the plan's steps depend on each other in a cycle: a → c → b → a");
    expect(() => planLayers([step('a', ['ghost'])])).toThrow('step "a" depends on "ghost", which is not a step of the plan');
  });
});

describe('builtin:chain-of-thought', () => {
  it('takes the fast path when no plan is needed and the confidence reaches the first threshold: two calls', async () => {
    await host.kernel.spawn(thinker());
    server.script([json({ complexity: 'trivial', confidence: 0.9, needs_planning: false }), { text: 'Paris.' }]);
    const events = await collect(host.kernel.stream('thinker', 'capital of France?'));
    expect(events.find((event) => event.type === 'run-finish')).toMatchObject({ result: { text: 'Paris.', iterations: 2 } });
    expect(phases(events)).toEqual(['assess: Assessing the question…', 'finalize: Answering directly (confidence 0.90 ≥ 0.75)…']);
    expect(server.requests).toHaveLength(2);
  });

  it('plans, runs the steps in order, and replans while the confidence is under the decaying threshold, keeping finished results', async () => {
    await host.kernel.spawn(thinker('max_loops = 3\nmax_steps = 4\ninitial_confidence_threshold = 0.8\nmin_confidence_threshold = 0.4\n'));
    server.script([
      json({ complexity: 'complex', confidence: 0.3, needs_planning: true }),
      json({ steps: [step('a'), step('b', ['a'])], rationale: 'two steps' }),
      { text: 'result a' },
      { text: 'result b' },
      json({ answer: 'draft', confidence: 0.7, gaps: ['numbers'] }),
      json({ steps: [step('c', ['b'])], rationale: 'fill the gap' }),
      { text: 'result c' },
      json({ answer: 'better', confidence: 0.65, gaps: [] }),
      { text: 'The final answer.' },
    ]);
    const events = await collect(host.kernel.stream('thinker', 'compare heat pumps and boilers'));
    expect(events.find((event) => event.type === 'run-finish')).toMatchObject({ result: { text: 'The final answer.', iterations: 9 } });
    expect(phases(events).filter((line) => line.startsWith('replan') || line.startsWith('finalize'))).toEqual([
      'replan: Confidence 0.70 < 0.80 at loop 1; planning more steps…',
      'finalize: Confidence 0.65 ≥ 0.60 at loop 2; writing the answer…',
    ]);
    // Step b was given a's result; the new step c, b's; the second synthesis saw all three.
    expect(JSON.stringify(server.requests[3]?.body)).toContain('result a');
    expect(JSON.stringify(server.requests[6]?.body)).toContain('result b');
    const secondSynthesis = JSON.stringify(server.requests[7]?.body);
    expect(['result a', 'result b', 'result c'].every((text) => secondSynthesis.includes(text))).toBe(true);
    // The session keeps the question and the final answer; the trace is recorded.
    const session = (await host.kernel.session('thinker')).messages as { role: string; content: unknown }[];
    expect(session.map((entry) => entry.role)).toEqual(['user', 'assistant']);
    const [trace] = await host.kernel.audit({ agent: 'thinker', type: 'chain-of-thought-finish' });
    expect((trace?.data['trace'] as { phase: string }[]).map((entry) => entry.phase)).toEqual([
      'assess',
      'plan',
      'execute',
      'execute',
      'synthesize',
      'replan',
      'execute',
      'synthesize',
    ]);
  });

  it('caps a replan at half of max_steps, as spec/03 says: 1 new step of 2 or 3, 3 of 6', async () => {
    for (const [maxSteps, cap] of [
      [2, 'at most 1 new step that'],
      [3, 'at most 1 new step that'],
      [6, 'at most 3 new steps that'],
    ] as const) {
      await host.kernel.spawn(thinker(`max_loops = 2\nmax_steps = ${maxSteps}\n`));
      server.script([
        json({ complexity: 'complex', confidence: 0.3, needs_planning: true }),
        json({ steps: [step('a')], rationale: 'one' }),
        { text: 'result a' },
        json({ answer: 'draft', confidence: 0.2, gaps: ['numbers'] }),
        json({ steps: [step('b', ['a'])], rationale: 'fill the gap' }),
        { text: 'result b' },
        json({ answer: 'better', confidence: 0.9, gaps: [] }),
        { text: 'The answer.' },
      ]);
      const before = server.requests.length;
      await host.kernel.send('thinker', 'a hard question');
      expect(JSON.stringify(server.requests[before + 4]?.body), `max_steps = ${maxSteps}`).toContain(`Plan ${cap} fill`);
      await host.kernel.kill('thinker');
    }
  });

  it('accepts what it has at the last loop even below the threshold', async () => {
    await host.kernel.spawn(thinker('max_loops = 1\n'));
    server.script([
      json({ complexity: 'medium', confidence: 0.2, needs_planning: true }),
      json({ steps: [step('a')], rationale: 'one' }),
      { text: 'a' },
      json({ answer: 'meh', confidence: 0.1, gaps: ['all'] }),
      { text: 'Best I can do.' },
    ]);
    const events = await collect(host.kernel.stream('thinker', 'hard one'));
    expect(phases(events).at(-1)).toBe('finalize: Confidence 0.10 < 0.40 at loop 1 (the last loop); writing the answer…');
  });

  it('runs the parallel steps of a layer at once', async () => {
    await host.kernel.spawn(thinker());
    let release: () => void = () => undefined;
    server.script([
      json({ complexity: 'medium', confidence: 0.2, needs_planning: true }),
      json({ steps: [step('x', [], true), step('y', [], true)], rationale: 'independent' }),
      { text: 'x done', gate: new Promise<void>((resolve) => (release = resolve)) },
      { text: 'y done' },
      json({ answer: 'both', confidence: 0.99, gaps: [] }),
      { text: 'Both done.' },
    ]);
    const turn = host.kernel.send('thinker', 'two things');
    // The second step's call arrives while the first is still held back.
    await waitFor("the second step's call", () => server.requests.length >= 4);
    expect(server.requests).toHaveLength(4);
    release();
    expect((await turn).text).toBe('Both done.');
  });

  it('offers tools only to the steps that need them, through the tool runner', async () => {
    await host.kernel.spawn(
      manifest(
        `name = "thinker"\nmodule = "builtin:chain-of-thought"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${server.url}"\n[capabilities]\ntools = ["agent_list"]\n`,
      ),
    );
    server.script([
      json({ complexity: 'medium', confidence: 0.2, needs_planning: true }),
      json({ steps: [{ ...step('look'), needs_tools: true }, step('think', ['look'])], rationale: 'look, then think' }),
      { toolCalls: [{ name: 'agent_list', input: {} }] },
      { text: 'saw the agents' },
      { text: 'thought' },
      json({ answer: 'done', confidence: 0.9, gaps: [] }),
      { text: 'Done.' },
    ]);
    expect((await host.kernel.send('thinker', 'who is here?')).text).toBe('Done.');
    const toolsOf = (index: number): unknown => server.requests[index]?.body['tools'];
    expect(JSON.stringify(toolsOf(2))).toContain('agent_list');
    // The tool's result went back to the model; the step without tools was offered none.
    expect(bodyOf(3)).toContain('thinker');
    expect(toolsOf(4)).toBeUndefined();
  });

  it('ends the turn with a clear message when the plan has a cycle', async () => {
    await host.kernel.spawn(thinker());
    server.script([
      json({ complexity: 'medium', confidence: 0.2, needs_planning: true }),
      json({ steps: [step('a', ['b']), step('b', ['a'])], rationale: 'loop' }),
    ]);
    await expect(host.kernel.send('thinker', 'go')).rejects.toThrow("the plan's steps depend on each other in a cycle: a → b → a");
    // The question stays in the session; the agent answers the next one.
    server.script([json({ complexity: 'trivial', confidence: 0.9, needs_planning: false }), { text: 'ok' }]);
    expect((await host.kernel.send('thinker', 'again?')).text).toBe('ok');
  });
});
