import { StoreError } from './store-error.ts';

/** The store was asked something after it closed (the process stops): a `STORE_FAILURE` as any other. */
export class StoreClosedError extends StoreError {}
