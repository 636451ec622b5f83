/** Generates identifiers. Injected so that tests can make ids predictable. */
export interface IdGenerator {
  /** A new UUID v4. */
  uuid(): string;
}
