import type { JsonObject, TurnJournalRecord } from '../contracts/index.ts';
import { AgentStateError, LoomError, turnCancelledBy, TurnNotRunningError } from '../errors/index.ts';
import { type AgentEvent, type AgentEventSink, linkAbort, type TurnResult } from '../runtime/index.ts';
// The light half of the telemetry module: the SDK loads only when tracing starts.
import { withTurnSpan } from '../telemetry/spans.ts';
import { admit, authorize, moduleFor } from './admission.ts';
import type { AgentEntry } from './agent-entry.ts';
import { type AgentRuntime, OWNER } from './agent-runtime.ts';
import { AgentTurns } from './agent-turns.ts';
import { isBudgetRefusal } from './budget-ledger.ts';
import { runChatTurn } from './chat-turn.ts';
import { errorEvent } from './event-stream.ts';
import type { FlowState, MessageFlowParts } from './flow-state.ts';
import { type LiveTurn, LiveTurns, type StreamEntry } from './live-turns.ts';
import type { MessageFlow, SendOptions, TaskTurn, TurnSeal } from './message-flow-contract.ts';
import { createModuleTurns } from './module-turns.ts';
import { noEvents, type TurnPlace } from './open-turn.ts';
import { TaskTurns } from './task-turn.ts';
import { cancelElsewhere, followElsewhere, runningElsewhere } from './turn-followed-elsewhere.ts';
import { sessionOf, TurnIntake } from './turn-intake.ts';
import { savedStreamOf } from './turn-journal.ts';
import { WorkflowRunner } from './workflow-runner.ts';

export type { KeyedTurn, MessageFlow, ModelCallRequest, SendOptions, TaskTurn } from './message-flow-contract.ts';
export type { MessageFlowParts } from './flow-state.ts';

/**
 * The message flow of spec/01: RBAC, quota check, entry lookup, module dispatch, the agent
 * loop, cost estimate, usage recorded, result. Turns of one agent run one at a time; killing or
 * suspending the agent aborts them.
 *
 * This composes the flow's parts, each over the explicit {@link FlowState}: admission
 * (`admission.ts`), the turn journal's intake and idempotent replays (`turn-intake.ts`), model
 * choice (`model-choice.ts`), the turn's commit (`turn-commit.ts`), chat turns (`chat-turn.ts`),
 * module turns (`module-turns.ts`), task turns (`task-turn.ts`) and the workflow runner (`workflow-runner.ts`); model calls outside turns are the kernel's services'
 * (`agent-model-calls.ts`), shared with the forged-tools engine. What stays here is the queue of each agent's turns
 * and the live turns a client follows or cancels.
 */
export function createMessageFlow(parts: MessageFlowParts): MessageFlow {
  const { store, clock, registry, histories } = parts;
  const flowLogger = parts.logger.child({ component: 'message-flow' });
  const turns = new AgentTurns();
  const liveTurns = new LiveTurns();
  const flow: FlowState = {
    ...parts,
    flowLogger,
    nameOf: (id) => registry.find(id)?.name ?? id,
    cycleRunner: (entry) => (parts.guard === undefined ? parts.runner() : parts.guard.cycleRunner(parts.runner(), entry)),
  };
  const moduleTurns = createModuleTurns(flow);
  const tasks = new TaskTurns(flow);
  const workflows = new WorkflowRunner(flow, moduleTurns);
  const intake = new TurnIntake({ store, clock, ids: parts.ids, logger: flowLogger });
  // Aborted at shutdown: a turn another node runs is followed here until then at most, and a cancel waits no longer for one resuming here.
  const closing = new AbortController();

  async function runTask(reference: string, task: TaskTurn, options: SendOptions = {}): Promise<TurnResult> {
    const caller = options.caller ?? OWNER;
    const { entry, runtime } = admit(flow, reference, caller);
    const emit = options.emit ?? noEvents;
    // A task's turn (a package activity's) is an `invoke_agent` span too, under its run's span.
    const turn = (): Promise<TurnResult> =>
      turns.run(entry.id, options.signal, (signal) =>
        withTurnSpan({ agentId: entry.id, agentName: entry.name, message: task.prompt }, () => tasks.run({ runtime, entry, caller, signal, emit }, task)),
      );
    return caller.kind === 'agent' ? turns.waitOn(caller.agentId, entry.id, flow.nameOf, turn) : turn();
  }

  async function send(reference: string, message: string, options: SendOptions = {}, seal?: TurnSeal): Promise<TurnResult> {
    const caller = options.caller ?? OWNER;
    const { resume } = options;
    let admitted: { entry: AgentEntry; runtime: AgentRuntime };
    try {
      admitted = admit(flow, reference, caller);
    } catch (error) {
      // A resumed turn its agent can no longer run ends here, with why.
      if (resume !== undefined)
        await store.turns.finish(
          { turnId: resume.id, outcome: { status: 'failed', reason: error instanceof Error ? error.message : String(error) } },
          clock.now(),
        );
      throw error;
    }
    const { entry, runtime } = admitted;
    const module = moduleFor(flow, workflows, entry);
    const receivedAt = resume?.receivedAt ?? clock.now();
    const opened = await intake.journalOf({ entry, message, caller, options, receivedAt, module: module !== undefined });
    if ('earlier' in opened) return intake.replay(opened.earlier, options, seal);
    const { journal } = opened;
    const sessionId = sessionOf(entry, options.conversation);
    const place: TurnPlace = {
      sessionId,
      ...(options.conversation === undefined ? {} : { conversation: options.conversation }),
      ...(options.person === undefined ? {} : { person: options.person }),
      ...(options.cycle === true ? { cycle: true } : {}),
      ...(options.model === undefined ? {} : { model: options.model }),
      receivedAt,
      // A resumed turn streams: its client may come back to it (decision 0059).
      stream: options.emit !== undefined || resume !== undefined,
      ...(seal === undefined ? {} : { seal }),
      ...(options.door === undefined ? {} : { door: options.door }),
      ...(journal === undefined ? {} : { journal }),
    };
    // A turn can be followed again by a client that left, and cancelled, on whichever session it
    // runs; its events keep their ids across a restart (decision 0059).
    // On a cluster a client of another node may follow it, from what its journal saves.
    const shared = parts.cluster !== undefined && journal !== undefined;
    const live = liveTurns.open(
      entry.id,
      options.conversation,
      message,
      receivedAt,
      streamOf(journal?.turnId ?? parts.ids.uuid(), resume, place.stream, shared),
    );
    if (journal !== undefined) {
      journal.stream = () => live.unsaved() as unknown as JsonObject | undefined;
      live.onShown = () => {
        void journal
          .saveStream?.()
          .catch((error: unknown) =>
            flowLogger.debug({ err: error, turnId: journal.turnId }, 'could not save the stream of a turn a client started following'),
          );
      };
    }
    const own = options.emit ?? noEvents;
    const emit: AgentEventSink = (event) => {
      live.emit(event);
      own(event);
    };
    // The caller's signal (a request's) cancels the live turn as its own controller would.
    const unlink = linkAbort(options.signal, live.controller);
    const signal = live.controller.signal;
    const turn = (): Promise<TurnResult> =>
      turns.run(entry.id, signal, (turnSignal) =>
        withTurnSpan({ agentId: entry.id, agentName: entry.name, conversationId: place.sessionId, message }, () => {
          const context = { runtime, entry, message, caller, signal: turnSignal, emit, place };
          return module === undefined ? runChatTurn(flow, context) : moduleTurns.runModuleTurn(context, module);
        }),
      );
    // An agent waiting on another must not be waited on by it: that would deadlock both turns.
    const running = caller.kind === 'agent' ? turns.waitOn(caller.agentId, entry.id, flow.nameOf, turn) : turn();
    const untrack = journal === undefined ? undefined : intake.track(journal.turnId, running);
    try {
      const result = await running;
      live.end('finished');
      return result;
    } catch (error) {
      // A budget that stopped the turn ended it as a cancel would: what it said is kept.
      const status = signal.aborted || isBudgetRefusal(error) ? 'cancelled' : 'failed';
      live.end(status, errorEvent(error));
      // A turn that ended without its commit (refused when it left the queue, or its commit failed) closes its journal here.
      if (journal !== undefined && journal.closed !== true && journal.pending === undefined) {
        const closed = await store.turns
          .finish({ turnId: journal.turnId, outcome: { status, reason: error instanceof Error ? error.message : String(error) } }, clock.now())
          .then(
            () => true,
            (closeError: unknown) => {
              flowLogger.warn({ err: closeError, turnId: journal.turnId }, 'could not close the journal of a turn');
              return false;
            },
          );
        // A commit that failed left its usage to write once no node can resume the turn (decision 0040).
        await journal.unwritten?.(closed);
      }
      throw error;
    } finally {
      untrack?.();
      unlink();
      liveTurns.close(live, clock.now());
    }
  }

  /**
   * A live turn's stream: under a new epoch for this run of it, after the events its journal saved
   * when it is resumed; `shown` when its caller streams it (or it is resumed: a client may come back);
   * `shared` when a client of another node may follow it (see `LiveTurn`).
   */
  const streamOf = (
    turnId: string,
    resume: TurnJournalRecord | undefined,
    shown: boolean,
    shared: boolean,
  ): { turnId: string; epoch: string; shown: boolean; shared: boolean; saved?: StreamEntry[] } => ({
    turnId,
    epoch: parts.ids.uuid().slice(0, 8),
    shown,
    shared,
    ...(resume === undefined ? {} : { saved: savedStreamOf(resume) }),
  });

  return {
    send,
    runTask,
    callModel: (agentId, request) => parts.modelCalls.call(agentId, request),
    async runningTurn(agent, conversation) {
      const here = liveTurns.current(agent.id, conversation)?.view();
      // On a cluster the turn may run on another node: shown as its journal holds it.
      return here !== undefined || parts.cluster === undefined ? here : runningElsewhere(store, agent.id, conversation);
    },
    turnCounts: () => liveTurns.counts(),
    journaledTurns: () => intake.journaled(),
    async keyedTurn(agent, caller, idempotencyKey, conversation) {
      authorize(flow, agent, caller);
      const earlier = await intake.earlier(agent, conversation, idempotencyKey);
      if (earlier === undefined) return undefined;
      // Its outcome as a retry with its key gets it, read again each time (it may have ended
      // elsewhere since): no audit record of its own (the turn has one).
      const result = async (): Promise<TurnResult> => intake.replay((await intake.earlier(agent, conversation, idempotencyKey)) ?? earlier, {}, undefined);
      return {
        state: earlier.state,
        here: intake.tracks(earlier.id),
        result,
        follow: () => followLive(liveTurns.find(agent.id, conversation, earlier.id)),
        cancel: (by) => {
          const live = liveTurns.find(agent.id, conversation, earlier.id);
          live?.controller.abort(turnCancelledBy(by));
          return live !== undefined;
        },
      };
    },
    async followTurn(agent, conversation, after, signal) {
      try {
        return liveTurns.follow(agent, conversation, after, clock.now());
      } catch (error) {
        // On a cluster the turn may run on another node: followed from its journal (or, ended lately, told its end).
        const { cluster } = parts;
        if (!(error instanceof TurnNotRunningError) || cluster === undefined) throw error;
        const elsewhere = await followElsewhere(
          {
            store,
            clock,
            subscribe: (listener) => cluster.subscribe(listener),
            here: (turnId, from) => liveTurns.followHere(agent.id, conversation, turnId, from, clock.now()),
            closing: closing.signal,
          },
          { agentId: agent.id, sessionId: sessionOf(agent, conversation), conversation },
          after,
          signal,
        );
        if (elsewhere === undefined) throw error;
        return elsewhere;
      }
    },
    async cancelTurn(agent, caller, by, conversation) {
      authorize(flow, agent, caller);
      const { cluster } = parts;
      let turn = liveTurns.current(agent.id, conversation);
      // On a cluster the turn may run on another node: the refusal says which, and to cancel it there;
      // or be resuming here, taken over: cancelled once it runs.
      if (turn === undefined && cluster !== undefined) {
        const here = (): LiveTurn | undefined => liveTurns.current(agent.id, conversation);
        const elsewhere = await cancelElsewhere(
          { store, clock, find: (id) => cluster.find(id), self: cluster.nodeId, leaseMs: cluster.leaseMs, here, closing: closing.signal },
          agent,
          conversation,
        );
        if (elsewhere instanceof LoomError) throw elsewhere;
        turn = elsewhere?.here;
      }
      if (turn === undefined) throw new TurnNotRunningError(agent.name, 'cancel');
      turn.controller.abort(turnCancelledBy(by));
      const status = await turn.ended;
      return { agent: agent.name, run_id: turn.runId ?? null, status };
    },
    resetSession: (agent, at, conversation) =>
      turns.run(agent.id, undefined, async () => {
        const sessionId = sessionOf(agent, conversation);
        histories.forget(sessionId);
        const current = await store.sessions.get(sessionId);
        await store.sessions.save({
          id: sessionId,
          agentId: agent.id,
          messages: [],
          createdAt: current?.createdAt ?? at,
          updatedAt: at,
          conversation: conversation ?? null,
        });
      }),
    async idle() {
      await turns.idle();
      await workflows.idle();
    },
    resumeWork: (agent) => workflows.resume(agent),
    stopTurns(agent, reason) {
      if (reason === 'shutdown') closing.abort();
      workflows.stop(agent);
      const what = reason === 'kill' ? 'was killed' : reason === 'suspend' ? 'was suspended' : 'stopped because Loom is shutting down';
      // `stopped` tells a turn Loom stopped from a message refused at admission (an A2A task ends canceled, not failed).
      turns.abort(agent.id, new AgentStateError(`agent "${agent.name}" ${what} during the turn`, { details: { stopped: reason } }));
      if (reason === 'kill') histories.forget(agent.sessionId);
    },
  };
}

/** The events of `turn` (see `KeyedTurn.follow`): none without one. */
async function* followLive(turn: LiveTurn | undefined): AsyncGenerator<AgentEvent> {
  if (turn === undefined) return;
  for await (const followed of turn.follow()) if ('event' in followed) yield followed.event;
}
