import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startTracing, type Tracing, withTurnSpan } from '../../src/telemetry/index.ts';
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from '../support/otlp-receiver.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { waitFor } from '../support/wait-for.ts';
import { openTestHost, type TestHost } from '../support/test-host.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';
import { activityJson, bindingJson, packageConfig, writePackage } from '../packages/support.ts';

const server = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let host: TestHost;
let receiver: OtlpReceiver;
let tracing: Tracing | undefined;

beforeEach(async () => {
  dir = await makeTempDir('loom-otlp-');
  host = await openTestHost(dir.path);
  receiver = await startOtlpReceiver();
});
afterEach(async () => {
  await tracing?.shutdown();
  tracing = undefined;
  await host.close();
  await receiver.close();
  await dir.remove();
});

/** One turn with a tool call, inside its `invoke_agent` span as the message flow is to run it; the spans once exported. */
async function tracedTurn(captureContent: boolean): Promise<ReceivedSpan[]> {
  tracing = startTracing({ endpoint: receiver.url, captureContent, serviceVersion: '9.9.9-test' });
  await host.kernel.spawn(
    manifest(
      `name = "traced"\n[model]\nprovider = "anthropic"\nmodel = "claude-sonnet-4-5"\nbase_url = "${server.url}"\n[capabilities]\ntools = ["agent_list"]\n`,
    ),
  );
  server.script([
    { toolCalls: [{ name: 'agent_list', input: {} }], usage: { inputTokens: 300, outputTokens: 20 } },
    { text: 'One agent runs.', usage: { inputTokens: 340, outputTokens: 8 } },
  ]);
  const agent = host.kernel.get('traced');
  await withTurnSpan({ agentId: agent.id, agentName: 'traced', conversationId: agent.session_id, message: 'Which agents run?' }, () =>
    host.kernel.send('traced', 'Which agents run?'),
  );
  await tracing.forceFlush();
  await waitFor("the receiver to get the turn's spans", () => receiver.spans.length >= 4);
  return receiver.spans;
}

describe('OpenTelemetry traces over OTLP/HTTP', () => {
  it('exports invoke_agent, chat and execute_tool spans with the GenAI attributes, nested in one trace, without content', async () => {
    const spans = await tracedTurn(false);
    expect(receiver.paths[0]).toMatch(/^POST \/v1\/traces application\/json/);
    const turn = spans.find((span) => span.name === 'invoke_agent traced');
    expect(turn?.attributes).toMatchObject({ 'gen_ai.operation.name': 'invoke_agent', 'gen_ai.agent.name': 'traced' });
    const chats = spans.filter((span) => span.name === 'chat claude-sonnet-4-5');
    expect(chats).toHaveLength(2);
    for (const chat of chats) {
      expect(chat.traceId).toBe(turn?.traceId);
      expect(chat.parentSpanId).toBe(turn?.spanId);
    }
    expect(chats.map((chat) => chat.attributes)).toEqual([
      expect.objectContaining({
        'gen_ai.operation.name': 'chat',
        'gen_ai.provider.name': 'anthropic',
        'gen_ai.request.model': 'claude-sonnet-4-5',
        'gen_ai.usage.input_tokens': 300,
        'gen_ai.usage.output_tokens': 20,
        'gen_ai.usage.cache_read.input_tokens': 0,
        'gen_ai.agent.name': 'traced',
      }),
      expect.objectContaining({ 'gen_ai.usage.input_tokens': 340, 'gen_ai.usage.output_tokens': 8 }),
    ]);
    expect(Number(chats[0]?.attributes['loom.cost_usd'])).toBeCloseTo((300 * 3 + 20 * 15) / 1_000_000, 12);
    const tool = spans.find((span) => span.name === 'execute_tool agent_list');
    expect(tool?.attributes).toMatchObject({ 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': 'agent_list', 'gen_ai.tool.type': 'function' });
    expect(tool?.parentSpanId).toBe(turn?.spanId);
    // Without capture_content, no message or tool input and output leaves the daemon.
    const keys = spans.flatMap((span) => Object.keys(span.attributes));
    expect(keys).not.toContain('gen_ai.input.messages');
    expect(keys).not.toContain('gen_ai.tool.call.arguments');
    expect(keys).not.toContain('gen_ai.tool.call.result');
  });

  it('puts messages and tool inputs and outputs in the spans with capture_content', async () => {
    const spans = await tracedTurn(true);
    const chat = spans.find((span) => span.name === 'chat claude-sonnet-4-5');
    expect(String(chat?.attributes['gen_ai.input.messages'])).toContain('Which agents run?');
    const tool = spans.find((span) => span.name === 'execute_tool agent_list');
    expect(tool?.attributes['gen_ai.tool.call.arguments']).toBe('{}');
    expect(String(tool?.attributes['gen_ai.tool.call.result'])).toContain('traced');
    const turn = spans.find((span) => span.name === 'invoke_agent traced');
    expect(String(turn?.attributes['gen_ai.output.messages'])).toContain('One agent runs.');
  });
});

describe('package runs as parent spans', () => {
  it("runs a binding inside a package_run span, each activity's turn an invoke_agent span under it holding its model calls", async () => {
    // A home of its own: the test's other host has the directory's.
    const home = join(dir.path, 'packages-home');
    await mkdir(home);
    const packagesHost = await openTestHost(home, packageConfig(server.url));
    try {
      tracing = startTracing({ endpoint: receiver.url });
      await packagesHost.packages.install(
        await writePackage(home, 'digest', { workflows: { nightly: bindingJson({ type: 'manual' }, [activityJson('gather')]) } }),
      );
      server.script([{ text: 'Gathered.', usage: { inputTokens: 40, outputTokens: 5 } }]);
      const run = await packagesHost.packages.run('digest', 'nightly');
      expect(run.status).toBe('completed');
      await tracing.forceFlush();
      await waitFor("the receiver to get the run's span", () => receiver.spans.some((span) => span.name === 'package_run digest/nightly'));
      const parent = receiver.spans.find((span) => span.name === 'package_run digest/nightly');
      expect(parent?.attributes).toEqual({
        'loom.package.name': 'digest',
        'loom.package.binding': 'nightly',
        'loom.package.trigger': 'manual',
        'loom.package.run.id': run.id,
        'loom.package.run.status': 'completed',
      });
      // The activity's turn is an invoke_agent span of the package's agent, under the run's span.
      const agent = packagesHost.kernel.list().find((entry) => entry.name === 'digest');
      const turn = receiver.spans.find((span) => span.name === 'invoke_agent digest');
      expect(turn).toMatchObject({ traceId: parent?.traceId, parentSpanId: parent?.spanId });
      expect(turn?.attributes).toEqual({ 'gen_ai.operation.name': 'invoke_agent', 'gen_ai.agent.id': agent?.id, 'gen_ai.agent.name': 'digest' });
      const chat = receiver.spans.find((span) => span.name.startsWith('chat '));
      expect(chat).toMatchObject({ traceId: parent?.traceId, parentSpanId: turn?.spanId });
      expect(chat?.attributes).toMatchObject({ 'gen_ai.usage.input_tokens': 40, 'gen_ai.usage.output_tokens': 5 });
    } finally {
      await packagesHost.close();
    }
  });
});

describe('workflows as parent spans', () => {
  it('runs an approved workflow inside a workflow span under the approving turn, a workflow_task span per task holding what it delegates', async () => {
    const home = join(dir.path, 'workflow-home');
    await mkdir(home);
    const workflowHost = await openTestHost(home, {}, undefined, { runSchedules: true });
    try {
      tracing = startTracing({ endpoint: receiver.url });
      const model = `[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${server.url}"\n`;
      await workflowHost.kernel.spawn(manifest(`name = "researcher"\ndescription = "Finds facts"\n${model}`));
      await workflowHost.kernel.spawn(
        manifest(
          `name = "lead"\nmodule = "builtin:workflow"\n${model}[capabilities]\ntools = ["agent_message"]\nagent_message = ["researcher"]\n[workflow]\nmanaged_agents = ["researcher"]\n`,
        ),
      );
      const plan = {
        summary: 'look it up',
        missing_info: null,
        tasks: [{ id: 't1', title: 'task t1', instruction: 'do t1', agent: 'researcher', depends_on: [], acceptance: 't1 is done' }],
      };
      server.script([{ text: JSON.stringify(plan) }]);
      await workflowHost.kernel.send('lead', 'find the tides');
      server.script([{ text: 'tides follow the moon' }, { text: JSON.stringify({ accepted: true, feedback: '' }) }, { text: 'Done: tides follow the moon.' }]);
      await workflowHost.kernel.send('lead', 'go');
      await tracing.forceFlush();
      await waitFor("the receiver to get the workflow's span", async () => {
        await tracing?.forceFlush();
        return receiver.spans.some((span) => span.name === 'workflow lead');
      });
      const workflow = receiver.spans.find((span) => span.name === 'workflow lead');
      expect(workflow?.attributes).toMatchObject({ 'gen_ai.agent.name': 'lead' });
      const task = receiver.spans.find((span) => span.name === 'workflow_task t1');
      expect(task).toMatchObject({ traceId: workflow?.traceId, parentSpanId: workflow?.spanId });
      expect(task?.attributes).toEqual({ 'loom.workflow.task.id': 't1', 'loom.workflow.task.agent': 'researcher', 'loom.workflow.task.attempt': 1 });
      // The task delegates through agent_message: its tool call, and the researcher's turn under that.
      const message = receiver.spans.find((span) => span.name === 'execute_tool agent_message');
      expect(message).toMatchObject({ traceId: workflow?.traceId, parentSpanId: task?.spanId });
      expect(receiver.spans.find((span) => span.name === 'invoke_agent researcher')).toMatchObject({
        traceId: workflow?.traceId,
        parentSpanId: message?.spanId,
      });
      // The workflow starts from the turn that approved it.
      expect(receiver.spans.find((span) => span.spanId === workflow?.parentSpanId)?.name).toBe('invoke_agent lead');
    } finally {
      await workflowHost.close();
    }
  });
});
