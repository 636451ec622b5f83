import { afterAll, beforeAll, beforeEach } from 'vitest';
import { type ScriptedModelServer, startScriptedModelServer } from './scripted-model-server.ts';

/**
 * Starts one scripted model server for a test file (closed after it) and resets it before each
 * test. Returns a handle that is valid once the tests run.
 */
export function useScriptedModelServer(): ScriptedModelServer {
  let current: ScriptedModelServer | undefined;
  const server = (): ScriptedModelServer => {
    if (current === undefined) throw new Error('the scripted model server is used before the tests start');
    return current;
  };
  beforeAll(async () => {
    current = await startScriptedModelServer();
  });
  afterAll(async () => {
    await current?.close();
  });
  beforeEach(() => {
    server().reset();
  });
  return {
    get url() {
      return server().url;
    },
    get requests() {
      return server().requests;
    },
    script: (steps) => server().script(steps),
    remaining: () => server().remaining(),
    reset: () => server().reset(),
    close: () => server().close(),
  };
}
