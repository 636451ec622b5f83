/**
 * The bodies Loom's HTTP API reads, as zod schemas: the daemon's routes validate with them, the
 * OpenAPI document describes them, and a client's `call` is typed by them (`z.input`). This file
 * and routes.ts are src/wire's only imports of a package (zod); the views beside them import none.
 */
import { z } from 'zod';

/**
 * A conversation of the caller's own named by the client (`loom mcp` against a daemon names each
 * of its client sessions `mcp:<id>`): a session within the caller's, as an A2A context is.
 */
export const ThreadSchema = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9:._-]{0,199}$/, { error: 'expected a thread name of 1 to 200 letters, digits and ":._-", starting with a letter or digit' })
  .optional();

/** Either a session by id or a thread by name, not both. */
export const oneSessionChoice = (choice: { session?: string | undefined; thread?: string | undefined }): boolean => choice.session === undefined || choice.thread === undefined;

/** The error of {@link oneSessionChoice}, on `thread`. */
export const ONE_SESSION_CHOICE = { error: 'give "session" or "thread", not both', path: ['thread'] };

/** The body of `POST /api/agents/:agent/messages`. */
export const MessageBodySchema = z
  .strictObject({
    message: z.string().min(1, { error: 'expected a non-empty message' }),
    /** A session the caller holds, to go on with (see `GET …/sessions`); its own session when left out. */
    session: z.string().min(1).optional(),
    thread: ThreadSchema,
  })
  .refine(oneSessionChoice, ONE_SESSION_CHOICE);

/** Which approvals `GET /api/approvals?status=` lists. */
export const APPROVAL_STATUS_FILTERS = ['pending', 'approved', 'denied', 'expired', 'all'] as const;

/** One of {@link APPROVAL_STATUS_FILTERS}. */
export type ApprovalStatusFilter = (typeof APPROVAL_STATUS_FILTERS)[number];

/** The optional body of `POST /api/approvals/:id/approve|deny`. */
export const ApprovalDecisionBodySchema = z.strictObject({
  reason: z.string().trim().max(2000, { error: 'expected a reason of at most 2000 characters' }).optional(),
  /** The answer to a question (an MCP server's elicitation): the fields its `input.requestedSchema` asks for. */
  answer: z.record(z.string(), z.json()).optional(),
});

/** The body of `POST /api/tools/forged`: forge as `agent`, with spec/02's request. */
export const ForgeBodySchema = z.strictObject({
  agent: z.string().min(1, { error: 'expected the agent to forge as' }),
  request: z.record(z.string(), z.json()),
});

/** The body of `POST /api/tools/forged/import`: an `agentos.emergent-tool.v1` document. */
export const ImportBodySchema = z.strictObject({
  agent: z.string().min(1, { error: 'expected the agent to import into' }),
  document: z.string().min(1, { error: 'expected the exported YAML text' }),
});

/** The optional body of `POST /api/tools/forged/:id/demote`. */
export const DemoteBodySchema = z.strictObject({ reason: z.string().min(1).optional() });

/** The body of `POST /api/packages` and `POST /api/packages/check`. */
export const InstallBodySchema = z.strictObject({
  /** A package folder or `.tgz` on the daemon's machine, an install code, or `@org/agents/name[@version]`. */
  source: z.string().min(1, { error: 'expected a package folder, a .tgz, an install code or @org/agents/name' }),
  /** `path=value` overrides of the package's `defaults.configurable` paths. */
  settings: z.array(z.string()).default([]),
  /** The `digest` of the plan the owner agreed to (from `/check`): a package that changed since is refused (409). */
  digest: z.string().regex(/^[0-9a-f]{64}$/, { error: 'expected the digest of a plan from POST /api/packages/check' }).optional(),
});

/** The body of `POST /api/packages/skills`. */
export const SkillInstallBodySchema = z.strictObject({
  /** The skill's install code, `SKIL-XXXX-XXXX`, looked up in config.toml's registries. */
  code: z.string().regex(/^\s*SKIL-/i, { error: 'expected a skill\'s install code, SKIL-XXXX-XXXX' }),
});

/** The body of `POST /api/packages/:slug/bindings/:binding/run`. */
export const RunBodySchema = z.strictObject({ inputs: z.record(z.string(), z.json()).default({}) });
