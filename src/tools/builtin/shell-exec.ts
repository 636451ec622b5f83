import { spawn } from 'node:child_process';
import { stat } from 'node:fs/promises';
import { z } from 'zod';
import { formatCommandLine, matchesPattern } from '../../capabilities/index.ts';
import type { Capability, Tool, ToolContext, ToolResult } from '../../contracts/index.ts';
import { splitCommandLine } from './shell-command-line.ts';
import { ToolInputError } from './tool-input-error.ts';
import { errorCode, leadsElsewhere, realWorkspaceOf } from './workspace-path.ts';

/** How much of each of stdout and stderr `shell_exec` keeps: 1 MiB; the rest is read and dropped. */
export const MAX_SHELL_OUTPUT_BYTES = 1024 * 1024;

/** How long an aborted command has between SIGTERM and SIGKILL. */
export const SHELL_KILL_GRACE_MS = 2_000;

const ShellExecInputSchema = z.object({
  command: z.string().min(1).describe('One command with its arguments, e.g. `git status`. There is no shell: no pipes, redirections, variables or globs.'),
});

/**
 * `shell_exec {command}`: runs one program, without a shell. The command line is split into
 * argv by `splitCommandLine` (quotes and backslash escapes work; pipes, redirections,
 * substitutions, variables and globs are refused, since nothing would interpret them).
 *
 * `requires` asks `shell_exec` on the normal form of the command (`formatCommandLine`: the words
 * joined with single spaces, quoted where needed), which grants match argument by argument
 * (`matchesShellCommand`): `git *` allows `git status` (one argument), `git **` allows git with
 * any arguments, `cat /ws/*` allows `cat /ws/a.txt` but not `cat /ws/a.txt /etc/shadow`, and
 * `*` alone allows any command. It throws `ToolInputError` for a line it refuses to split.
 *
 * The program runs in the agent's workspace (for a child, only while the workspace still resolves to
 * the real path it was pinned to at the spawn) with an environment holding only `PATH` (from
 * `context.env`) and the variables of `context.env` whose names match one of the agent's
 * `env_read` patterns. Its stdin is empty. On `context.signal` abort its process group gets
 * SIGTERM, then SIGKILL after `SHELL_KILL_GRACE_MS`. stdout and stderr are kept up to
 * `MAX_SHELL_OUTPUT_BYTES` each, with a note when cut. The result text gives the exit code,
 * stdout and stderr (`structured` the same as fields); a non-zero exit, a death by signal, an
 * abort and a missing program are error results.
 */
export const shellExecTool: Tool<{ command: string }> = {
  name: 'shell_exec',
  description:
    'Run one program with arguments in your workspace, without a shell (no pipes, redirections, variables or globs). ' +
    'Returns the exit code, stdout and stderr.',
  inputSchema: ShellExecInputSchema,
  requires(input): Capability[] {
    return [{ kind: 'shell_exec', pattern: formatCommandLine(splitCommandLine(input.command)) }];
  },
  async execute(input, context) {
    let argv: string[];
    try {
      argv = splitCommandLine(input.command);
    } catch (error) {
      if (error instanceof ToolInputError) {
        return { text: error.message, isError: true };
      }
      throw error;
    }
    const workspace = context.agent.workspace;
    const folder = await stat(workspace).catch(() => undefined);
    if (folder?.isDirectory() !== true) {
      return { text: `cannot run "${formatCommandLine(argv)}": the workspace "${workspace}" is not an existing folder`, isError: true };
    }
    // A child's workspace is pinned to its real path at the spawn: a symbolic link put in that
    // path since would take the command (and every relative path it names) somewhere else.
    const real = context.agent.pinnedWorkspace === true ? await realWorkspaceOf(workspace, context.signal).catch(() => undefined) : workspace;
    if (real === undefined || leadsElsewhere(real, workspace)) {
      return {
        text: `cannot run "${formatCommandLine(argv)}": the workspace "${workspace}" now leads to ${real === undefined ? 'nothing' : `"${real}"`} through a symbolic link put in its path since the agent was spawned; a child's workspace stays where it was`,
        isError: true,
      };
    }
    return runCommand(argv, context);
  },
};

/** The environment a command gets: `PATH` and the granted `env_read` variables, nothing else. */
export function commandEnvironment(context: ToolContext): Record<string, string> {
  const patterns = context.agent.capabilities.flatMap((capability) => (capability.kind === 'env_read' ? [capability.pattern] : []));
  const environment: Record<string, string> = {};
  for (const [name, value] of Object.entries(context.env)) {
    if (value !== undefined && (name === 'PATH' || patterns.some((pattern) => matchesPattern(pattern, name)))) {
      environment[name] = value;
    }
  }
  return environment;
}

interface CapturedStream {
  chunks: Buffer[];
  kept: number;
  total: number;
}

function capture(stream: NodeJS.ReadableStream | null): CapturedStream {
  const captured: CapturedStream = { chunks: [], kept: 0, total: 0 };
  stream?.on('data', (chunk: Buffer) => {
    captured.total += chunk.length;
    const room = MAX_SHELL_OUTPUT_BYTES - captured.kept;
    if (room > 0) {
      const part = chunk.length > room ? chunk.subarray(0, room) : chunk;
      captured.chunks.push(part);
      captured.kept += part.length;
    }
  });
  return captured;
}

function capturedText(captured: CapturedStream, name: string): string {
  const text = Buffer.concat(captured.chunks).toString('utf8');
  return captured.total > captured.kept ? `${text}\n[${name} cut: kept the first ${captured.kept} of ${captured.total} bytes]` : text;
}

function runCommand(argv: string[], context: ToolContext): Promise<ToolResult> {
  const [program, ...args] = argv as [string, ...string[]];
  const commandLine = formatCommandLine(argv);
  return new Promise<ToolResult>((resolve) => {
    if (context.signal.aborted) {
      resolve({ text: `command "${commandLine}" was not started: the call was aborted`, isError: true });
      return;
    }
    // Its own process group (`detached`), so an abort reaches the programs it started too.
    const child = spawn(program, args, {
      cwd: context.agent.workspace,
      env: commandEnvironment(context),
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
      windowsHide: true,
    });
    const stdout = capture(child.stdout);
    const stderr = capture(child.stderr);
    let killTimer: NodeJS.Timeout | undefined;
    let aborted = false;
    let settled = false;
    const signalGroup = (signal: NodeJS.Signals): void => {
      try {
        if (child.pid !== undefined) {
          process.kill(-child.pid, signal);
        }
      } catch {
        // The group is gone already; fall back to the child itself.
        child.kill(signal);
      }
    };
    const onAbort = (): void => {
      aborted = true;
      signalGroup('SIGTERM');
      killTimer = setTimeout(() => signalGroup('SIGKILL'), SHELL_KILL_GRACE_MS);
    };
    const finish = (result: ToolResult): void => {
      if (settled) {
        return;
      }
      settled = true;
      clearTimeout(killTimer);
      context.signal.removeEventListener('abort', onAbort);
      resolve(result);
    };
    context.signal.addEventListener('abort', onAbort, { once: true });
    child.on('error', (error) => {
      const code = errorCode(error);
      const why =
        code === 'ENOENT'
          ? `program "${program}" not found${program.includes('/') ? '' : ' on PATH'}`
          : code === 'EACCES'
            ? `program "${program}" is not executable`
            : error.message;
      finish({ text: `cannot run "${commandLine}": ${why}`, isError: true });
    });
    child.on('close', (exitCode, signal) => {
      const outcome = aborted
        ? `aborted (${context.signal.reason instanceof Error ? context.signal.reason.message : 'cancelled'}); killed by ${signal ?? 'exit'}`
        : signal !== null
          ? `killed by ${signal}`
          : `exit code: ${exitCode}`;
      const stdoutText = capturedText(stdout, 'stdout');
      const stderrText = capturedText(stderr, 'stderr');
      finish({
        text: `${outcome}\nstdout:\n${stdoutText}\nstderr:\n${stderrText}`,
        structured: {
          command: commandLine,
          exitCode,
          signal,
          stdout: stdoutText,
          stderr: stderrText,
          stdoutBytes: stdout.total,
          stderrBytes: stderr.total,
        },
        isError: aborted || exitCode !== 0,
      });
    });
  });
}
