import { createRequire } from 'node:module';
import type * as JsoncParser from 'jsonc-parser';
import { CALL_KEYS, MAX_CALL_TEXT } from './text-tool-calls.ts';

// jsonc-parser's scanner reads the JSON token by token, loaded with the first reply that opens
// with JSON; its token kinds are a const enum, which isolated modules cannot read, so the
// ones used are named here.
let jsonc: typeof JsoncParser | undefined;
const jsoncParser = (): typeof JsoncParser => (jsonc ??= createRequire(import.meta.url)('jsonc-parser') as typeof JsoncParser);
const TOKEN = {
  openBrace: 1,
  closeBrace: 2,
  openBracket: 3,
  closeBracket: 4,
  comma: 5,
  colon: 6,
  null: 7,
  true: 8,
  false: 9,
  string: 10,
  number: 11,
  lineBreak: 14,
  space: 15,
  end: 17,
} as const;
const NO_SCAN_ERROR = 0;

/** Where the white space from `from` in `text` ends. */
function spaceEnd(text: string, from: number): number {
  const space = /\s*/y;
  space.lastIndex = from;
  space.exec(text);
  return space.lastIndex;
}

/** Whether a quote not escaped by a backslash is in `text` from `from` on. */
function endingQuote(text: string, from: number): boolean {
  for (let at = text.indexOf('"', from); at !== -1; at = text.indexOf('"', at + 1)) {
    let backslashes = 0;
    while (text[at - 1 - backslashes] === '\\') backslashes += 1;
    if (backslashes % 2 === 0) return true;
  }
  return false;
}

/** An object or array open in the JSON read so far, and what it is to a call. */
interface Open {
  array: boolean;
  /** `calls`: the array of calls; `call`: one call's object; `function`: the object of its `function` key. */
  role: 'calls' | 'call' | 'function' | 'other';
  /** The keys read (an object), or the calls (the array of calls). */
  count: number;
  /** The key whose value comes next, undefined where a key comes next. */
  key: string | undefined;
}

/**
 * Reads a streamed reply as it grows, for `localModelMiddleware`: the returned function, given
 * the text so far (each time the text before plus what came), says whether the text may still be
 * one call written whole as JSON, bare or in a ```` ```json ```` fence (as `parseTextToolCalls`
 * reads it). It says no, and no after, once the text cannot be one: a fence with
 * another language, a reply opening with anything but `{` or `[`, an array holding anything but
 * objects, a call's object opening with a key no call opens with (`CALL_KEYS`), a `name` that is not
 * one of `toolNames`, or text after the JSON (but a fence's end). Each call reads only what came.
 */
export function wholeCallReader(toolNames: ReadonlySet<string>): (text: string) => boolean {
  let ruledOut = false;
  let fenced = false;
  /** Where the JSON begins, once known; the text is read up to `read`, where a token begins. */
  let read: number | undefined;
  /** The text's length when a string still open at `read` was last scanned. */
  let scannedTo = 0;
  /** Where the JSON ends, once it has. */
  let end: number | undefined;
  const open: Open[] = [];

  /** Reads one value's token (or an object's or array's start) into the open object or array. */
  const value = (kind: number, text: string | undefined): boolean => {
    const top = open.at(-1);
    const array = kind === TOKEN.openBracket;
    if (top?.role === 'calls') {
      if (kind !== TOKEN.openBrace) return false;
      top.count += 1;
      open.push({ array: false, role: 'call', count: 0, key: undefined });
      return true;
    }
    if (top === undefined && kind !== TOKEN.openBrace && !array) return false;
    if ((top?.role === 'call' || top?.role === 'function') && top.key === 'name' && (text === undefined || !toolNames.has(text))) return false;
    if (kind === TOKEN.openBrace || array) {
      const role = top === undefined ? (array ? 'calls' : 'call') : top.role === 'call' && top.key === 'function' && !array ? 'function' : 'other';
      open.push({ array, role, count: 0, key: undefined });
    }
    return true;
  };

  /** Reads one token; false when the JSON can no longer be a call. */
  const token = (scanner: JsoncParser.JSONScanner): boolean => {
    const kind = scanner.getToken() as number;
    const top = open.at(-1);
    switch (kind) {
      case TOKEN.space:
      case TOKEN.lineBreak:
      case TOKEN.colon:
        return true;
      case TOKEN.comma:
        if (top !== undefined && !top.array) top.key = undefined;
        return true;
      case TOKEN.closeBrace:
      case TOKEN.closeBracket: {
        const closed = open.pop();
        if (closed === undefined || closed.array !== (kind === TOKEN.closeBracket)) return false;
        // An empty array of calls, or a call with no key, is none.
        if (closed.count === 0 && (closed.role === 'calls' || closed.role === 'call')) return false;
        if (open.length === 0) end = scanner.getPosition();
        return true;
      }
      case TOKEN.string:
        if ((scanner.getTokenError() as number) !== NO_SCAN_ERROR) return false;
        if (top !== undefined && !top.array && top.key === undefined) {
          top.key = scanner.getTokenValue();
          top.count += 1;
          return top.role !== 'call' || top.count > 1 || CALL_KEYS.has(top.key);
        }
        return value(kind, scanner.getTokenValue());
      case TOKEN.openBrace:
      case TOKEN.openBracket:
      case TOKEN.null:
      case TOKEN.true:
      case TOKEN.false:
      case TOKEN.number:
        return value(kind, undefined);
      default:
        // Comments and what is not JSON at all.
        return false;
    }
  };

  /** Where the JSON begins (undefined while the opening is still coming), or false for no call. */
  const jsonStart = (text: string): number | undefined | false => {
    const lead = spaceEnd(text, 0);
    if (lead === text.length) return undefined;
    if (text[lead] === '{' || text[lead] === '[') return lead;
    const fence = text.slice(lead, lead + 3);
    if (fence !== '```') return '```'.startsWith(fence) && lead + 3 > text.length ? undefined : false;
    const language = text.slice(lead + 3, lead + 7);
    if (language.length < 4 && 'json'.startsWith(language)) return undefined;
    const body = spaceEnd(text, lead + 3 + (language === 'json' ? 4 : 0));
    if (body === text.length) return undefined;
    fenced = true;
    return text[body] === '{' || text[body] === '[' ? body : false;
  };

  const mayBeCall = (text: string): boolean => {
    if (text.length > MAX_CALL_TEXT) return false;
    if (read === undefined) {
      const start = jsonStart(text);
      if (start === false) return false;
      if (start === undefined) return true;
      read = start;
    }
    // A string still open where the reading stopped is read again only once a quote that may end it has come.
    if (end === undefined && text[read] === '"' && !endingQuote(text, Math.max(read + 1, scannedTo))) {
      scannedTo = text.length;
      return true;
    }
    const scanner = jsoncParser().createScanner(text, false);
    scanner.setPosition(read);
    while (end === undefined && (scanner.scan() as number) !== TOKEN.end) {
      const kind = scanner.getToken() as number;
      // A token at the end of the text may go on with the next words (a string, number or keyword).
      const whole =
        kind <= TOKEN.colon ||
        kind === TOKEN.space ||
        kind === TOKEN.lineBreak ||
        (kind === TOKEN.string && (scanner.getTokenError() as number) === NO_SCAN_ERROR);
      if (scanner.getPosition() === text.length && !whole) {
        scannedTo = text.length;
        return true;
      }
      if (!token(scanner)) return false;
      read = scanner.getPosition();
    }
    // After the JSON only space, and a fence's end for a fenced reply.
    return end === undefined || (fenced ? /^\s*(?:`{0,2}|```\s*)$/ : /^\s*$/).test(text.slice(end));
  };

  return (text) => {
    ruledOut ||= !mayBeCall(text);
    return !ruledOut;
  };
}
