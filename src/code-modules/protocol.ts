import { z } from 'zod';
import { CodeModuleError } from '../errors/index.ts';
import { formatIssues, safeParseJson } from '../validation/index.ts';

/**
 * The wire contract between Loom and a code agent's module (`wasm:` or `python:`), documented
 * in docs/code-agents.md. Its version travels in every request; a change that breaks modules
 * built against it gets a new version.
 */
export const CODE_AGENT_PROTOCOL = 'loom.code-agent/1';

/** Who sent the message a module answers. */
export type CodeAgentCaller = { kind: 'user'; role: string; name?: string } | { kind: 'agent'; id: string; name: string };

/** What a module gets for each message. */
export interface CodeAgentRequest {
  protocol: typeof CODE_AGENT_PROTOCOL;
  message: string;
  agent: { id: string; name: string };
  /** The agent's session before this message, as Loom stores it (AI SDK model messages). */
  session: readonly unknown[];
  caller: CodeAgentCaller;
}

/** A module's answer: a reply, or an error it names. */
export const CodeAgentReplySchema = z.union([z.strictObject({ text: z.string() }), z.strictObject({ error: z.string().min(1) })]);
export type CodeAgentReply = z.output<typeof CodeAgentReplySchema>;

/** What a module may ask of Loom while it answers: a tool, a model call, a log line. */
export const HostCallSchema = z.discriminatedUnion('call', [
  z.strictObject({ call: z.literal('tool'), name: z.string().min(1), input: z.record(z.string(), z.json()).default({}) }),
  z.strictObject({ call: z.literal('llm'), prompt: z.string().min(1), system: z.string().optional() }),
  z.strictObject({ call: z.literal('log'), message: z.string(), level: z.enum(['debug', 'info', 'warn', 'error']).default('info') }),
]);
export type HostCall = z.output<typeof HostCallSchema>;

/** The answer to a host call: `text` on success (empty for `log`), else the error to read. */
export type HostCallResult = { ok: true; text: string } | { ok: false; error: string };

/** The names of the host calls, for docs and messages. */
export const HOST_CALLS = ['tool', 'llm', 'log'] as const;

/**
 * Reads a module's reply (JSON text, at most `maxBytes` UTF-8 bytes).
 * @throws {CodeModuleError} `too-large` past the cap, `protocol` for text that is not JSON or not
 *   a reply, `error` for a reply that is an error (its message is the module's own).
 */
export function readReply(json: string, maxBytes: number, what: string): string {
  const bytes = Buffer.byteLength(json);
  if (bytes > maxBytes) throw new CodeModuleError('too-large', `${what} answered with ${bytes} bytes, over its limit of ${maxBytes} ([code].max_reply_bytes)`);
  const parsed = safeParseJson(json);
  if (!parsed.ok) throw new CodeModuleError('protocol', `${what} answered with text that is not JSON (${parsed.message}): ${excerpt(json)}`);
  return replyText(parsed.value, what);
}

/**
 * The text of a module's reply, already parsed.
 * @throws {CodeModuleError} `protocol` when it is not a reply, `error` for a reply that is an error.
 */
export function replyText(value: unknown, what: string): string {
  const reply = CodeAgentReplySchema.safeParse(value);
  if (!reply.success) {
    throw new CodeModuleError(
      'protocol',
      `${what} answered with JSON that is not a reply: expected {"text": "..."} or {"error": "..."}; ${formatIssues(reply.error, { style: 'json' }).join('; ')}`,
    );
  }
  if ('error' in reply.data) throw new CodeModuleError('error', `${what} answered with an error: ${reply.data.error}`);
  return reply.data.text;
}

/** Reads a host call's JSON; a bad one is the module's to fix and is answered as an error result. */
export function readHostCall(json: string): { ok: true; call: HostCall } | { ok: false; error: string } {
  const parsed = safeParseJson(json);
  if (!parsed.ok) return { ok: false, error: `host call is not JSON (${parsed.message})` };
  return hostCallOf(parsed.value);
}

/** A host call already parsed, checked. */
export function hostCallOf(value: unknown): { ok: true; call: HostCall } | { ok: false; error: string } {
  const call = HostCallSchema.safeParse(value);
  if (!call.success) return { ok: false, error: `host call is not one of ${HOST_CALLS.join(', ')}: ${formatIssues(call.error, { style: 'json' }).join('; ')}` };
  return { ok: true, call: call.data };
}

/** The start of a long text, for messages. */
export function excerpt(text: string, length = 120): string {
  const flat = text.replaceAll(/\s+/g, ' ').trim();
  return JSON.stringify(flat.length > length ? `${flat.slice(0, length)}…` : flat);
}
