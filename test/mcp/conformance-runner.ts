/**
 * Runs the official MCP conformance suite (`@modelcontextprotocol/conformance`) against Loom and
 * holds its results against test/mcp/conformance-baseline.json (see docs/mcp-conformance.md).
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';

const root = fileURLToPath(new URL('../../', import.meta.url));
const PACKAGE = join(root, 'node_modules/@modelcontextprotocol/conformance');
const CLI = join(PACKAGE, 'dist/index.js');
const BASELINE = fileURLToPath(new URL('./conformance-baseline.json', import.meta.url));

/** The protocol revisions whose requirement sets Loom is held to. */
export const REVISIONS = ['2025-11-25', '2026-07-28'] as const;
export type Revision = (typeof REVISIONS)[number];
export type Leg = 'server' | 'client';

/** One check of a scenario, as the suite writes it to `checks.json`. */
export interface ConformanceCheck {
  id: string;
  status: 'SUCCESS' | 'FAILURE' | 'WARNING' | 'INFO' | 'SKIPPED';
  description?: string;
  errorMessage?: string;
}

/** What one scenario of one run found. */
export interface ScenarioResult {
  scenario: string;
  checks: ConformanceCheck[];
}

/** The scenarios a revision's requirement set runs on one leg: required, and run but not scored. */
export async function requirementSet(revision: Revision, leg: Leg): Promise<{ scored: string[]; notScored: string[] }> {
  const set = parseYaml(await readFile(join(PACKAGE, 'requirements', `${revision}.yaml`), 'utf8')) as {
    server?: string[];
    client?: string[];
    not_scored?: { scenario: string; leg: Leg }[];
  };
  return { scored: set[leg] ?? [], notScored: (set.not_scored ?? []).filter((entry) => entry.leg === leg).map((entry) => entry.scenario) };
}

/** How a run reaches Loom: the MCP endpoint's URL (server leg), or the command that runs Loom's client (client leg). */
export type ConformanceTarget = { leg: 'server'; url: string } | { leg: 'client'; command: string };

/** Bounds of one run of the suite. */
export interface ConformanceRunOptions {
  /** Per scenario, passed as `--timeout`; the scenario's process is killed at twice this. */
  scenarioTimeoutMs: number;
  /**
   * How many scenarios run at once (each is a suite process and, on the client leg, a Loom client
   * process); 2 by default, the cores of the machine the suite is sized for. The suite's own
   * `--requirements` mode starts every scenario of a set at once, which on a loaded 2-core machine
   * left clients waiting seconds for the CPU and their probes timing out.
   */
  concurrency?: number;
}

const SCENARIO_DIRECTORY = /^(.+)-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$/;

async function checkFiles(directory: string): Promise<string[]> {
  const entries = await readdir(directory, { recursive: true, withFileTypes: true });
  return entries.filter((entry) => entry.isFile() && entry.name === 'checks.json').map((entry) => join(entry.parentPath, entry.name));
}

/** Runs the suite's CLI once with `args` in `cwd`, killed past `ms`; resolves with its output. */
function runSuite(args: readonly string[], cwd: string, ms: number): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      cwd,
      stdio: ['ignore', 'pipe', 'pipe'],
      signal: AbortSignal.timeout(ms),
      env: { ...process.env, NO_COLOR: '1' },
    });
    let text = '';
    child.stdout.on('data', (chunk: Buffer) => (text += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (text += chunk.toString()));
    child.once('error', (error) =>
      reject(new Error(`the conformance suite (${args.join(' ')}) did not finish within ${ms} ms: ${error.message}\n${text.slice(-4000)}`)),
    );
    // The exit code only says whether something failed; what failed is read from the checks.
    child.once('close', () => resolve(text));
  });
}

/**
 * Runs every scenario of the suite's `--requirements <revision>` set against `target` (the suite's
 * own test servers listen on localhost; nothing else is reached), at most `concurrency` at a time,
 * and reads each scenario's `checks.json`. Each scenario runs as `--scenario <name> --spec-version
 * <revision> --force`, which is what the suite's requirements mode runs for it, one by one.
 */
export async function runConformance(revision: Revision, target: ConformanceTarget, options: ConformanceRunOptions): Promise<ScenarioResult[]> {
  const output = await mkdtemp(join(tmpdir(), `loom-conformance-${target.leg}-`));
  try {
    const set = await requirementSet(revision, target.leg);
    const queue = [...set.scored, ...set.notScored];
    const logs: string[] = [];
    const worker = async (): Promise<void> => {
      for (let scenario = queue.shift(); scenario !== undefined; scenario = queue.shift()) {
        const args = [
          target.leg,
          ...(target.leg === 'server' ? ['--url', target.url] : ['--command', target.command]),
          '--scenario',
          scenario,
          '--spec-version',
          revision,
          '--force',
          '--timeout',
          String(options.scenarioTimeoutMs),
          '-o',
          output,
        ];
        logs.push(await runSuite(args, output, options.scenarioTimeoutMs * 2));
      }
    };
    await Promise.all(Array.from({ length: Math.max(1, options.concurrency ?? 2) }, worker));
    const results: ScenarioResult[] = [];
    for (const file of await checkFiles(output)) {
      const directory = relative(output, join(file, '..')).split(sep).join('/');
      const match = SCENARIO_DIRECTORY.exec(directory);
      if (match?.[1] === undefined) throw new Error(`cannot tell the scenario of ${directory}`);
      const scenario = target.leg === 'server' ? match[1].replace(/^server-/, '') : match[1];
      results.push({ scenario, checks: JSON.parse(await readFile(file, 'utf8')) as ConformanceCheck[] });
    }
    if (results.length === 0) throw new Error(`the conformance suite wrote no results:\n${logs.join('\n').slice(-4000)}`);
    return results;
  } finally {
    await rm(output, { recursive: true, force: true });
  }
}

/** One expected failure: a scenario Loom cannot pass, on which leg and revisions, and why. */
export interface BaselineEntry {
  scenario: string;
  revisions: Revision[];
  reason: string;
  /** Only these checks are expected to fail (or warn); without it, the whole scenario is. */
  checks?: string[];
}

/** The baseline file: expected failures per leg. */
export interface Baseline {
  server: BaselineEntry[];
  client: BaselineEntry[];
}

export async function readBaseline(): Promise<Baseline> {
  return JSON.parse(await readFile(BASELINE, 'utf8')) as Baseline;
}

const notPassing = (check: ConformanceCheck): boolean => check.status === 'FAILURE' || check.status === 'WARNING';

/**
 * Holds one run against the baseline. A failed or warning check the baseline does not expect is
 * `unexpected`; an entry whose scenario (or listed check) now passes is `stale`, so the baseline
 * only shrinks; a scenario of the requirement set that left no result is `missing`.
 */
export function compareWithBaseline(
  revision: Revision,
  leg: Leg,
  results: readonly ScenarioResult[],
  expectedScenarios: readonly string[],
  baseline: Baseline,
): { unexpected: string[]; stale: string[]; missing: string[] } {
  const entries = baseline[leg].filter((entry) => entry.revisions.includes(revision));
  const unexpected: string[] = [];
  const stale: string[] = [];
  const byScenario = new Map(results.map((result) => [result.scenario, result]));
  for (const result of results) {
    const failing = result.checks.filter(notPassing);
    const entry = entries.find((candidate) => candidate.scenario === result.scenario);
    const allowed = entry === undefined ? new Set<string>() : entry.checks === undefined ? undefined : new Set(entry.checks);
    for (const check of failing) {
      if (allowed === undefined || allowed.has(check.id)) continue;
      unexpected.push(`${leg} ${revision} ${result.scenario}: ${check.status} ${check.id}: ${check.errorMessage ?? check.description ?? ''}`);
    }
    if (entry === undefined) continue;
    if (failing.length === 0) stale.push(`${leg} ${revision} ${result.scenario} passes: remove it from the baseline`);
    else
      for (const id of entry.checks ?? [])
        if (!failing.some((check) => check.id === id)) stale.push(`${leg} ${revision} ${result.scenario}: check ${id} passes: remove it from the baseline`);
  }
  for (const entry of entries) if (!byScenario.has(entry.scenario)) stale.push(`${leg} ${revision} ${entry.scenario} is in the baseline but was not run`);
  const missing = expectedScenarios.filter((scenario) => !byScenario.has(scenario)).map((scenario) => `${leg} ${revision} ${scenario} left no result`);
  return { unexpected, stale, missing };
}

/**
 * One line for the test's output: how many scenarios of the set pass (scored, and run but not
 * scored) and how many checks passed, failed and warned, so that a run says where Loom stands.
 */
export function summarize(
  revision: Revision,
  leg: Leg,
  results: readonly ScenarioResult[],
  set: { scored: readonly string[]; notScored: readonly string[] },
): string {
  const passes = (result: ScenarioResult): boolean => !result.checks.some(notPassing);
  const count = (names: readonly string[]): string => `${results.filter((result) => names.includes(result.scenario) && passes(result)).length}/${names.length}`;
  const checks = results.flatMap((result) => result.checks);
  const of = (status: ConformanceCheck['status']): number => checks.filter((check) => check.status === status).length;
  return `conformance ${leg} ${revision}: ${count(set.scored)} scored scenarios pass, ${count(set.notScored)} not scored; checks ${of('SUCCESS')} passed, ${of('FAILURE')} failed, ${of('WARNING')} warned`;
}
