import { afterEach, describe, expect, it } from 'vitest';
import { createFakeClock } from '../../src/clock/index.ts';
import type { SessionRepository, Store } from '../../src/contracts/index.ts';
import { createUuidGenerator, type Kernel } from '../../src/kernel/index.ts';
import { createSilentLogger } from '../../src/logging/index.ts';
import { createCostCatalog, createModelResolver } from '../../src/models/index.ts';
import { openPostgresStore } from '../../src/store/index.ts';
import { buildKernel, manifest } from '../support/test-kernel.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { useTestPostgres } from '../support/use-test-postgres.ts';

// Two nodes on one database serving the same agent: a turn whose session the other node saved
// meanwhile is kept, after the other node's turn, whatever the other node does in between.

const postgres = useTestPostgres();
const server = useScriptedModelServer();
const closers: (() => Promise<void>)[] = [];

afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/** A node's kernel on `store` (its own pool on the shared database), booted, its agents on the scripted model server. */
async function nodeKernel(store: Store): Promise<Kernel> {
  const kernel = buildKernel({
    store,
    clock: createFakeClock(),
    ids: createUuidGenerator(),
    logger: createSilentLogger(),
    runtime: {
      resolver: createModelResolver({ env: { OPENAI_API_KEY: 'test' } }),
      costs: createCostCatalog(),
      tools: [],
      env: {},
      workspaceOf: (agent) => `/tmp/loom-test-workspaces/${agent.name}`,
    },
  });
  await kernel.boot();
  closers.push(() => kernel.shutdown());
  return kernel;
}

/**
 * `store` as node A sees it, where node B commits one more turn of its own on the same agent
 * just before each of A's session writes, up to `times` times: the other node always wins the race.
 */
function losingEveryRace(store: Store, other: () => Promise<unknown>, times: number): Store {
  let left = times;
  const before = async (): Promise<void> => {
    if (left <= 0) return;
    left -= 1;
    await other();
  };
  const sessions: SessionRepository = {
    get: (id) => store.sessions.get(id),
    listByAgent: (agentId) => store.sessions.listByAgent(agentId),
    revision: (id) => store.sessions.revision(id),
    delete: (id) => store.sessions.delete(id),
    save: async (session, options) => {
      await before();
      return store.sessions.save(session, options);
    },
    append: async (id, messages, options) => {
      await before();
      return store.sessions.append(id, messages, options);
    },
  };
  return new Proxy(store, {
    get(target, property) {
      if (property === 'sessions') return sessions;
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/** What a stored message says: its role and its text. */
function said(message: unknown): string {
  const { role, content } = message as { role: string; content: unknown };
  const text = typeof content === 'string' ? content : (content as { type: string; text?: string }[]).map((part) => part.text ?? '').join('');
  return `${role}: ${text}`;
}

describe('two nodes on the same agent', () => {
  it("keeps a turn whose session the other node saved before each of its commits: after the other node's turns, its messages together", async () => {
    const { url } = await postgres.createDatabase();
    const agentToml = `name = "writer"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${server.url}"\n`;
    const [seedStore, storeA, storeB] = [await openPostgresStore({ url }), await openPostgresStore({ url }), await openPostgresStore({ url })];
    closers.push(
      () => seedStore.close(),
      () => storeA.close(),
      () => storeB.close(),
    );
    // The agent is spawned before either node boots, so both know it.
    const { session_id: sessionId } = await (await nodeKernel(seedStore)).spawn(manifest(agentToml));

    const b = await nodeKernel(storeB);
    let turnsOfB = 0;
    let racing = true;
    const a = await nodeKernel(losingEveryRace(storeA, async () => racing && (await b.send('writer', `from b ${(turnsOfB += 1)}`)), 3));
    // A's model call comes first; then B's turn before each of A's writes.
    server.script([{ text: 'reply to a' }, { text: 'reply to b 1' }, { text: 'reply to b 2' }, { text: 'reply to b 3' }]);

    const result = await a.send('writer', 'from a');

    expect(result.text).toBe('reply to a');
    const stored = (await storeB.sessions.get(sessionId))?.messages.map(said) ?? [];
    const ofB = Array.from({ length: turnsOfB }, (_, index) => [`user: from b ${index + 1}`, `assistant: reply to b ${index + 1}`]).flat();
    expect(turnsOfB).toBe(2);
    expect(stored).toEqual([...ofB, 'user: from a', 'assistant: reply to a']);
    // A's next turn starts from the history as stored, both nodes' turns in it.
    racing = false;
    server.reset();
    server.script([{ text: 'again' }]);
    await a.send('writer', 'a again');
    const sent = (server.requests.at(-1)?.body['messages'] as { role: string; content: unknown }[]).filter((message) => message.role !== 'system').map(said);
    expect(sent).toEqual([...stored, 'user: a again']);
    expect(((await storeB.sessions.get(sessionId))?.messages.map(said) ?? []).slice(-2)).toEqual(['user: a again', 'assistant: again']);
  }, 30_000);
});
