/**
 * How many times the agent loop may ask the model to continue a reply that stopped at its
 * output-token limit before it gives up, so a model cannot trap the loop in endless
 * "Please continue" rounds.
 */
export const MAX_CONTINUATIONS = 3;

/**
 * How long a single tool execution may run, in milliseconds, before it is aborted and the
 * model receives a timeout error instead of the loop hanging.
 */
export const DEFAULT_TOOL_TIMEOUT_MS = 60_000;
