/** Agent types (spec/03) beside the assistant loop: modules the kernel runs a turn on. */
export type { AgentModule, CatalogEntry, ModuleTurnContext, ModuleTurnOutcome } from './agent-module.ts';
export { codeAgentModule } from './code-agent.ts';
export { confidenceThreshold, planLayers, runChainOfThought } from './chain-of-thought.ts';
export { DelegateSelectionSchema, runDelegate } from './delegate.ts';
export { executeWorkflow, workflowModule } from './workflow.ts';
export type { WorkflowPort } from './workflow.ts';
