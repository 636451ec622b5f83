import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AgentEvent } from '../../src/runtime/index.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { waitFor } from '../support/wait-for.ts';
import { openTestHost, settleWithClock, type TestHost } from '../support/test-host.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';

const server = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let host: TestHost;

beforeEach(async () => {
  dir = await makeTempDir('loom-delegate-');
  host = await openTestHost(dir.path);
});
afterEach(async () => {
  await host.close();
  await dir.remove();
});

const model = () => `[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${server.url}"\n`;
const specialist = (name: string, description: string) => manifest(`name = "${name}"\ndescription = "${description}"\n${model()}`);
const frontDesk = (extra = '', managed = '["researcher", "writer"]') =>
  manifest(
    `name = "front-desk"\nmodule = "builtin:delegate"\n${model()}system_prompt = "You are the front desk."\n[capabilities]\ntools = ["agent_message"]\nagent_message = ["researcher", "writer"]\n[delegate]\nmanaged_agents = ${managed}\n${extra}`,
  );

async function collect(events: AsyncIterable<AgentEvent>): Promise<AgentEvent[]> {
  const all: AgentEvent[] = [];
  for await (const event of events) all.push(event);
  return all;
}

const bodyOf = (index: number): string => JSON.stringify(server.requests[index]?.body ?? {});

describe('builtin:delegate', () => {
  beforeEach(async () => {
    await host.kernel.spawn(specialist('researcher', 'Finds facts on the web'));
    await host.kernel.spawn(specialist('writer', 'Writes prose'));
  });

  it('selects an agent, hands it a rewritten request as itself, and answers from its reply; the session keeps the delegation record and the answer', async () => {
    await host.kernel.spawn(frontDesk());
    server.script([
      { text: JSON.stringify({ agent: 'researcher', reasoning: 'a factual question' }) },
      { text: 'What is the boiling point of water at sea level, in Celsius?' },
      { text: '100 °C at 1 atm.' },
      { text: 'Water boils at 100 °C at sea level.' },
    ]);
    const events = await collect(host.kernel.stream('front-desk', 'when does water boil?'));
    const finish = events.find((event) => event.type === 'run-finish');
    expect(finish).toMatchObject({ result: { text: 'Water boils at 100 °C at sea level.', iterations: 3 } });
    expect(events.filter((event) => event.type === 'phase').map((event) => (event as { detail: string }).detail)).toEqual([
      'Selecting the best agent…',
      'Formulating the request…',
      'Delegating to researcher…',
      'Analyzing the response…',
    ]);
    // The catalog the model chose from, and the structured reply it was asked for.
    expect(bodyOf(0)).toContain('- researcher: Finds facts on the web');
    expect(bodyOf(0)).toContain('json_schema');
    // The researcher got the rewritten request, not the user's words.
    expect(bodyOf(2)).toContain('What is the boiling point of water at sea level, in Celsius?');
    expect(bodyOf(3)).toContain('100 °C at 1 atm.');

    const session = (await host.kernel.session('front-desk')).messages as { role: string; content: unknown }[];
    expect(session.map((message) => message.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    expect(JSON.stringify(session[1])).toContain('"toolName":"delegate_to_agent"');
    expect(JSON.stringify(session[1])).toContain('"agent":"researcher"');
    expect(JSON.stringify(session[2])).toContain('100 °C at 1 atm.');
    expect(JSON.stringify((await host.kernel.session('researcher')).messages)).toContain('boiling point of water');
    const usage = await host.kernel.usage({ agent: 'front-desk' });
    expect(usage.map((row) => [row.calls, row.input_tokens, row.output_tokens])).toEqual([[3, 30, 15]]);
  });

  it('asks again once when the reply is not the JSON asked for, with the error; a second failure ends the turn naming the step', async () => {
    await host.kernel.spawn(frontDesk());
    server.script([
      { text: 'researcher, obviously' },
      { text: JSON.stringify({ agent: 'writer', reasoning: 'prose' }) },
      { text: 'Write a haiku.' },
      { text: 'old pond' },
      { text: 'Here: old pond' },
    ]);
    expect((await host.kernel.send('front-desk', 'a haiku please')).text).toBe('Here: old pond');
    expect(bodyOf(1)).toContain('That reply is not the JSON asked for');

    server.script([{ text: 'nope' }, { text: '{"agent": 7}' }]);
    await expect(host.kernel.send('front-desk', 'again')).rejects.toThrow(
      /^agent "front-desk", step "select": the model's reply was not the JSON asked for, twice: /,
    );
  });

  it('reads a reply that calls a tool as one that is not the JSON asked for: asked again, then the step named', async () => {
    await host.kernel.spawn(frontDesk());
    server.script([
      { toolCalls: [{ name: 'agent_list', input: {} }] },
      { text: JSON.stringify({ agent: 'writer', reasoning: 'prose' }) },
      { text: 'Write a haiku.' },
      { text: 'old pond' },
      { text: 'Here: old pond' },
    ]);
    expect((await host.kernel.send('front-desk', 'a haiku please')).text).toBe('Here: old pond');
    expect(bodyOf(1)).toContain('That reply is not the JSON asked for (the reply called agent_list, and this step offers no tool)');

    // A reply cut at its length limit with nothing in it has no output either.
    server.script([
      { text: '', finishReason: 'length' },
      { text: JSON.stringify({ agent: 'writer', reasoning: 'prose' }) },
      { text: 'Write a haiku.' },
      { text: 'old pond' },
      { text: 'Here: old pond' },
    ]);
    expect((await host.kernel.send('front-desk', 'another haiku')).text).toBe('Here: old pond');
    expect(bodyOf(6)).toContain('That reply is not the JSON asked for (the reply ended (length) with no output)');

    server.script([{ toolCalls: [{ name: 'agent_list', input: {} }] }, { toolCalls: [{ name: 'file_read', input: { path: 'x' } }] }]);
    const refused = host.kernel.send('front-desk', 'again');
    await expect(refused).rejects.toThrow(
      'agent "front-desk", step "select": the model\'s reply was not the JSON asked for, twice: the reply called file_read, and this step offers no tool',
    );
    await expect(refused).rejects.toMatchObject({ code: 'STRUCTURED_OUTPUT_INVALID' });
  });

  it('asks again once when the model picks an agent outside its catalog, then gives up naming the choice', async () => {
    await host.kernel.spawn(frontDesk());
    server.script([{ text: JSON.stringify({ agent: 'hacker', reasoning: 'x' }) }, { text: JSON.stringify({ agent: 'hacker', reasoning: 'x' }) }]);
    await expect(host.kernel.send('front-desk', 'break in')).rejects.toThrow(
      'delegate "front-desk": the model chose "hacker" twice, which is not one of its agents (researcher, writer)',
    );
    expect(bodyOf(1)).toContain('\\"hacker\\" is not one of the agents listed. Choose one of: researcher, writer.');
  });

  it('leaves suspended and unreachable agents out of the catalog and says which', async () => {
    await host.kernel.spawn(frontDesk('', '["researcher", "writer"]'));
    await host.kernel.suspend('writer');
    server.script([{ text: JSON.stringify({ agent: 'researcher', reasoning: 'only one' }) }, { text: 'q' }, { text: 'a' }, { text: 'done' }]);
    const events = await collect(host.kernel.stream('front-desk', 'hi'));
    expect(events).toContainEqual(expect.objectContaining({ type: 'phase', phase: 'catalog', detail: 'left out: writer (suspended)' }));
    expect(bodyOf(0)).not.toContain('- writer');
  });

  it('leaves out an agent none of whose models can run, and one whose last turn failed on every model, saying why', async () => {
    await host.kernel.spawn(frontDesk());
    // Nothing answers at port 9 of this machine: the writer's model server is down.
    await host.kernel.kill('writer');
    await host.kernel.spawn(
      manifest('name = "writer"\ndescription = "Writes prose"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "http://127.0.0.1:9/v1"\n'),
    );
    server.script([{ status: 500 }, { status: 500 }, { status: 500 }]);
    const failed = host.kernel.send('researcher', 'are you there?').then(
      () => 'answered',
      (error: unknown) => (error as Error).message,
    );
    expect(await settleWithClock(host.clock, failed)).toContain('the model failed');
    const refused = host.kernel.send('front-desk', 'write me a poem');
    await expect(refused).rejects.toThrow('delegate "front-desk" has no agent to hand the request to: researcher (its last turn failed on every model (');
    await expect(refused).rejects.toThrow('writer (cannot run: model "openai/gpt-4o" ([model]): nothing answers at http://127.0.0.1:9/v1)');
    // Five minutes on, the researcher gets another chance; the writer's server is still down.
    await host.clock.advance(5 * 60_000);
    server.script([{ text: JSON.stringify({ agent: 'researcher', reasoning: 'the one left' }) }, { text: 'q' }, { text: 'a' }, { text: 'done' }]);
    const events = await collect(host.kernel.stream('front-desk', 'hi'));
    expect(events).toContainEqual(
      expect.objectContaining({
        type: 'phase',
        phase: 'catalog',
        detail: 'left out: writer (cannot run: model "openai/gpt-4o" ([model]): nothing answers at http://127.0.0.1:9/v1)',
      }),
    );
    expect(events.find((event) => event.type === 'run-finish')).toMatchObject({ result: { text: 'done' } });
  });

  it('refuses to spawn a delegate whose managed agents its agent_message grants do not cover', async () => {
    await expect(host.kernel.spawn(frontDesk('', '["researcher", "accountant"]'))).rejects.toThrow(
      'cannot spawn "front-desk": [delegate].managed_agents names "accountant", which its [capabilities].agent_message does not cover',
    );
  });

  it('compacts its own long conversation first, as its [compaction] says', async () => {
    const desk = await host.kernel.spawn(
      manifest(
        `name = "front-desk"\nmodule = "builtin:delegate"\n${model()}[capabilities]\ntools = ["agent_message"]\nagent_message = ["researcher"]\n[delegate]\nmanaged_agents = ["researcher"]\n[compaction]\nmax_context_tokens = 4000\nthreshold = 0.5\nkeep_last_n = 4\n`,
      ),
    );
    const history = Array.from({ length: 30 }, (_, index) => ({
      role: index % 2 === 0 ? 'user' : 'assistant',
      content: `message ${index} ${'word '.repeat(60)}`,
    }));
    await host.store.sessions.save({ id: desk.session_id, agentId: desk.id, messages: history, createdAt: 0, updatedAt: 0 });
    server.script([
      { text: 'SUMMARY of thirty' },
      { text: JSON.stringify({ agent: 'researcher', reasoning: 'x' }) },
      { text: 'q' },
      { text: 'a' },
      { text: 'answer' },
    ]);
    expect((await host.kernel.send('front-desk', 'and now?')).text).toBe('answer');
    expect(bodyOf(1)).not.toContain('message 0 ');
    const session = JSON.stringify((await host.kernel.session('front-desk')).messages);
    expect(session).toContain('SUMMARY of thirty');
    expect(session).not.toContain('message 0 ');
  });

  it('tells the user when the managed agent is killed mid-delegation, and keeps running', async () => {
    await host.kernel.spawn(frontDesk());
    server.script([
      { text: JSON.stringify({ agent: 'researcher', reasoning: 'x' }) },
      { text: 'question' },
      { text: 'late', gate: new Promise(() => undefined) },
    ]);
    const turn = host.kernel.send('front-desk', 'ask the researcher').catch((error: unknown) => error);
    await waitFor("the researcher's model call", () => server.requests.length >= 3);
    await host.kernel.kill('researcher');
    expect(((await turn) as Error).message).toBe('agent "researcher" was killed during the turn');
    server.script([{ text: JSON.stringify({ agent: 'writer', reasoning: 'the one left' }) }, { text: 'w' }, { text: 'written' }, { text: 'Here it is.' }]);
    expect((await host.kernel.send('front-desk', 'write instead')).text).toBe('Here it is.');
  });

  it('cancels a delegation that takes longer than its timeout, on the kernel clock, and tells the user', async () => {
    await host.kernel.spawn(frontDesk('delegation_timeout_seconds = 30\n'));
    server.script([
      { text: JSON.stringify({ agent: 'researcher', reasoning: 'x' }) },
      { text: 'slow question' },
      { text: 'late', gate: new Promise(() => undefined) },
    ]);
    const turn = host.kernel.send('front-desk', 'take your time').catch((error: unknown) => error);
    await waitFor("the researcher's model call", () => server.requests.length >= 3);
    await host.clock.advance(29_000);
    expect(server.requests).toHaveLength(3);
    await host.clock.advance(1_000);
    const error = (await turn) as Error;
    expect(error.message).toBe('agent "researcher" did not answer within 30 s; the delegation was cancelled');
    // The researcher's turn was cancelled, and it takes the next message.
    server.script([{ text: 'fresh' }]);
    expect((await host.kernel.send('researcher', 'still there?')).text).toBe('fresh');
  });
});
