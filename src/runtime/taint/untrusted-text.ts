/**
 * Untrusted text, and the rule by which a tool call's arguments carry it (docs/security-model.md,
 * "Taint tracking"). Both sides are normalised first: Unicode NFKC, lower case, zero-width
 * characters removed, every run of whitespace one space. Arguments carry an untrusted text when:
 *
 * 1. a run of {@link TAINT_RUN_LENGTH} or more characters of the text appears in one string
 *    argument (a page's sentence pasted into a message, a file, a manifest, a request body); or
 * 2. the whole command of a `shell_exec`, of {@link TAINT_WHOLE_LENGTH} or more characters, appears
 *    in the text (a command the page spells out, `cat ~/.ssh/id_rsa`, is shorter than a run); or
 * 3. a URL in the arguments has a host that a URL in the text names (a page pointing the agent
 *    at `https://collector.example/`), whatever its length; or
 * 4. an argument names a file the turn wrote with untrusted text (see `TaintLedger`).
 */

/** Rule 1: the shortest run of an untrusted text that marks an argument holding it. */
export const TAINT_RUN_LENGTH = 32;

/** Rule 2: the shortest whole command that marks a `shell_exec` when the untrusted text holds it. */
export const TAINT_WHOLE_LENGTH = 8;

/** How much of the carried text a finding quotes. */
const MAX_EXCERPT_LENGTH = 120;

const ZERO_WIDTH = /[\u00ad\u200b-\u200f\u2060\ufeff]/g;
const WHITESPACE = /\s+/g;
const URL_HOST = /\b[a-z][a-z0-9+.-]*:\/\/(?:[^\s/?#@]*@)?(\[[^\]\s]+\]|[^\s/?#:'"<>()[\]{}`]+)/g;

/** A text as the matching rule compares it. */
export function normaliseText(text: string): string {
  return text.normalize('NFKC').toLowerCase().replace(ZERO_WIDTH, '').replace(WHITESPACE, ' ');
}

/** The hosts of the URLs in a normalised text, without a trailing dot. */
export function hostsIn(normalised: string): Set<string> {
  const hosts = new Set<string>();
  for (const match of normalised.matchAll(URL_HOST)) {
    const host = (match[1] ?? '').replace(/\.+$/, '');
    if (host !== '') hosts.add(host);
  }
  return hosts;
}

/** Where a text came from: the tool (or door) and what it named (a URL, a server, a sender). */
export interface TaintSource {
  /** The tool whose result it was (`web_fetch`, `mcp_github_get_issue`), or `message` for the turn's message. */
  tool: string;
  /** What it came from, for people: `https://example.com/page`, `MCP server "github"`, `channel sender "telegram:42"`. */
  origin: string;
  /** The host it came from, for a web result: a request back to it carries nothing to another host. */
  host?: string;
}

/** The hash base of the runs' rolling hash (Rabin–Karp, modulo 2^32). */
const BASE = 257;
/** BASE^(TAINT_RUN_LENGTH - 1) modulo 2^32: what the character leaving a run weighed. */
const LEAVING_WEIGHT = Array.from({ length: TAINT_RUN_LENGTH - 1 }).reduce<number>((weight) => Math.imul(weight, BASE) >>> 0, 1);

/** Calls `visit` with the rolling hash of each run of TAINT_RUN_LENGTH characters of `text` and where it starts; stops when `visit` returns true. */
function eachRunHash(text: string, visit: (hash: number, start: number) => boolean | void): void {
  let hash = 0;
  for (let index = 0; index < text.length; index += 1) {
    if (index >= TAINT_RUN_LENGTH) hash = (hash - Math.imul(text.charCodeAt(index - TAINT_RUN_LENGTH), LEAVING_WEIGHT)) >>> 0;
    hash = (Math.imul(hash, BASE) + text.charCodeAt(index)) >>> 0;
    // 30 bits, so that V8 keeps them as small integers in the set (twenty times faster than doubles).
    if (index >= TAINT_RUN_LENGTH - 1 && visit(hash & 0x3fffffff, index - TAINT_RUN_LENGTH + 1) === true) return;
  }
}

/**
 * A piece of untrusted text, indexed for the matching rule: the hashes of its runs are made the
 * first time a call is checked against it (most fetched pages never meet a sink).
 */
export class UntrustedText {
  readonly source: TaintSource;
  readonly #text: string;
  #runs: Set<number> | undefined;
  readonly #hosts: Set<string>;

  constructor(source: TaintSource, text: string) {
    this.source = source;
    this.#text = normaliseText(text);
    this.#hosts = hostsIn(this.#text);
  }

  /**
   * What of the text a normalised argument carries (by rules 1 to 3; rule 2 when `whole`, for a
   * command), as an excerpt; undefined when nothing.
   */
  carriedBy(argument: string, argumentHosts: ReadonlySet<string>, whole = false): string | undefined {
    if (whole && argument.length >= TAINT_WHOLE_LENGTH && this.#text.includes(argument)) return argument;
    if (argument.length >= TAINT_RUN_LENGTH) {
      const runs = this.#runHashes();
      let found: number | undefined;
      // A hash met is checked against the text itself: a collision marks nothing.
      eachRunHash(argument, (hash, start) => {
        if (runs.has(hash) && this.#text.includes(argument.slice(start, start + TAINT_RUN_LENGTH))) found = start;
        return found !== undefined;
      });
      if (found !== undefined) return this.#longestFrom(argument, found);
    }
    for (const host of argumentHosts) if (this.#hosts.has(host)) return host;
    return undefined;
  }

  #runHashes(): Set<number> {
    if (this.#runs === undefined) {
      const runs = new Set<number>();
      eachRunHash(this.#text, (hash) => {
        runs.add(hash);
      });
      this.#runs = runs;
    }
    return this.#runs;
  }

  /** The run of the text starting at `start` in `argument`, as far as it goes up to MAX_EXCERPT_LENGTH characters. */
  #longestFrom(argument: string, start: number): string {
    let end = start + TAINT_RUN_LENGTH;
    while (end < argument.length && end - start < MAX_EXCERPT_LENGTH && this.#text.includes(argument.slice(start, end + 1))) end += 1;
    return argument.slice(start, end).trim();
  }
}

/** The string values in a tool call's input, at any depth, normalised. */
export function argumentStrings(input: unknown): string[] {
  const found: string[] = [];
  const visit = (value: unknown, depth: number): void => {
    if (typeof value === 'string') found.push(normaliseText(value));
    else if (depth < 16 && Array.isArray(value)) for (const item of value) visit(item, depth + 1);
    else if (depth < 16 && typeof value === 'object' && value !== null) for (const item of Object.values(value)) visit(item, depth + 1);
  };
  visit(input, 0);
  return found;
}
