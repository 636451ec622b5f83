import { type HostCall, hostCallOf, type HostCallResult, readHostCall } from './protocol.ts';

/**
 * What a module's host calls reach, bound to its agent and the message it answers. Each is the
 * agent's own act: a tool through the tool runner (capability gate, exec policy, approvals,
 * timeout, output cap, audit), a model call on its model and quota, a line in Loom's log.
 */
export interface HostCallPort {
  tool(name: string, input: Record<string, unknown>): Promise<HostCallResult>;
  llm(prompt: string, system: string | undefined): Promise<string>;
  log(level: Extract<HostCall, { call: 'log' }>['level'], message: string): void;
}

/**
 * Answers one host call through `port`: its JSON text, or (`parsed`) the value a line protocol
 * already parsed. Every failure is a result the module reads.
 */
export async function answerHostCall(call: string | { parsed: unknown }, port: HostCallPort): Promise<HostCallResult> {
  const read = typeof call === 'string' ? readHostCall(call) : hostCallOf(call.parsed);
  if (!read.ok) return read;
  const request = read.call;
  try {
    switch (request.call) {
      case 'tool':
        return await port.tool(request.name, request.input);
      case 'llm':
        return { ok: true, text: await port.llm(request.prompt, request.system) };
      case 'log':
        port.log(request.level, request.message);
        return { ok: true, text: '' };
    }
  } catch (error) {
    return { ok: false, error: error instanceof Error ? error.message : String(error) };
  }
}
