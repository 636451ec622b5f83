import type { Clock, Logger } from '../contracts/index.ts';
import { codesOfKind, isLoomError } from '../errors/index.ts';
import type { TurnResult } from '../runtime/index.ts';
import type { Caller } from './agent-runtime.ts';
import type { TurnEvent } from './event-bus.ts';
import type { MessageFlow, SendOptions, TaskTurn, TurnSeal } from './message-flow-contract.ts';

/** Codes of the errors that refuse a turn before it runs (who may ask, the quota, the agent's state). */
const REFUSAL_CODES: ReadonlySet<string> = codesOfKind('refused');

/** What {@link auditTurns} needs from the kernel. */
export interface TurnAuditParts {
  clock: Clock;
  /** The agent a reference (id or name) names now, if any: a turn of no agent is not recorded. */
  agentOf: (reference: string) => { id: string; name: string } | undefined;
  /** An agent's name by id, for turns asked by another agent. */
  nameOf: (agentId: string) => string | undefined;
  /** Records the event in the audit log and tells subscribers; must not throw. */
  publish: (event: TurnEvent) => Promise<void>;
  /** Tells subscribers of an event the audit log holds already (one a turn's commit wrote). */
  announce: (event: TurnEvent) => void;
  /** Where a turn's start is logged (its end is a kernel event, logged from the bus). */
  logger?: Logger;
}

/** `owner`, `user:<key name>`, `viewer`, or `agent:<name>`: who asked for a turn. */
function describeCaller(caller: Caller | undefined, nameOf: (agentId: string) => string | undefined): string {
  if (caller === undefined) return 'owner';
  if (caller.kind === 'agent') return `agent:${nameOf(caller.agentId) ?? caller.agentId}`;
  return caller.name === undefined ? caller.role : `${caller.role}:${caller.name}`;
}

/**
 * Wraps the message flow's turns so each one leaves a record in the audit log of how it ended:
 * `turn-finish`, `turn-refuse`, `turn-cancel`, `model-fail` or `turn-fail` (see
 * {@link TurnEvent}). The turn's own result or error is passed on unchanged.
 */
export function auditTurns(flow: Pick<MessageFlow, 'send' | 'runTask'>, parts: TurnAuditParts): Pick<MessageFlow, 'send' | 'runTask'> {
  const { clock } = parts;
  async function audited(reference: string, kind: TurnEvent['kind'], options: SendOptions, run: (seal: TurnSeal) => Promise<TurnResult>): Promise<TurnResult> {
    const agent = parts.agentOf(reference);
    const startedAt = clock.now();
    if (agent !== undefined)
      parts.logger?.info(
        { subsystem: 'turns', agentId: agent.id, event: 'turn-start' },
        `${kind} turn of agent "${agent.name}" (via ${describeCaller(options.caller, parts.nameOf)}) started`,
      );
    const base = (): Pick<TurnEvent, 'agentId' | 'name' | 'kind' | 'via' | 'durationMs' | 'at'> => {
      const at = clock.now();
      return {
        at,
        agentId: agent?.id ?? '',
        name: agent?.name ?? reference,
        kind,
        via: describeCaller(options.caller, parts.nameOf),
        durationMs: at - startedAt,
      };
    };
    const finished = ({ usage, ...result }: TurnResult): TurnEvent => ({
      ...base(),
      type: 'turn-finish',
      model: result.model,
      iterations: result.iterations,
      inputTokens: usage.inputTokens,
      outputTokens: usage.outputTokens,
      costUsd: result.costUsd,
    });
    const seal: TurnSeal = { finished };
    let result: TurnResult;
    try {
      result = await run(seal);
    } catch (error) {
      if (agent !== undefined && seal.replayed !== true) {
        const code = isLoomError(error) ? error.code : 'INTERNAL';
        const type =
          options.signal?.aborted === true || code === 'TURN_CANCELLED' || seal.stopped === true
            ? 'turn-cancel'
            : code === 'MODEL_CALL_FAILED'
              ? 'model-fail'
              : REFUSAL_CODES.has(code)
                ? 'turn-refuse'
                : 'turn-fail';
        await parts.publish({ ...base(), type, code, message: error instanceof Error ? error.message : String(error) });
      }
      throw error;
    }
    if (agent !== undefined && seal.replayed !== true) {
      if (seal.recorded === undefined) await parts.publish(finished(result));
      else parts.announce(seal.recorded);
    }
    return result;
  }
  return {
    send: (reference: string, message: string, options: SendOptions = {}) =>
      audited(reference, 'message', options, (seal) => flow.send(reference, message, options, seal)),
    runTask: (reference: string, task: TaskTurn, options: SendOptions = {}) =>
      audited(reference, 'task', options, () => flow.runTask(reference, task, options)),
  };
}
