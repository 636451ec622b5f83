import type { ModelMessage } from 'ai';
import { z } from 'zod';
import type { JsonObject } from '../contracts/index.ts';
import { LoomError } from '../errors/index.ts';
import { ChainOfThoughtSchema } from '../manifest/index.ts';
import type { AgentModule, ModuleTurnContext } from './agent-module.ts';

/** spec/03 "AssessmentOutput". */
export const AssessmentSchema = z.object({
  complexity: z.enum(['trivial', 'simple', 'medium', 'complex']),
  confidence: z.number().min(0).max(1).describe('how sure an answer given now would be right, 0 to 1'),
  needs_planning: z.boolean(),
});

const StepSchema = z.object({
  id: z.string().min(1).describe('a short unique id such as "s1"'),
  prompt: z.string().min(1).describe('a self-contained instruction for this step'),
  depends_on: z.array(z.string()).describe('ids of the steps whose results this one needs'),
  can_parallelize: z.boolean().describe('whether it may run at the same time as other steps of its layer'),
  needs_tools: z.boolean().describe("whether it needs the agent's tools"),
});

/** A step of the plan, as the model writes it. */
export type PlanStep = z.output<typeof StepSchema>;

/** spec/03 "PlanOutput" (and "CoTReplanOutput"), at most `max` steps. */
export function planSchema(max: number) {
  return z.object({ steps: z.array(StepSchema).min(1).max(max), rationale: z.string() });
}

/** spec/03 "SynthesisOutput". */
export const SynthesisSchema = z.object({
  answer: z.string(),
  confidence: z.number().min(0).max(1),
  gaps: z.array(z.string()).describe('what is still missing or uncertain'),
});

/**
 * The confidence a loop's synthesis must reach (spec/03 "Confidence Threshold Decay"): from the
 * initial threshold at the first loop (0) down to the minimum at the last, linearly.
 */
export function confidenceThreshold(
  loop: number,
  settings: { max_loops: number; initial_confidence_threshold: number; min_confidence_threshold: number },
): number {
  const { max_loops: loops, initial_confidence_threshold: initial, min_confidence_threshold: min } = settings;
  if (loops <= 1) return min;
  return initial - ((initial - min) * loop) / (loops - 1);
}

/**
 * The steps in layers that can run one after another, each step after the steps it depends on.
 * @throws {LoomError} `PLAN_INVALID` for a dependency on an unknown step, a repeated id, or a cycle (its path named).
 */
export function planLayers(steps: readonly PlanStep[], done: ReadonlySet<string> = new Set()): PlanStep[][] {
  const ids = new Set<string>();
  for (const step of steps) {
    if (ids.has(step.id) || done.has(step.id)) throw new LoomError('PLAN_INVALID', 'third-party', `the plan uses the step id "${step.id}" twice`);
    ids.add(step.id);
  }
  for (const step of steps) {
    const unknown = step.depends_on.find((id) => !ids.has(id) && !done.has(id));
    if (unknown !== undefined) throw new LoomError('PLAN_INVALID', 'third-party', `step "${step.id}" depends on "${unknown}", which is not a step of the plan`);
  }
  const byId = new Map(steps.map((step) => [step.id, step]));
  const visiting: string[] = [];
  const visited = new Set<string>();
  const visit = (id: string): void => {
    if (done.has(id) || visited.has(id)) return;
    const at = visiting.indexOf(id);
    if (at !== -1)
      throw new LoomError('PLAN_INVALID', 'third-party', `the plan's steps depend on each other in a cycle: ${[...visiting.slice(at), id].join(' → ')}`);
    visiting.push(id);
    for (const dependency of byId.get(id)?.depends_on ?? []) visit(dependency);
    visiting.pop();
    visited.add(id);
  };
  for (const step of steps) visit(step.id);
  const layers: PlanStep[][] = [];
  const placed = new Set(done);
  let remaining = [...steps];
  while (remaining.length > 0) {
    const layer = remaining.filter((step) => step.depends_on.every((id) => placed.has(id)));
    layers.push(layer);
    for (const step of layer) placed.add(step.id);
    remaining = remaining.filter((step) => !layer.includes(step));
  }
  return layers;
}

/** One entry of the thought trace stored with the turn. */
interface Thought {
  loop: number;
  phase: string;
  content: JsonObject;
}

const round = (value: number): string => value.toFixed(2);

/**
 * The chain-of-thought agent type (spec/03): assess the question (a fast path answers at once when
 * no planning is needed and the confidence reaches the first threshold); plan up to `max_steps`
 * steps; run them in dependency layers (parallel ones at once, tools only for the steps that need
 * them); synthesize an answer with a confidence; while it is below the loop's decaying threshold,
 * replan (at most half of `max_steps` new steps, at least one; finished results kept) and go again; finally
 * write the answer for the user, which is what the session keeps. The trace is recorded.
 */
export const runChainOfThought: AgentModule = async (context) => {
  const settings = context.agent.manifest.chain_of_thought ?? ChainOfThoughtSchema.parse({});
  const { emit, message } = context;
  const trace: Thought[] = [];
  const question: ModelMessage[] = [...context.history, { role: 'user', content: message }];
  const think = (loop: number, phase: string, content: JsonObject): void => {
    trace.push({ loop, phase, content });
  };
  const finish = async (text: string): Promise<{ text: string; messages: ModelMessage[] }> => {
    await context.report({ type: 'chain-of-thought-finish', message, trace: trace as unknown as JsonObject[] });
    return { text, messages: [{ role: 'assistant', content: text }] };
  };

  emit({ type: 'phase', phase: 'assess', detail: 'Assessing the question…' });
  const assessment = await context.structured('assess', AssessmentSchema, {
    system: `${context.system}\n\nAssess the user's last message: how complex it is, how confident you would be answering it now (0 to 1), and whether it needs a plan of several steps.`,
    messages: question,
  });
  think(0, 'assess', assessment);
  const first = confidenceThreshold(0, settings);
  if (!assessment.needs_planning && assessment.confidence >= first) {
    emit({
      type: 'phase',
      phase: 'finalize',
      detail: `Answering directly (confidence ${round(assessment.confidence)} ≥ ${round(first)})…`,
      data: { ...assessment },
    });
    return finish(await context.generate('answer', { system: context.system, messages: question }));
  }

  emit({ type: 'phase', phase: 'plan', detail: 'Planning the steps…' });
  const plan = await context.structured('plan', planSchema(settings.max_steps), {
    system: `${context.system}\n\nPlan how to answer the user's last message in at most ${settings.max_steps} steps. Each step has a self-contained prompt, the ids of the steps it depends on, whether it may run in parallel with others of its layer, and whether it needs tools.`,
    messages: question,
  });
  think(0, 'plan', plan);
  const steps: PlanStep[] = [];
  const results = new Map<string, string>();
  let pending = plan.steps;
  // spec/03: a replan is capped at half of MaxSteps (one at least, so that a replan can add a step).
  const replanMax = Math.max(1, Math.floor(settings.max_steps / 2));

  for (let loop = 0; ; loop += 1) {
    await execute(context, pending, steps, results, loop, think);
    const threshold = confidenceThreshold(loop, settings);
    emit({ type: 'phase', phase: 'synthesize', detail: 'Synthesizing an answer…' });
    const synthesis = await context.structured('synthesize', SynthesisSchema, {
      system: `${context.system}\n\nCombine the results of the steps into one answer to the user's last message, with your confidence in it (0 to 1) and what is still missing.`,
      messages: [...question, { role: 'user', content: resultsText(steps, results) }],
    });
    think(loop, 'synthesize', synthesis);
    const last = loop >= settings.max_loops - 1;
    if (synthesis.confidence >= threshold || last) {
      emit({
        type: 'phase',
        phase: 'finalize',
        detail: `Confidence ${round(synthesis.confidence)} ${synthesis.confidence >= threshold ? '≥' : '<'} ${round(threshold)} at loop ${loop + 1}${last && synthesis.confidence < threshold ? ' (the last loop)' : ''}; writing the answer…`,
        data: { loop: loop + 1, confidence: synthesis.confidence, threshold },
      });
      const text = await context.generate('finalize', {
        system: `${context.system}\n\nWrite the final answer to the user's last message from the synthesized answer below. Be clear and direct; do not mention the steps.`,
        messages: [
          ...question,
          {
            role: 'user',
            content: `Synthesized answer (confidence ${round(synthesis.confidence)}):\n${synthesis.answer}${synthesis.gaps.length === 0 ? '' : `\nStill uncertain: ${synthesis.gaps.join('; ')}`}`,
          },
        ],
      });
      return finish(text);
    }
    emit({
      type: 'phase',
      phase: 'replan',
      detail: `Confidence ${round(synthesis.confidence)} < ${round(threshold)} at loop ${loop + 1}; planning more steps…`,
      data: { loop: loop + 1, confidence: synthesis.confidence, threshold, gaps: synthesis.gaps },
    });
    const replan = await context.structured('replan', planSchema(replanMax), {
      system: `${context.system}\n\nThe answer so far is not good enough. Plan at most ${replanMax} new ${replanMax === 1 ? 'step' : 'steps'} that fill these gaps: ${synthesis.gaps.join('; ') || '(none named)'}. Steps may depend on the finished ones (${steps.map((step) => step.id).join(', ')}); use new ids.`,
      messages: [...question, { role: 'user', content: resultsText(steps, results) }],
    });
    think(loop, 'replan', replan);
    pending = replan.steps;
  }
};

function resultsText(steps: readonly PlanStep[], results: ReadonlyMap<string, string>): string {
  return `Results of the steps so far:\n${steps.map((step) => `## ${step.id}: ${step.prompt}\n${results.get(step.id) ?? '(no result)'}`).join('\n\n')}`;
}

/** Runs the new steps in dependency layers; parallel steps of a layer at once. */
async function execute(
  context: ModuleTurnContext,
  pending: readonly PlanStep[],
  steps: PlanStep[],
  results: Map<string, string>,
  loop: number,
  think: (loop: number, phase: string, content: JsonObject) => void,
): Promise<void> {
  const layers = planLayers(pending, new Set(results.keys()));
  steps.push(...pending);
  for (const layer of layers) {
    const runStep = async (step: PlanStep): Promise<void> => {
      context.emit({
        type: 'phase',
        phase: 'execute',
        detail: `Step ${step.id}: ${step.prompt}`,
        data: { step: step.id, parallel: step.can_parallelize, tools: step.needs_tools },
      });
      const inputs = step.depends_on.map((id) => `Result of ${id}:\n${results.get(id) ?? ''}`).join('\n\n');
      const request = {
        system: `${context.system}\n\nDo this one step of a larger task and reply with its result only.`,
        messages: [{ role: 'user' as const, content: `${step.prompt}${inputs === '' ? '' : `\n\n${inputs}`}` }],
      };
      const result = step.needs_tools ? await context.act(`step ${step.id}`, request) : await context.generate(`step ${step.id}`, request);
      results.set(step.id, result);
      think(loop, 'execute', { step: step.id, result });
    };
    const parallel = layer.filter((step) => step.can_parallelize);
    await Promise.all(parallel.map(runStep));
    for (const step of layer.filter((entry) => !entry.can_parallelize)) await runStep(step);
  }
}
