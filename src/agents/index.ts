/** Agent types (spec/03) beside the assistant loop: modules the kernel runs a turn on. */
export type { AgentModule, AgentTypeReport, CatalogEntry, ModuleTurnContext, ModuleTurnOutcome } from './agent-module.ts';
export { codeAgentModule } from './code-agent.ts';
export { AssessmentSchema, confidenceThreshold, planLayers, planSchema, runChainOfThought, SynthesisSchema } from './chain-of-thought.ts';
export type { PlanStep } from './chain-of-thought.ts';
export { DELEGATION_RECORD_TOOL, DelegateSelectionSchema, runDelegate } from './delegate.ts';
export { AcceptanceSchema, describeWorkflow, executeWorkflow, FailureDecisionSchema, workflowModule, WorkflowPlanSchema } from './workflow.ts';
export type { WorkflowPort } from './workflow.ts';
