/** The composition root: a kernel with its Node edges, for the CLI and the daemon. */
export { openHost, packageEnvironment } from './open-host.ts';
export type { Host, HostOptions } from './open-host.ts';
