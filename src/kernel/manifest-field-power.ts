import type { Manifest } from '../manifest/index.ts';

/**
 * What a manifest empowers is more than its `[capabilities]`: everything inside its workspace
 * needs no grant, `[exec_policy]` and the tool lists take tools away, `[model]` decides which
 * secret goes to which host, `[autonomous]` puts calls before a person, `[resources]` and
 * `[schedule]` decide how much it may spend and how often it acts unasked, and `module` decides
 * what code runs. `confineChild` is the one definition of "a child never exceeds its parent"
 * over all of that. Each field is one of three sorts:
 *
 * - **widening** (capabilities, workspace, models and their keys and URLs, module, schedule,
 *   tool settings): the child's must lie within what the parent may do, or the spawn is refused
 *   with a message naming every field that exceeds it;
 * - **restricting** (exec policy, tool blocklist, approvals, and the allowlists `tool_allowlist`,
 *   `mcp_servers`, `skills`): the parent's restrictions are merged into the child, whether or
 *   not it repeats them;
 * - **limits** (resources, `max_tokens`, tool timeouts, `max_actions_per_cycle`, priority): the
 *   child's may not exceed the parent's. A child that leaves one at its default runs under its
 *   parent's; one that sets it higher is refused.
 *
 * The merged manifest is what is stored, so `loom agent show` displays what binds the child.
 */

/** How a manifest field bears on a child's power (see the module comment). */
export type FieldPower = 'widening' | 'restricting' | 'limit' | 'inert';

/**
 * Every top-level manifest field and how `confineChild` treats it. Typed over every key of the
 * manifest, so a field added to the schema does not compile until someone decides what it
 * empowers and how a child inherits it.
 */
export const MANIFEST_FIELD_POWER: Readonly<Record<keyof Manifest, FieldPower>> = {
  name: 'inert',
  version: 'inert',
  description: 'inert',
  author: 'inert',
  module: 'widening',
  schedule: 'widening',
  // Its `cache` setting (the provider's prompt cache) is inert: it changes what a call costs,
  // which the quotas meter, not what the agent may call or reach.
  model: 'widening',
  fallback_models: 'widening',
  resources: 'limit',
  priority: 'limit',
  capabilities: 'widening',
  // Grants its tools as `[capabilities].tools` would, so a child's are checked with its grants.
  profile: 'widening',
  tools: 'widening',
  skills: 'restricting',
  mcp_servers: 'restricting',
  metadata: 'inert',
  tags: 'inert',
  routing: 'widening',
  autonomous: 'restricting',
  workspace: 'widening',
  // Writes identity files inside the agent's own workspace, which is confined.
  generate_identity_files: 'inert',
  exec_policy: 'restricting',
  tool_allowlist: 'restricting',
  tool_blocklist: 'restricting',
  // Agent-type settings give no power: every delegation is a message the kernel checks against
  // the agent's `agent_message` grants, and every model call counts against its quotas.
  delegate: 'inert',
  workflow: 'inert',
  chain_of_thought: 'inert',
  // How the agent's own history is summarised.
  compaction: 'inert',
  // Forging runs code in a sandbox and calls judge models: enabled only where the parent is,
  // within its limits, sandbox APIs and fetch domains (see `confineEmergent`).
  emergent: 'widening',
  // A code module's limits and interpreter: a child running its parent's module stays within
  // the parent's (see `confineCode`).
  code: 'widening',
};
