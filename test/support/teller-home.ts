import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { expect } from 'vitest';
import { runCli } from './run-cli.ts';
import { TEST_KEYS } from './test-host.ts';

/** A Loom home in `dir` (`<dir>/home`) holding the agent "teller", whose model is the scripted server at `modelUrl`. Returns the home. */
export async function tellerHome(dir: string, modelUrl: string): Promise<string> {
  const home = join(dir, 'home');
  const manifest = join(dir, 'teller.toml');
  await writeFile(manifest, `name = "teller"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${modelUrl}"\n`);
  expect((await runCli(home, ['agent', 'spawn', manifest], { env: TEST_KEYS })).code).toBe(0);
  return home;
}

/** A promise a scripted reply stalls on (`stall: held`) until `release` is called. */
export function heldReply(): { held: Promise<void>; release: () => void } {
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  return { held, release };
}
