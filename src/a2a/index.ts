export { buildAgentCard, endpointsOf, toLegacyCard, type A2aEndpoints, type LegacyAgentCard } from './agent-cards.ts';
export { LoomA2aUser, LoomAgentExecutor, textOf } from './agent-executor.ts';
export { BoundedTaskStore, DEFAULT_MAX_TASKS, isTerminalState } from './bounded-task-store.ts';
export { createA2aServer, isPublicA2aPath, resultText, toLegacyTask, type A2aServer, type A2aServerOptions } from './a2a-routes.ts';
export { InMemoryA2aTaskRepository, type A2aTaskQuery, type A2aTaskRecord, type A2aTaskRepository } from './task-repository.ts';
export {
  A2A_CLIENT_TIMEOUT_MS,
  a2aSendTool,
  a2aUserAgent,
  clientFor,
  createA2aSendTool,
  discoverAgent,
  ExternalAgentRegistry,
  externalAgents,
  listExternalAgents,
  loomVersion,
  sendA2aMessage,
  startExternalDiscovery,
  type A2aClientOptions,
  type A2aSendResult,
  type ExternalAgentView,
} from './a2a-client.ts';
