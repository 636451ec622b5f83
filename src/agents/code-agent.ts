import { CodeModuleError } from '../errors/index.ts';
import { CODE_AGENT_PROTOCOL, type CodeModules, type HostCallPort } from '../modules/index.ts';
import type { AgentModule } from './agent-module.ts';

/**
 * A code agent (`wasm:` or `python:`): each message goes to its module as a request of the wire
 * contract, and its host calls are the agent's own acts (a tool through the runner, a model
 * call on its model and quota, a log line). The reply is saved like an assistant's; a fault is
 * reported (audit log, event stream) and fails the message with an error naming it.
 */
export function codeAgentModule(modules: CodeModules): AgentModule {
  return async (context) => {
    const { agent } = context;
    const port: HostCallPort = {
      async tool(name, input) {
        const result = await context.callTool(name, input);
        return result.isError ? { ok: false, error: result.text } : { ok: true, text: result.text };
      },
      llm: (prompt, system) => context.generate('llm host call', { system: system ?? context.system, messages: [{ role: 'user', content: prompt }] }),
      log: (level, message) => context.logger[level]({ source: 'module' }, message),
    };
    const request = { protocol: CODE_AGENT_PROTOCOL, message: context.message, agent: { id: agent.id, name: agent.name }, session: context.history, caller: context.caller } as const;
    try {
      const text = await modules.turn(agent, request, port, context.signal);
      return { text, messages: [{ role: 'assistant', content: text }] };
    } catch (error) {
      if (error instanceof CodeModuleError) await context.report({ type: 'code-module-fault', fault: error.fault, message: error.message });
      throw error;
    }
  };
}
