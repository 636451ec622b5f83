/** The `loom` command line. */
export { buildProgram, main } from './main.ts';
export { LOOM_VERSION } from '../config/installation.ts';
