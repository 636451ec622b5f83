/**
 * Which stored A2A tasks are unfinished, by their state's name as the task store keeps it: read
 * without loading the A2A SDK, so that a daemon can tell at start whether it has tasks to recover.
 */
import type { TaskRepository } from '../contracts/index.ts';

/** The A2A states a task is not done in (submitted, working, input-required, auth-required), as stored. */
export const UNFINISHED_TASK_STATES: readonly string[] = [
  'TASK_STATE_SUBMITTED',
  'TASK_STATE_WORKING',
  'TASK_STATE_INPUT_REQUIRED',
  'TASK_STATE_AUTH_REQUIRED',
];

/** Whether the repository holds a task left unfinished. */
export async function hasUnfinishedTasks(tasks: TaskRepository): Promise<boolean> {
  for (const state of UNFINISHED_TASK_STATES) if ((await tasks.list({ state, limit: 1, offset: 0 })).records.length > 0) return true;
  return false;
}
