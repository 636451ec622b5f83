import { AgentChainError } from '../errors/index.ts';
import { linkAbort } from '../runtime/index.ts';

interface RunningTurns {
  /** The tail of this agent's queue. */
  tail: Promise<unknown>;
  /** Turns running or waiting, to abort when the agent is killed or suspended. */
  controllers: Set<AbortController>;
  /** Each of those turns, settled (never rejected) when it ends: what `idle` waits for. */
  ends: Set<Promise<void>>;
}

/**
 * Runs one agent's turns one at a time, lets the kernel abort them (kill, suspend), and refuses
 * an agent-to-agent message that would wait on a turn that waits on it (a deadlock).
 */
export class AgentTurns {
  readonly #agents = new Map<string, RunningTurns>();
  /** Which agent each busy agent's turn is waiting on, through `agent_message`. */
  readonly #waitingOn = new Map<string, string>();

  /**
   * Queues `turn` behind the agent's running turns and runs it with a signal that aborts when
   * `signal` does or the agent's turns are aborted. A turn whose signal aborts while it waits
   * in the queue never starts.
   */
  async run<T>(agentId: string, signal: AbortSignal | undefined, turn: (signal: AbortSignal) => Promise<T>): Promise<T> {
    let state = this.#agents.get(agentId);
    if (state === undefined) {
      state = { tail: Promise.resolve(), controllers: new Set(), ends: new Set() };
      this.#agents.set(agentId, state);
    }
    const controller = new AbortController();
    const unlink = linkAbort(signal, controller);
    const combined = controller.signal;
    // With nothing running or queued, the turn starts at once: there is nothing to wait for.
    const queued = state.controllers.size > 0;
    state.controllers.add(controller);
    const previous = state.tail;
    const run = (async (): Promise<T> => {
      if (queued) await Promise.race([previous.catch(() => undefined), aborted(combined)]);
      combined.throwIfAborted();
      return turn(combined);
    })();
    state.tail = run.catch(() => undefined);
    const ended = run.then(
      () => undefined,
      () => undefined,
    );
    state.ends.add(ended);
    try {
      return await run;
    } finally {
      unlink();
      state.controllers.delete(controller);
      state.ends.delete(ended);
      if (state.controllers.size === 0 && this.#agents.get(agentId) === state) this.#agents.delete(agentId);
    }
  }

  /** Aborts the agent's running and queued turns. */
  abort(agentId: string, reason: Error): void {
    for (const controller of this.#agents.get(agentId)?.controllers ?? []) controller.abort(reason);
  }

  /**
   * Resolves once no agent has a turn running or queued. It waits for every turn, not for the queue's
   * tail: a turn queued behind a running one and aborted while it waits settles the tail first, and
   * waiting for a settled tail again and again would run on microtasks alone, so that the running
   * turn's timers and I/O never came.
   */
  async idle(): Promise<void> {
    while (this.#agents.size > 0) await Promise.all([...this.#agents.values()].flatMap((state) => [...state.ends]));
  }

  /** Whether the agent has a turn running or queued. */
  isBusy(agentId: string): boolean {
    return this.#agents.has(agentId);
  }

  /**
   * Marks `from`'s turn as waiting on `to` while `wait` runs.
   * @throws {AgentChainError} when `to` is (transitively) waiting on `from`: waiting would deadlock.
   */
  async waitOn<T>(from: string, to: string, names: (id: string) => string, wait: () => Promise<T>): Promise<T> {
    const cycle: string[] = [to];
    for (let current = this.#waitingOn.get(to); current !== undefined; current = this.#waitingOn.get(current)) {
      cycle.push(current);
      if (current === from) {
        throw new AgentChainError(
          `cannot message "${names(to)}": it is waiting on "${names(from)}" (${[from, ...cycle].map(names).join(' → ')}), so both would wait forever`,
        );
      }
      if (cycle.length > 64) break;
    }
    this.#waitingOn.set(from, to);
    try {
      return await wait();
    } finally {
      if (this.#waitingOn.get(from) === to) this.#waitingOn.delete(from);
    }
  }
}

function aborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve();
    else signal.addEventListener('abort', () => resolve(), { once: true });
  });
}
