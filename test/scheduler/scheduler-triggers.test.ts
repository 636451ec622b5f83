import { mkdir, mkdtemp, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createFakeClock } from '../../src/clock/index.ts';
import { createEventBus, type EventBus } from '../../src/kernel/index.ts';
import { createSilentLogger } from '../../src/logging/index.ts';
import { createScheduler, type Scheduler } from '../../src/scheduler/index.ts';
import { createRecordingLogger } from '../support/recording-logger.ts';
import { agentEntry, createFakeWatcher, deferred, recordingRuns } from './scheduler-fixtures.ts';

const START = Date.UTC(2026, 0, 1);

function trigger(event: string, extra = ''): string {
  return `[[schedule.triggers]]\nevent = "${event}"\n${extra}`;
}

function proactive(...triggers: string[]): string {
  return `[schedule]\nmode = "proactive"\n\n${triggers.join('\n')}`;
}

function setup() {
  const clock = createFakeClock(START);
  const logger = createRecordingLogger();
  const watcher = createFakeWatcher();
  const events = createEventBus(createSilentLogger());
  const { runs, calls } = recordingRuns(() => clock.now());
  const scheduler = createScheduler({ clock, logger, runs, events, watch: watcher.watch });
  // Lets the wake-ups an event started reach the runs.
  const settle = () => clock.advance(0);
  return { clock, logger, watcher, events, calls, scheduler, settle };
}

function spawned(events: EventBus, name: string, agentId = `id-${name}`): void {
  events.publish({ type: 'agent-spawn', at: START, agentId, name, parentId: null });
}

describe('scheduler: file triggers (injected watcher)', () => {
  it("watches no folder of a child agent that is now a symbolic link, as its parent's triggers or a child's real folder it does", async () => {
    const root = await realpath(await mkdtemp(join(tmpdir(), 'loom-trigger-link-')));
    try {
      await mkdir(join(root, 'inbox'));
      await symlink(join(root, 'inbox'), join(root, 'mail'));
      const { watcher, logger, scheduler } = setup();
      const child = (name: string, folder: string) => ({
        ...agentEntry(name, proactive(trigger('file_created', `pattern = "${join(root, folder)}/*"`))),
        parentId: 'id-boss',
      });
      await scheduler.start(child('through-link', 'mail'));
      await scheduler.start(child('real-folder', 'inbox'));
      await scheduler.start(agentEntry('owner', proactive(trigger('file_created', `pattern = "${join(root, 'mail')}/*"`))));
      expect(watcher.watches.map((watch) => watch.directory)).toEqual([join(root, 'inbox'), join(root, 'mail')]);
      const errors = logger.entries.filter((entry) => entry.level === 'error').map((entry) => entry.message);
      expect(errors).toEqual([
        `skipped trigger "file_created" of agent "through-link": "${join(root, 'mail')}" is now a symbolic link (or lies under one), and a child agent's triggers watch only the folder they were judged by; spawn it again to have the folder judged anew`,
      ]);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });

  it('file_created watches the fixed directory of the pattern and wakes the agent for a new matching path only', async () => {
    const { watcher, calls, scheduler, settle } = setup();
    await scheduler.start(agentEntry('ingest', proactive(trigger('file_created', 'pattern = "/data/inbox/*.json"'))));
    expect(watcher.watches.map((watch) => watch.directory)).toEqual(['/data/inbox']);

    watcher.emit('/data/inbox/a.txt');
    watcher.emit('/data/other/b.json');
    await settle();
    expect(calls).toEqual([]);

    watcher.emit('/data/inbox/a.json');
    await settle();
    expect(calls).toEqual([
      {
        agentId: 'id-ingest',
        message: '[trigger] file_created: /data/inbox/a.json',
        at: START,
        wake: { trigger: 'file_created', cause: 'file_created /data/inbox/a.json', message: '[trigger] file_created: /data/inbox/a.json', dueAt: START },
      },
    ]);

    // A second event on the same path is a change, not a creation.
    watcher.emit('/data/inbox/a.json');
    await settle();
    expect(calls).toHaveLength(1);
  });

  it('file_created fires again for a path that was deleted and created anew', async () => {
    const { watcher, calls, scheduler, settle } = setup();
    await scheduler.start(agentEntry('ingest', proactive(trigger('file_created', 'pattern = "/data/inbox/*.json"'))));
    watcher.emit('/data/inbox/a.json');
    await settle();
    watcher.emit('/data/inbox/a.json', false);
    await settle();
    expect(calls).toHaveLength(1);
    watcher.emit('/data/inbox/a.json');
    await settle();
    expect(calls).toHaveLength(2);
  });

  it('file_changed wakes the agent with the trigger message only for a matching path seen before', async () => {
    const { watcher, calls, scheduler, settle } = setup();
    await scheduler.start(agentEntry('ingest', proactive(trigger('file_changed', 'pattern = "/data/*.csv"\nmessage = "a report changed: re-read it"'))));
    watcher.emit('/data/q4.csv');
    await settle();
    expect(calls).toEqual([]);
    watcher.emit('/data/q4.csv');
    await settle();
    expect(calls.map((call) => call.message)).toEqual(['a report changed: re-read it']);
    watcher.emit('/data/q4.txt');
    watcher.emit('/data/q4.txt');
    await settle();
    expect(calls).toHaveLength(1);
  });

  it('stop() closes the watchers: later file events wake nothing', async () => {
    const { watcher, calls, scheduler, settle } = setup();
    const agent = agentEntry('ingest', proactive(trigger('file_created', 'pattern = "/in/*"'), trigger('file_changed', 'pattern = "/out/*"')));
    await scheduler.start(agent);
    await scheduler.stop(agent, 'kill');
    expect(watcher.watches.map((watch) => watch.closed)).toEqual([true, true]);
    // Even a watcher that reports after being closed (an event already queued) is ignored.
    watcher.watches[0]?.onChange('/in/late', true);
    await settle();
    expect(calls).toEqual([]);
  });

  it('logs and skips a file trigger whose directory cannot be watched', async () => {
    const clock = createFakeClock(START);
    const logger = createRecordingLogger();
    const scheduler = createScheduler({
      clock,
      logger,
      runs: recordingRuns(() => clock.now()).runs,
      watch: () => {
        throw new Error('ENOENT: no such file or directory');
      },
    });
    await scheduler.start(agentEntry('ingest', proactive(trigger('file_changed', 'pattern = "/missing/*"'))));
    const errors = logger.entries.filter((entry) => entry.level === 'error').map((entry) => entry.message);
    expect(errors).toEqual(['skipped trigger "file_changed" of agent "ingest": cannot watch "/missing"']);
  });
});

describe('scheduler: file triggers (node:fs watcher)', () => {
  let directory: string | undefined;
  let scheduler: Scheduler | undefined;
  afterEach(async () => {
    scheduler?.stopAll();
    if (directory !== undefined) await rm(directory, { recursive: true, force: true });
  });

  it('file_created wakes the agent with the path of a .json file written into a watched temp directory, not of a .txt', async () => {
    directory = await realpath(await mkdtemp(join(tmpdir(), 'loom-scheduler-')));
    const sent = deferred<string>();
    const clock = createFakeClock(START);
    const { runs } = recordingRuns(
      () => clock.now(),
      (call) => {
        sent.resolve(call.message);
        return Promise.resolve();
      },
    );
    scheduler = createScheduler({ clock, logger: createSilentLogger(), runs });
    await scheduler.start(agentEntry('ingest', proactive(trigger('file_created', `pattern = "${directory}/*.json"`))));
    await writeFile(join(directory, 'notes.txt'), 'ignored');
    await writeFile(join(directory, 'order.json'), '{}');
    const timeout = AbortSignal.timeout(5000);
    const timedOut = new Promise<never>((_resolve, reject) => {
      timeout.addEventListener('abort', () => reject(new Error('no wake-up within 5 s of writing the file')), { once: true });
    });
    await expect(Promise.race([sent.promise, timedOut])).resolves.toBe(`[trigger] file_created: ${join(directory, 'order.json')}`);
  });
});

describe('scheduler: lifecycle triggers (real event bus)', () => {
  it('agent_spawned wakes the agent when an agent whose name matches the pattern is spawned, and only then', async () => {
    const { events, calls, scheduler, settle } = setup();
    await scheduler.start(agentEntry('overseer', proactive(trigger('agent_spawned', 'pattern = "worker-*"'))));
    spawned(events, 'chat');
    events.publish({ type: 'agent-kill', at: START, agentId: 'id-worker-1', name: 'worker-1', reason: 'requested' });
    await settle();
    expect(calls).toEqual([]);
    spawned(events, 'worker-1');
    await settle();
    expect(calls).toMatchObject([
      {
        agentId: 'id-overseer',
        message: '[trigger] agent_spawned: agent "worker-1" (id-worker-1)',
        at: START,
        wake: { trigger: 'agent_spawned', dueAt: START },
      },
    ]);
  });

  it('agent_killed, agent_suspended and agent_resumed follow their kernel events, with the trigger messages', async () => {
    const { events, calls, scheduler, settle } = setup();
    await scheduler.start(
      agentEntry(
        'overseer',
        proactive(
          trigger('agent_killed', 'message = "killed"'),
          trigger('agent_suspended', 'message = "suspended"'),
          trigger('agent_resumed', 'message = "resumed"'),
        ),
      ),
    );
    events.publish({ type: 'agent-suspend', at: START, agentId: 'id-w', name: 'w' });
    await settle();
    events.publish({ type: 'agent-resume', at: START, agentId: 'id-w', name: 'w' });
    await settle();
    events.publish({ type: 'agent-kill', at: START, agentId: 'id-w', name: 'w', reason: 'requested' });
    await settle();
    spawned(events, 'w');
    await settle();
    expect(calls.map((call) => call.message)).toEqual(['suspended', 'resumed', 'killed']);
  });

  it('a trigger without a pattern fires for any agent, but not for the agent itself', async () => {
    const { events, calls, scheduler, settle } = setup();
    await scheduler.start(agentEntry('overseer', proactive(trigger('agent_resumed'))));
    events.publish({ type: 'agent-resume', at: START, agentId: 'id-overseer', name: 'overseer' });
    await settle();
    expect(calls).toEqual([]);
    events.publish({ type: 'agent-resume', at: START, agentId: 'id-any', name: 'any' });
    await settle();
    expect(calls).toHaveLength(1);
  });

  it('stop() unsubscribes from the event bus', async () => {
    const { events, calls, scheduler, settle } = setup();
    const agent = agentEntry('overseer', proactive(trigger('agent_spawned')));
    await scheduler.start(agent);
    await scheduler.stop(agent, 'shutdown');
    spawned(events, 'worker');
    await settle();
    expect(calls).toEqual([]);
  });

  it('logs and skips a lifecycle trigger when the scheduler has no event bus', async () => {
    const clock = createFakeClock(START);
    const logger = createRecordingLogger();
    const scheduler = createScheduler({ clock, logger, runs: recordingRuns(() => clock.now()).runs });
    await scheduler.start(agentEntry('overseer', proactive(trigger('agent_spawned'))));
    expect(logger.entries.map((entry) => entry.message)).toEqual(['skipped trigger "agent_spawned" of agent "overseer": the scheduler has no event bus']);
  });
});
