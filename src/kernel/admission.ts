import { matchesPattern } from '../capabilities/index.ts';
import { AccessDeniedError, AgentChainError, AgentStateError, ModuleUnavailableError } from '../errors/index.ts';
import { type AgentModule, codeAgentModule, runChainOfThought, runDelegate, workflowModule } from '../agent-types/index.ts';
import { codeModuleOf } from '../manifest/index.ts';
import type { AgentEntry } from './agent-entry.ts';
import { type AgentRuntime, type Caller, MAX_AGENT_DEPTH } from './agent-runtime.ts';
import type { FlowState } from './flow-state.ts';
import type { WorkflowRunner } from './workflow-runner.ts';

/** The agent types with their own turn; the others run the assistant loop. */
const AGENT_MODULES: Readonly<Record<string, AgentModule>> = { 'builtin:delegate': runDelegate, 'builtin:chain-of-thought': runChainOfThought };

/** Agent types with their own steps, the workflow's built per agent. */
const MODULE_NAMES: readonly string[] = [...Object.keys(AGENT_MODULES), 'builtin:workflow'];

/** The modules turns run on: the assistant loop (under both its names, and with only the log tools for event-log agents) and the agent types built so far. */
const RUNNABLE_MODULES: ReadonlySet<string> = new Set(['builtin:assistant', 'builtin:chat', 'builtin:eventlog', ...MODULE_NAMES]);

/**
 * Whether `caller` may message `entry`: a user by role and key, an agent by its `agent_message`
 * grants, no deeper than `MAX_AGENT_DEPTH`, and never back into its own chain of messages.
 * @throws {AccessDeniedError} {CapabilityDeniedError} {AgentChainError}
 */
export function authorize(flow: Pick<FlowState, 'registry' | 'capabilities' | 'nameOf'>, entry: AgentEntry, caller: Caller): void {
  const { registry, capabilities, nameOf } = flow;
  if (caller.kind === 'user') {
    if (caller.role === 'viewer') throw new AccessDeniedError(`a viewer may not send messages (agent "${entry.name}"); it needs the user or owner role`);
    const allowed = caller.agents;
    if (caller.role === 'user' && allowed !== undefined && !allowed.some((pattern) => matchesPattern(pattern, entry.name))) {
      throw new AccessDeniedError(
        `${caller.name === undefined ? 'this caller' : `"${caller.name}"`} may not message agent "${entry.name}": its key allows ${allowed.map((pattern) => `"${pattern}"`).join(', ') || 'no agents'}`,
      );
    }
    return;
  }
  const from = registry.resolve(caller.agentId);
  capabilities.require(from.id, from.name, { kind: 'agent_message', pattern: entry.name });
  if (caller.chain.length >= MAX_AGENT_DEPTH) {
    throw new AgentChainError(`cannot message "${entry.name}": agent-to-agent messages may be nested at most ${MAX_AGENT_DEPTH} deep`);
  }
  if (entry.id === from.id || caller.chain.includes(entry.id)) {
    throw new AgentChainError(
      `cannot message "${entry.name}": it is already waiting in this chain of messages (${[...caller.chain, from.id].map(nameOf).join(' → ')})`,
    );
  }
}

/**
 * The checks every turn passes before it is queued: the caller, the state, the module.
 * @throws {AgentNotFoundError} as `authorize` does; {AgentStateError} {ModuleUnavailableError}
 */
export function admit(
  flow: Pick<FlowState, 'registry' | 'capabilities' | 'nameOf' | 'runtime'>,
  reference: string,
  caller: Caller,
): { entry: AgentEntry; runtime: AgentRuntime } {
  const entry = flow.registry.resolve(reference);
  authorize(flow, entry, caller);
  if (entry.state !== 'running') throw new AgentStateError(`agent "${entry.name}" is suspended; resume it to send it messages`);
  const runtime = flow.runtime;
  if (runtime === undefined) throw new ModuleUnavailableError('this kernel has no model runtime configured');
  const code = codeModuleOf(entry.manifest);
  if (code === undefined ? !RUNNABLE_MODULES.has(entry.manifest.module) : runtime.codeModules === undefined) {
    throw new ModuleUnavailableError(
      `agent "${entry.name}" uses module "${entry.manifest.module}", which this Loom cannot run; it runs ${[...RUNNABLE_MODULES].join(', ')}${code === undefined ? '' : ', and no code modules in this process'}`,
    );
  }
  return { entry, runtime };
}

/** The module an agent's turns run on, when its type has its own steps (a code agent's is its module); none for the assistant loop. */
export function moduleFor(flow: Pick<FlowState, 'runtime'>, workflows: Pick<WorkflowRunner, 'port'>, entry: AgentEntry): AgentModule | undefined {
  if (entry.manifest.module === 'builtin:workflow') return workflowModule(workflows.port(entry));
  if (codeModuleOf(entry.manifest) !== undefined) {
    // The runtime's code modules are read at each turn: a runtime may be given them late.
    const modules = flow.runtime?.codeModules;
    return modules === undefined ? undefined : codeAgentModule(modules);
  }
  return AGENT_MODULES[entry.manifest.module];
}
