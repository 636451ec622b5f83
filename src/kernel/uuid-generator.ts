import { randomUUID } from 'node:crypto';
import type { IdGenerator } from '../contracts/index.ts';

/** Random UUID v4 ids from the platform's secure generator. */
export function createUuidGenerator(): IdGenerator {
  return { uuid: () => randomUUID() };
}
