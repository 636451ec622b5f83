/** Loom's errors: one base with a stable code and category, one subclass per kind. */
export { AccessDeniedError } from './access-denied-error.ts';
export { AgentChainError } from './agent-chain-error.ts';
export { AgentNameTakenError } from './agent-name-taken-error.ts';
export { AgentNotFoundError } from './agent-not-found-error.ts';
export { AgentStateError } from './agent-state-error.ts';
export { CapabilityDeniedError } from './capability-denied-error.ts';
export { CapabilityEscalationError } from './capability-escalation-error.ts';
export { ConfigError } from './config-error.ts';
export { isLoomError, LoomError } from './loom-error.ts';
export type { ErrorCategory, LoomErrorOptions } from './loom-error.ts';
export { ManifestError } from './manifest-error.ts';
export { ModuleUnavailableError } from './module-unavailable-error.ts';
export { QuotaExceededError } from './quota-exceeded-error.ts';
export { StoreConflictError } from './store-conflict-error.ts';
export { StoreError } from './store-error.ts';
export { StoreNotFoundError } from './store-not-found-error.ts';
export { UnauthorizedError } from './unauthorized-error.ts';
export { UsageError } from './usage-error.ts';
