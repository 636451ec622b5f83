import type { WorkflowRecord, WorkflowState } from '../../src/contracts/index.ts';
import type { TestHost } from '../helpers/test-host.ts';

/** The workflow record of the agent `agent` on `host`, as stored. */
export function workflowOf(host: TestHost, agent: string): Promise<WorkflowRecord | undefined> {
  return host.store.workflows.get(host.kernel.get(agent).id);
}

/** The agent's workflow once it is in one of `states` (read again every few ms, at most 2 s). */
export async function untilWorkflowState(host: TestHost, agent: string, states: readonly WorkflowState[]): Promise<WorkflowRecord> {
  for (let attempt = 0; attempt < 400; attempt += 1) {
    const current = await workflowOf(host, agent);
    if (current !== undefined && states.includes(current.state)) return current;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error(`the workflow never reached ${states.join(' or ')} (it is ${(await workflowOf(host, agent))?.state ?? 'missing'})`);
}
