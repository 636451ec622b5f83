import type * as AiSdk from 'ai';

let loaded: Promise<typeof AiSdk> | undefined;

/**
 * The AI SDK, loaded with the first turn (a daemon that runs none never holds it) and kept: a
 * dynamic `import()` at every turn costs a module resolution each time.
 */
export function loadAi(): Promise<typeof AiSdk> {
  loaded ??= import('ai');
  return loaded;
}
