/**
 * The shapes Loom's HTTP API sends, dependency-free: the files re-exported here import nothing but
 * each other (no zod, no node:), so the dashboard's bundle takes them whole (web/src/types.ts).
 * The route table and the request schemas (zod) are exported by index.ts beside these.
 */
export type {
  AgentDetailView,
  AgentSkillsView,
  AgentState,
  AgentView,
  CannotRunView,
  CapabilityView,
  ScheduleMode,
  ScheduleRunView,
  UsageBucketView,
  UsageRow,
  UsageSeriesView,
  UsageToday,
} from './agents.ts';
export { AUDIT_KINDS, AUDIT_OUTCOMES, isPackageEvent, PACKAGE_EVENT_TYPES } from './audit.ts';
export type { AuditKind, AuditOutcome, AuditRecord, KernelEvent, PackageEventType, PackageNotifyRecord } from './audit.ts';
export type { ChannelState, ChannelView, PairingView } from './channels.ts';
export type { ErrorBody } from './errors.ts';
export type { ManifestIssue, ManifestValidation } from './manifests.ts';
export type { ActivityRunView, BindingView, PackageRunStatus, PackageRunView, PackageTrigger, PackageView } from './packages.ts';
export type { ApprovalView, ForgedToolView, McpServerView, PromotionView } from './tools.ts';
export type {
  AgentEvent,
  CancelledTurnView,
  ChatSessionView,
  RunningTurnView,
  SessionSummary,
  SessionView,
  TraceStep,
  TurnRecord,
  TurnStatus,
  TurnView,
} from './turns.ts';
