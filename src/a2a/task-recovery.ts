/**
 * `recoverTasks`: at start, each A2A task the previous process left unfinished meets the turn its
 * message started (decision 0045): a turn resumed here finishes the task when it ends (the task
 * `input-required` while the turn waits for an approval, as a live task is), a turn that ended
 * gives it its outcome, and only a task whose turn cannot be found is failed, its client told to
 * send the message again. A task the store could not answer for is asked for again while the
 * server runs. Every webhook of the task is told what the task became.
 */
import { type Message, Role, type Task, TaskState } from '@a2a-js/sdk';
import type { Clock, Logger } from '../contracts/index.ts';
import { AccessDeniedError, AgentNotFoundError, CapabilityDeniedError, isLoomError, LoomError, messageOf, StoreError } from '../errors/index.ts';
import { type Caller, type Kernel, kernelAs, type KeyedTurn, principalOfCaller, TURN_ELSEWHERE_RETRY_MS, untilTurnHere } from '../kernel/index.ts';
import type { TurnResult } from '../runtime/index.ts';
import {
  agentMessage,
  approvalMessage,
  callerOfKey,
  cancellerByline,
  kernelOfTask,
  responseArtifact,
  type TaskKernel,
  type TaskTurnPlace,
  taskTurnPlaces,
  textOf,
  turnCanceledText,
  turnWasCanceled,
} from './agent-executor.ts';
import { type BoundedTaskStore, isTerminalState } from './bounded-task-store.ts';
import type { PushNotifier } from './push-notifier.ts';

/** The status message of a task whose turn cannot be found after a restart. */
export const INTERRUPTED_TASK_TEXT = 'The task was interrupted: the Loom daemon stopped while it ran. Send the message again.';
/** How long after the store could not say what became of a task's turn the recovery asks again (on the injected clock). */
export const TASK_RECOVERY_RETRY_MS = 30_000;
/** How many times it asks again before it leaves the task unfinished, for the next start (10 minutes). */
export const TASK_RECOVERY_ATTEMPTS = 20;

/**
 * Who a recovered task's turn is canceled by, when the task is found canceled with no request that
 * canceled it known (canceled on another node, or before the recovery watched it).
 */
const CANCELED_BY = 'a client of its A2A task';

/**
 * A task found canceled: `by` the caller of the request here that saved it so, whose cancel of its
 * turn the kernel judges and names; undefined when none is known (see {@link CANCELED_BY}).
 */
interface Canceled {
  by: Caller | undefined;
}

/** What {@link recoverTasks} works on. */
export interface TaskRecoveryParts {
  kernel: Kernel;
  store: BoundedTaskStore;
  notifier: PushNotifier | undefined;
  logger: Logger;
  now: () => number;
  /**
   * Paces the asking again while a task's turn runs on another node, and after the store could
   * not answer; without it, a task the store could not answer for is left for the next start.
   */
  clock: Clock | undefined;
  /** Aborted when the A2A server closes: a task still waiting for its turn is left as it is, for the next start. */
  closing: AbortSignal;
  /** Whether other nodes share the store now: only then may a turn that does not run here run on one of them. */
  othersAlive: () => Promise<boolean>;
  /**
   * Whether the store leases each running turn to its node (PostgreSQL, decision 0061): a turn that
   * does not run here is taken over by a node once its lease lapses, this one included, so it is
   * waited for as one running elsewhere.
   */
  leasesTurns?: boolean | undefined;
}

/**
 * Settles the unfinished tasks of the store (see the file's comment). Resolves once every task
 * whose turn cannot be found is failed and every task whose turn ended has that turn's outcome;
 * the tasks whose turns still run are settled in the background when they end, and those the
 * store could not answer for are asked for again in the background.
 */
export async function recoverTasks(parts: TaskRecoveryParts): Promise<void> {
  const { store, logger } = parts;
  const later = new UnansweredTasks(parts);
  let failed = 0;
  let waiting = 0;
  let unanswered: Unanswered | undefined;
  for (const { task, agent } of await store.unfinished()) {
    // The store out of reach: the tasks after are asked for with it, in the shared retries.
    if (unanswered?.store === true) {
      later.add(task, agent, 0);
      continue;
    }
    const recovered = await recoverTask(parts, later, { task, agent, tries: 0 });
    if (recovered === 'failed') failed += 1;
    else if (recovered === 'waiting') waiting += 1;
    else if (typeof recovered === 'object') unanswered = worse(unanswered, recovered);
  }
  if (failed > 0) logger.warn({ tasks: failed }, 'failed the A2A tasks the previous daemon left unfinished whose turns cannot be found');
  if (waiting > 0) logger.info({ tasks: waiting }, 'A2A tasks the previous daemon left unfinished go on with their resumed turns');
  later.told(unanswered);
}

/**
 * Why the store could not say what became of a task's turn: it failed (`store`: out of reach), or
 * the turn does not run here and no other node runs now (one may take it over: its lease lapses).
 */
interface Unanswered {
  error: unknown;
  store: boolean;
}

/** The turn runs, not here, and no node may run it now. */
const NOT_HERE: Unanswered = { error: undefined, store: false };

/** The reason to tell of two: the store's failure before a turn not here. */
function worse(kept: Unanswered | undefined, next: Unanswered): Unanswered {
  return kept === undefined || (next.store && !kept.store) ? next : kept;
}

/**
 * What became of a task the recovery met: failed (its turn cannot be found), settled (its turn had
 * ended), waiting (its turn runs: settled when it ends), left (an unexpected failure, logged: left
 * for the next start), or unanswered (asked again later).
 */
type Recovered = 'failed' | 'settled' | 'waiting' | 'left' | Unanswered;

/**
 * A task the recovery meets, and how many times it was asked for again; `unwatch` stops the watch of
 * a round on it (see {@link UnansweredTasks.add}) as its end is written (the recovery's own cancel is
 * not a client's).
 */
interface Met {
  task: Task;
  agent: string;
  tries: number;
  unwatch?: (() => void) | undefined;
}

/**
 * Meets one unfinished task with its turn (see the file's comment); a task left unanswered, or
 * whose outcome the store failed to write, is given to `later`.
 */
async function recoverTask(parts: TaskRecoveryParts, later: UnansweredTasks, met: Met): Promise<Recovered> {
  const { task, agent } = met;
  try {
    return await meetTurn(parts, later, met);
  } catch (error) {
    if (parts.closing.aborted) return 'left';
    // Not known not to exist, or its outcome not written (the store out of reach): asked again later.
    if (error instanceof StoreError) return later.add(task, agent, met.tries, { error, store: true });
    parts.logger.error(
      { err: error, taskId: task.id, agent },
      'could not settle an A2A task the previous daemon left unfinished; it is left for the next start',
    );
    return 'left';
  }
}

/** {@link recoverTask}, its failures thrown. */
async function meetTurn(parts: TaskRecoveryParts, later: UnansweredTasks, met: Met): Promise<Recovered> {
  const { logger } = parts;
  const { task, agent } = met;
  const turn = await turnOf(parts, task, agent);
  if (turn === undefined) {
    await settle(parts, task, agent, { state: TaskState.TASK_STATE_FAILED, text: INTERRUPTED_TASK_TEXT }, met.unwatch);
    return 'failed';
  }
  if (turn.state === 'done') {
    const outcome = await outcomeOf(parts, () => turn.result());
    if (!('state' in outcome)) return later.add(task, agent, met.tries, outcome);
    await settle(parts, task, agent, outcome, met.unwatch);
    return 'settled';
  }
  // Running, not here: only another node may run it, or take it over once its lease lapses.
  const elsewhere = !turn.here && parts.clock !== undefined && (parts.leasesTurns === true || (await parts.othersAlive()));
  if (!turn.here && !elsewhere) return later.add(task, agent, met.tries, NOT_HERE);
  // Its client may cancel it meanwhile: no executor runs it now, so its turn is canceled here, at
  // once, or once it runs here (taken over).
  let canceled: Canceled | undefined;
  const unwatch = parts.store.onCanceled(task.id, (saved, by) => {
    canceled = { by };
    parts.notifier?.notifyStored(agent, saved);
    // At once when it runs here, else once it does (see `endOf`).
    void cancelTurnOf(parts, task, agent, canceled).catch((error: unknown) => logger.warn({ err: error, taskId: task.id, agent }, CANCEL_FAILED));
  });
  void endOf(parts, task, agent, turn, () => canceled)
    .then((outcome) => {
      if (parts.closing.aborted) return undefined;
      // Watched no longer once its end is written: the task's own end (canceled with its turn) is not a client's cancel.
      if ('state' in outcome) return settle(parts, task, agent, outcome, unwatch);
      unwatch();
      // Told of in the next round's line; the try count goes on (TASK_RECOVERY_ATTEMPTS in all).
      later.add(task, agent, met.tries, outcome, canceled);
      return undefined;
    })
    .catch((error: unknown) => {
      if (parts.closing.aborted) return;
      if (error instanceof StoreError) later.add(task, agent, met.tries, { error, store: true }, canceled);
      else logger.warn({ err: error, taskId: task.id, agent }, 'could not give an A2A task the outcome of its resumed turn');
    })
    .finally(unwatch);
  return 'waiting';
}

/**
 * The outcome of the task of `found`, a running turn, once it ends. A turn not here (running on
 * another node, or to be taken over once its lease lapses, this node included) is looked up again
 * every 2 s until it runs here or has ended (10 minutes at most: then unanswered). While it runs
 * here, the task shows its approvals; a task a client canceled before (`canceled`: who) has its
 * turn canceled then, asked again until it is or it ends.
 */
async function endOf(
  parts: TaskRecoveryParts,
  task: Task,
  agent: string,
  found: KeyedTurn,
  canceled: () => Canceled | undefined,
): Promise<TaskOutcome | Unanswered> {
  const { clock, closing, logger } = parts;
  let turn: KeyedTurn | undefined = found;
  if (!found.here && clock !== undefined) {
    try {
      turn = await untilTurnHere(() => hereOrEnded(parts, task, agent), clock, closing);
    } catch (error) {
      if (closing.aborted || error instanceof StoreError) return { error, store: true };
      if (isLoomError(error) && error.code === 'TURN_RUNNING') return { error, store: false };
      throw error;
    }
  }
  if (turn === undefined) return { state: TaskState.TASK_STATE_FAILED, text: INTERRUPTED_TASK_TEXT };
  const here = turn;
  if (here.state === 'running') {
    void showApprovals(parts, task, agent, here).catch((error: unknown) =>
      logger.warn({ err: error, taskId: task.id, agent }, 'could not show an A2A task waiting for an approval of its resumed turn'),
    );
  }
  let ended = false;
  const outcome = outcomeOf(parts, () => here.result()).finally(() => (ended = true));
  // Whether nothing is left to cancel: not canceled, or its turn canceled now.
  const cancel = async (): Promise<boolean> => {
    const by = canceled();
    return by === undefined || (await cancelTurnOf(parts, task, agent, by));
  };
  while (here.state === 'running' && !ended && !(await cancel()) && clock !== undefined && !closing.aborted) {
    const waited = new AbortController();
    await Promise.race([outcome, clock.sleep(TURN_ELSEWHERE_RETRY_MS, { signal: AbortSignal.any([waited.signal, closing]) }).catch(() => undefined)]);
    waited.abort();
  }
  return outcome;
}

/**
 * The task's turn once it runs here or has ended, or undefined when none is found (see {@link turnOf}).
 * @throws `TURN_RUNNING` while it runs, not here (see `untilTurnHere`).
 */
async function hereOrEnded(parts: TaskRecoveryParts, task: Task, agent: string): Promise<KeyedTurn | undefined> {
  const turn = await turnOf(parts, task, agent);
  if (turn?.state === 'running' && !turn.here) throw new LoomError('TURN_RUNNING', 'user', `the turn of the A2A task ${task.id} runs, not on this node`);
  return turn;
}

/** A task waiting for the next round: `canceled` when a client canceled it and its turn is to be canceled once here. */
interface Waiting extends Met {
  canceled: Canceled | undefined;
  unwatch: () => void;
}

/**
 * The tasks the store could not say what became of, asked for again together: one round every
 * {@link TASK_RECOVERY_RETRY_MS} on the clock meets each with its turn again, one after another,
 * and stops at the first the store fails for (the rest wait for the next round); a round counts
 * as one try for each task in it, and logs one line. A task is asked for
 * {@link TASK_RECOVERY_ATTEMPTS} times at most, then left unfinished for the next start. A
 * client's cancel of a task waiting here cancels its turn (that turn, by its journal id) once it
 * runs here: at once, or in a later round. The rounds stop when the server closes.
 */
class UnansweredTasks {
  readonly #parts: TaskRecoveryParts;
  readonly #waiting = new Map<string, Waiting>();
  /** Whether the rounds run (until no task waits). */
  #running = false;
  /** The tasks given up in the round under way (logged together at its end). */
  #gaveUp: GaveUp[] | undefined;

  constructor(parts: TaskRecoveryParts) {
    this.#parts = parts;
  }

  /**
   * Keeps the task for the next round (`canceled`, or canceled while it waited, when its turn is to
   * be canceled), unless it was asked for as many times as it may be. Returns `why`.
   */
  add(task: Task, agent: string, tries: number, why: Unanswered = NOT_HERE, canceled?: Canceled): Unanswered {
    const { clock, closing, logger, store } = this.#parts;
    const earlier = this.#waiting.get(task.id);
    const cancel = canceled ?? earlier?.canceled;
    if (clock === undefined || closing.aborted || tries >= TASK_RECOVERY_ATTEMPTS) {
      earlier?.unwatch();
      if (clock === undefined || closing.aborted) return why;
      const given = { taskId: task.id, canceled: cancel !== undefined };
      if (this.#gaveUp !== undefined) this.#gaveUp.push(given);
      else this.#tellGaveUp([given], why.error, { agent, tries });
      return why;
    }
    const waiting: Waiting = { task, agent, tries, canceled: cancel, unwatch: () => undefined };
    // Its client may cancel it while it waits here: its turn is canceled then, if it runs here, else in a later round.
    const stop = store.onCanceled(task.id, (saved, by) => {
      waiting.canceled = { by };
      this.#parts.notifier?.notifyStored(agent, saved);
      void cancelTurnOf(this.#parts, task, agent, waiting.canceled).then(
        (done) => {
          if (done) waiting.unwatch();
        },
        (error: unknown) => logger.warn({ err: error, taskId: task.id, agent }, CANCEL_FAILED),
      );
    });
    waiting.unwatch = () => {
      stop();
      if (this.#waiting.get(task.id) === waiting) this.#waiting.delete(task.id);
    };
    this.#waiting.set(task.id, waiting);
    // Its watcher is replaced above: no cancel is missed in between.
    earlier?.unwatch();
    this.#start();
    return why;
  }

  /** Logs, once, the tasks the start could not settle (`why`: the store's failure, else a turn not here). */
  told(why: Unanswered | undefined): void {
    if (why !== undefined && this.#waiting.size > 0) this.#log(why.store ? 'error' : 'info', why, this.#waiting.size);
  }

  /** Logs the tasks given up (`err`: why the last try failed), one line for those left unfinished, one for those canceled. */
  #tellGaveUp(gaveUp: GaveUp[], err: unknown, bindings: Record<string, unknown> = {}): void {
    for (const canceled of [false, true]) {
      const taskIds = gaveUp.filter((given) => given.canceled === canceled).map((given) => given.taskId);
      if (taskIds.length === 0) continue;
      const one = taskIds.length === 1;
      const why = canceled
        ? `${GAVE_UP_CANCELED}: ${one ? 'the task is canceled; its turn was' : 'the tasks are canceled; their turns were'} not found here to stop`
        : `${GAVE_UP}: ${one ? 'the task is' : 'the tasks are'} left unfinished for the next start`;
      this.#parts.logger.error({ err, ...bindings, tasks: taskIds.length, taskIds: taskIds.slice(0, 10) }, why);
    }
  }

  #log(level: 'error' | 'warn' | 'info', why: Unanswered, asked: number): void {
    const tasks = this.#waiting.size;
    this.#parts.logger[level](
      { err: why.error, asked, tasks, taskIds: [...this.#waiting.keys()].slice(0, 10) },
      `could not yet say what became of the turns of ${tasks} unfinished A2A task(s) (the store ${why.store ? 'could not answer' : 'says they run, not here'}); asked again in ${TASK_RECOVERY_RETRY_MS / 1000} s`,
    );
  }

  #start(): void {
    if (this.#running) return;
    this.#running = true;
    void this.#run();
  }

  async #run(): Promise<void> {
    try {
      await this.#rounds();
    } catch (error) {
      this.#parts.logger.error({ err: error }, 'could not ask again what became of the turns of unfinished A2A tasks');
    } finally {
      this.#running = false;
    }
    // A task added after the rounds found none waiting, before they ended.
    if (this.#waiting.size > 0 && !this.#parts.closing.aborted) this.#start();
  }

  async #rounds(): Promise<void> {
    const { clock, closing } = this.#parts;
    while (clock !== undefined && this.#waiting.size > 0) {
      try {
        await clock.sleep(TASK_RECOVERY_RETRY_MS, { signal: closing });
      } catch {
        for (const waiting of [...this.#waiting.values()]) waiting.unwatch();
        return; // closing
      }
      const gaveUp: GaveUp[] = [];
      this.#gaveUp = gaveUp;
      let asked = 0;
      let failed: Unanswered | undefined;
      try {
        for (const waiting of [...this.#waiting.values()]) {
          if (closing.aborted) break;
          const met = { task: waiting.task, agent: waiting.agent, tries: waiting.tries + 1 };
          // Out of reach: the rest wait for the next round where they are (this one counted).
          if (failed?.store === true) {
            waiting.tries = met.tries;
            if (met.tries < TASK_RECOVERY_ATTEMPTS) continue;
            waiting.unwatch();
            gaveUp.push({ taskId: met.task.id, canceled: waiting.canceled !== undefined });
            continue;
          }
          asked += 1;
          const recovered = await this.#meet(waiting, met);
          if (typeof recovered === 'object') failed = worse(failed, recovered);
          // Met (its own watcher, if any, registered): watched here no longer, unless canceled meanwhile.
          else if (waiting.canceled === undefined) waiting.unwatch();
        }
      } finally {
        this.#gaveUp = undefined;
      }
      if (gaveUp.length > 0) this.#tellGaveUp(gaveUp, failed?.error);
      // Stopping: nothing is asked again.
      if (failed !== undefined && this.#waiting.size > 0 && !closing.aborted) this.#log(failed.store ? 'warn' : 'info', failed, asked);
    }
  }

  /** Meets a waiting task again: with its turn, or, canceled, cancels its turn once it runs here. */
  async #meet(waiting: Waiting, met: Met): Promise<Recovered> {
    const { store } = this.#parts;
    if (waiting.canceled === undefined) {
      let task: Task | undefined;
      try {
        task = await store.load(met.task.id);
      } catch (error) {
        return this.add(met.task, met.agent, met.tries, { error, store: true });
      }
      if (task === undefined) return 'left';
      // Canceled elsewhere, or by a client before it was watched: its turn is canceled too.
      if (task.status?.state !== TaskState.TASK_STATE_CANCELED) {
        return isTerminalState(task.status?.state) ? 'settled' : recoverTask(this.#parts, this, { ...met, task, unwatch: waiting.unwatch });
      }
    }
    // Who canceled it, when a request here did.
    const by = waiting.canceled ?? { by: undefined };
    try {
      if (await cancelTurnOf(this.#parts, met.task, met.agent, by)) {
        waiting.unwatch();
        return 'settled';
      }
    } catch (error) {
      if (error instanceof StoreError) return this.add(met.task, met.agent, met.tries, { error, store: true }, by);
      // As `recoverTask` leaves a task it could not settle: asked for no more.
      waiting.unwatch();
      this.#parts.logger.error(
        { err: error, taskId: met.task.id, agent: met.agent },
        'could not stop the turn of a canceled A2A task the previous daemon left unfinished; its turn is left as it is',
      );
      return 'left';
    }
    return this.add(met.task, met.agent, met.tries, NOT_HERE, by);
  }
}

/** A task the rounds no longer ask for: `canceled` when its client canceled it, its turn to be canceled once here. */
interface GaveUp {
  taskId: string;
  canceled: boolean;
}

/** The start of the line logged when a task is no longer asked for. */
const GAVE_UP = `gave up asking what became of the turn of an unfinished A2A task after ${TASK_RECOVERY_ATTEMPTS} tries`;
/** The start of the line logged when the turn of a canceled task is no longer looked for. */
const GAVE_UP_CANCELED = `gave up looking for the turn of a canceled A2A task to stop after ${TASK_RECOVERY_ATTEMPTS} tries`;

/**
 * Shows the task as a live one is shown while its resumed turn runs here: `input-required`, with
 * the request as its status message, while a tool call of the turn waits for a human's approval,
 * and `working` again once that call has its result (approved or denied). Written as the turn
 * goes, never over the task's end.
 */
async function showApprovals(parts: TaskRecoveryParts, task: Task, agent: string, turn: KeyedTurn): Promise<void> {
  // The approval requests the turn waits on, by tool call.
  const asked = new Map<string, Message>();
  let written = Promise.resolve();
  let queued = false;
  const show = (): void => {
    if (queued) return;
    queued = true;
    // One write failed leaves the next to show the turn as it is by then.
    written = written.then(async () => {
      try {
        queued = false;
        const shown = await parts.store.update(task.id, (current) => {
          const message = [...asked.values()].at(-1);
          const state = message === undefined ? TaskState.TASK_STATE_WORKING : TaskState.TASK_STATE_INPUT_REQUIRED;
          if (current.status?.state === state && textOf(current.status.message) === textOf(message)) return false;
          current.status = { state, message, timestamp: new Date(parts.now()).toISOString() };
          if (message !== undefined) current.history = [...current.history, message];
          return true;
        });
        if (shown !== undefined) parts.notifier?.notifyStored(agent, shown);
      } catch (error) {
        parts.logger.warn({ err: error, taskId: task.id, agent }, 'could not show an A2A task waiting for an approval of its resumed turn');
      } finally {
        queued = false;
      }
    });
  };
  for await (const event of turn.follow()) {
    if (parts.closing.aborted) break;
    if (event.type === 'approval-request') asked.set(event.toolCallId, approvalMessage(task.id, task.contextId, event));
    else if (event.type !== 'tool-result' || !asked.delete(event.toolCallId)) continue;
    show();
  }
  await written;
}

/**
 * The turn the task's last message started, found as its creator (whose rights are checked), or
 * undefined when there is none: never journaled (an agent type whose steps are not, a task from
 * before turns were found so), forgotten, or its agent gone.
 */
async function turnOf(parts: TaskRecoveryParts, task: Task, agent: string): Promise<KeyedTurn | undefined> {
  const creator = asCreator(parts, task);
  const message = lastMessageOf(task);
  if (creator === undefined || message === undefined || agent === '') return undefined;
  return atTurnPlaces(
    task,
    message,
    ({ key, thread }) => creator.keyedTurn(agent, key, thread),
    // Its agent gone, or out of its creator's reach now: no turn of theirs to find.
    (error) => parts.logger.info({ err: error, taskId: task.id, agent }, 'the turn of an unfinished A2A task cannot be found'),
  );
}

/** The kernel's refusals that a task's turn is out of reach: its agent gone, or its caller not allowed. */
type OutOfReach = AgentNotFoundError | AccessDeniedError | CapabilityDeniedError;

/**
 * The first answer `at` gives (not undefined) at the places the turn of the task's message
 * `message` may be journaled: where this version journals it, else where the daemon before an
 * upgrade did. The kernel saying the turn is out of reach ({@link OutOfReach}) is told to
 * `outOfReach`, and answers undefined.
 */
async function atTurnPlaces<T>(
  task: Task,
  message: Message,
  at: (place: TaskTurnPlace) => Promise<T | undefined>,
  outOfReach: (error: OutOfReach) => void,
): Promise<T | undefined> {
  try {
    for (const place of taskTurnPlaces(task.id, message.messageId, task.contextId)) {
      const found = await at(place);
      if (found !== undefined) return found;
    }
  } catch (error) {
    if (!(error instanceof AgentNotFoundError || error instanceof AccessDeniedError || error instanceof CapabilityDeniedError)) throw error;
    outOfReach(error);
  }
  return undefined;
}

/**
 * The kernel as the task's creator (its `loomCallerKey`), in the task's conversation (see
 * `kernelOfTask`); undefined when the task names no creator Loom wrote.
 */
function asCreator(parts: TaskRecoveryParts, task: Task): TaskKernel | undefined {
  const caller = creatorOf(task);
  return caller === undefined ? undefined : kernelOfTask(parts.kernel, caller, task.contextId);
}

/** The task's creator (its `loomCallerKey`), or undefined when the task names none Loom wrote. */
function creatorOf(task: Task): Caller | undefined {
  const creator: unknown = task.metadata?.['loomCallerKey'];
  return typeof creator === 'string' ? callerOfKey(creator) : undefined;
}

/** The task's last message from its client: the one whose turn the task waits for. */
const lastMessageOf = (task: Task): Message | undefined => task.history.findLast((entry) => entry.role === Role.ROLE_USER);

/** What the recovery logs when it could not cancel the turn of a task canceled while it watched. */
const CANCEL_FAILED = 'could not cancel the resumed turn of a canceled A2A task';

/**
 * Cancels the task's turn (that turn, by its journal id: not a later task's in the same
 * conversation), if it runs here: as `canceled.by` (the caller of the request that canceled the
 * task), through the kernel, which judges whether a key may and names it at the turn's end
 * (`CallerKernel.cancelKeyedTurn`); a cancel the kernel refuses cancels nothing. An agent (its
 * creator) ends it as the task's creator, named; with no such request known, Loom ends it as the
 * task is (canceled), found as its creator, naming {@link CANCELED_BY}. Resolves whether nothing is left to cancel (canceled here, ended, none, or
 * refused): false while it runs elsewhere.
 */
async function cancelTurnOf(parts: TaskRecoveryParts, task: Task, agent: string, canceled: Canceled): Promise<boolean> {
  const { by } = canceled;
  if (by?.kind !== 'user') {
    // An agent reaches only the tasks it made: the turn is its own.
    const turn = await turnOf(parts, task, agent);
    return turn?.state !== 'running' || turn.cancel(by === undefined ? CANCELED_BY : cancellerByline(parts.kernel, by));
  }
  const creator = creatorOf(task);
  const message = lastMessageOf(task);
  if (creator === undefined || message === undefined || agent === '') return true;
  const face = kernelAs(parts.kernel, principalOfCaller(by));
  const done = await atTurnPlaces(
    task,
    message,
    async ({ key, thread }) => {
      const turn = await face.cancelKeyedTurn(agent, key, { caller: creator, thread });
      return turn === 'none' ? undefined : turn !== 'elsewhere';
    },
    // Its agent gone, or the canceller refused: nothing it may cancel.
    (error) =>
      parts.logger.warn(
        { err: error, taskId: task.id, agent },
        `the turn of a canceled A2A task is not cancelled: ${error instanceof AgentNotFoundError ? 'its agent is gone' : 'the kernel refused its canceller'}`,
      ),
  );
  return done ?? true;
}

/** How a task ends: its state, and the text of its status message (the reply, when it completed). */
interface TaskOutcome {
  state: TaskState;
  text: string;
}

/**
 * The outcome of the task of a turn (`ask`: its result), once the turn ends; unanswered when the
 * store could not say, the turn does not run here (its lease lapsed: taken over), or the server
 * closes meanwhile: the task is asked for again later, or left unfinished for the next start.
 */
async function outcomeOf(parts: TaskRecoveryParts, ask: () => Promise<TurnResult>): Promise<TaskOutcome | Unanswered> {
  let result: TurnResult;
  try {
    result = await ask();
  } catch (error) {
    if (parts.closing.aborted || error instanceof StoreError) return { error, store: true };
    // Not ended, not here: a turn only a lapsed lease gives to a node, or one still running elsewhere.
    if (isLoomError(error) && (error.code === 'TURN_RUNNING' || error.code === 'TURN_TAKEN_OVER')) return { error, store: false };
    if (isLoomError(error) && turnWasCanceled(error.code, error.details))
      return { state: TaskState.TASK_STATE_CANCELED, text: turnCanceledText(error.message) };
    return { state: TaskState.TASK_STATE_FAILED, text: isLoomError(error) ? `${error.code}: ${error.message}` : messageOf(error) };
  }
  return { state: TaskState.TASK_STATE_COMPLETED, text: result.text };
}

/**
 * Gives the task `outcome` as the executor would have (a completed task's reply as its `response`
 * artifact too), unless it ended meanwhile (its client canceled it, even between this load and
 * save: see `BoundedTaskStore.update`) or the server closed; then tells its webhooks. `unwatch`
 * stops the watch for its client's cancel in the write itself: a cancel saved before is told of by
 * that watch, this end only here.
 */
async function settle(parts: TaskRecoveryParts, stored: Task, agent: string, outcome: TaskOutcome, unwatch?: () => void): Promise<void> {
  if (parts.closing.aborted) return;
  const settled = await parts.store.update(stored.id, (task) => {
    unwatch?.();
    const message: Message = agentMessage(task.id, task.contextId, outcome.text);
    task.status = { state: outcome.state, message, timestamp: new Date(parts.now()).toISOString() };
    task.history = [...task.history, message];
    if (outcome.state === TaskState.TASK_STATE_COMPLETED) {
      const response = responseArtifact(task.id, outcome.text);
      task.artifacts = [...task.artifacts.filter((artifact) => artifact.artifactId !== response.artifactId), response];
    }
    return true;
  });
  if (settled !== undefined) parts.notifier?.notifyStored(agent, settled);
}
