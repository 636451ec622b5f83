import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import asc from 'assemblyscript/asc';

/** The repository's root, where the AssemblyScript sources live. */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/**
 * Compiles an AssemblyScript source of the repository (`entry`, relative to its root) into
 * `outFile`, as its header says to build it: the stub runtime, no `env.abort` import.
 */
export async function buildWasm(entry: string, outFile: string): Promise<string> {
  let stderr = '';
  const collect = { write: (chunk: Uint8Array | string) => void (stderr += typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8')) };
  const result = await asc.main([join(ROOT, entry), '-o', outFile, '--runtime', 'stub', '--use', 'abort='], { stderr: collect, stdout: collect });
  if (result.error !== null) throw new Error(`asc could not build ${entry}: ${result.error.message}\n${stderr}`);
  return outFile;
}
