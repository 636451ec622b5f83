/**
 * The shapes Loom's HTTP API sends and reads, written once: the daemon's routes, the CLI, the MCP
 * server's directory and the dashboard (web/src) import them from here. The views (views.ts)
 * import nothing; the route table (routes.ts) and the request bodies (requests.ts) import zod
 * only. The dashboard takes the views' values and only the types of the rest, so zod stays out
 * of its bundle.
 */
export * from './views.ts';
export { apiClient, pathOf, wireRoute } from './api-client.ts';
export { answeredMethod, isEventStream } from './http-rules.ts';
export type { ApiClient, ApiRequestInit, CallArgs, CallInput, WireRoute } from './api-client.ts';
export {
  ApprovalDecisionBodySchema,
  ApprovalsQuerySchema,
  APPROVAL_STATUS_FILTERS,
  DemoteBodySchema,
  ForgeBodySchema,
  ForgedToolsQuerySchema,
  ImportBodySchema,
  InstallBodySchema,
  MessageBodySchema,
  PackageRunsQuerySchema,
  RunBodySchema,
  RunsOfPackageQuerySchema,
  ScheduleRunsQuerySchema,
  SessionQuerySchema,
  SkillInstallBodySchema,
  SpawnQuerySchema,
  TurnQuerySchema,
  UsageQuerySchema,
  UsageSeriesQuerySchema,
  UsageTodayQuerySchema,
} from './requests.ts';
export type { ApprovalStatusFilter, UsageRangeName } from './requests.ts';
export { API_TAGS } from './route-spec.ts';
export type { AnswerOf, ApiHeader, ApiRoute, BodyOf, Param, QueryOf, RequestBody } from './route-spec.ts';
export { API } from './routes.ts';
export { EVENT_TYPES, eventTypeProblem, RENAMED_EVENT_TYPES } from './event-types.ts';
export type { EventType } from './event-types.ts';
