export { A2A_INPUT_MODES, buildAgentCard, endpointsOf, toDualCard, toLegacyCard, type A2aEndpoints, type LegacyAgentCard } from './agent-cards.ts';
export { LoomA2aUser, LoomAgentExecutor, textOf } from './agent-executor.ts';
export { BoundedTaskStore, DEFAULT_MAX_TASKS, isTerminalState } from './bounded-task-store.ts';
export { isPublicA2aPath } from './public-paths.ts';
export { createA2aServer, resultText, toLegacyTask, type A2aPushOptions, type A2aServer, type A2aServerOptions } from './a2a-routes.ts';
export {
  InMemoryA2aPushConfigRepository,
  InMemoryA2aTaskRepository,
  type A2aTaskQuery,
  type A2aTaskRecord,
  type A2aTaskRepository,
} from './task-repository.ts';
export { A2A_CLIENT_TIMEOUT_MS, a2aUserAgent, clientFor, discoverAgent, sendA2aMessage, type A2aClientOptions, type A2aSendResult } from './a2a-client.ts';
export {
  a2aSendTool,
  createA2aSendTool,
  ExternalAgentRegistry,
  externalAgents,
  listExternalAgents,
  startExternalDiscovery,
  type ExternalAgentView,
} from './external-agents.ts';
