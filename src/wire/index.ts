/**
 * The shapes Loom's HTTP API sends and reads, written once: the daemon's routes, the CLI and the
 * dashboard (web/src) import them from here. Dependency-free: nothing here imports anything but
 * this folder's own files (no zod, no node:), so the browser bundle can take it whole.
 */
export type { AgentDetailView, AgentSkillsView, AgentState, AgentView, CannotRunView, CapabilityView, ScheduleMode, ScheduleRunView, UsageBucketView, UsageRow, UsageSeriesView, UsageToday } from './agents.ts';
export { AUDIT_KINDS, AUDIT_OUTCOMES, isPackageEvent, PACKAGE_EVENT_TYPES } from './audit.ts';
export type { AuditKind, AuditOutcome, AuditRecord, KernelEvent, PackageEventType, PackageNotifyRecord } from './audit.ts';
export type { ChannelState, ChannelView, PairingView } from './channels.ts';
export type { ErrorBody } from './errors.ts';
export type { ManifestIssue, ManifestValidation } from './manifests.ts';
export type { ActivityRunView, BindingView, PackageRunStatus, PackageRunView, PackageTrigger, PackageView } from './packages.ts';
export type { ApprovalView, ForgedToolView, McpServerView, PromotionView } from './tools.ts';
export type { AgentEvent, CancelledTurnView, ChatSessionView, RunningTurnView, SessionSummary, SessionView, TraceStep, TurnRecord, TurnStatus, TurnView } from './turns.ts';
