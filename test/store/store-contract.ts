import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Store } from '../../src/contracts/index.ts';
import { StoreError } from '../../src/errors/index.ts';
import { describeA2aPushConfigsContract } from './contract/a2a-push-configs-contract.ts';
import { describeAgentsContract } from './contract/agents-contract.ts';
import { describeApprovalsContract } from './contract/approvals-contract.ts';
import { describeChannelsContract } from './contract/channels-contract.ts';
import { describeForgedToolsContract } from './contract/forged-tools-contract.ts';
import { agentRecord, memoryRecord, type OtherNodeState, sessionOf, type StoreContext, usageRecord } from './contract/fixtures.ts';
import { describeMemoryContract } from './contract/memory-contract.ts';
import { describeInstalledPackagesContract } from './contract/installed-packages-contract.ts';
import { describePackageRunsContract } from './contract/package-runs-contract.ts';
import { describeScheduleRunsContract } from './contract/schedule-runs-contract.ts';
import { describeTasksContract } from './contract/tasks-contract.ts';
import { describeWorkflowsContract } from './contract/workflows-contract.ts';
import { describeTurnJournalContract } from './contract/turn-journal-contract.ts';
import { describeUsageAndEventsContract } from './contract/usage-events-contract.ts';

export { agentRecord, sessionOf } from './contract/fixtures.ts';

/** A store under test and how to dispose of it (close it, remove its files). */
export interface StoreHarness {
  store: Store;
  cleanup(): Promise<void>;
  /** On a database several nodes share: another node's store on it (see `StoreContext.otherNode`). */
  otherNode?: (state: OtherNodeState, id?: string) => Promise<Store>;
  /** On a database several nodes share: the id the store leases the turns it records to (see `StoreContext.origin`). */
  origin?: string;
}

/**
 * The behaviour every `Store` implementation must have. Each test gets a fresh, empty store
 * from `createStore` and disposes of it afterwards.
 *
 * @example
 * describeStoreContract('SQLite', async () => {
 *   const store = openSqliteStore({ path });
 *   return { store, cleanup: () => store.close() };
 * });
 */
export function describeStoreContract(name: string, createStore: () => Promise<StoreHarness>): void {
  describe(`Store contract: ${name}`, () => {
    let harness: StoreHarness | undefined;
    const context: StoreContext = {
      get store(): Store {
        if (harness === undefined) throw new Error('no store: the contract’s beforeEach has not run');
        return harness.store;
      },
      get otherNode() {
        return harness?.otherNode;
      },
      get origin() {
        return harness?.origin;
      },
    };

    beforeEach(async () => {
      harness = await createStore();
    });

    afterEach(async () => {
      await harness?.cleanup();
      harness = undefined;
    });

    describeAgentsContract(context);
    describeMemoryContract(context);
    describeUsageAndEventsContract(context);
    describeApprovalsContract(context);
    describePackageRunsContract(context);
    describeScheduleRunsContract(context);
    describeInstalledPackagesContract(context);
    describeWorkflowsContract(context);
    describeForgedToolsContract(context);
    describeChannelsContract(context);
    describeTasksContract(context);
    describeA2aPushConfigsContract(context);
    describeTurnJournalContract(context);

    describe('close', () => {
      it('every repository rejects with StoreError after close()', async () => {
        const { store } = context;
        const agent = agentRecord('a1');
        await store.close();

        const attempts: Promise<unknown>[] = [
          store.agents.create(agent, sessionOf(agent)),
          store.agents.list(),
          store.agents.get('a1'),
          store.agents.setState('a1', 'suspended', 1),
          store.agents.delete(['a1']),
          store.sessions.get('s'),
          store.sessions.listByAgent('a1'),
          store.sessions.save(sessionOf(agent)),
          store.sessions.delete('s'),
          store.memory.put(memoryRecord('a1', 'k')),
          store.memory.get('a1', 'k'),
          store.memory.list('a1'),
          store.memory.delete('a1', 'k'),
          store.usage.record(usageRecord('a1', 1)),
          store.usage.totals({ since: 0 }),
          store.usage.list(),
          store.events.append({ at: 1, type: 'x', agentId: null, data: {} }),
          store.events.list(),
          store.packageRuns.list(),
          store.packages.list(),
          store.workflows.get('a1'),
          store.a2aPushConfigs.list('t1'),
          store.tasks.count(),
          store.channels.recent('c', 1),
          store.forgedTools.list(),
          store.approvals.list(),
          store.turns.running(),
          store.turns.step('t1', []),
        ];
        for (const attempt of attempts) {
          await expect(attempt).rejects.toBeInstanceOf(StoreError);
          await expect(attempt).rejects.toThrow('closed');
        }
      });

      it('close() a second time resolves', async () => {
        const { store } = context;
        await store.close();

        await expect(store.close()).resolves.toBeUndefined();
      });
    });
  });
}
