/**
 * The contracts every subsystem is written against. This module depends on nothing;
 * implementations depend on it.
 */
export type { Capability } from './capability.ts';
export type { ClaimedJob, ClusterNodeView, ClusterReader, ClusterView, JobCounts, JobHandler, JobKind, JobRequest, Leadership, WorkQueue } from './cluster.ts';
export type { Clock } from './clock.ts';
export type { IdGenerator } from './id-generator.ts';
export type { JsonObject, JsonValue } from './json.ts';
export type { LogBindings, Logger } from './logger.ts';
export type {
  ActivityRunRecord,
  AgentRecord,
  ApprovalRecord,
  ApprovalRepository,
  A2aPushConfigRecord,
  A2aPushConfigRepository,
  ApprovalStatus,
  AgentRepository,
  AgentState,
  EventQuery,
  EventRecord,
  EventRepository,
  MemoryRecord,
  MemoryRepository,
  InstalledPackageRecord,
  InstalledSkillText,
  InstalledPackageRepository,
  PackageRunRecord,
  PackageRunRepository,
  PackageRunStart,
  ScheduleRunOutcome,
  ScheduleRunRecord,
  ScheduleRunRepository,
  SessionRecord,
  SessionRepository,
  SessionWriteOptions,
  Store,
  NumberedTurnStep,
  TurnJournalClose,
  TurnJournalHead,
  TurnJournalOpen,
  TurnJournalRecord,
  TurnJournalRepository,
  TurnStepRecord,
  TaskQuery,
  TaskRecord,
  TaskRepository,
  UsageRecord,
  UsageRepository,
  WorkflowRecord,
  ChannelMessageClaim,
  ChannelMessageRecord,
  ChannelMessageStatus,
  ChannelPairingRecord,
  ChannelRepository,
  ForgedToolRecord,
  ForgedToolRepository,
  ForgedToolStatus,
  ForgedToolTier,
  WorkflowRepository,
  WorkflowState,
  WorkflowTaskRecord,
  UsageBucket,
  UsageTotals,
} from './store.ts';
export type { KernelHandle, MemoryEntry, PersonAnswer, PersonQuestion, Tool, ToolAgent, ToolBox, ToolContext, ToolResult } from './tool.ts';
export type { LogEntry, LogReader } from './log-reader.ts';
export type { Principal, PrincipalRole } from './principal.ts';
export { principalKey } from './principal.ts';
