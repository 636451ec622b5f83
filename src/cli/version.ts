import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/** Loom's version, from package.json. */
export const LOOM_VERSION: string = (require('../../package.json') as { version: string }).version;
