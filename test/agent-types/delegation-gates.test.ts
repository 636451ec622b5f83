import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { WorkflowRecord, WorkflowState } from '../../src/contracts/index.ts';
import type { KernelEvent } from '../../src/kernel/index.ts';
import type { AgentEvent } from '../../src/runtime/index.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { openTestHost, type TestHost } from '../support/test-host.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';
import { untilWorkflowState } from './workflow-state.ts';

// A delegate's or workflow's message to its managed agent is its own agent_message tool call:
// every gate of the tool runner applies to it, as to the model's call (0017, 0008).

const server = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let host: TestHost;

beforeEach(async () => {
  dir = await makeTempDir('loom-delegation-gates-');
  host = await openTestHost(dir.path, {}, undefined, { runSchedules: true });
  await host.kernel.spawn(manifest(`name = "researcher"\ndescription = "Finds facts"\n${model()}`));
});
afterEach(async () => {
  await host.close();
  await dir.remove();
});

const model = () => `[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${server.url}"\n`;
const json = (value: unknown) => ({ text: JSON.stringify(value) });
const careful = '[autonomous]\napproval_required_for = ["agent_message"]\n';
const delegate = (name: string, { tools = '["agent_message"]', extra = '' } = {}) =>
  `name = "${name}"\nmodule = "builtin:delegate"\n${model()}[capabilities]\ntools = ${tools}\nagent_message = ["researcher"]\n[delegate]\nmanaged_agents = ["researcher"]\ndelegation_timeout_seconds = 30\n${extra}`;
/** The model's side of one delegation: choose the researcher, formulate, (the researcher answers), analyse. */
const delegation = (reply: string, answer: string) => [
  json({ agent: 'researcher', reasoning: 'facts' }),
  { text: 'What are tides?' },
  { text: reply },
  { text: answer },
];

/** The researcher's session, as `loom agent session researcher` shows it. */
const researcherSession = async (): Promise<string> => JSON.stringify((await host.kernel.session('researcher')).messages);

/** Runs a turn, collecting its events; `request` resolves with its first approval request, and rejects when the turn ends without one. */
function startTurn(
  agent: string,
  message: string,
): { events: AgentEvent[]; done: Promise<void>; request: Promise<Extract<AgentEvent, { type: 'approval-request' }>> } {
  const events: AgentEvent[] = [];
  let found: (event: Extract<AgentEvent, { type: 'approval-request' }>) => void = () => undefined;
  let missing: (error: Error) => void = () => undefined;
  const request = new Promise<Extract<AgentEvent, { type: 'approval-request' }>>((resolve, reject) => {
    found = resolve;
    missing = reject;
  });
  const done = (async () => {
    for await (const event of host.kernel.stream(agent, message)) {
      events.push(event);
      if (event.type === 'approval-request') found(event);
    }
    missing(new Error(`the turn ended without asking for approval: ${JSON.stringify(events.at(-1))}`));
  })();
  return { events, done, request };
}

describe('a delegate agent messages its managed agents through the gates of its agent_message tool', () => {
  it('asks a person before the message leaves when [autonomous] lists agent_message, and sends nothing when they deny it', async () => {
    await host.kernel.spawn(manifest(delegate('front-desk', { extra: careful })));
    server.script(delegation('unused', 'unused'));
    const turn = startTurn('front-desk', 'tell me about tides');
    const request = await turn.request;
    expect(request).toMatchObject({ toolName: 'agent_message', input: { target_agent_name: 'researcher', message: 'What are tides?' } });
    expect(await host.kernel.approvals.list()).toMatchObject([{ id: request.approvalId, tool: 'agent_message', status: 'pending', agentName: 'front-desk' }]);
    expect(await researcherSession()).toBe('[]');

    await host.kernel.approvals.decide(request.approvalId, { approved: false, by: 'owner', reason: 'not now' });
    await turn.done;
    expect(turn.events.at(-1)).toMatchObject({
      type: 'error',
      code: 'DELEGATION_REFUSED',
      message: 'cannot delegate to "researcher": the call to agent_message was not approved by owner: not now',
    });
    expect(await researcherSession()).toBe('[]');
    // Selection and formulation only: the researcher's model was never called.
    expect(server.requests).toHaveLength(2);
  });

  it('sends the message once a person approves it, and answers from the reply', async () => {
    await host.kernel.spawn(manifest(delegate('front-desk', { extra: careful })));
    server.script(delegation('The moon pulls the sea.', 'Tides come from the moon.'));
    const turn = startTurn('front-desk', 'tell me about tides');
    const request = await turn.request;
    expect(await researcherSession()).toBe('[]');
    await host.kernel.approvals.decide(request.approvalId, { approved: true, by: 'owner', reason: null });
    await turn.done;
    expect(turn.events.at(-1)).toMatchObject({ type: 'run-finish', result: { text: 'Tides come from the moon.' } });
    expect(turn.events.find((event) => event.type === 'tool-result')).toMatchObject({
      toolName: 'agent_message',
      isError: false,
      text: 'The moon pulls the sea.',
    });
    expect(await researcherSession()).toContain('What are tides?');
    expect(JSON.stringify((await host.kernel.session('front-desk')).messages)).toContain('The moon pulls the sea.');
  });

  it('does not count the wait for a person against delegation_timeout_seconds', async () => {
    await host.kernel.spawn(manifest(delegate('front-desk', { extra: careful })));
    server.script(delegation('The moon pulls the sea.', 'Tides come from the moon.'));
    const turn = startTurn('front-desk', 'tell me about tides');
    const request = await turn.request;
    await host.clock.advance(60_000);
    await host.kernel.approvals.decide(request.approvalId, { approved: true, by: 'owner', reason: null });
    await turn.done;
    expect(turn.events.at(-1)).toMatchObject({ type: 'run-finish', result: { text: 'Tides come from the moon.' } });
  });

  it("binds a delegate spawned as a child to its parent's approvals for agent_message", async () => {
    await host.kernel.spawn(manifest(`name = "boss"\n${model()}[capabilities]\ntools = ["agent_message"]\nagent_message = ["researcher"]\n${careful}`));
    await host.kernel.spawn(manifest(delegate('kid')), { parent: 'boss' });
    server.script(delegation('unused', 'unused'));
    const turn = startTurn('kid', 'tell me about tides');
    const request = await turn.request;
    expect(await host.kernel.approvals.list()).toMatchObject([{ id: request.approvalId, tool: 'agent_message', agentName: 'kid' }]);
    await host.kernel.approvals.decide(request.approvalId, { approved: false, by: 'owner', reason: null });
    await turn.done;
    expect(turn.events.at(-1)).toMatchObject({ type: 'error', code: 'DELEGATION_REFUSED' });
    expect(await researcherSession()).toBe('[]');
  });

  it('cannot reach its managed agent when its tool_blocklist takes agent_message away', async () => {
    await host.kernel.spawn(manifest(`tool_blocklist = ["agent_message"]\n${delegate('front-desk')}`));
    server.script(delegation('unused', 'unused'));
    await expect(host.kernel.send('front-desk', 'tell me about tides')).rejects.toMatchObject({
      code: 'DELEGATION_REFUSED',
      message:
        'cannot delegate to "researcher": agent "front-desk" may not call agent_message: its tool_allowlist, tool_blocklist or mcp_servers leaves it out',
    });
    expect(await researcherSession()).toBe('[]');
    expect(await host.kernel.approvals.list('all')).toEqual([]);
  });

  it('cannot reach its managed agent when its tool_allowlist leaves agent_message out', async () => {
    await host.kernel.spawn(manifest(`tool_allowlist = ["file_read"]\n${delegate('front-desk', { tools: '["agent_message", "file_read"]' })}`));
    server.script(delegation('unused', 'unused'));
    await expect(host.kernel.send('front-desk', 'tell me about tides')).rejects.toMatchObject({ code: 'DELEGATION_REFUSED' });
    expect(await researcherSession()).toBe('[]');
  });

  it('is refused at spawn when its [capabilities].tools does not grant agent_message, naming the fix', async () => {
    await expect(host.kernel.spawn(manifest(delegate('front-desk', { tools: '["file_read"]' })))).rejects.toThrow(
      'cannot spawn "front-desk": a builtin:delegate agent messages its managed agents with the agent_message tool, which its [capabilities].tools does not grant; add "agent_message" to tools',
    );
  });

  it("ends with DELEGATION_FAILED, the delegated turn's own message and its code when that turn fails", async () => {
    await host.kernel.spawn(manifest(delegate('front-desk')));
    server.script([
      json({ agent: 'researcher', reasoning: 'facts' }),
      { text: 'What are tides?' },
      { status: 400, body: { error: { message: "the researcher's model refused the request", type: 'invalid_request_error' } } },
    ]);
    const failure = await host.kernel.send('front-desk', 'tell me about tides').catch((error: unknown) => error);
    expect(failure).toMatchObject({ code: 'DELEGATION_FAILED', details: { agent: 'researcher', cause: 'MODEL_CALL_FAILED' } });
    expect((failure as Error).message).toMatch(
      /^agent "researcher" could not answer: cannot get a reply: .*HTTP 400: the researcher's model refused the request$/,
    );
  });

  it("ends with DELEGATION_REFUSED, naming the kernel's reason, when the message would go round a chain, and nothing is sent", async () => {
    // front-desk hands to researcher, a delegate that would hand back to front-desk: a cycle.
    await host.kernel.kill('researcher');
    await host.kernel.spawn(
      manifest(
        `name = "researcher"\nmodule = "builtin:delegate"\n${model()}[capabilities]\ntools = ["agent_message"]\nagent_message = ["front-desk"]\n[delegate]\nmanaged_agents = ["front-desk"]\n`,
      ),
    );
    await host.kernel.spawn(manifest(delegate('front-desk')));
    server.script([...delegation('unused', 'unused').slice(0, 2), json({ agent: 'front-desk', reasoning: 'back' }), { text: 'Over to you' }]);
    const failure = await host.kernel.send('front-desk', 'tell me about tides').catch((error: unknown) => error);
    // The researcher's own delegation was refused (a cycle), so front-desk's failed with that refusal.
    expect(failure).toMatchObject({ code: 'DELEGATION_FAILED', details: { agent: 'researcher', cause: 'DELEGATION_REFUSED' } });
    const refusal = (failure as Error).cause;
    expect(refusal).toMatchObject({ code: 'DELEGATION_REFUSED', details: { agent: 'front-desk', cause: 'AGENT_CHAIN' } });
    expect((refusal as Error).message).toBe(
      'cannot delegate to "front-desk": cannot message "front-desk": it is already waiting in this chain of messages (front-desk → researcher)',
    );
    expect((failure as Error).message).toBe(`agent "researcher" could not answer: ${(refusal as Error).message}`);
    // Selection and formulation by each delegate; no third model call for front-desk.
    expect(server.requests).toHaveLength(4);
  });

  it('cannot reach its managed agent when it was stored before it needed the agent_message tool', async () => {
    const desk = await host.kernel.spawn(manifest(delegate('front-desk')));
    const stored = await host.store.agents.get(desk.id);
    const capabilities = { ...(stored?.manifest['capabilities'] as Record<string, unknown>), tools: [] };
    await host.store.agents.updateManifest(desk.id, { ...stored?.manifest, capabilities }, host.clock.now());
    await host.close();
    host = await openTestHost(dir.path, {}, undefined, { runSchedules: true });

    server.script(delegation('unused', 'unused'));
    await expect(host.kernel.send('front-desk', 'tell me about tides')).rejects.toMatchObject({
      code: 'DELEGATION_REFUSED',
      message: expect.stringContaining('cannot delegate to "researcher": agent "front-desk" may not call agent_message') as unknown,
    });
    expect(await researcherSession()).toBe('[]');
  });
});

describe('a workflow agent messages its managed agents through the gates of its agent_message tool', () => {
  const task = { id: 't1', title: 'find facts', instruction: 'find facts on tides', agent: 'researcher', depends_on: [], acceptance: 'facts found' };
  const until = (states: readonly WorkflowState[]): Promise<WorkflowRecord> => untilWorkflowState(host, 'lead', states);
  /** Resolves with the first approval request the kernel announces; rejects when the workflow ends first. */
  function nextApproval(): Promise<Extract<KernelEvent, { type: 'approval-request' }>> {
    return new Promise((resolve, reject) => {
      const stop = host.kernel.events.subscribe((event) => {
        if (event.type === 'approval-request') {
          stop();
          resolve(event);
        }
        if (event.type === 'workflow-state-change' && event.state !== 'executing') {
          stop();
          reject(new Error(`the workflow became ${event.state} without asking for approval`));
        }
      });
    });
  }

  beforeEach(async () => {
    await host.kernel.spawn(
      manifest(
        `name = "lead"\nmodule = "builtin:workflow"\n${model()}[capabilities]\ntools = ["agent_message"]\nagent_message = ["researcher"]\n[workflow]\nmanaged_agents = ["researcher"]\n${careful}`,
      ),
    );
    server.script([json({ summary: 'look it up', missing_info: null, tasks: [task] })]);
    await host.kernel.send('lead', 'a note on tides');
  });

  it('asks a person before a task is sent, and a denial fails the delegation like any other, sending nothing', async () => {
    server.script([json({ action: 'blocked', improved_instruction: null, reason: 'not allowed to ask' }), { text: 'Nothing was done.' }]);
    const asked = nextApproval();
    await host.kernel.send('lead', 'go');
    const request = await asked;
    expect(await host.kernel.approvals.list()).toMatchObject([{ id: request.approvalId, tool: 'agent_message', status: 'pending', agentName: 'lead' }]);
    expect(await researcherSession()).toBe('[]');

    await host.kernel.approvals.decide(request.approvalId, { approved: false, by: 'owner', reason: 'no' });
    const ended = await until(['failed', 'completed', 'stalled']);
    expect(ended.state).toBe('failed');
    expect(await researcherSession()).toBe('[]');
    // The model deciding what to do was told why the delegation failed.
    expect(JSON.stringify(server.requests[1]?.body)).toContain(
      'the delegation failed: cannot delegate to \\"researcher\\": the call to agent_message was not approved by owner: no',
    );
    expect((await host.kernel.send('lead', 'status')).text).toContain('- t1 [blocked] find facts → researcher (not allowed to ask)');
  });

  it('sends the task once a person approves it', async () => {
    server.script([{ text: 'the moon pulls the sea' }, json({ accepted: true, feedback: '' }), { text: 'Tides come from the moon.' }]);
    const asked = nextApproval();
    await host.kernel.send('lead', 'go');
    const request = await asked;
    expect(await researcherSession()).toBe('[]');
    await host.kernel.approvals.decide(request.approvalId, { approved: true, by: 'owner', reason: null });
    const done = await until(['completed', 'failed', 'stalled']);
    expect(done).toMatchObject({ state: 'completed', note: 'Tides come from the moon.' });
    expect(done.tasks[0]?.result).toBe('the moon pulls the sea');
    expect(await researcherSession()).toContain('find facts on tides');
  });
});
