import type { ChannelView } from '../channels/index.ts';
import type { AgentState, ScheduleRunOutcome } from '../contracts/index.ts';
import type { ForgedToolView, PromotionResult } from '../forged-tools/index.ts';
import type { AgentDetailView, AgentView, TurnView } from '../kernel/index.ts';
import type { ManifestFormat, ManifestIssue } from '../manifest/index.ts';
import type { PackageRunView } from '../packages/index.ts';
import type { AgentEvent } from '../runtime/index.ts';
import type * as wire from '../wire/index.ts';
import type { ApprovalView } from './approval-routes.ts';
import type { McpServerView } from './mcp-servers-view.ts';

/** An agent event as the turn routes stream it: a finished run carries its turn view, not the runtime's result. */
type StreamedAgentEvent = Exclude<AgentEvent, { type: 'run-finish' }> | { type: 'run-finish'; result: TurnView };

/** Compiles only when `Server` (what the daemon sends) can be sent as `Wire` (what src/wire says clients read). */
type Sends<Server extends Wire, Wire> = [Server, Wire];

/** `true` when `A` and `B` are the same union of words (a state added on one side makes it `false`). */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;

/** Compiles only when given `true`. */
type Holds<T extends true> = T;

/**
 * Type-level checks, never called, for the views the daemon builds with types of its own (most
 * views are src/wire's types themselves): each can be sent as the wire type the dashboard and the
 * CLI read, so a field renamed, dropped or retyped on either side, or a state one side has and the
 * other does not, fails `npm run typecheck`. (The routes type their answers with `satisfies`
 * against the same wire types.)
 */
export type WireConformance = [
  Holds<Same<AgentState, wire.AgentState>>,
  Holds<Same<ScheduleRunOutcome, wire.ScheduleRunView['outcome']>>,
  Holds<Same<AgentView['schedule'], wire.ScheduleMode>>,
  Holds<Same<ChannelView['state'], wire.ChannelState>>,
  Holds<Same<ManifestFormat, wire.ManifestValidation['format']>>,
  Sends<ManifestIssue, wire.ManifestIssue>,
  Sends<AgentView, wire.AgentView>,
  Sends<AgentDetailView, wire.AgentDetailView>,
  Sends<StreamedAgentEvent, wire.AgentEvent>,
  Sends<ChannelView, wire.ChannelView>,
  Sends<McpServerView, wire.McpServerView>,
  Sends<ApprovalView, wire.ApprovalView>,
  Sends<PackageRunView, wire.PackageRunView>,
  Sends<ForgedToolView, wire.ForgedToolView>,
  Sends<PromotionResult, wire.PromotionView>,
];
