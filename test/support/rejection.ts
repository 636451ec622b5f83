import { expect } from 'vitest';

/** The message of the error `promise` rejects with, checked to be a `type` (the test fails when it resolves). */
export async function rejectionMessage(promise: Promise<unknown>, type: abstract new (...args: never[]) => Error = Error): Promise<string> {
  const error: unknown = await promise.then(
    () => undefined,
    (reason: unknown) => reason,
  );
  expect(error).toBeInstanceOf(type);
  return (error as Error).message;
}
