/**
 * The HTTP API's shapes, as the dashboard reads them: written once in src/wire, which the daemon's
 * routes type their answers with (test/web/web-imports.test.ts keeps web/src from importing any
 * other part of the daemon).
 */
export * from '../../src/wire/views.ts';
export type { CapabilityView as Capability } from '../../src/wire/views.ts';
