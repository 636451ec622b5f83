/**
 * The sandbox process: a child of the daemon that holds forged tools' isolates, so that what V8
 * cannot give back (an isolate lost to its own out-of-memory keeps its heap and its thread until
 * the process ends) ends with this process, never the daemon's. It speaks only to its parent,
 * over the IPC channel, in the messages below; `sandbox.ts` is the other side.
 */
import type { IsolateOutcome, SandboxLimits } from './sandbox-isolate.ts';
import { compileIsolateProgram, type IsolateBridges, type IsolateProgram } from './sandbox-isolate.ts';

/** What the daemon asks of the sandbox process. */
export type SandboxRequest =
  | { type: 'compile'; program: number; code: string; limits: SandboxLimits }
  | { type: 'run'; program: number; call: number; inputJson: string; bridges: { fetch: boolean; readFile: boolean; crypto: boolean } }
  | { type: 'abort'; call: number }
  | { type: 'bridge-reply'; call: number; seq: number; reply: string }
  | { type: 'dispose'; program: number };

/** What the sandbox process tells the daemon. */
export type SandboxReply =
  | { type: 'ready' }
  | { type: 'compiled'; program: number; error?: string }
  /** The output stays JSON text (checked for size and depth): nothing here walks it, and the IPC carries one string. */
  | { type: 'outcome'; call: number; outcome: IsolateOutcome }
  | { type: 'bridge'; call: number; seq: number; name: 'fetch' | 'readFile'; payload: string }
  /** V8 lost an isolate here: the process must be replaced once its calls have ended. */
  | { type: 'lost' };

function main(): void {
  const send = (reply: SandboxReply): void => {
    process.send?.(reply);
  };
  const programs = new Map<number, IsolateProgram>();
  const aborts = new Map<number, AbortController>();
  const bridgeWaits = new Map<string, (reply: string) => void>();
  let seq = 0;

  const bridge =
    (call: number, name: 'fetch' | 'readFile') =>
    (payload: string): Promise<string> =>
      new Promise<string>((resolve) => {
        seq += 1;
        bridgeWaits.set(`${call}:${seq}`, resolve);
        send({ type: 'bridge', call, seq, name, payload });
      });

  async function handle(request: SandboxRequest): Promise<void> {
    switch (request.type) {
      case 'compile':
        try {
          programs.set(request.program, await compileIsolateProgram(request.code, request.limits, () => send({ type: 'lost' })));
          send({ type: 'compiled', program: request.program });
        } catch (error) {
          send({ type: 'compiled', program: request.program, error: error instanceof Error ? error.message : String(error) });
        }
        return;
      case 'run': {
        const program = programs.get(request.program);
        if (program === undefined) {
          send({ type: 'outcome', call: request.call, outcome: { ok: false, error: { kind: 'aborted', message: 'the tool was retired' }, durationMs: 0 } });
          return;
        }
        const controller = new AbortController();
        aborts.set(request.call, controller);
        const bridges: IsolateBridges = {};
        if (request.bridges.fetch) bridges.fetch = bridge(request.call, 'fetch');
        if (request.bridges.readFile) bridges.readFile = bridge(request.call, 'readFile');
        if (request.bridges.crypto) bridges.crypto = true;
        try {
          const outcome = await program.run(request.inputJson, { bridges, signal: controller.signal });
          send({ type: 'outcome', call: request.call, outcome });
        } finally {
          aborts.delete(request.call);
          for (const key of [...bridgeWaits.keys()]) if (key.startsWith(`${request.call}:`)) bridgeWaits.delete(key);
        }
        return;
      }
      case 'abort':
        aborts.get(request.call)?.abort();
        return;
      case 'bridge-reply': {
        const key = `${request.call}:${request.seq}`;
        bridgeWaits.get(key)?.(request.reply);
        bridgeWaits.delete(key);
        return;
      }
      case 'dispose':
        programs.get(request.program)?.dispose();
        programs.delete(request.program);
        return;
    }
  }

  process.on('message', (request: SandboxRequest) => {
    // A call that fails here fails alone: an error escaping would end the process, and every
    // other call in it.
    handle(request).catch((error: unknown) => {
      if (request.type !== 'run') return;
      try {
        send({
          type: 'outcome',
          call: request.call,
          outcome: {
            ok: false,
            error: { kind: 'thrown', message: `the sandbox process could not finish the call: ${error instanceof Error ? error.message : String(error)}` },
            durationMs: 0,
          },
        });
      } catch {
        // The daemon's own time limit ends the call.
      }
    });
  });
  // The daemon is gone (stopped, or killed): so is everything here. Not a normal exit, which
  // would wait for an isolate V8 has lost, for ever.
  process.on('disconnect', () => process.kill(process.pid, 'SIGKILL'));
  send({ type: 'ready' });
}

main();
