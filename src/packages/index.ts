/**
 * Agent packages (spec/04): AGENT.md + agent.json workflows whose bindings run on triggers, in
 * activities with budgets and error policies, and hand results on by emitting events.
 */
export { activityPrompt, namespacedEvent, runBinding } from './run-binding.ts';
export type { ActivityFallback, BindingRunParts, RunEvent, RunnableActivity, RunnableBinding } from './run-binding.ts';
