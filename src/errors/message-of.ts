/** What went wrong, as one line for a message: an error's own message, or anything else as text. */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
