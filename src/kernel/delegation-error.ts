import { AgentChainError, AgentNotFoundError, isLoomError, LoomError } from '../errors/index.ts';
import type { ToolCallFailure } from '../runtime/index.ts';

/**
 * Whether the kernel refused the message with `error` before anything was sent (no such agent, a
 * chain too deep or going round): the delegating agent's setup to fix, as a gate of the runner
 * is. (Its grant is the runner's to check; a grant the target lacks fails the target's turn.)
 */
const refusedBeforeSending = (error: unknown): boolean => error instanceof AgentNotFoundError || error instanceof AgentChainError;

/**
 * The error a delegation ends with when its agent_message call gave an error result, told by how
 * the call ended (`failure`): `DELEGATION_TIMEOUT` when it ran out of its `seconds` (the delegated
 * turn is cancelled); `DELEGATION_REFUSED` when a gate of the tool runner or the kernel's own
 * checks stopped it and nothing was sent; else `DELEGATION_FAILED` with the delegated turn's own
 * message, after the agent's name unless it begins with it. The kernel's error, if any, is the cause, its code in `details.cause`.
 */
export function delegationError(target: string, outcome: { text: string; failure?: ToolCallFailure | undefined }, seconds: number): LoomError {
  const { failure } = outcome;
  if (failure?.kind === 'timeout') {
    return new LoomError('DELEGATION_TIMEOUT', 'third-party', `agent "${target}" did not answer within ${seconds} s; the delegation was cancelled`, {
      details: { agent: target },
    });
  }
  if (failure?.kind === 'threw') {
    const { error } = failure;
    const code = isLoomError(error) ? error.code : undefined;
    const details = code === undefined ? { agent: target } : { agent: target, cause: code };
    const message = error instanceof Error ? error.message : String(error);
    if (refusedBeforeSending(error))
      return new LoomError('DELEGATION_REFUSED', 'user', `cannot delegate to "${target}": ${message}`, { details, cause: error });
    // Named, so that the delegated agent's failure (its models, say) does not read as the delegate's own.
    const named = message.startsWith(`agent "${target}" `) ? message : `agent "${target}" could not answer: ${message}`;
    return new LoomError('DELEGATION_FAILED', 'third-party', named, { details, cause: error });
  }
  return new LoomError('DELEGATION_REFUSED', 'user', `cannot delegate to "${target}": ${outcome.text}`, { details: { agent: target } });
}
