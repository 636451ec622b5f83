import { CodeModuleError } from '../errors/index.ts';
import {
  CODE_AGENT_PROTOCOL,
  type CodeModules,
  createLineBudget,
  type HostCallPort,
  MODULE_LOG_BYTES as HOST_LOG_BYTES,
  MODULE_LOG_LINES as HOST_LOG_LINES,
} from '../code-modules/index.ts';
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
    // A module may log in a loop: the log holds a message's first lines, and says how many more there were.
    const logged = createLineBudget(HOST_LOG_LINES, HOST_LOG_BYTES);
    const port: HostCallPort = {
      async tool(name, input) {
        const result = await context.callTool(name, input);
        return result.isError ? { ok: false, error: result.text } : { ok: true, text: result.text };
      },
      llm: (prompt, system) => context.generate('llm host call', { system: system ?? context.system, messages: [{ role: 'user', content: prompt }] }),
      log: (level, message) => {
        const line = logged.take(message);
        if (line !== undefined) context.logger[level]({ source: 'module' }, line);
      },
    };
    const request = {
      protocol: CODE_AGENT_PROTOCOL,
      message: context.message,
      agent: { id: agent.id, name: agent.name },
      session: context.history,
      caller: context.caller,
    } as const;
    try {
      const text = await modules.turn(agent, request, port, context.signal);
      return { text, messages: [{ role: 'assistant', content: text }] };
    } catch (error) {
      if (error instanceof CodeModuleError) await context.report({ type: 'code-module-fail', fault: error.fault, message: error.message });
      throw error;
    } finally {
      const { lines } = logged.leftOut();
      if (lines > 0)
        context.logger.warn(
          { source: 'module' },
          `host.log: ${lines} line${lines === 1 ? '' : 's'} of this message left out of the log (a message logs at most ${HOST_LOG_LINES} lines and ${HOST_LOG_BYTES / 1024} KiB)`,
        );
    }
  };
}
