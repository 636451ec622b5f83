/** The `loom` command line. */
export { buildProgram, EXIT, main } from './main.ts';
export type { CliIo } from './cli-io.ts';
export { LOOM_VERSION } from '../config/installation.ts';
