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
export const oneSessionChoice = (choice: { session?: string | undefined; thread?: string | undefined }): boolean =>
  choice.session === undefined || choice.thread === undefined;

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
  digest: z
    .string()
    .regex(/^[0-9a-f]{64}$/, { error: 'expected the digest of a plan from POST /api/packages/check' })
    .optional(),
});

/** The body of `POST /api/packages/skills`. */
export const SkillInstallBodySchema = z.strictObject({
  /** The skill's install code, `SKIL-XXXX-XXXX`, looked up in config.toml's registries. */
  code: z.string().regex(/^\s*SKIL-/i, { error: "expected a skill's install code, SKIL-XXXX-XXXX" }),
});

/** The body of `POST /api/packages/:slug/bindings/:binding/run`. */
export const RunBodySchema = z.strictObject({ inputs: z.record(z.string(), z.json()).default({}) });

/** `?session=<id>` (a session the caller holds) or `?thread=<name>` (one of its own), for the session routes; its own when left out. */
export const SessionQuerySchema = z.strictObject({ session: z.string().min(1).optional(), thread: ThreadSchema }).refine(oneSessionChoice, ONE_SESSION_CHOICE);

/** `GET …/turn`: the session as for the session routes, and `?last_event_id=` for a client that cannot send the `Last-Event-ID` header. */
export const TurnQuerySchema = z
  .strictObject({ session: z.string().min(1).optional(), thread: ThreadSchema, last_event_id: z.string().max(300).optional() })
  .refine(oneSessionChoice, ONE_SESSION_CHOICE);

/** `POST /api/agents?parent=`: spawn as a child of that agent. */
export const SpawnQuerySchema = z.strictObject({ parent: z.string().min(1).optional() });

/** `?limit=`: how many of an agent's scheduled wake-ups `GET …/runs` answers with (100 when left out). */
export const ScheduleRunsQuerySchema = z.strictObject({ limit: z.coerce.number().int().min(1).max(1000).optional() });

/** `GET /api/approvals?status=`. */
export const ApprovalsQuerySchema = z.strictObject({ status: z.enum(APPROVAL_STATUS_FILTERS).optional() });

/** `GET /api/tools/forged?agent=`. */
export const ForgedToolsQuerySchema = z.strictObject({ agent: z.string().min(1).optional() });

/** `GET /api/packages/runs`: one package's, and how many. */
export const PackageRunsQuerySchema = z.strictObject({
  package: z.string().min(1).optional(),
  limit: z.coerce.number().int().min(1).max(1000).optional(),
});

/** `GET /api/packages/:slug/runs`: how many. */
export const RunsOfPackageQuerySchema = PackageRunsQuerySchema.pick({ limit: true });

/** `GET /api/usage`: one agent's, and from when (epoch milliseconds). */
export const UsageQuerySchema = z.strictObject({
  agent: z.string().min(1).optional(),
  since: z.coerce.number().int().min(0).optional(),
});

/** `GET /api/usage/today?agent=`. */
export const UsageTodayQuerySchema = z.strictObject({ agent: z.string().min(1).optional() });

/** The spans `GET /api/usage/series?range=` knows. */
export const USAGE_RANGE_NAMES = ['1h', '24h', '7d', '30d'] as const;

/** One of {@link USAGE_RANGE_NAMES}. */
export type UsageRangeName = (typeof USAGE_RANGE_NAMES)[number];

/** `GET /api/usage/series`: a preset `range`, or `since`, `until` and `step`. */
export const UsageSeriesQuerySchema = z
  .strictObject({
    agent: z.string().min(1).optional(),
    range: z.enum(USAGE_RANGE_NAMES).optional(),
    /** Epoch milliseconds; with `until` and `step`, instead of `range`. */
    since: z.coerce.number().int().min(0).optional(),
    until: z.coerce.number().int().min(0).optional(),
    step: z.coerce.number().int().min(1_000).optional(),
  })
  .refine((query) => query.range === undefined || (query.since === undefined && query.until === undefined && query.step === undefined), {
    message: 'give either range, or since, until and step',
  })
  .refine((query) => query.since === undefined || query.until === undefined || query.since < query.until, {
    message: 'since must be before until',
    path: ['since'],
  });
