/** The kernel: agent lifecycle, registry, capabilities and the event bus. */
export type { AgentEntry } from './agent-entry.ts';
export type { AgentLifecycleHook, StopReason } from './agent-lifecycle-hook.ts';
export { DEFAULT_CONTEXT_WINDOW_TOKENS, MAX_AGENT_DEPTH, OWNER } from './agent-runtime.ts';
export type { AgentRuntime, Caller } from './agent-runtime.ts';
export { toAgentDetailView, toAgentView } from './agent-view.ts';
export type { AgentDetailView, AgentView } from './agent-view.ts';
export { CapabilityManager } from './capability-manager.ts';
export { createEventBus } from './event-bus.ts';
export type { EventBus, KernelEvent, KernelEventListener, KillReason } from './event-bus.ts';
export { createKernel } from './kernel.ts';
export type { BootReport, Kernel, KernelDependencies, SpawnOptions } from './kernel.ts';
export { modelName } from './message-flow.ts';
export type { SendOptions } from './message-flow.ts';
export { QUOTA_WINDOW_MS, QuotaTracker } from './quota-tracker.ts';
export type { QuotaLimits } from './quota-tracker.ts';
export { createUuidGenerator } from './uuid-generator.ts';
