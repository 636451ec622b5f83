import { describe, expect, it } from 'vitest';
import type { WorkflowRecord } from '../../../src/contracts/index.ts';
import { agentRecord, sessionOf, type StoreContext } from './fixtures.ts';

const workflow = (agentId: string, changes: Partial<WorkflowRecord> = {}): WorkflowRecord => ({
  agentId,
  state: 'awaiting_approval',
  request: 'a report on "tides"',
  summary: 'research, then write',
  tasks: [
    {
      id: 't1',
      title: 'research',
      instruction: 'find facts',
      agent: 'researcher',
      dependsOn: [],
      acceptance: 'sources cited',
      status: 'completed',
      attempts: 2,
      result: 'facts — très bien',
      feedback: null,
    },
    {
      id: 't2',
      title: 'write',
      instruction: 'write it',
      agent: 'writer',
      dependsOn: ['t1'],
      acceptance: 'one page',
      status: 'pending',
      attempts: 0,
      result: null,
      feedback: 'too long',
    },
  ],
  replans: 1,
  note: null,
  createdAt: 1_000,
  updatedAt: 2_000,
  ...changes,
});

/** The workflows part of the Store contract. */
export function describeWorkflowsContract(context: StoreContext): void {
  describe('workflows', () => {
    it('stores a workflow, reads it back exactly, replaces it, and lists by state', async () => {
      for (const id of ['a1', 'a2']) {
        const agent = agentRecord(id);
        await context.store.agents.create(agent, sessionOf(agent));
      }
      await context.store.workflows.put(workflow('a1'));
      expect(await context.store.workflows.get('a1')).toEqual(workflow('a1'));
      expect(await context.store.workflows.get('a2')).toBeUndefined();
      await context.store.workflows.put(workflow('a1', { state: 'executing', updatedAt: 3_000 }));
      await context.store.workflows.put(workflow('a2', { state: 'executing', updatedAt: 2_500 }));
      expect((await context.store.workflows.listByState('executing')).map((record) => record.agentId)).toEqual(['a2', 'a1']);
      expect(await context.store.workflows.listByState('paused')).toEqual([]);
    });

    it('goes with its agent', async () => {
      const agent = agentRecord('a1');
      await context.store.agents.create(agent, sessionOf(agent));
      await context.store.workflows.put(workflow('a1'));
      await context.store.agents.delete(['a1']);
      expect(await context.store.workflows.get('a1')).toBeUndefined();
    });
  });
}
