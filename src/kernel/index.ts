/** The kernel: agent lifecycle, registry, capabilities and the event bus. */
export type { AgentEntry } from './agent-entry.ts';
export type { AgentLifecycleHook, StopReason } from './agent-lifecycle-hook.ts';
export { toAgentDetailView, toAgentView } from './agent-view.ts';
export type { AgentDetailView, AgentView } from './agent-view.ts';
export { CapabilityManager } from './capability-manager.ts';
export { createEventBus } from './event-bus.ts';
export type { EventBus, KernelEvent, KernelEventListener, KillReason } from './event-bus.ts';
export { createKernel } from './kernel.ts';
export type { BootReport, Kernel, KernelDependencies, SpawnOptions } from './kernel.ts';
export { createUuidGenerator } from './uuid-generator.ts';
