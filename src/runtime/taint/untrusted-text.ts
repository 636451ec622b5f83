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
    // 30 bits, so that V8 keeps them as small integers in the map (many times faster than doubles).
    if (index >= TAINT_RUN_LENGTH - 1 && visit(hash & 0x3fffffff, index - TAINT_RUN_LENGTH + 1) === true) return;
  }
}

/**
 * A string argument of a call, normalised, with the hashes of its runs (the first place each
 * starts) and the hosts of its URLs: made once per check and matched against every untrusted
 * text of the turn. The argument is indexed, not the texts: arguments are short next to the pages
 * a turn reads, and a turn keeps no index between its calls.
 */
export class CallArgument {
  readonly text: string;
  readonly hosts: ReadonlySet<string>;
  readonly runs = new Map<number, number>();

  constructor(normalised: string) {
    this.text = normalised;
    this.hosts = hostsIn(normalised);
    eachRunHash(normalised, (hash, start) => {
      if (!this.runs.has(hash)) this.runs.set(hash, start);
    });
  }
}

/** A piece of untrusted text, normalised, with where it came from. */
export class UntrustedText {
  readonly source: TaintSource;
  readonly #text: string;
  readonly #hosts: Set<string>;

  constructor(source: TaintSource, text: string) {
    this.source = source;
    this.#text = normaliseText(text);
    this.#hosts = hostsIn(this.#text);
  }

  /**
   * What of the text an argument carries (by rules 1 to 3; rule 2 when `whole`, for a command), as
   * an excerpt; undefined when nothing. One pass of the rolling hash over the text.
   */
  carriedBy(argument: CallArgument, whole = false): string | undefined {
    const wanted = argument.text;
    if (whole && wanted.length >= TAINT_WHOLE_LENGTH && this.#text.includes(wanted)) return wanted;
    let excerpt: string | undefined;
    if (argument.runs.size > 0) {
      eachRunHash(this.#text, (hash, at) => {
        const start = argument.runs.get(hash);
        // A hash met is compared with the argument itself: a collision marks nothing.
        if (start !== undefined && this.#text.startsWith(wanted.slice(start, start + TAINT_RUN_LENGTH), at)) excerpt = excerptOf(wanted, start, this.#text, at);
        return excerpt !== undefined;
      });
    }
    if (excerpt !== undefined) return excerpt;
    for (const host of argument.hosts) if (this.#hosts.has(host)) return host;
    return undefined;
  }
}

/** The run both texts share from `start` in `argument` and `at` in `text`, up to MAX_EXCERPT_LENGTH characters. */
function excerptOf(argument: string, start: number, text: string, at: number): string {
  let length = TAINT_RUN_LENGTH;
  while (length < MAX_EXCERPT_LENGTH && start + length < argument.length && argument[start + length] === text[at + length]) length += 1;
  return argument.slice(start, start + length).trim();
}

/** The string values in a tool call's input, at any depth, normalised and indexed. */
export function callArguments(input: unknown): CallArgument[] {
  const found: CallArgument[] = [];
  const visit = (value: unknown, depth: number): void => {
    if (typeof value === 'string') found.push(new CallArgument(normaliseText(value)));
    else if (depth < 16 && Array.isArray(value)) for (const item of value) visit(item, depth + 1);
    else if (depth < 16 && typeof value === 'object' && value !== null) for (const item of Object.values(value)) visit(item, depth + 1);
  };
  visit(input, 0);
  return found;
}
