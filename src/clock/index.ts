/** Clocks: the system clock, and a fake one for tests. */
export { createFakeClock } from './fake-clock.ts';
export type { FakeClock } from './fake-clock.ts';
export { createSystemClock } from './system-clock.ts';
