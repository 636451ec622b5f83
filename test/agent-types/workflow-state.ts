import type { WorkflowRecord, WorkflowState } from '../../src/contracts/index.ts';
import type { TestHost } from '../support/test-host.ts';
import { waitFor } from '../support/wait-for.ts';

/** The workflow record of the agent `agent` on `host`, as stored. */
export function workflowOf(host: TestHost, agent: string): Promise<WorkflowRecord | undefined> {
  return host.store.workflows.get(host.kernel.get(agent).id);
}

/** The agent's workflow once it is in one of `states` (read again until it is, or `waitFor`'s deadline). */
export function untilWorkflowState(host: TestHost, agent: string, states: readonly WorkflowState[]): Promise<WorkflowRecord> {
  return waitFor(`the workflow of "${agent}" to be ${states.join(' or ')}`, async () => {
    const current = await workflowOf(host, agent);
    return current !== undefined && states.includes(current.state) ? current : undefined;
  });
}
