import { SpanKind } from '@opentelemetry/api';
import type { ModelMessage } from 'ai';
import { z } from 'zod';
import type { WorkflowRecord, WorkflowState, WorkflowTaskRecord } from '../contracts/index.ts';
import { isLoomError, LoomError } from '../errors/index.ts';
import { WorkflowSchema } from '../manifest/index.ts';
import type { AgentModule, ModuleTurnContext } from './agent-module.ts';
import { planLayers } from './chain-of-thought.ts';
// The light half of the telemetry module: the SDK loads only when tracing starts.
import { withSpan } from '../telemetry/spans.ts';

/** Where a workflow agent's plan is kept, and how its execution is started (the kernel's side). */
export interface WorkflowPort {
  load(): Promise<WorkflowRecord | undefined>;
  /** Applies `change` to the stored workflow, one change at a time per agent, and stores the result. */
  update(change: (current: WorkflowRecord | undefined) => WorkflowRecord): Promise<WorkflowRecord>;
  /** Runs the stored plan in the background (once per agent), until it ends, pauses or stalls. */
  execute(): void;
}

/** spec/03's plan: tasks with an assigned agent, dependencies and acceptance criteria; or a question. */
export const WorkflowPlanSchema = z.object({
  summary: z.string().describe('the plan in one sentence'),
  missing_info: z.string().nullable().describe('a question for the user when the request cannot be planned without an answer, else null'),
  tasks: z.array(
    z.object({
      id: z.string().min(1).describe('a short unique id such as "t1"'),
      title: z.string(),
      instruction: z.string().describe('what the assigned agent is asked to do, self-contained'),
      agent: z.string().describe('the name of the agent it is assigned to, exactly as listed'),
      depends_on: z.array(z.string()).describe('ids of the tasks whose results it needs'),
      acceptance: z.string().describe('how to tell the result is good enough'),
    }),
  ),
});

/** The judgement of one task's result. */
export const AcceptanceSchema = z.object({ accepted: z.boolean(), feedback: z.string().describe('what is wrong or missing, when not accepted') });

/** What to do about a task that failed its acceptance (spec/03 "Failure Handling"). */
export const FailureDecisionSchema = z.object({
  action: z.enum(['retry', 'blocked', 'replan', 'stall']),
  improved_instruction: z.string().nullable().describe('for retry: the better instruction'),
  reason: z.string(),
});

const COMMANDS = {
  approve: ['go', 'run', 'yes', 'approve'],
  cancel: ['cancel', 'no'],
  status: ['status', 'progress'],
  pause: ['pause', 'stop'],
  resume: ['resume', 'continue', 'go'],
} as const;

const isCommand = (message: string, command: keyof typeof COMMANDS): boolean =>
  (COMMANDS[command] as readonly string[]).includes(
    message
      .trim()
      .toLowerCase()
      .replace(/[.!]+$/, ''),
  );

/** A plan, as the user reads it. */
export function describeWorkflow(record: WorkflowRecord): string {
  const done = record.tasks.filter((task) => task.status === 'completed').length;
  const lines = [`Workflow (${record.state.replace('_', ' ')}; ${done}/${record.tasks.length} tasks done): ${record.summary}`];
  for (const task of record.tasks) {
    const after = task.dependsOn.length === 0 ? '' : ` after ${task.dependsOn.join(', ')}`;
    lines.push(
      `- ${task.id} [${task.status}${task.attempts > 1 ? `, ${task.attempts} attempts` : ''}] ${task.title} → ${task.agent}${after}${task.feedback === null || task.status === 'completed' ? '' : ` (${task.feedback})`}`,
    );
  }
  if (record.note !== null) lines.push('', record.note);
  return lines.join('\n');
}

const planningSystem = (context: ModuleTurnContext, catalog: string): string =>
  `${context.system}\n\nYou coordinate work: plan the user's request as tasks, each assigned to one of these agents, with dependencies and acceptance criteria. If you cannot plan without more information, ask for it in missing_info and leave tasks empty.\nThe agents:\n${catalog}`;

/** Asks the model for a plan, checks it (agents in the catalog, dependencies acyclic), and asks again once with the problem. */
async function makePlan(
  context: ModuleTurnContext,
  messages: ModelMessage[],
  keep: readonly WorkflowTaskRecord[] = [],
): Promise<{ summary: string; question: string | null; tasks: WorkflowTaskRecord[]; leftOut: string }> {
  const settings = context.agent.manifest.workflow ?? WorkflowSchema.parse({});
  const { available, leftOut } = await context.catalog(settings.managed_agents);
  if (available.length === 0)
    throw new LoomError(
      'NO_MANAGED_AGENT',
      'user',
      `workflow "${context.agent.name}" has no agent to assign tasks to${leftOut.length === 0 ? '' : `: ${leftOut.map((entry) => `${entry.name} (${entry.reason})`).join(', ')}`}`,
    );
  const names = available.map((entry) => entry.name);
  const leftOutText = leftOut.length === 0 ? '' : `\n(Left out of the plan: ${leftOut.map((entry) => `${entry.name}, ${entry.reason}`).join('; ')}.)`;
  if (leftOut.length > 0)
    context.emit({
      type: 'phase',
      phase: 'catalog',
      detail: `left out: ${leftOut.map((entry) => `${entry.name} (${entry.reason})`).join(', ')}`,
      data: { leftOut },
    });
  const system = planningSystem(
    context,
    available.map((entry) => `- ${entry.name}: ${entry.description === '' ? '(no description)' : entry.description}`).join('\n'),
  );
  let request = messages;
  let problem = '';
  for (let attempt = 0; attempt < 2; attempt += 1) {
    const plan = await context.structured('plan', WorkflowPlanSchema, { system, messages: request });
    if (plan.missing_info !== null && plan.missing_info.trim() !== '')
      return { summary: plan.summary, question: plan.missing_info, tasks: [], leftOut: leftOutText };
    try {
      const unknown = plan.tasks.find((task) => !names.includes(task.agent));
      if (unknown !== undefined)
        throw new LoomError(
          'PLAN_INVALID',
          'third-party',
          `task "${unknown.id}" is assigned to "${unknown.agent}", which is not one of the agents (${names.join(', ')})`,
        );
      if (plan.tasks.length === 0) throw new LoomError('PLAN_INVALID', 'third-party', 'the plan has no tasks');
      planLayers(
        plan.tasks.map((task) => ({ id: task.id, prompt: task.instruction, depends_on: task.depends_on, can_parallelize: false, needs_tools: false })),
        new Set(keep.map((task) => task.id)),
      );
      const tasks = plan.tasks.map((task): WorkflowTaskRecord => ({
        id: task.id,
        title: task.title,
        instruction: task.instruction,
        agent: task.agent,
        dependsOn: task.depends_on,
        acceptance: task.acceptance,
        status: 'pending',
        attempts: 0,
        result: null,
        feedback: null,
      }));
      return { summary: plan.summary, question: null, tasks: [...keep, ...tasks], leftOut: leftOutText };
    } catch (error) {
      if (!(isLoomError(error) && error.code === 'PLAN_INVALID')) throw error;
      problem = error.message;
      request = [...messages, { role: 'assistant', content: JSON.stringify(plan) }, { role: 'user', content: `That plan cannot run: ${problem}. Plan again.` }];
    }
  }
  throw new LoomError('PLAN_INVALID', 'third-party', `workflow "${context.agent.name}": the model's plan could not run, twice: ${problem}`);
}

/**
 * The workflow agent type (spec/03), one chat turn: a new request is planned and shown for
 * approval (or answered with a question when the plan needs more information); `go` starts the
 * execution in the background; `status` (any time), `pause`, `resume` and `cancel` act on it; any
 * other text while a plan awaits approval, or after the workflow stalled, is feedback that
 * replans; once the workflow has ended, a message is a new request.
 */
export function workflowModule(port: WorkflowPort): AgentModule {
  return async (context) => {
    const { message } = context;
    const reply = (text: string) => ({ text, messages: [{ role: 'assistant' as const, content: text }] });
    const current = await port.load();
    const state: WorkflowState | 'none' = current?.state ?? 'none';
    const now = (): number => context.clock.now();
    const setState = (next: WorkflowState, note: string | null = null) =>
      port.update((record) => ({ ...(record as WorkflowRecord), state: next, note, updatedAt: now() }));

    // Status shows the last workflow, finished ones included.
    if (current !== undefined && isCommand(message, 'status')) return reply(describeWorkflow(current));
    if (current !== undefined && (state === 'awaiting_approval' || state === 'executing' || state === 'paused' || state === 'stalled')) {
      if (isCommand(message, 'cancel')) return reply(describeWorkflow(await setState('cancelled', 'Cancelled.')));
      if (state === 'awaiting_approval' && isCommand(message, 'approve')) {
        await setState('executing');
        port.execute();
        return reply(
          `Starting: ${current.tasks.length} task${current.tasks.length === 1 ? '' : 's'}. Say "status" for progress, "pause" to stop after the current task.`,
        );
      }
      if (state === 'executing') {
        if (isCommand(message, 'pause'))
          return reply(describeWorkflow(await setState('paused', 'Paused: the tasks under way finish; nothing new starts until you say "resume".')));
        return reply('The workflow is running. Say "status" for progress, "pause" to stop after the current task, or "cancel".');
      }
      if (state === 'paused') {
        if (isCommand(message, 'resume')) {
          await setState('executing');
          port.execute();
          return reply('Resuming the workflow.');
        }
        return reply('The workflow is paused. Say "resume" to go on, "status" for progress, or "cancel".');
      }
      // Awaiting approval or stalled: the message is feedback; replan, keeping finished work.
      const kept = current.tasks.filter((task) => task.status === 'completed');
      const plan = await makePlan(
        context,
        [
          ...context.history,
          {
            role: 'user',
            content: `The request: ${current.request}\n\nThe plan so far:\n${describeWorkflow(current)}\n\nThe user's feedback: ${message}\n\nPlan again, keeping the completed tasks (${kept.map((task) => task.id).join(', ') || 'none'}) as they are.`,
          },
        ],
        kept,
      );
      if (plan.question !== null) return reply(plan.question);
      const replans = current.replans + (state === 'stalled' ? 1 : 0);
      const saved = await port.update(() => ({
        ...current,
        state: 'awaiting_approval',
        summary: plan.summary,
        tasks: replannedTasks(current.tasks, plan.tasks, replans, state === 'stalled'),
        replans,
        note: null,
        updatedAt: now(),
      }));
      return reply(`${describeWorkflow(saved)}${plan.leftOut}\n\nSay "go" to start, "cancel" to drop it, or tell me what to change.`);
    }

    // A new request.
    context.emit({ type: 'phase', phase: 'plan', detail: 'Planning the work…' });
    const plan = await makePlan(context, [...context.history, { role: 'user', content: message }]);
    if (plan.question !== null) return reply(plan.question);
    const saved = await port.update(() => ({
      agentId: context.agent.id,
      state: 'awaiting_approval',
      request: message,
      summary: plan.summary,
      tasks: plan.tasks,
      replans: 0,
      note: null,
      createdAt: now(),
      updatedAt: now(),
    }));
    return reply(`${describeWorkflow(saved)}${plan.leftOut}\n\nSay "go" to start, "cancel" to drop it, or tell me what to change.`);
  };
}

/**
 * Marks the pending tasks an upstream failure strands (spec/03's task lifecycle): `blocked` when
 * a task it depends on failed, or was blocked itself after it ran; `skipped` when what it depends
 * on never ran (blocked or skipped in turn), their dependants after them.
 */
function blockDependants(tasks: WorkflowTaskRecord[]): WorkflowTaskRecord[] {
  let changed = true;
  let result = tasks;
  while (changed) {
    changed = false;
    const byId = new Map(result.map((task) => [task.id, task]));
    const isDead = (task: WorkflowTaskRecord | undefined): boolean =>
      task !== undefined && (task.status === 'failed' || task.status === 'blocked' || task.status === 'skipped');
    // A task that failed, or was blocked once it had run (all it depends on completed).
    const failedItself = (task: WorkflowTaskRecord): boolean =>
      task.status === 'failed' || (task.status === 'blocked' && task.dependsOn.every((id) => byId.get(id)?.status === 'completed'));
    result = result.map((task) => {
      const dead = task.dependsOn.filter((id) => isDead(byId.get(id)));
      if (task.status !== 'pending' || dead.length === 0) return task;
      changed = true;
      const failed = dead.filter((id) => failedItself(byId.get(id) as WorkflowTaskRecord));
      if (failed.length > 0) return { ...task, status: 'blocked', feedback: `blocked: ${failed.join(', ')} did not complete` };
      return { ...task, status: 'skipped', feedback: `skipped: ${dead.join(', ')} never ran, after a failure upstream` };
    });
  }
  return result;
}

/**
 * The tasks of a plan after a replan: the new plan's (the completed tasks first), then those of
 * the old plan it drops, `skipped` (spec/03: "skipped due to … replan"), so the record keeps what
 * was planned and why it did not run. A plan that never ran (a change asked for before "go") is
 * replaced outright, keeping only what was skipped before.
 */
function replannedTasks(before: readonly WorkflowTaskRecord[], after: readonly WorkflowTaskRecord[], replan: number, ran: boolean): WorkflowTaskRecord[] {
  const planned = new Set(after.map((task) => task.id));
  const dropped = before.filter((task) => !planned.has(task.id) && task.status !== 'completed' && (ran || task.status === 'skipped'));
  return [
    ...after,
    ...dropped.map((task): WorkflowTaskRecord =>
      task.status === 'skipped' ? task : { ...task, status: 'skipped', feedback: `skipped: replan ${replan} dropped it` },
    ),
  ];
}

/**
 * Runs a workflow's plan (spec/03 "Execution" and "Acceptance"): ready tasks (their dependencies
 * completed) are delegated to their agents, up to `max_parallel_tasks` at once; each result is
 * judged against its acceptance criteria; a rejected one is retried with a better instruction (up
 * to `max_task_attempts`), blocked, replanned (completed tasks kept, at most `max_replans`) or
 * stalls the workflow for the user. Every change is stored; it stops when the state is no longer
 * `executing` (paused, cancelled) and ends completed, or failed when a task failed. It runs in a
 * `workflow {agent}` span, the parent of each task's `workflow_task {id}` span and so of the
 * turns it delegates (with tracing off, no span is made).
 */
export function executeWorkflow(context: ModuleTurnContext, port: WorkflowPort): Promise<void> {
  return withSpan(`workflow ${context.agent.name}`, SpanKind.INTERNAL, { 'gen_ai.agent.id': context.agent.id, 'gen_ai.agent.name': context.agent.name }, () =>
    runWorkflow(context, port),
  );
}

async function runWorkflow(context: ModuleTurnContext, port: WorkflowPort): Promise<void> {
  const settings = context.agent.manifest.workflow ?? WorkflowSchema.parse({});
  const now = (): number => context.clock.now();
  const patchTask = (id: string, change: Partial<WorkflowTaskRecord>) =>
    port.update((record) => {
      const current = record as WorkflowRecord;
      return { ...current, tasks: blockDependants(current.tasks.map((task) => (task.id === id ? { ...task, ...change } : task))), updatedAt: now() };
    });

  const runTask = async (task: WorkflowTaskRecord, record: WorkflowRecord): Promise<void> => {
    const attempt = task.attempts + 1;
    await patchTask(task.id, { status: 'in_progress', attempts: attempt });
    const inputs = task.dependsOn
      .map((id) => `Result of "${record.tasks.find((other) => other.id === id)?.title ?? id}":\n${record.tasks.find((other) => other.id === id)?.result ?? ''}`)
      .join('\n\n');
    let result: string;
    let verdict: z.output<typeof AcceptanceSchema>;
    try {
      result = await context.delegate(task.agent, `${task.instruction}${inputs === '' ? '' : `\n\n${inputs}`}`, settings.delegation_timeout_seconds * 1000);
      verdict = await context.structured('accept', AcceptanceSchema, {
        system: `${context.system}\n\nJudge whether a task's result meets its acceptance criteria.`,
        messages: [
          { role: 'user', content: `Task: ${task.title}\nInstruction: ${task.instruction}\nAcceptance criteria: ${task.acceptance}\n\nResult:\n${result}` },
        ],
      });
    } catch (error) {
      if (context.signal.aborted) throw error;
      result = '';
      verdict = { accepted: false, feedback: `the delegation failed: ${error instanceof Error ? error.message : String(error)}` };
    }
    if (verdict.accepted) {
      await patchTask(task.id, { status: 'completed', result, feedback: null });
      await context.report({ type: 'workflow-task-finish', task: task.id, status: 'completed', attempts: attempt, action: null, reason: null });
      return;
    }
    const decision = await context.structured('decide', FailureDecisionSchema, {
      system: `${context.system}\n\nA task's result was not accepted. Decide: retry it with a better instruction, mark it blocked, replan the remaining work, or stall and ask the user.`,
      messages: [
        {
          role: 'user',
          content: `Task: ${task.title}\nInstruction: ${task.instruction}\nAttempt ${attempt} of ${settings.max_task_attempts}\nWhy it was not accepted: ${verdict.feedback}`,
        },
      ],
    });
    await context.report({
      type: 'workflow-task-finish',
      task: task.id,
      status: 'rejected',
      attempts: attempt,
      action: decision.action,
      reason: decision.reason,
    });
    if (decision.action === 'retry' && attempt < settings.max_task_attempts) {
      await patchTask(task.id, { status: 'pending', instruction: decision.improved_instruction ?? task.instruction, feedback: verdict.feedback });
    } else if (decision.action === 'retry') {
      await patchTask(task.id, { status: 'failed', feedback: `failed after ${attempt} attempts: ${verdict.feedback}` });
    } else if (decision.action === 'blocked') {
      await patchTask(task.id, { status: 'blocked', feedback: decision.reason });
    } else if (decision.action === 'replan' && record.replans < settings.max_replans) {
      const latest = (await port.load()) as WorkflowRecord;
      const kept = latest.tasks.filter((other) => other.status === 'completed');
      const plan = await makePlan(
        context,
        [
          {
            role: 'user',
            content: `The request: ${latest.request}\n\nThe plan so far:\n${describeWorkflow(latest)}\n\nTask ${task.id} failed: ${verdict.feedback}\n\nPlan the rest again, keeping the completed tasks (${kept.map((other) => other.id).join(', ') || 'none'}).`,
          },
        ],
        kept,
      );
      if (plan.question !== null)
        await port.update((current) => ({ ...(current as WorkflowRecord), state: 'stalled', note: `Stalled: ${plan.question}`, updatedAt: now() }));
      else {
        await port.update((current) => {
          const replans = (current as WorkflowRecord).replans + 1;
          return {
            ...(current as WorkflowRecord),
            summary: plan.summary,
            tasks: replannedTasks((current as WorkflowRecord).tasks, plan.tasks, replans, true),
            replans,
            updatedAt: now(),
          };
        });
      }
    } else {
      const why = decision.action === 'replan' ? `replanned ${settings.max_replans} times already` : decision.reason;
      await patchTask(task.id, { status: 'pending', feedback: verdict.feedback });
      await port.update((current) => ({
        ...(current as WorkflowRecord),
        state: 'stalled',
        note: `Stalled at task ${task.id}: ${why}. Tell me how to go on, or "cancel".`,
        updatedAt: now(),
      }));
    }
  };

  for (;;) {
    const record = await port.load();
    if (record?.state !== 'executing') return;
    const ready = record.tasks.filter(
      (task) => task.status === 'pending' && task.dependsOn.every((id) => record.tasks.find((other) => other.id === id)?.status === 'completed'),
    );
    if (ready.length === 0) {
      const open = record.tasks.some((task) => task.status === 'pending' || task.status === 'in_progress');
      if (open) {
        await port.update((current) => ({
          ...(current as WorkflowRecord),
          state: 'stalled',
          note: 'Stalled: no task can start. Tell me how to go on, or "cancel".',
          updatedAt: now(),
        }));
        return;
      }
      const failed = record.tasks.filter((task) => task.status === 'failed' || task.status === 'blocked');
      const summary = await context.generate('summarize', {
        system: `${context.system}\n\nSummarize for the user what the workflow accomplished${failed.length === 0 ? '' : ' and what failed'}.`,
        messages: [
          {
            role: 'user',
            content: `${describeWorkflow(record)}\n\n${record.tasks.map((task) => `## ${task.id}\n${task.result ?? task.feedback ?? ''}`).join('\n\n')}`,
          },
        ],
      });
      await port.update((current) => ({
        ...(current as WorkflowRecord),
        state: failed.length === 0 ? 'completed' : 'failed',
        note: summary,
        updatedAt: now(),
      }));
      return;
    }
    await Promise.all(
      ready
        .slice(0, settings.max_parallel_tasks)
        .map((task) =>
          withSpan(
            `workflow_task ${task.id}`,
            SpanKind.INTERNAL,
            { 'loom.workflow.task.id': task.id, 'loom.workflow.task.agent': task.agent, 'loom.workflow.task.attempt': task.attempts + 1 },
            () => runTask(task, record),
          ),
        ),
    );
  }
}
