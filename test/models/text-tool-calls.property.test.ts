import type { LanguageModelV4, LanguageModelV4CallOptions, LanguageModelV4StreamPart } from '@ai-sdk/provider';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { localModelMiddleware } from '../../src/models/local-model-middleware.ts';
import { parseTextToolCalls } from '../../src/models/text-tool-calls.ts';
import { wholeCallReader } from '../../src/models/whole-call-reader.ts';

/**
 * What a local model's streamed reply shows never differs from what the whole reply is: fast-check
 * writes tool calls as models write them as text (tagged, bare, fenced, arrays of them, OpenAI's
 * `function` form, keys in any order and written twice, white space, escapes), and each is read as
 * it grows, part by part, against `parseTextToolCalls` reading it whole.
 */

const TOOLS = new Set(['weather', 'clock']);
const RUNS = { numRuns: 300, seed: 20261207 };

/** JSON white space between tokens. */
const space = fc.constantFrom('', ' ', '\n', '\t', '\r\n', '  ');
/** Strings with what must be escaped, fences, braces and text that is not ASCII (no marker can be spelt). */
const text = fc.string({
  unit: fc.constantFrom('a', 'Z', ' ', '"', '\\', '\n', '\t', '`', '{', '}', '[', ']', ':', ',', '/', 'é', '😀', '\u2028', '\u0001'),
  maxLength: 8,
});
const scalar = fc.oneof(text, fc.integer({ min: -1000, max: 1000 }), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.boolean(), fc.constant(null));
const value = fc.oneof(scalar, fc.array(scalar, { maxLength: 3 }), fc.dictionary(text, scalar, { maxKeys: 3 }));
const input = fc.dictionary(text, value, { maxKeys: 4 });

/** An object's text from its entries, in their order and with `gap` between tokens (so keys may repeat). */
const objectText = (entries: readonly (readonly [string, string])[], gap: readonly string[]): string => {
  const at = (index: number): string => gap[index % gap.length] ?? '';
  const body = entries.map(([key, json], index) => `${at(index * 3)}${JSON.stringify(key)}${at(index * 3 + 1)}:${at(index * 3 + 2)}${json}`);
  return `{${body.join(',')}${at(entries.length * 3)}}`;
};

/** Keys calls carry besides their own (ids, indexes), each with its value. */
const extraKeys = fc.subarray<[string, string]>([
  ['index', '0'],
  ['id', '"call_1"'],
  ['call_id', '"a"'],
  ['tool_call_id', '"b"'],
  ['type', '"function"'],
]);

/** One call's JSON: `{name, arguments | parameters}` or `{function: {name, arguments}}`, keys shuffled, some written twice. */
const call = fc
  .record({
    tool: fc.constantFrom(...TOOLS),
    input,
    inputAs: fc.constantFrom('object', 'string', 'none'),
    inputKey: fc.constantFrom('arguments', 'parameters'),
    openAi: fc.boolean(),
    // A name written before the one that counts: JSON.parse keeps the last (or `function`'s name wins).
    earlierName: fc.option(fc.constantFrom('nope', 'weather', ''), { nil: undefined }),
    extra: extraKeys,
    order: fc.nat(),
    gap: fc.array(space, { minLength: 1, maxLength: 6 }),
    indent: fc.constantFrom(0, 2),
  })
  .map(({ tool, input, inputAs, inputKey, openAi, earlierName, extra, order, gap, indent }) => {
    const inputJson = JSON.stringify(input, null, indent);
    const inputEntry: [string, string][] = inputAs === 'none' ? [] : [[inputKey, inputAs === 'string' ? JSON.stringify(inputJson) : inputJson]];
    const name: [string, string] = ['name', JSON.stringify(tool)];
    const entries: [string, string][] = [
      ...extra,
      ...(openAi ? [['function', objectText([name, ...inputEntry], gap)] as [string, string]] : [name, ...inputEntry]),
    ];
    const turn = order % entries.length;
    const keys = [...entries.slice(turn), ...entries.slice(0, turn)];
    if (earlierName !== undefined) {
      // A name the tool is not given by: before the one that counts (the last), or beside `function`.
      const earlier: [string, string] = ['name', JSON.stringify(earlierName)];
      if (openAi) keys.splice(order % (keys.length + 1), 0, earlier);
      else keys.splice(0, keys.length, earlier, ...keys.filter(([key]) => key !== 'name'), name);
    }
    return { json: objectText(keys, gap), tool, input: inputAs === 'none' ? {} : (JSON.parse(inputJson) as unknown) };
  });

const calls = fc.array(call, { minLength: 1, maxLength: 3 });

/** A reply that is calls written whole as JSON: bare or fenced, one object or an array. */
const wholeReply = fc
  .record({ calls, array: fc.boolean(), fence: fc.constantFrom(undefined, '```', '```json'), lead: space, inner: space, tail: space })
  .map(({ calls, array, fence, lead, inner, tail }) => {
    const listed = array ? calls : calls.slice(0, 1);
    const json = array ? `[${inner}${listed.map((each) => each.json).join(`,${inner}`)}${inner}]` : listed[0]!.json;
    const reply = fence === undefined ? `${lead}${json}${tail}` : `${lead}${fence}${inner === '' ? '\n' : inner}${json}${tail}\`\`\`${tail}`;
    return { reply, called: listed };
  });

/** A reply with tagged calls, words around them. */
const taggedReply = fc
  .record({
    calls,
    form: fc.constantFrom('tool_call', 'python_tag', 'TOOL_CALLS'),
    before: fc.constantFrom('', 'Let me check.\n', '{"x": 1} '),
    after: fc.constantFrom('', ' Done.'),
  })
  .map(({ calls, form, before, after }) => {
    if (form === 'tool_call') return { reply: before + calls.map((each) => `<tool_call>${each.json}</tool_call>`).join('\n') + after, called: calls };
    if (form === 'python_tag') return { reply: `${before}<|python_tag|>${calls[0]!.json}<|eom_id|>`, called: calls.slice(0, 1) };
    return { reply: `${before}[TOOL_CALLS][${calls.map((each) => each.json).join(', ')}]`, called: calls };
  });

/** Replies that are no call: calls naming a tool not offered, in a fence of another language, or with words after them. */
const notACall = fc.record({ whole: wholeReply, spoil: fc.constantFrom(' and prose.', '\n```', 'x', ',', 'name', 'fence') }).map(({ whole, spoil }) => {
  if (spoil === 'name') return whole.reply.replace(/"(?:weather|clock)"/g, '"shell"');
  if (spoil === 'fence') return `\`\`\`python\n${whole.reply}\n\`\`\``;
  return whole.reply.replace(/\s*$/, '') + spoil;
});

/** Splits `text` where `cuts` say (as a server's chunks come). */
const chunked = (text: string, cuts: readonly number[]): string[] => {
  const at = [...new Set(cuts.map((cut) => cut % (text.length + 1)))].sort((a, b) => a - b);
  return [0, ...at, text.length]
    .slice(1)
    .map((end, index, ends) => text.slice(index === 0 ? 0 : ends[index - 1], end))
    .filter((part) => part !== '');
};

/** Streams `deltas` as one text block through the middleware, with the tools offered: the text shown and the calls made. */
async function streamed(deltas: readonly string[]): Promise<{ shown: string; calls: { toolName: string; input: unknown }[] }> {
  const parts: LanguageModelV4StreamPart[] = [
    { type: 'text-start', id: 't' },
    ...deltas.map((delta): LanguageModelV4StreamPart => ({ type: 'text-delta', id: 't', delta })),
    { type: 'text-end', id: 't' },
    {
      type: 'finish',
      finishReason: { unified: 'stop', raw: 'stop' },
      usage: {
        inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
        outputTokens: { total: 1, text: 1, reasoning: 0 },
      },
    },
  ];
  const params = { prompt: [], tools: [...TOOLS].map((name) => ({ type: 'function', name, inputSchema: {} })) } as unknown as LanguageModelV4CallOptions;
  const { stream } = await localModelMiddleware('qwen3:8b').wrapStream!({
    doStream: () =>
      Promise.resolve({ stream: new ReadableStream({ start: (controller) => (parts.forEach((part) => controller.enqueue(part)), controller.close()) }) }),
    doGenerate: () => Promise.reject(new Error('not generated')),
    params,
    model: {} as LanguageModelV4,
  });
  let shown = '';
  const made: { toolName: string; input: unknown }[] = [];
  for await (const part of stream) {
    if (part.type === 'text-delta') shown += part.delta;
    if (part.type === 'tool-call') made.push({ toolName: part.toolName, input: JSON.parse(part.input) as unknown });
  }
  return { shown, calls: made };
}

const words = (text: string): string => text.replace(/\s+/g, ' ').trim();

describe('a local model reply read as it grows', () => {
  it('every reply written as calls is read whole as those calls', () => {
    fc.assert(
      fc.property(fc.oneof(wholeReply, taggedReply), ({ reply, called }) => {
        expect(parseTextToolCalls(reply, TOOLS)?.calls).toEqual(called.map((each) => ({ toolName: each.tool, input: each.input })));
      }),
      RUNS,
    );
  });

  it('wholeCallReader() says every beginning of a reply that is calls written whole as JSON may still be a call', () => {
    fc.assert(
      fc.property(wholeReply, ({ reply }) => {
        const reader = wholeCallReader(TOOLS);
        for (let length = 0; length <= reply.length; length++) {
          if (!reader(reply.slice(0, length))) expect.fail(`ruled out at ${JSON.stringify(reply.slice(0, length))} of ${JSON.stringify(reply)}`);
        }
      }),
      RUNS,
    );
  });

  it('a streamed reply shows no text of its calls and makes them, in whatever parts it comes, and shows a reply that is no call whole', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          wholeReply.map((each) => each.reply),
          taggedReply.map((each) => each.reply),
          notACall,
        ),
        fc.array(fc.nat(), { maxLength: 12 }),
        async (reply, cuts) => {
          const whole = parseTextToolCalls(reply, TOOLS);
          const { shown, calls } = await streamed(chunked(reply, cuts));
          if (whole === undefined) {
            expect(shown).toBe(reply);
            expect(calls).toEqual([]);
          } else {
            expect(words(shown)).toBe(words(whole.text));
            expect(calls).toEqual(whole.calls);
          }
        },
      ),
      RUNS,
    );
  });
});
