import { matchesPattern } from '../capabilities/index.ts';
import type { Principal, PrincipalRole } from '../contracts/index.ts';
import { LOCAL_PRINCIPAL_NAME } from '../config/index.ts';
import { AccessDeniedError } from '../errors/index.ts';
import type { Caller } from './agent-runtime.ts';

/** Who may do an action: the roles that may, and whether the agent it acts on must be in the principal's reach. */
interface Rule {
  roles: readonly PrincipalRole[];
  /** The agent (or package, named by its agent) must match a `user`'s agent patterns. */
  reach: boolean;
  /** Why the roles are so few, where it is not plain. */
  why?: string;
  /** A principal whose `approves` patterns match the agent acted on may too, whatever its role (a channel's approvers). */
  approvers?: boolean;
}

const EVERYONE: readonly PrincipalRole[] = ['owner', 'user', 'viewer'];
const SPEAKERS: readonly PrincipalRole[] = ['user', 'owner'];
const OWNERS: readonly PrincipalRole[] = ['owner'];
const WHOLE_VIEW: readonly PrincipalRole[] = ['viewer', 'owner'];
/** Why a `user` key does not see what the whole installation holds. */
const NOT_ITS_AGENTS = 'that shows the whole installation, not its agents';

/**
 * What a person may ask of Loom, written once: every door (HTTP, the CLI against a daemon or in
 * process, MCP, A2A, `/v1`, channels) asks here through `CallerKernel`, never decides itself.
 * Each key is the action as a refusal names it ("a viewer key ("ci") may not send messages").
 */
export const AUTHORITY = {
  'read agents': { roles: EVERYONE, reach: true },
  'spawn agents': { roles: OWNERS, reach: false },
  'update agents': { roles: OWNERS, reach: false },
  'kill agents': { roles: OWNERS, reach: false },
  'suspend agents': { roles: OWNERS, reach: false },
  'resume agents': { roles: OWNERS, reach: false },
  'send messages': { roles: SPEAKERS, reach: true },
  'cancel turns': { roles: SPEAKERS, reach: true },
  'steer workflows': { roles: SPEAKERS, reach: true },
  'reset sessions': { roles: OWNERS, reach: false },
  // Scheduled wake-ups are history like the audit log's; forcing one is as sending a message.
  'read schedule runs': { roles: EVERYONE, reach: true },
  'force wake-ups': { roles: SPEAKERS, reach: true },
  // And a channel's approvers, for the channel's agent (`Principal.approves`).
  'approve tool calls': { roles: OWNERS, reach: false, approvers: true },
  'deny tool calls': { roles: OWNERS, reach: false, approvers: true },
  'forge tools': { roles: OWNERS, reach: false },
  'import tools': { roles: OWNERS, reach: false },
  'promote forged tools': { roles: OWNERS, reach: false },
  'demote forged tools': { roles: OWNERS, reach: false },
  'read packages': { roles: EVERYONE, reach: true },
  'run package bindings': { roles: SPEAKERS, reach: true },
  'check packages for install': { roles: OWNERS, reach: false },
  'install packages': { roles: OWNERS, reach: false },
  'uninstall packages': { roles: OWNERS, reach: false },
  'list channels and their pairing codes': { roles: OWNERS, reach: false },
  'approve a pairing': { roles: OWNERS, reach: false },
  'list the MCP servers': { roles: WHOLE_VIEW, reach: false, why: NOT_ITS_AGENTS },
  'reconnect MCP servers': { roles: OWNERS, reach: false },
  'list the external A2A agents': { roles: WHOLE_VIEW, reach: false, why: NOT_ITS_AGENTS },
  "read the cluster's nodes": { roles: WHOLE_VIEW, reach: false, why: NOT_ITS_AGENTS },
  // Whether a manifest could run asks the daemon's environment (which keys are set) and knocks on
  // the model server it names: the owner's to ask.
  'probe model servers': { roles: OWNERS, reach: false },
  // The daemon's counters name every agent and model: the owner's, unless [telemetry].metrics_public.
  'read the metrics': {
    roles: OWNERS,
    reach: false,
    why: 'they name every agent and model (set [telemetry].metrics_public = true in config.toml to serve them to any client)',
  },
  // Tasks are kept per creator: the owner reads every one, any other key those it created.
  'read every A2A task': { roles: OWNERS, reach: false },
  // The `[mcp_server]` principal's own tools reach beyond any one agent.
  "call the installation's own MCP tools": { roles: OWNERS, reach: false },
} as const satisfies Record<string, Rule>;

/** An action a principal may be allowed or refused. */
export type Action = keyof typeof AUTHORITY;

/** Whether `principal` reaches the agent named `name`: owners and viewers every agent, a `user` those its patterns match. */
export function reachesAgent(principal: Principal, name: string): boolean {
  return principal.role !== 'user' || principal.agents.some((pattern) => matchesPattern(pattern, name));
}

/** Whether `principal` decides the tool calls of the agent named `name` whatever its role (a channel's approvers). */
function approvesFor(principal: Principal, name: string): boolean {
  return principal.approves?.some((pattern) => matchesPattern(pattern, name)) === true;
}

/** The roles of a rule as a refusal names them: "the owner role", "the user or owner role". */
function rolesText(roles: readonly PrincipalRole[]): string {
  return `the ${roles.join(' or ')} role`;
}

/**
 * Why `principal` may not do `action` (on the agent or package `target`), or undefined when it may.
 * The role is judged first, then the reach.
 */
export function refusalOf(principal: Principal, action: Action, target?: { kind: 'agent' | 'package'; name: string }): string | undefined {
  const rule: Rule = AUTHORITY[action];
  if (rule.approvers === true && target?.kind === 'agent' && approvesFor(principal, target.name)) return undefined;
  if (!rule.roles.includes(principal.role)) {
    if (rule.approvers === true && (principal.approves?.length ?? 0) > 0) {
      const patterns = principal.approves?.map((pattern) => `"${pattern}"`).join(', ') ?? '';
      return `"${principal.name}" may not ${action} ${target === undefined ? 'that are not waiting' : `of agent "${target.name}"`}: it decides only the waiting ones of the agents ${patterns}`;
    }
    return `a ${principal.role} key ("${principal.name}") may not ${action}${rule.why === undefined ? '' : `: ${rule.why}`}; it needs ${rolesText(rule.roles)}`;
  }
  if (rule.reach && target !== undefined && !reachesAgent(principal, target.name)) {
    return target.kind === 'agent'
      ? `the key "${principal.name}" may not reach agent "${target.name}"; its [[auth.keys]].agents patterns do not match it`
      : `the key "${principal.name}" may not reach package "${target.name}"; its [[auth.keys]].agents patterns do not match its agent`;
  }
  return undefined;
}

/**
 * Refuses `principal` an action it may not do, naming the action, the key and what it needs.
 * @throws {AccessDeniedError}
 */
export function requireAllowed(principal: Principal, action: Action, target?: { kind: 'agent' | 'package'; name: string }): void {
  const refusal = refusalOf(principal, action, target);
  if (refusal !== undefined) throw new AccessDeniedError(refusal);
}

/** The kernel caller a person is: the one place a principal becomes what the message flow checks. */
export function callerOf(principal: Principal): Caller {
  return { kind: 'user', role: principal.role, name: principal.name, agents: principal.agents };
}

/** The person a kernel caller is (`local`, the owner, when it names nobody; every agent when it names no patterns). */
export function principalOfCaller(caller: Caller & { kind: 'user' }): Principal {
  return { name: caller.name ?? LOCAL_PRINCIPAL_NAME, role: caller.role, agents: caller.agents ?? ['*'] };
}
