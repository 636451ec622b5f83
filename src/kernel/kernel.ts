import type { KernelHandle } from '../contracts/index.ts';
import type { EmergentEngine } from '../forged-tools/index.ts';
import { parseManifest } from '../manifest/index.ts';
import type { AgentEntry } from './agent-entry.ts';
import { trackRecentFailures } from './agent-health.ts';
import { AgentHolding } from './agent-holding.ts';
import { AgentLifecycle } from './agent-lifecycle.ts';
import { AgentRecords } from './agent-records.ts';
import { OWNER } from './agent-runtime.ts';
import { type AgentDetailView, type AgentView, toAgentDetailView, toAgentView } from './agent-view.ts';
import { ClusterSync } from './cluster-sync.ts';
import { streamRun } from './event-stream.ts';
import { FORGE_TIMEOUT_MS, forgedToolsDoor } from './forged-tools-door.ts';
import type { Kernel } from './kernel-api.ts';
import { createKernelHandle } from './kernel-handle.ts';
import type { KernelServices } from './kernel-services.ts';
import { KernelTools } from './kernel-tools.ts';
import { ManifestAdmission } from './manifest-admission.ts';
import { createMessageFlow } from './message-flow.ts';
import { auditTurns } from './turn-audit.ts';
import { DEFAULT_TURN_LEASE_MS } from './turn-followed-elsewhere.ts';
import { type ResumeParts, resumeTurn, resumeTurns } from './turn-journal.ts';
import { createWakeRuns } from './wake-runs.ts';

/** The system prompt of `generate_text`: the prompt is the whole task. */
const GENERATE_TEXT_SYSTEM = 'Do what the user message asks and answer with the resulting text only, without preamble.';

/**
 * Builds the kernel proper on its services (`createKernelServices`) and the forged-tools engine
 * built on their ports (`KernelServices.forging`): the holding of agents (`AgentHolding`), their
 * lifecycle (`AgentLifecycle`), the relay of other nodes' changes (`ClusterSync`), the tool runner
 * and its doors (`KernelTools`), the message flow and its turns, the read views (`AgentRecords`).
 * This function only wires them; what each decides is in its module. Call `boot()` before using
 * the kernel.
 * @example
 * const services = createKernelServices({ store, clock, ids, logger, runtime });
 * const kernel = createKernel(services, createEmergentEngine({ store, clock, ids, logger, ...services.forging }));
 */
export function createKernel(services: KernelServices, forged: EmergentEngine): Kernel {
  const { dependencies, logger, registry, capabilities, events, quotas, ledger, guard, taint, approvals, publish } = services;
  const { store, clock, ids, runtime, node } = dependencies;
  const resumeBackgroundWork = dependencies.resumeBackgroundWork === true;

  /** An agent's view, and its detailed view, naming the daemon's default model where it runs on it. */
  const viewOf = (entry: AgentEntry): AgentView => toAgentView(entry, runtime?.defaultModel, runtime?.env);
  const detailOf = (entry: AgentEntry): AgentDetailView => toAgentDetailView(entry, runtime?.defaultModel, runtime?.env);

  // The runner and the handle reach one another (the handle's turns run tools through the
  // runner): the runner is built on its first use, once both are here.
  const tools: KernelTools = new KernelTools({ clock, ids, logger, registry, capabilities, approvals, taint, runtime, handle: () => handle, forged, publish });
  const flow = createMessageFlow({
    store,
    clock,
    ids,
    logger,
    registry,
    capabilities,
    quotas,
    ledger,
    runtime,
    runner: () => tools.runner(),
    taint,
    publish,
    guard,
    histories: services.histories,
    models: services.models,
    commits: services.commits,
    modelCalls: services.modelCalls,
    recentFailures: trackRecentFailures(events, clock),
    announce: (event) => events.publish(event),
    // On a cluster a turn another node runs is followed here from its journal, read again at each event of its agent.
    ...(node?.leasesTurns === true
      ? {
          cluster: {
            nodeId: node.id,
            subscribe: (listener) => events.subscribe(listener),
            find: (id) => node.find(id),
            leaseMs: node.turnLeaseMs ?? DEFAULT_TURN_LEASE_MS,
          },
        }
      : {}),
  });
  // Every turn, whichever door asked for it, leaves a record of how it ended in the audit log.
  const turns = auditTurns(flow, {
    clock,
    agentOf: (reference) => registry.lookup(reference),
    nameOf: (agentId) => registry.find(agentId)?.name,
    publish,
    announce: (event) => events.publish(event),
    logger,
  });
  const resumeParts: ResumeParts = {
    store,
    clock,
    logger,
    send: (agentId, message, options) => turns.send(agentId, message, options),
    release: (held) => approvals.release(held),
    keep: (held) => approvals.keep(held),
  };

  const holding = new AgentHolding({ registry, capabilities, quotas, ledger, guard, flow, forged, logger, resumeBackgroundWork }, dependencies.hooks ?? []);
  const { restorer } = services;
  const cluster = new ClusterSync({ store, registry, holding, restorer, approvals, forged, events, logger });
  const lifecycle = new AgentLifecycle({
    store,
    clock,
    ids,
    logger,
    registry,
    holding,
    cluster,
    restorer,
    admission: new ManifestAdmission({ registry, clock, runtime }),
    guard,
    approvals,
    flow,
    forged,
    publish,
    viewOf,
    resumeTurns: async (journaled) => {
      await resumeTurns(resumeParts, journaled);
    },
    node: dependencies.node,
    resumeBackgroundWork,
  });
  const records = new AgentRecords(store, registry);

  const wakeRuns = createWakeRuns({
    store,
    clock,
    ids,
    logger,
    resolve: (reference) => registry.resolve(reference),
    ancestors: (entry) => registry.ancestors(entry),
    // An unattended cycle: [autonomous] caps its tool calls, and suspends an agent idle too long.
    // Its run is recorded as started: its turn is recorded when accepted, so the run's work is not lost to a crash.
    // Journaled with its wake-up: a job taken again on another node tells its own turn from another wake-up's.
    send: (agentId, wake, model) =>
      kernel.send(agentId, wake.message, {
        cycle: true,
        wake: { trigger: wake.trigger, dueAt: wake.dueAt },
        acknowledged: true,
        ...(model === undefined ? {} : { model }),
      }),
    runTool: (agentId, tool, input) => kernel.runAgentTool(agentId, tool, input),
    publish,
    timezone: dependencies.scheduleTimezone,
  });

  const kernel: Kernel = {
    events,
    capabilities,
    approvals,
    wakeRuns,
    boot: () => lifecycle.boot(),
    addHook: (hook) => holding.addHook(hook),
    update: (reference, requested) => lifecycle.update(reference, requested),
    spawn: (requested, options) => lifecycle.spawn(requested, options),
    list: () => registry.list().map(viewOf),
    get: (reference) => detailOf(registry.resolve(reference)),
    nameOf: (reference) => registry.resolve(reference).name,
    suspend: (reference) => lifecycle.setState(reference, 'suspended'),
    resume: (reference) => lifecycle.setState(reference, 'running'),
    kill: (reference) => lifecycle.kill(reference),
    async send(reference, message, options) {
      const result = await turns.send(reference, message, options);
      if (options?.cycle === true) await lifecycle.suspendIfIdle(reference);
      return result;
    },
    runTask: (reference, task, options) => turns.runTask(reference, task, options),
    publish,
    principalTools: (principal) => tools.principalTools(principal),
    runPrincipalTool: (principal, toolName, input, signal) => tools.runPrincipalTool(principal, toolName, input, signal),
    runAgentTool: (agent, toolName, input, signal = AbortSignal.timeout(FORGE_TIMEOUT_MS)) => tools.agentToolbox(agent, signal).toolbox.invoke(toolName, input),
    workflow: (reference) => records.workflow(reference),
    session: (reference, options) => records.session(reference, options),
    sessions: (reference) => records.sessions(reference),
    findSession: (reference, id) => records.findSession(reference, id),
    async resetSession(reference, options = {}) {
      const entry = registry.resolve(reference);
      await flow.resetSession(entry, clock.now(), options.conversation);
      // Tools forged in a session are the main session's (spec/02's session tier).
      if (options.conversation === undefined) await forged.sessionEnded(entry.id);
    },
    audit: (options) => records.audit(options),
    usageSeries: (options) => records.usageSeries(options),
    usage: (options) => records.usage(options),
    // A streamed reply's first event tells its caller the message is taken: the turn is recorded then.
    // An A2A task's turn is recorded by its key instead (its task finds it after a restart,
    // src/a2a/task-recovery.ts); one of another agent type, which has no key, is not recorded (decision 0045).
    stream: (reference, message, options = {}) =>
      streamRun((emit) => turns.send(reference, message, { ...options, emit, acknowledged: options.door !== 'a2a' })),
    runningTurn: async (reference, options = {}) => flow.runningTurn(registry.resolve(reference), options.conversation),
    turnCounts: () => flow.turnCounts(),
    journaledTurns: () => flow.journaledTurns(),
    keyedTurn: async (reference, idempotencyKey, options = {}) =>
      flow.keyedTurn(registry.resolve(reference), options.caller ?? OWNER, idempotencyKey, options.conversation),
    async resumeTurn(turnId) {
      const record = await store.turns.get(turnId);
      if (record?.state !== 'running') return false;
      // An agent spawned on another node that this one has not heard of yet: its lease lapses
      // again and the turn is taken over once this node (or another) knows it. A killed agent's
      // turn goes on, and is closed as failed.
      if (registry.find(record.agentId) === undefined && (await store.agents.get(record.agentId)) !== undefined) return false;
      return resumeTurn(resumeParts, record);
    },
    followTurn: async (reference, options = {}) => flow.followTurn(registry.resolve(reference), options.conversation, options.after, options.signal),
    cancelTurn: async (reference, options = {}) =>
      flow.cancelTurn(registry.resolve(reference), options.caller ?? OWNER, options.by ?? 'the owner', options.conversation),
    shutdown: () => lifecycle.shutdown(),
    receive: (event) => cluster.receive(event),
    reload: () => cluster.reload(),
    forgedTools: forgedToolsDoor(forged, tools, (reference) => records.recordedAgentId(reference)),
  };

  const handle: KernelHandle = createKernelHandle({
    store,
    clock,
    registry,
    capabilities,
    spawn: (text, source, parent, limit, limitMcpServers) =>
      lifecycle.spawn(parseManifest(text, { source }).manifest, {
        parent,
        ...(limit === undefined ? {} : { limit }),
        ...(limitMcpServers === undefined ? {} : { limitMcpServers }),
      }),
    kill: (reference) => lifecycle.kill(reference),
    send: (reference, message, options) => turns.send(reference, message, options),
    generate: async (agentId, prompt, signal, caller) =>
      (await flow.callModel(agentId, { step: 'generate_text', system: GENERATE_TEXT_SYSTEM, prompt, signal, ...(caller === undefined ? {} : { caller }) }))
        .text,
  });

  return kernel;
}
