import { cutLine } from './cut-line.ts';

/** The lines of its output a code module may have logged at a time: one message's `host.log` calls, one window of a Python module's stderr. */
export const MODULE_LOG_LINES = 200;
/** …and their bytes, each line cut as logged, with its newline. */
export const MODULE_LOG_BYTES = 64 * 1024;

/** Lines of a module's output on their way to Loom's log, held to a number of lines and bytes. */
export interface LineBudget {
  /** `line` cut (see `cutLine`) to be logged, or undefined when the budget is spent: then it is counted as left out. */
  take(line: string): string | undefined;
  /** The lines and bytes left out since the last call. */
  leftOut(): { lines: number; bytes: number };
  /** Starts a new budget (a new window of time, say); what was left out stays counted. */
  reset(): void;
}

/**
 * A budget of `maxLines` lines and `maxBytes` bytes (each line cut, with its newline). The first
 * line over either spends it, so what is logged is the first lines, in order, with no gaps.
 */
export function createLineBudget(maxLines: number, maxBytes: number): LineBudget {
  let spent = false;
  let lines = 0;
  let bytes = 0;
  let droppedLines = 0;
  let droppedBytes = 0;
  return {
    take(line) {
      const shown = cutLine(line);
      const size = Buffer.byteLength(shown) + 1;
      if (!spent && lines < maxLines && bytes + size <= maxBytes) {
        lines += 1;
        bytes += size;
        return shown;
      }
      spent = true;
      droppedLines += 1;
      droppedBytes += Buffer.byteLength(line) + 1;
      return undefined;
    },
    leftOut() {
      const left = { lines: droppedLines, bytes: droppedBytes };
      droppedLines = 0;
      droppedBytes = 0;
      return left;
    },
    reset() {
      spent = false;
      lines = 0;
      bytes = 0;
    },
  };
}
