import type { AgentRecord, Store } from '../../src/contracts/index.ts';
import { pendingApprovalRecord } from './approval-record.ts';

/**
 * Writes a little of every domain of the store through its repositories, around the stored
 * agents `agents` (the first one gets the session messages, memory and workflow): usage and
 * events with ties in time, a decided and a pending approval, A2A tasks with push configs, package
 * runs, an installed package, forged tools, channel messages and pairings. Text with quotes,
 * accents, emoji and newlines, and sub-cent costs, so a copy that reshapes anything shows it.
 */
export async function seedEveryDomain(store: Store, agents: readonly AgentRecord[]): Promise<void> {
  const [first, second] = agents;
  if (first === undefined) throw new Error('seedEveryDomain needs at least one stored agent');
  const other = second ?? first;
  const session = await store.sessions.get(first.sessionId);
  if (session === undefined) throw new Error(`no session ${first.sessionId}`);
  await store.sessions.append(
    first.sessionId,
    [
      { role: 'user', content: 'hello "there" — ça va? 🧵' },
      { role: 'assistant', content: [{ type: 'text', text: 'line one\nline two' }] },
      { role: 'user', content: 'and \\u0000 escaped in JSON: \u0000' },
    ],
    {
      updatedAt: 5_000,
      usage: [{ agentId: first.id, at: 5_000, model: 'claude', inputTokens: 120, outputTokens: 30, costUsd: 0.000_123_4 }],
      events: [{ at: 5_000, type: 'turn-finish', agentId: first.id, data: { ok: true } }],
    },
  );
  await store.memory.put({ agentId: first.id, key: 'Zebra', value: { n: 1 }, updatedAt: 5_100 });
  await store.memory.put({ agentId: first.id, key: 'apple', value: 'a — b', updatedAt: 5_100 });
  await store.memory.put({ agentId: other.id, key: 'k', value: [1, 2.5, null], updatedAt: 5_100 });
  for (const [index, agentId] of [first.id, other.id, 'killed-agent'].entries()) {
    await store.usage.record({
      agentId,
      at: 6_000,
      model: index === 1 ? 'gpt-4o' : 'claude',
      inputTokens: 1_000 + index,
      outputTokens: 10 * index,
      costUsd: 0.1 + index / 3,
    });
  }
  for (let index = 0; index < 25; index += 1) {
    await store.events.append({
      at: 7_000 + Math.floor(index / 5),
      type: index % 2 === 0 ? 'agent-message' : 'tool-call',
      agentId: index % 3 === 0 ? null : first.id,
      data: { index, text: `event ${index} ✓` },
    });
  }
  await store.approvals.create(pendingApprovalRecord('approval-1', 8_000, { agentId: first.id, agentName: first.name }));
  await store.approvals.create(pendingApprovalRecord('approval-2', 8_000, { agentId: other.id, agentName: other.name }));
  await store.approvals.decide('approval-1', { status: 'approved', at: 8_500, by: 'local', reason: 'fine by me' });
  for (const id of ['task-b', 'task-a']) {
    await store.tasks.put({
      id,
      contextId: 'ctx-1',
      agent: first.name,
      state: 'TASK_STATE_COMPLETED',
      finished: id === 'task-a',
      task: { id, history: ['x'] },
      createdAt: 9_000,
      updatedAt: 9_000,
    });
  }
  await store.a2aPushConfigs.put({
    taskId: 'task-a',
    id: 'hook-2',
    url: 'https://hooks.example.com/a2a?inbox=7',
    token: 'tok-ü',
    authentication: { scheme: 'Bearer', credentials: 'secret' },
    wireVersion: '1.0',
    createdBy: 'ci',
    createdAt: 9_100,
  });
  await store.a2aPushConfigs.put({
    taskId: 'task-a',
    id: 'hook-1',
    url: 'https://hooks.example.com/other',
    token: null,
    authentication: null,
    wireVersion: '0.3',
    createdBy: 'ci',
    createdAt: 9_100,
  });
  const activity = {
    id: 'gather',
    status: 'completed' as const,
    attempts: 1,
    inputTokens: 10,
    outputTokens: 5,
    costUsd: 0.002,
    output: 'done — ok',
    error: null,
    fallback: null,
    startedAt: 10_000,
    endedAt: 10_500,
  };
  await store.packageRuns.create({
    id: 'run-2',
    package: 'briefing',
    binding: 'morning',
    trigger: 'schedule',
    status: 'completed',
    inputs: { topic: 'tides' },
    activities: [activity],
    emitted: 'briefing.ready',
    error: null,
    startedAt: 10_000,
    endedAt: 11_000,
    nodeId: 'node-1',
  });
  await store.packageRuns.create({
    id: 'run-1',
    package: 'briefing',
    binding: 'morning',
    trigger: 'manual',
    status: 'running',
    inputs: {},
    activities: [],
    emitted: null,
    error: null,
    startedAt: 10_000,
    endedAt: null,
    nodeId: null,
  });
  await store.scheduleRuns.create({
    id: 'wake-2',
    agentId: first.id,
    trigger: 'cron',
    dueAt: 10_000,
    startedAt: 10_001,
    finishedAt: 10_500,
    outcome: 'completed',
    reason: null,
    caughtUp: true,
    count: 1,
    checkHash: 'sha256:ab',
  });
  await store.scheduleRuns.create({
    id: 'wake-1',
    agentId: other.id,
    trigger: 'continuous',
    dueAt: 10_000,
    startedAt: null,
    finishedAt: 10_000,
    outcome: 'skipped',
    reason: '3 wake-ups missed — "not run"',
    caughtUp: false,
    count: 3,
    checkHash: null,
  });
  await store.packages.create({
    slug: 'briefing',
    qualifiedName: '@acme/agents/briefing',
    version: '1.2.0',
    agentId: first.id,
    source: '/srv/packages/briefing',
    persona: 'You are "the briefer".\nBe brief — très.',
    agentJson: { workflows: { morning: { trigger: { type: 'schedule', cron: '0 7 * * 1-5' } } } },
    loomToml: { package: { name: '@acme/agents/briefing', version: '1.2.0' } },
    settings: ['workflows.morning.trigger.cron=0 8 * * *'],
    skills: { '@acme/skills/notes': { prompt: '# Skill: notes', requires: [] } },
    installedAt: 10_000,
    lastFires: { morning: 10_000 },
  });
  await store.workflows.put({
    agentId: first.id,
    state: 'executing',
    request: 'a report on "tides"',
    summary: 'research, then write',
    tasks: [
      {
        id: 't1',
        title: 'research',
        instruction: 'find facts',
        agent: 'researcher',
        dependsOn: [],
        acceptance: 'sources cited',
        status: 'in_progress',
        attempts: 1,
        result: null,
        feedback: null,
      },
    ],
    replans: 0,
    note: null,
    createdAt: 11_000,
    updatedAt: 11_000,
  });
  for (const id of ['tool-b', 'tool-a']) {
    await store.forgedTools.put({
      id,
      name: `tool_${id}`,
      agentId: first.id,
      agentName: first.name,
      sessionId: first.sessionId,
      tier: 'agent',
      status: 'active',
      statusReason: null,
      mode: 'sandbox',
      request: { name: `tool_${id}`, description: 'slugs — très bien' },
      codeHash: 'ab'.repeat(32),
      sourcePersisted: false,
      verdicts: [{ role: 'creation', approved: true, confidence: 0.9, issues: [] }],
      stats: { calls: 0, successes: 0, totalMs: 0 },
      origin: 'forged',
      createdAt: 12_000,
      updatedAt: 12_000,
    });
  }
  await store.forgedTools.recordCall('tool-a', true, 12.75, 12_100);
  for (const platformId of ['m2', 'm1']) {
    await store.channels.receive({
      channel: 'tg',
      platformId,
      userId: '42',
      userName: 'Ada — ünïcode',
      conversationId: '-100',
      conversationKind: 'group',
      thread: null,
      mentioned: platformId === 'm1',
      text: `hello "${platformId}"`,
      status: 'received',
      note: null,
      receivedAt: 13_000,
      updatedAt: 13_000,
    });
  }
  await store.channels.settle('tg', 'm2', 'answered', 'replied', 13_500);
  await store.channels.requestPairing({ code: 'PAIR-2', channel: 'tg', userId: '7', userName: null, createdAt: 14_000, approvedAt: null });
  await store.channels.requestPairing({ code: 'PAIR-1', channel: 'tg', userId: '8', userName: 'Bob', createdAt: 14_000, approvedAt: null });
  await store.channels.approvePairing('PAIR-1', 14_500);
  await store.turns.open({
    id: 'turn-b',
    agentId: first.id,
    sessionId: 'session-x',
    conversation: 'principal:k',
    request: { message: 'go on — ünïcode' },
    idempotencyKey: 'key-1',
    receivedAt: 15_000,
  });
  await store.turns.open({
    id: 'turn-a',
    agentId: first.id,
    sessionId: 'session-x',
    conversation: null,
    request: { message: 'hello' },
    idempotencyKey: null,
    receivedAt: 15_000,
  });
  await store.turns.step('turn-b', [
    { kind: 'model', at: 15_100, data: { text: 'x' } },
    { kind: 'tool-start', at: 15_101, data: { toolCallId: 'c1' } },
  ]);
}

/**
 * What the store gives back for every domain, as a user of Loom would see it through the
 * repositories (lists in the store's own order), for the agents `agentIds`.
 */
export async function readEveryDomain(store: Store, agentIds: readonly string[]): Promise<Record<string, unknown>> {
  const perAgent = async <T>(read: (id: string) => Promise<T>): Promise<T[]> => Promise.all(agentIds.map(read));
  return {
    agents: await store.agents.list(),
    sessions: await perAgent((id) => store.sessions.listByAgent(id)),
    revisions: await perAgent(async (id) => Promise.all((await store.sessions.listByAgent(id)).map((session) => store.sessions.revision(session.id)))),
    memory: await perAgent((id) => store.memory.list(id)),
    usage: await store.usage.list({ limit: 1_000 }),
    usageTotals: await store.usage.totals({ since: 0 }),
    usageSeries: await store.usage.series({ since: 0, until: 20_000, stepMs: 1_000 }),
    events: await store.events.list({}),
    eventsAfter: await store.events.list({ after: 10, limit: 5 }),
    eventsBefore: await store.events.list({ before: 20, order: 'desc', limit: 5 }),
    approvals: await store.approvals.list({}),
    tasks: await store.tasks.list({ limit: 100, offset: 0 }),
    oldestFinishedTask: await store.tasks.oldestFinished(),
    pushConfigs: await store.a2aPushConfigs.list('task-a'),
    packageRuns: await store.packageRuns.list({ limit: 100 }),
    scheduleRuns: await perAgent((id) => store.scheduleRuns.list(id)),
    packages: await store.packages.list(),
    workflows: await perAgent((id) => store.workflows.get(id)),
    executingWorkflows: await store.workflows.listByState('executing'),
    forgedTools: await store.forgedTools.list(),
    channelMessages: await store.channels.recent('tg', 100),
    unsettled: await store.channels.unsettled('tg'),
    pairings: await store.channels.pairings(),
    runningTurns: await store.turns.running(),
  };
}
