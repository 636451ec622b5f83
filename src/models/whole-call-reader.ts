import type * as JsoncParser from 'jsonc-parser';
import { jsoncLibrary } from '../validation/index.ts';
import { callsOf, MAX_CALL_TEXT } from './text-tool-calls.ts';

// jsonc-parser's scanner reads the JSON token by token; its token kinds are a const enum, which
// isolated modules cannot read, so the ones used are named here.
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

/**
 * Reads a streamed reply as it grows, for `localModelMiddleware`: the returned function, given
 * the text so far (each time the text before plus what came), says whether the text may still be
 * one call written whole as JSON, bare or in a ```` ```json ```` fence, as `parseTextToolCalls`
 * would read the whole reply. It says no, and no after, only once no words to come can make the
 * reply a call: a fence with another language, a reply opening with anything but `{` or `[`, what
 * is not JSON, an array holding anything but objects, a call's object (the JSON, or one of its
 * array) closed that `callsOf` does not read as a call, or text after the JSON (but a fence's end).
 * Until a call's object closes it may be one, whatever its keys so far: a key written later may
 * name the tool (`function`, or `name` again, the last counting). Each call reads only what came.
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
  /** The objects and arrays open at `read`: whether each is an array, and where it begins. */
  const open: { array: boolean; at: number }[] = [];

  /** Whether the JSON's array is the innermost open: it holds calls, each an object. */
  const inCalls = (): boolean => open.length === 1 && open[0]?.array === true;
  /** Whether a value of `kind` may stand where it begins. */
  const mayStand = (kind: number): boolean => kind === TOKEN.openBrace || !inCalls();

  /** Reads one token of `text`; false when the JSON can no longer be a call. */
  const token = (scanner: JsoncParser.JSONScanner, text: string): boolean => {
    const kind = scanner.getToken() as number;
    switch (kind) {
      case TOKEN.space:
      case TOKEN.lineBreak:
      case TOKEN.colon:
      case TOKEN.comma:
        return true;
      case TOKEN.openBrace:
      case TOKEN.openBracket:
        if (!mayStand(kind)) return false;
        open.push({ array: kind === TOKEN.openBracket, at: scanner.getTokenOffset() });
        return true;
      case TOKEN.closeBrace:
      case TOKEN.closeBracket: {
        const closed = open.pop();
        if (closed === undefined || closed.array !== (kind === TOKEN.closeBracket)) return false;
        const after = scanner.getPosition();
        if (open.length === 0) end = after;
        // The JSON, or one object of its array, is whole: a call or not as the parser reads it.
        const call = open.length === 0 || inCalls();
        return !call || callsOf(text.slice(closed.at, after), toolNames) !== undefined;
      }
      case TOKEN.string:
        return (scanner.getTokenError() as number) === NO_SCAN_ERROR && mayStand(kind);
      case TOKEN.null:
      case TOKEN.true:
      case TOKEN.false:
      case TOKEN.number:
        return mayStand(kind);
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
    const scanner = jsoncLibrary().createScanner(text, false);
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
      if (!token(scanner, text)) return false;
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
