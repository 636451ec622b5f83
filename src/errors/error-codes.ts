/**
 * What kind of failure a code names, whatever the fault: a request `refused` before it ran (who
 * may ask, a quota, the agent's state), input that is `invalid`, something `not-found`, a
 * `conflict` with the state of things, work `stopped` partway, a request `too-large` or in an
 * `unsupported` form, a `third-party` that failed (a model, an MCP server, a peer), Loom
 * `unavailable` or past its time, or an `internal` failure.
 */
export type ErrorKind = 'refused' | 'invalid' | 'not-found' | 'conflict' | 'stopped' | 'too-large' | 'unsupported' | 'third-party' | 'unavailable' | 'internal';

/** One error code's entry: the HTTP status it is answered with, and its kind. */
export interface ErrorCodeEntry {
  readonly status: number;
  readonly kind: ErrorKind;
}

/**
 * Every code a Loom error carries, with the HTTP status `toErrorResponse` answers it with and its
 * kind: the one list the HTTP mapping and the turn audit's refusals derive from. A code thrown in
 * src/ but missing here fails test/errors/error-codes.test.ts.
 */
export const ERROR_CODES = {
  // Refused before anything ran: who may ask, a quota, the agent's state.
  UNAUTHORIZED: { status: 401, kind: 'refused' },
  ACCESS_DENIED: { status: 403, kind: 'refused' },
  HOST_NOT_ALLOWED: { status: 403, kind: 'refused' },
  ORIGIN_NOT_ALLOWED: { status: 403, kind: 'refused' },
  CAPABILITY_DENIED: { status: 403, kind: 'refused' },
  CAPABILITY_ESCALATION: { status: 403, kind: 'refused' },
  AGENT_CHAIN: { status: 400, kind: 'refused' },
  AGENT_STATE: { status: 409, kind: 'refused' },
  QUOTA_EXCEEDED: { status: 429, kind: 'refused' },
  RATE_LIMITED: { status: 429, kind: 'refused' },
  MODULE_UNAVAILABLE: { status: 503, kind: 'refused' },
  // Input that does not hold.
  DELEGATION_REFUSED: { status: 400, kind: 'invalid' },
  NET_ADDRESS_REFUSED: { status: 400, kind: 'invalid' },
  PUSH_WEBHOOK_REFUSED: { status: 400, kind: 'invalid' },
  INVALID_REQUEST: { status: 400, kind: 'invalid' },
  MANIFEST_INVALID: { status: 400, kind: 'invalid' },
  CONFIG_INVALID: { status: 400, kind: 'invalid' },
  USAGE: { status: 400, kind: 'invalid' },
  PACKAGE_INVALID: { status: 400, kind: 'invalid' },
  INVALID_ANSWER: { status: 400, kind: 'invalid' },
  TOOL_INPUT_INVALID: { status: 400, kind: 'invalid' },
  MODEL_CONFIG_INVALID: { status: 400, kind: 'invalid' },
  MODEL_API_KEY_MISSING: { status: 400, kind: 'invalid' },
  MODEL_SCRIPT_INVALID: { status: 400, kind: 'invalid' },
  AGENT_RENAME: { status: 400, kind: 'invalid' },
  NO_MANAGED_AGENT: { status: 400, kind: 'invalid' },
  FORGE_REFUSED: { status: 422, kind: 'invalid' },
  // Nothing by that name or id.
  AGENT_NOT_FOUND: { status: 404, kind: 'not-found' },
  APPROVAL_NOT_FOUND: { status: 404, kind: 'not-found' },
  STORE_NOT_FOUND: { status: 404, kind: 'not-found' },
  ROUTE_NOT_FOUND: { status: 404, kind: 'not-found' },
  WORKFLOW_NOT_FOUND: { status: 404, kind: 'not-found' },
  MCP_SERVER_NOT_FOUND: { status: 404, kind: 'not-found' },
  PACKAGE_NOT_FOUND: { status: 404, kind: 'not-found' },
  PACKAGE_NOT_INSTALLED: { status: 400, kind: 'not-found' },
  PACKAGE_RUN_NOT_FOUND: { status: 500, kind: 'not-found' },
  BINDING_NOT_FOUND: { status: 404, kind: 'not-found' },
  FORGED_TOOL_NOT_FOUND: { status: 404, kind: 'not-found' },
  SESSION_NOT_FOUND: { status: 404, kind: 'not-found' },
  TASK_NOT_FOUND: { status: 404, kind: 'not-found' },
  // At odds with the state of things.
  MCP_SERVER_REFUSED: { status: 409, kind: 'conflict' },
  PACKAGE_INSTALLED: { status: 409, kind: 'conflict' },
  PACKAGE_IN_USE: { status: 409, kind: 'conflict' },
  PACKAGE_CHANGED: { status: 409, kind: 'conflict' },
  PACKAGE_INACTIVE: { status: 409, kind: 'conflict' },
  BINDING_BUSY: { status: 409, kind: 'conflict' },
  FORGED_TOOL_INACTIVE: { status: 409, kind: 'conflict' },
  AGENT_NAME_TAKEN: { status: 409, kind: 'conflict' },
  STORE_CONFLICT: { status: 409, kind: 'conflict' },
  AGENT_NOT_SCHEDULED: { status: 409, kind: 'conflict' },
  APPROVAL_DECIDED: { status: 409, kind: 'conflict' },
  APPROVAL_ELSEWHERE: { status: 409, kind: 'conflict' },
  TURN_NOT_RUNNING: { status: 409, kind: 'conflict' },
  TURN_RUNNING: { status: 400, kind: 'conflict' },
  TURN_TAKEN_OVER: { status: 409, kind: 'conflict' },
  TURN_ELSEWHERE: { status: 409, kind: 'conflict' },
  TASK_NOT_CANCELABLE: { status: 409, kind: 'conflict' },
  DAEMON_RUNNING: { status: 400, kind: 'conflict' },
  PORT_IN_USE: { status: 400, kind: 'conflict' },
  // Work stopped partway; what it did is kept.
  TURN_CANCELLED: { status: 409, kind: 'stopped' },
  TOKEN_BUDGET_EXCEEDED: { status: 400, kind: 'stopped' },
  TURN_INTERRUPTED: { status: 500, kind: 'stopped' },
  // A request too large, or in a form Loom does not take.
  BODY_TOO_LARGE: { status: 413, kind: 'too-large' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, kind: 'unsupported' },
  // A model, an MCP server, a peer agent or a web server failed.
  MODEL_CALL_FAILED: { status: 502, kind: 'third-party' },
  MODEL_EMPTY_REPLY: { status: 500, kind: 'third-party' },
  CODE_MODULE_FAILED: { status: 502, kind: 'third-party' },
  STRUCTURED_OUTPUT_INVALID: { status: 500, kind: 'third-party' },
  JUDGE_NO_VERDICT: { status: 500, kind: 'third-party' },
  PLAN_INVALID: { status: 500, kind: 'third-party' },
  DELEGATE_SELECTION_INVALID: { status: 500, kind: 'third-party' },
  DELEGATION_TIMEOUT: { status: 500, kind: 'third-party' },
  DELEGATION_FAILED: { status: 500, kind: 'third-party' },
  SCHEMA_REFUSED: { status: 500, kind: 'third-party' },
  WEB_REQUEST_FAILED: { status: 500, kind: 'third-party' },
  MCP_MESSAGE_TOO_LARGE: { status: 500, kind: 'third-party' },
  // Loom cannot take the request now, or ran out of time.
  CHANNEL_STOPPED: { status: 503, kind: 'unavailable' },
  REQUEST_TIMEOUT: { status: 504, kind: 'unavailable' },
  MCP_LOGIN_REQUIRED: { status: 400, kind: 'unavailable' },
  LOOM_STOPPING: { status: 500, kind: 'unavailable' },
  APPROVALS_STOPPED: { status: 500, kind: 'unavailable' },
  DAEMON_UNREACHABLE: { status: 500, kind: 'unavailable' },
  // Loom or its machine failed.
  INTERNAL: { status: 500, kind: 'internal' },
  STORE_FAILURE: { status: 500, kind: 'internal' },
  TURN_FAILED: { status: 500, kind: 'internal' },
  CANNOT_LISTEN: { status: 400, kind: 'internal' },
  DAEMON_START_FAILED: { status: 500, kind: 'internal' },
  DAEMON_STOP_FAILED: { status: 500, kind: 'internal' },
  DOCTOR_FAILED: { status: 500, kind: 'internal' },
} as const satisfies Record<string, ErrorCodeEntry>;

/** A registered error code. */
export type ErrorCode = keyof typeof ERROR_CODES;

/** Whether `code` is in {@link ERROR_CODES}. */
export function isErrorCode(code: string): code is ErrorCode {
  return Object.hasOwn(ERROR_CODES, code);
}

/** The codes of one kind, e.g. `codesOfKind('refused')`: the errors that refuse a turn before it runs. */
export function codesOfKind(kind: ErrorKind): ReadonlySet<ErrorCode> {
  return new Set((Object.keys(ERROR_CODES) as ErrorCode[]).filter((code) => ERROR_CODES[code].kind === kind));
}
