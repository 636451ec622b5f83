import { DatabaseSync } from 'node:sqlite';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CapabilityDeniedError, QuotaExceededError, toErrorResponse } from '../../src/errors/index.ts';
import { createSilentLogger } from '../../src/logging/index.ts';
import type { AgentEvent } from '../../src/runtime/index.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { waitFor } from '../support/wait-for.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';
import { openTestHost, type TestHost } from '../support/test-host.ts';

const server = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let host: TestHost;

beforeEach(async () => {
  dir = await makeTempDir('loom-call-limits-');
  host = await openTestHost(dir.path);
});
afterEach(async () => {
  await host.close();
  await dir.remove();
});

const model = (): string => `[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${server.url}"\nmax_tokens = 1000\n`;

async function refusalOf(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => undefined,
    (error: unknown) => error,
  );
}

describe('[chain_of_thought].network_timeout_seconds', () => {
  it("cancels a chain-of-thought agent's model call that takes longer, naming the setting", async () => {
    await host.kernel.spawn(manifest(`name = "thinker"\nmodule = "builtin:chain-of-thought"\n${model()}[chain_of_thought]\nnetwork_timeout_seconds = 5\n`));
    let answer = (): void => undefined;
    server.script([{ text: '{}', stall: new Promise<void>((resolve) => (answer = resolve)) }]);
    const events: AgentEvent[] = [];
    const done = (async () => {
      for await (const event of host.kernel.stream('thinker', 'is it slow?')) events.push(event);
    })();
    await waitFor('the assessment to reach the model', () => server.requests.length === 1);
    await host.clock.advance(4_999);
    expect(events.some((event) => event.type === 'error')).toBe(false);
    await host.clock.advance(1);
    await done;
    answer();
    expect(events.at(-1)).toMatchObject({ type: 'error' });
    const error = events.at(-1) as Extract<AgentEvent, { type: 'error' }>;
    expect(error.message).toContain('the call to model "openai/gpt-4o" took longer than 5 s ([chain_of_thought].network_timeout_seconds) and was cancelled');
  });
});

describe('[capabilities].econ_spend', () => {
  const spender = (): string => `name = "spender"\n${model()}[capabilities]\necon_spend = 0.03\n`;
  // 2,000 tokens in and 1,000 out of gpt-4o: $0.005 + $0.01.
  const reply = { text: 'done', usage: { inputTokens: 2000, outputTokens: 1000 } };

  it('refuses a model call once the agent has spent its lifetime cap, before it is sent, and after a restart too', async () => {
    await host.kernel.spawn(manifest(spender()));
    server.script([reply, reply, reply]);
    expect((await host.kernel.send('spender', 'one')).text).toBe('done');
    expect((await host.kernel.send('spender', 'two')).text).toBe('done');

    const refusal = await refusalOf(host.kernel.send('spender', 'three'));
    expect(refusal).toBeInstanceOf(QuotaExceededError);
    expect((refusal as QuotaExceededError).message).toContain('agent "spender" may spend $0.03 in its life, with the agents it spawns, and has spent $0.03;');
    expect((refusal as QuotaExceededError).details).toMatchObject({ budget: '[capabilities].econ_spend', limit: 0.03 });
    expect(server.requests).toHaveLength(2);

    // A new hour does not free it, nor does a restart: the cap is over the agent's life.
    await host.close();
    host = await openTestHost(dir.path, {}, undefined, { clock: host.clock });
    await host.clock.advance(2 * 60 * 60 * 1000);
    expect(await refusalOf(host.kernel.send('spender', 'four'))).toBeInstanceOf(QuotaExceededError);
    expect(server.requests).toHaveLength(2);
  });

  it('refuses a call whose estimated cost is more than what is left, where an hourly quota would let it start', async () => {
    await host.kernel.spawn(manifest(`name = "spender"\n${model()}[capabilities]\necon_spend = 0.005\n`));
    server.script([reply]);
    // max_tokens = 1000 of gpt-4o's output alone may cost $0.01.
    const refusal = await refusalOf(host.kernel.send('spender', 'one'));
    expect((refusal as QuotaExceededError).message).toContain('has spent $0.00; the next model call would cost about $0.01');
    expect(server.requests).toHaveLength(0);
  });

  it('shows a cap as the manifest gives it, however small', async () => {
    await host.kernel.spawn(manifest(`name = "spender"\n${model()}[capabilities]\necon_spend = 0.00001\n`));
    const refusal = await refusalOf(host.kernel.send('spender', 'one'));
    expect((refusal as QuotaExceededError).message).toContain(
      'agent "spender" may spend $0.00001 in its life, with the agents it spawns, and has spent $0.00;',
    );
    expect((refusal as QuotaExceededError).message).toContain('would cost about $0.0102;');
  });

  describe("covers what the agent's descendants spend", () => {
    // A parent capped at $0.035 whose children may each spend as much: a child's call of $0.015
    // (2,000 tokens in, 1,000 out) is estimated at about $0.0102 (its prompt and max_tokens = 1000).
    const boss = (): string => `name = "boss"\n${model()}[capabilities]\nagent_spawn = true\necon_spend = 0.035\n`;
    const kid = (name: string): string => `name = "${name}"\n${model()}[capabilities]\necon_spend = 0.035\n`;
    const refusedByBoss = async (caller: string): Promise<void> => {
      const refusal = await refusalOf(host.kernel.send(caller, 'more'));
      expect(refusal).toBeInstanceOf(QuotaExceededError);
      expect((refusal as QuotaExceededError).message).toContain(
        `agent "boss" may spend $0.035 in its life, with the agents it spawns, and has spent $0.03; the next model call of agent "${caller}" would cost about $0.01`,
      );
      expect((refusal as QuotaExceededError).message).toContain(
        `the cap is [capabilities].econ_spend in the manifest of agent "boss", which agent "${caller}" descends from`,
      );
      expect((refusal as QuotaExceededError).details).toMatchObject({ agent: caller, budget: '[capabilities].econ_spend', capOf: 'boss', limit: 0.035 });
    };

    it("refuses a child's call that would take its parent's family past the parent's cap", async () => {
      await host.kernel.spawn(manifest(boss()));
      await host.kernel.spawn(manifest(kid('kid-a')), { parent: 'boss' });
      await host.kernel.spawn(manifest(kid('kid-b')), { parent: 'boss' });
      server.script([reply, reply, reply]);
      expect((await host.kernel.send('kid-a', 'one')).text).toBe('done');
      expect((await host.kernel.send('kid-b', 'two')).text).toBe('done');

      // kid-b has spent $0.015 of its own $0.035; the family has spent $0.03 of boss's.
      await refusedByBoss('kid-b');
      await refusedByBoss('kid-a');
      const own = await refusalOf(host.kernel.send('boss', 'and you?'));
      expect((own as QuotaExceededError).message).toContain('agent "boss" may spend $0.035 in its life, with the agents it spawns, and has spent $0.03;');
      expect((own as QuotaExceededError).message).toContain('the cap is [capabilities].econ_spend in its manifest');
      expect(server.requests).toHaveLength(2);
    });

    it('still counts a killed child, after another is spawned and after a restart', async () => {
      await host.kernel.spawn(manifest(boss()));
      await host.kernel.spawn(manifest(kid('kid-a')), { parent: 'boss' });
      server.script([reply, reply, reply]);
      expect((await host.kernel.send('kid-a', 'one')).text).toBe('done');
      expect((await host.kernel.send('kid-a', 'two')).text).toBe('done');
      await host.kernel.kill('kid-a');

      await host.kernel.spawn(manifest(kid('kid-b')), { parent: 'boss' });
      await refusedByBoss('kid-b');
      expect(server.requests).toHaveLength(2);

      // The store file reopened: kid-a's agent row is gone, its usage still counts against boss.
      await host.close();
      host = await openTestHost(dir.path, {}, undefined, { clock: host.clock });
      await refusedByBoss('kid-b');
      await host.kernel.kill('kid-b');
      await host.kernel.spawn(manifest(kid('kid-c')), { parent: 'boss' });
      await refusedByBoss('kid-c');
      expect(server.requests).toHaveLength(2);
    });

    it('counts a grandchild against every capped ancestor above it', async () => {
      await host.kernel.spawn(manifest(boss()));
      await host.kernel.spawn(manifest(`name = "lead"\n${model()}[capabilities]\nagent_spawn = true\n`), { parent: 'boss' });
      await host.kernel.spawn(manifest(kid('kid-a')), { parent: 'lead' });
      await host.kernel.spawn(manifest(kid('kid-b')), { parent: 'lead' });
      server.script([reply, reply, reply]);
      expect((await host.kernel.send('kid-a', 'one')).text).toBe('done');
      expect((await host.kernel.send('kid-b', 'two')).text).toBe('done');

      // lead inherited boss's $0.035 and names itself first; boss's cap refuses too once lead is gone.
      const refusal = await refusalOf(host.kernel.send('kid-b', 'more'));
      expect((refusal as QuotaExceededError).message).toContain('agent "lead" may spend $0.035 in its life, with the agents it spawns, and has spent $0.03;');
      await host.close();
      host = await openTestHost(dir.path, {}, undefined, { clock: host.clock });
      await host.kernel.kill('lead');
      await host.kernel.spawn(manifest(kid('kid-c')), { parent: 'boss' });
      await refusedByBoss('kid-c');
      expect(server.requests).toHaveLength(2);
    });
    describe('after a kill in the middle of a turn', () => {
      const lister = (name: string, spawns = false): string =>
        `name = "${name}"\n${model()}[capabilities]\ntools = ["agent_list"]\n${spawns ? 'agent_spawn = true\n' : ''}econ_spend = 0.035\n`;
      const listing = { toolCalls: [{ name: 'agent_list', input: {} }], usage: { inputTokens: 2000, outputTokens: 1000 } };
      let answer = (): void => undefined;
      // The child's turn pays for one call ($0.015), then the kill cuts its next one short.
      const killDuringTurn = async (caller: string, killed: string): Promise<void> => {
        server.script([listing, { text: 'too late', gate: new Promise<void>((resolve) => (answer = resolve)) }]);
        const turn = refusalOf(host.kernel.send(caller, 'work'));
        await waitFor('the second model call to be under way', () => server.requests.length === 2);
        await host.kernel.kill(killed);
        expect(String(await turn)).toContain(`agent "${caller}" was killed during the turn`);
        answer();
      };
      // After a restart, another child spends $0.015: the family has spent $0.03, and the next call would pass boss's cap.
      const restartAndSpend = async (): Promise<void> => {
        await host.close();
        host = await openTestHost(dir.path, {}, undefined, { clock: host.clock });
        await host.kernel.spawn(manifest(kid('kid-b')), { parent: 'boss' });
        server.script([reply]);
        expect((await host.kernel.send('kid-b', 'one')).text).toBe('done');
      };

      it("still counts what the killed child's last turn spent, after a restart", async () => {
        await host.kernel.spawn(manifest(lister('boss', true)));
        await host.kernel.spawn(manifest(lister('kid-a')), { parent: 'boss' });
        await killDuringTurn('kid-a', 'kid-a');
        await restartAndSpend();
        await refusedByBoss('kid-b');
        expect(server.requests).toHaveLength(3);
      });

      it("counts a grandchild's last turn against the root's cap when its parent is killed under it", async () => {
        await host.kernel.spawn(manifest(lister('boss', true)));
        await host.kernel.spawn(manifest(`name = "lead"\n${model()}[capabilities]\ntools = ["agent_list"]\nagent_spawn = true\n`), { parent: 'boss' });
        await host.kernel.spawn(manifest(lister('kid-a')), { parent: 'lead' });
        await killDuringTurn('kid-a', 'lead');
        await restartAndSpend();
        await refusedByBoss('kid-b');
        expect(server.requests).toHaveLength(3);
      });
    });

    describe('of an ancestor skipped at start (its stored manifest no longer validates)', () => {
      // A manifest this Loom no longer reads (as after a downgrade): boss is skipped, the agents under it load.
      const restartWithBossBroken = async (change = `'$.priority', 'urgent'`): Promise<void> => {
        await host.close();
        const db = new DatabaseSync(host.home.databasePath);
        db.prepare(`UPDATE agents SET manifest = json_set(manifest, ${change}) WHERE name = 'boss'`).run();
        db.close();
        host = await openTestHost(dir.path, {}, undefined, { clock: host.clock });
        expect(host.report.skipped.map((skipped) => skipped.name)).toEqual(['boss']);
      };

      it('still holds the family to the cap its stored record gives', async () => {
        await host.kernel.spawn(manifest(boss()));
        await host.kernel.spawn(manifest(kid('kid-a')), { parent: 'boss' });
        await host.kernel.spawn(manifest(kid('kid-b')), { parent: 'boss' });
        await restartWithBossBroken();
        server.script([reply, reply, reply]);
        expect((await host.kernel.send('kid-a', 'one')).text).toBe('done');
        expect((await host.kernel.send('kid-b', 'two')).text).toBe('done');
        await refusedByBoss('kid-b');
        expect(server.requests).toHaveLength(2);
      });

      it('lets the agents under it call models when its stored record grants no cap', async () => {
        await host.kernel.spawn(manifest(`name = "boss"\n${model()}[capabilities]\nagent_spawn = true\n`));
        await host.kernel.spawn(manifest(`name = "kid-a"\n${model()}`), { parent: 'boss' });
        await restartWithBossBroken();
        server.script([reply]);
        expect((await host.kernel.send('kid-a', 'one')).text).toBe('done');
      });

      it('refuses the calls of the agents under it when its cap does not read, naming why and the fix, as a capability refused', async () => {
        await host.kernel.spawn(manifest(boss()));
        await host.kernel.spawn(manifest(`name = "lead"\n${model()}[capabilities]\nagent_spawn = true\n`), { parent: 'boss' });
        await host.kernel.spawn(manifest(kid('kid-a')), { parent: 'lead' });
        await restartWithBossBroken(`'$.capabilities.econ_spend', 'lots'`);
        server.script([reply]);

        const refusal = await refusalOf(host.kernel.send('kid-a', 'one'));
        expect(refusal).toBeInstanceOf(CapabilityDeniedError);
        const { message, details } = refusal as CapabilityDeniedError;
        expect(message).toContain(`agent "kid-a" may not call a model: it descends from agent "boss" (`);
        expect(message).toContain(
          'which was skipped when Loom started because its stored manifest does not validate (the daemon\'s log says why), and whose [capabilities].econ_spend there, which caps what agent "kid-a" spends, is not a number of dollars; correct the stored manifest, or run the Loom version that stored it, and restart Loom',
        );
        expect(details).toMatchObject({ agent: 'kid-a', budget: '[capabilities].econ_spend', capOf: 'boss', skipped: 'start' });
        expect(toErrorResponse(refusal, 0, createSilentLogger()).status).toBe(403);
        expect(String(await refusalOf(host.kernel.send('lead', 'two')))).toContain('agent "lead" may not call a model: it descends from agent "boss"');
        expect(server.requests).toHaveLength(0);
      });
    });
  });

  it("gives a child without a cap its parent's", async () => {
    await host.kernel.spawn(manifest(`name = "boss"\n${model()}[capabilities]\nagent_spawn = true\necon_spend = 0.03\n`));
    await host.kernel.spawn(manifest(`name = "kid"\n${model()}`), { parent: 'boss' });
    expect(host.kernel.get('kid').manifest.capabilities.econ_spend).toBe(0.03);
  });
});
