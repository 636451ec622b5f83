import { performance } from 'node:perf_hooks';
import { generateText, Output } from 'ai';
import { z } from 'zod';
import { DelegateSelectionSchema } from '../src/agent-types/index.ts';
import { parseManifest } from '../src/manifest/index.ts';
import { openInstantBenchKernel } from './bench-kernel.ts';
import { createInstantModel } from './instant-model.ts';
import { round, summarize } from './stats.ts';

const WARMUP = 100;
const TURNS = 1000;

const spawnText = (text: string) => parseManifest(text, { source: 'bench.toml' }).manifest;

/**
 * The overhead a delegate adds beyond its model calls: a delegate turn (select, formulate,
 * hand over to a specialist's turn, analyse: four model calls, two sessions saved) against the
 * same four calls made with the bare AI SDK, on an in-process model that answers at once.
 */
async function delegateOverhead(): Promise<Record<string, unknown>> {
  const model = createInstantModel({ json: () => ({ agent: 'worker', reasoning: 'the only one' }) });
  const bench = await openInstantBenchKernel(model);
  try {
    await bench.kernel.spawn(spawnText('name = "worker"\ndescription = "does the work"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\n'));
    await bench.kernel.spawn(
      spawnText(
        'name = "desk"\nmodule = "builtin:delegate"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\n[capabilities]\ntools = ["agent_message"]\nagent_message = ["worker"]\n[delegate]\nmanaged_agents = ["worker"]\n',
      ),
    );
    const delegated: number[] = [];
    for (let turn = 0; turn < WARMUP + TURNS; turn += 1) {
      const started = performance.now();
      await bench.kernel.send('desk', `request ${turn}`);
      if (turn >= WARMUP) delegated.push(performance.now() - started);
    }
    const bare: number[] = [];
    for (let turn = 0; turn < WARMUP + TURNS; turn += 1) {
      const started = performance.now();
      await generateText({ model, prompt: `request ${turn}`, output: Output.object({ schema: DelegateSelectionSchema }), maxRetries: 0 });
      for (let call = 0; call < 3; call += 1) await generateText({ model, prompt: `request ${turn}`, maxRetries: 0 });
      if (turn >= WARMUP) bare.push(performance.now() - started);
    }
    const delegate = summarize(delegated);
    const calls = summarize(bare);
    return {
      bench: 'orchestration-delegate',
      delegate_turn: delegate,
      bare_four_calls: calls,
      overhead_p50_ms: round(delegate.p50_ms - calls.p50_ms),
      ratio_p50: round(delegate.p50_ms / calls.p50_ms),
    };
  } finally {
    await bench.dispose();
  }
}

const TASKS = 10;
const WORKFLOWS = 30;

/**
 * A 10-task workflow's bookkeeping per task: planning, approval, and for each task the stored
 * status changes, the delegation (a specialist's durable turn) and the acceptance check, on an
 * instant model; per task, against the same calls (delegated turn's model call and acceptance) made bare.
 */
async function workflowBookkeeping(): Promise<Record<string, unknown>> {
  const plan = {
    summary: 'ten steps',
    missing_info: null,
    tasks: Array.from({ length: TASKS }, (_, index) => ({
      id: `t${index}`,
      title: `step ${index}`,
      instruction: `do step ${index}`,
      agent: 'worker',
      depends_on: index === 0 ? [] : [`t${index - 1}`],
      acceptance: 'done',
    })),
  };
  const model = createInstantModel({
    json: (options) => {
      const schema = options.responseFormat?.type === 'json' ? JSON.stringify(options.responseFormat.schema ?? {}) : '';
      return schema.includes('"tasks"') ? plan : { accepted: true, feedback: '' };
    },
  });
  const bench = await openInstantBenchKernel(model);
  try {
    await bench.kernel.spawn(spawnText('name = "worker"\ndescription = "does the work"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\n'));
    const perTask: number[] = [];
    for (let run = 0; run < WORKFLOWS; run += 1) {
      const name = `lead-${run}`;
      await bench.kernel.spawn(
        spawnText(
          `name = "${name}"\nmodule = "builtin:workflow"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\n[capabilities]\ntools = ["agent_message"]\nagent_message = ["worker"]\n[workflow]\nmanaged_agents = ["worker"]\n`,
        ),
      );
      await bench.kernel.send(name, 'ten things');
      const started = performance.now();
      await bench.kernel.send(name, 'go');
      for (let wait = 0; wait < 10_000; wait += 1) {
        const state = (await bench.kernel.workflow(name))?.state;
        if (state === 'completed' || state === 'failed') break;
        await new Promise((resolve) => setImmediate(resolve));
      }
      if (run >= 5) perTask.push((performance.now() - started) / TASKS);
    }
    const bare: number[] = [];
    for (let task = 0; task < WORKFLOWS * TASKS; task += 1) {
      const started = performance.now();
      await generateText({ model, prompt: `do step ${task}`, maxRetries: 0 });
      await generateText({
        model,
        prompt: 'judge',
        output: Output.object({ schema: z.object({ accepted: z.boolean(), feedback: z.string() }) }),
        maxRetries: 0,
      });
      bare.push(performance.now() - started);
    }
    const workflow = summarize(perTask);
    const calls = summarize(bare);
    return {
      bench: 'orchestration-workflow',
      tasks: TASKS,
      per_task: workflow,
      bare_calls_per_task: calls,
      bookkeeping_p50_ms: round(workflow.p50_ms - calls.p50_ms),
    };
  } finally {
    await bench.dispose();
  }
}

/** `npm run bench -- orchestration`: what orchestrating agent types add beyond their model calls. */
export async function orchestrationBench(): Promise<Record<string, unknown>> {
  return { bench: 'orchestration', delegate: await delegateOverhead(), workflow: await workflowBookkeeping() };
}
