import type { AssistantModelMessage, ModelMessage, ToolCallPart, ToolModelMessage, ToolResultPart } from 'ai';
import { describe, expect, it } from 'vitest';
import {
  CONVERSATION_CONTINUES_TEXT,
  dropOrphanedToolResults,
  ensureAlternation,
  estimateHistoryTokens,
  estimateMessageTokens,
  fixToolCallReferences,
  HISTORY_TRUNCATED_TEXT,
  INTERRUPTED_TOOL_CALL_TEXT,
  mergeConsecutiveSameRole,
  removeEmptyMessages,
  repairSession,
  truncateToContextWindow,
  validateContentBlocks,
} from '../../src/runtime/index.ts';

const system = (content: string): ModelMessage => ({ role: 'system', content });
const user = (content: string): ModelMessage => ({ role: 'user', content });
const assistant = (...content: AssistantModelMessage['content'] & unknown[]): ModelMessage => ({ role: 'assistant', content });
const say = (content: string): ModelMessage => ({ role: 'assistant', content });
const call = (toolCallId: string, toolName = 'web_fetch'): ToolCallPart => ({ type: 'tool-call', toolCallId, toolName, input: {} });
const result = (toolCallId: string, value = 'ok', toolName = 'web_fetch'): ToolResultPart => ({
  type: 'tool-result',
  toolCallId,
  toolName,
  output: { type: 'text', value },
});
const tool = (...content: ToolModelMessage['content']): ModelMessage => ({ role: 'tool', content });
const interrupted = (toolCallId: string, toolName = 'web_fetch'): ToolResultPart => ({
  type: 'tool-result',
  toolCallId,
  toolName,
  output: { type: 'error-text', value: INTERRUPTED_TOOL_CALL_TEXT },
});
/** Treats malformed stored data as a history, as it would arrive from a corrupt session row. */
const corrupt = (messages: unknown[]): ModelMessage[] => messages as ModelMessage[];

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    for (const member of Object.values(value)) deepFreeze(member);
    Object.freeze(value);
  }
  return value;
}

describe('dropOrphanedToolResults()', () => {
  it('drops a tool result whose call is not in the history', () => {
    const history = [user('hi'), tool(result('ghost'))];
    expect(dropOrphanedToolResults(history)).toEqual({ messages: [user('hi'), tool()], changed: 1 });
  });

  it('drops a tool result that comes before its call', () => {
    const history = [user('hi'), tool(result('c1')), assistant(call('c1'))];
    expect(dropOrphanedToolResults(history).messages[1]).toEqual(tool());
  });

  it('drops a second result for a call already answered', () => {
    const history = [user('hi'), assistant(call('c1')), tool(result('c1', 'first'), result('c1', 'second'))];
    expect(dropOrphanedToolResults(history)).toEqual({
      messages: [user('hi'), assistant(call('c1')), tool(result('c1', 'first'))],
      changed: 1,
    });
  });

  it('drops an orphaned provider-executed result inside an assistant message', () => {
    const history = [user('hi'), assistant({ type: 'text', text: 'x' }, result('nowhere'))];
    expect(dropOrphanedToolResults(history).messages[1]).toEqual(assistant({ type: 'text', text: 'x' }));
  });

  it('keeps matched results and the same message objects when nothing is orphaned', () => {
    const history = [user('hi'), assistant(call('c1')), tool(result('c1'))];
    const repaired = dropOrphanedToolResults(history);
    expect(repaired.changed).toBe(0);
    expect(repaired.messages.every((message, index) => message === history[index])).toBe(true);
  });
});

describe('removeEmptyMessages()', () => {
  it('removes messages with empty or blank text, no parts, only blank text parts, or no content', () => {
    const history = corrupt([
      user('hi'),
      say(''),
      user('   \n'),
      tool(),
      { role: 'assistant', content: [{ type: 'text', text: ' ' }] },
      { role: 'user' },
      say('hello'),
    ]);
    expect(removeEmptyMessages(history)).toEqual({ messages: [user('hi'), say('hello')], changed: 5 });
  });

  it('keeps a message whose only part is an image', () => {
    const history: ModelMessage[] = [{ role: 'user', content: [{ type: 'image', image: 'aGk=' }] }];
    expect(removeEmptyMessages(history)).toEqual({ messages: history, changed: 0 });
  });
});

describe('mergeConsecutiveSameRole()', () => {
  it('joins two consecutive user strings with a blank line', () => {
    expect(mergeConsecutiveSameRole([user('one'), user('two')])).toEqual({ messages: [user('one\n\ntwo')], changed: 1 });
  });

  it('concatenates parts in order when either message has parts', () => {
    const history: ModelMessage[] = [user('look'), { role: 'user', content: [{ type: 'image', image: 'aGk=' }] }];
    expect(mergeConsecutiveSameRole(history).messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'look' },
          { type: 'image', image: 'aGk=' },
        ],
      },
    ]);
  });

  it('merges a run of three assistant messages into one, counting two merges', () => {
    const history = [user('go'), say('a'), assistant(call('c1')), say('b')];
    expect(mergeConsecutiveSameRole(history)).toEqual({
      messages: [user('go'), assistant({ type: 'text', text: 'a' }, call('c1'), { type: 'text', text: 'b' })],
      changed: 2,
    });
  });

  it('merges consecutive tool messages answering the same assistant turn', () => {
    const history = [user('go'), assistant(call('c1'), call('c2')), tool(result('c1')), tool(result('c2'))];
    expect(mergeConsecutiveSameRole(history).messages.at(-1)).toEqual(tool(result('c1'), result('c2')));
  });

  it('does not merge tool messages of different assistant turns', () => {
    const history = [user('go'), assistant(call('c1')), tool(result('c1')), assistant(call('c2')), tool(result('c2'))];
    expect(mergeConsecutiveSameRole(history)).toEqual({ messages: history, changed: 0 });
  });

  it('keeps the providerOptions of the first merged message', () => {
    const history: ModelMessage[] = [{ role: 'user', content: 'a', providerOptions: { anthropic: { cacheControl: { type: 'ephemeral' } } } }, user('b')];
    expect(mergeConsecutiveSameRole(history).messages[0]?.providerOptions).toEqual({
      anthropic: { cacheControl: { type: 'ephemeral' } },
    });
  });
});

describe('validateContentBlocks()', () => {
  it('drops parts of an unknown type', () => {
    const history = corrupt([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'hi' },
          { type: 'hologram', data: 1 },
        ],
      },
    ]);
    expect(validateContentBlocks(history)).toEqual({
      messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }],
      changed: 1,
    });
  });

  it('drops a tool call without a tool name and a tool result without an output', () => {
    const history = corrupt([
      user('go'),
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'x' },
          { type: 'tool-call', toolCallId: 'c1', input: {} },
        ],
      },
      { role: 'tool', content: [result('c0'), { type: 'tool-result', toolCallId: 'c1', toolName: 'web_fetch' }] },
    ]);
    expect(validateContentBlocks(history)).toEqual({
      messages: [user('go'), assistant({ type: 'text', text: 'x' }), tool(result('c0'))],
      changed: 2,
    });
  });

  it('drops a part its role cannot carry, such as a tool call in a user message', () => {
    const history = corrupt([{ role: 'user', content: [{ type: 'text', text: 'hi' }, call('c1')] }]);
    expect(validateContentBlocks(history).messages).toEqual([{ role: 'user', content: [{ type: 'text', text: 'hi' }] }]);
  });

  it('drops empty text parts and a file part without a media type', () => {
    const history = corrupt([
      {
        role: 'user',
        content: [
          { type: 'text', text: '' },
          { type: 'file', data: 'aGk=' },
          { type: 'text', text: 'hi' },
        ],
      },
    ]);
    expect(validateContentBlocks(history)).toEqual({
      messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }],
      changed: 2,
    });
  });

  it('drops a tool result whose output has an unknown type', () => {
    const bad = { ...result('c1'), output: { type: 'telepathy', value: 'x' } };
    expect(validateContentBlocks(corrupt([user('go'), { role: 'tool', content: [bad] }]))).toEqual({
      messages: [user('go')],
      changed: 2,
    });
  });

  it('drops messages with an unknown role, system parts, string tool content and null entries', () => {
    const history = corrupt([
      { role: 'narrator', content: 'meanwhile' },
      { role: 'system', content: [{ type: 'text', text: 'x' }] },
      { role: 'tool', content: 'done' },
      { role: 'toString', content: 'x' },
      null,
      user('hi'),
    ]);
    expect(validateContentBlocks(history)).toEqual({ messages: [user('hi')], changed: 5 });
  });

  it('keeps every valid part type unchanged', () => {
    const history: ModelMessage[] = [
      system('be good'),
      {
        role: 'user',
        content: [
          { type: 'text', text: 'a' },
          { type: 'image', image: 'aGk=' },
          { type: 'file', data: 'aGk=', mediaType: 'text/plain' },
        ],
      },
      assistant({ type: 'reasoning', text: '' }, { type: 'text', text: 'b' }, call('c1'), {
        type: 'tool-approval-request',
        approvalId: 'a1',
        toolCallId: 'c1',
      }),
      tool({ type: 'tool-approval-response', approvalId: 'a1', approved: true }, result('c1')),
    ];
    const repaired = validateContentBlocks(history);
    expect(repaired.changed).toBe(0);
    expect(repaired.messages).toEqual(history);
  });
});

describe('fixToolCallReferences()', () => {
  it('gives a tool call without a result a synthetic "tool call interrupted" error result', () => {
    const history = [user('go'), assistant(call('c1')), user('are you there?')];
    expect(fixToolCallReferences(history)).toEqual({
      messages: [user('go'), assistant(call('c1')), tool(interrupted('c1')), user('are you there?')],
      changed: 1,
    });
  });

  it('adds the missing result to the tool message that answers the other calls', () => {
    const history = [user('go'), assistant(call('c1'), call('c2', 'search')), tool(result('c1'))];
    expect(fixToolCallReferences(history).messages.at(-1)).toEqual(tool(result('c1'), interrupted('c2', 'search')));
  });

  it('drops a result whose id is missing or answers a call of another turn', () => {
    const history = [user('go'), assistant(call('c1')), tool(result('c1')), assistant(call('c2')), tool(result(''), result('c1'), result('c2'))];
    expect(fixToolCallReferences(history)).toEqual({
      messages: [user('go'), assistant(call('c1')), tool(result('c1')), assistant(call('c2')), tool(result('c2'))],
      changed: 2,
    });
  });

  it('drops a tool message that does not follow an assistant message', () => {
    const history = [user('go'), assistant(call('c1')), tool(result('c1')), user('and?'), tool(result('c1'))];
    expect(fixToolCallReferences(history)).toEqual({ messages: history.slice(0, 4), changed: 1 });
  });

  it('drops a tool call with an empty id, which no result can answer', () => {
    const history = [user('go'), assistant({ type: 'text', text: 'x' }, call(''))];
    expect(fixToolCallReferences(history)).toEqual({
      messages: [user('go'), assistant({ type: 'text', text: 'x' })],
      changed: 1,
    });
  });

  it('leaves provider-executed calls and a call awaiting approval in the last turn alone', () => {
    const history = [
      user('go'),
      assistant({ ...call('p1'), providerExecuted: true }, result('p1'), call('c1'), {
        type: 'tool-approval-request',
        approvalId: 'a1',
        toolCallId: 'c1',
      }),
    ];
    expect(fixToolCallReferences(history)).toEqual({ messages: history, changed: 0 });
  });

  it('interrupts a call whose approval was requested in an earlier turn and never answered', () => {
    const history = [user('go'), assistant(call('c1'), { type: 'tool-approval-request', approvalId: 'a1', toolCallId: 'c1' }), user('never mind'), say('ok')];
    expect(fixToolCallReferences(history).messages[2]).toEqual(tool(interrupted('c1')));
  });

  it('keeps a valid history and its message objects as they are', () => {
    const history = [user('go'), assistant(call('c1')), tool(result('c1')), say('done')];
    const repaired = fixToolCallReferences(history);
    expect(repaired.changed).toBe(0);
    expect(repaired.messages.every((message, index) => message === history[index])).toBe(true);
  });
});

describe('ensureAlternation()', () => {
  it('puts a user message in front of a history that starts with the assistant, after the system prompt', () => {
    expect(ensureAlternation([system('be good'), say('hello again')])).toEqual({
      messages: [system('be good'), user(CONVERSATION_CONTINUES_TEXT), say('hello again')],
      changed: 1,
    });
  });

  it('turns a system message after the start into user text and merges it with its user neighbour', () => {
    const history = [system('be good'), user('hi'), say('hello'), system('now be brief'), user('why?')];
    expect(ensureAlternation(history)).toEqual({
      messages: [system('be good'), user('hi'), say('hello'), user('now be brief\n\nwhy?')],
      changed: 2,
    });
  });

  it('merges same-role neighbours left behind by earlier phases', () => {
    expect(ensureAlternation([user('a'), say('b'), say('c')]).messages).toEqual([user('a'), say('b\n\nc')]);
  });

  it('changes nothing in a history that already alternates', () => {
    const history = [system('s'), system('t'), user('a'), assistant(call('c1')), tool(result('c1')), say('b'), user('c')];
    expect(ensureAlternation(history).changed).toBe(1); // the two leading system messages merge
    expect(ensureAlternation(history.slice(1))).toEqual({ messages: history.slice(1), changed: 0 });
  });
});

describe('truncateToContextWindow()', () => {
  const oneTokenEach = { estimateTokens: () => 1 };

  it('changes nothing without a context window or under it', () => {
    const history = [user('a'), say('b'), user('c')];
    expect(truncateToContextWindow(history)).toEqual({ messages: history, changed: 0 });
    expect(truncateToContextWindow(history, { ...oneTokenEach, maxContextTokens: 3 })).toEqual({ messages: history, changed: 0 });
  });

  it('drops the oldest messages, keeps the system prompt and the most recent ones', () => {
    const history = [system('s'), user('1'), say('2'), user('3'), say('4'), user('5')];
    expect(truncateToContextWindow(history, { ...oneTokenEach, maxContextTokens: 4 })).toEqual({
      messages: [system('s'), user('3'), say('4'), user('5')],
      changed: 2,
    });
  });

  it('cuts before the assistant message of a tool call and puts a truncation note in front', () => {
    const history = [user('go'), assistant(call('c1')), tool(result('c1')), assistant(call('c2')), tool(result('c2'))];
    expect(truncateToContextWindow(history, { ...oneTokenEach, maxContextTokens: 3 })).toEqual({
      messages: [user(HISTORY_TRUNCATED_TEXT), assistant(call('c2')), tool(result('c2'))],
      changed: 4, // three dropped, one inserted
    });
  });

  it('never separates a tool call from its result, even when only the result would fit', () => {
    const history = [user('go'), assistant(call('c1')), tool(result('c1'))];
    const estimateTokens = (message: ModelMessage) => (message.role === 'assistant' ? 5 : 1);
    expect(truncateToContextWindow(history, { estimateTokens, maxContextTokens: 3 })).toEqual({
      messages: [user(HISTORY_TRUNCATED_TEXT), assistant(call('c1')), tool(result('c1'))],
      changed: 2,
    });
  });

  it('keeps the newest turn even when it alone exceeds the window', () => {
    const history = [user('old'), say('older reply'), user('x'.repeat(400))];
    expect(truncateToContextWindow(history, { maxContextTokens: 10 })).toEqual({ messages: [user('x'.repeat(400))], changed: 2 });
  });

  it('estimates about four characters per token by default', () => {
    expect(estimateMessageTokens(user('abcdefgh'))).toBe(2);
    expect(estimateMessageTokens(user('abcdefghi'))).toBe(3);
    // A tool call is counted by its JSON; a text part by its text alone.
    expect(estimateMessageTokens(assistant(call('c1')))).toBe(Math.ceil(JSON.stringify(call('c1')).length / 4));
    expect(estimateMessageTokens({ role: 'assistant', content: [{ type: 'text', text: 'abcdefgh' }] })).toBe(2);
  });
});

describe('repairSession()', () => {
  it('reports the seven phases in the order of the spec', () => {
    expect(repairSession([user('hi')]).report.map((entry) => entry.phase)).toEqual([
      'drop-orphaned-tool-results',
      'remove-empty-messages',
      'merge-consecutive-same-role',
      'validate-content-blocks',
      'fix-tool-call-references',
      'ensure-alternation',
      'truncate-to-context-window',
    ]);
  });

  it('returns a valid history unchanged, with nothing changed in any phase', () => {
    const history = [system('s'), user('go'), assistant(call('c1')), tool(result('c1')), say('done'), user('thanks')];
    const { messages, report } = repairSession(history, { maxContextTokens: 100_000 });
    expect(messages).toEqual(history);
    expect(report.every((entry) => entry.changed === 0)).toBe(true);
  });

  it('repairs a corrupt history into one providers accept, without touching the input', () => {
    const history = deepFreeze(
      corrupt([
        system('be good'),
        tool(result('ghost')), // orphaned
        say('resuming'), // history starts with the assistant
        user(''), // empty
        user('fetch it'),
        user('please'), // same role twice
        { role: 'assistant', content: [{ type: 'text', text: 'on it' }, call('c1'), { type: 'mystery' }] }, // bad part
        user('hurry'), // the call was interrupted
        say('fetched'),
      ]),
    );
    const snapshot = structuredClone(history);
    const { messages, report } = repairSession(history);
    expect(messages).toEqual([
      system('be good'),
      user(CONVERSATION_CONTINUES_TEXT),
      say('resuming'),
      user('fetch it\n\nplease'),
      assistant({ type: 'text', text: 'on it' }, call('c1')),
      tool(interrupted('c1')),
      user('hurry'),
      say('fetched'),
    ]);
    expect(report.map((entry) => entry.changed)).toEqual([1, 2, 1, 1, 1, 1, 0]);
    expect(history).toEqual(snapshot);
  });

  it('removes a tool message emptied by an invalid call before pairing results', () => {
    const history = corrupt([user('go'), { role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'c1' }] }, tool(result('c1'))]);
    expect(repairSession(history).messages).toEqual([user('go')]);
  });

  it('truncates to the context window last, after the other repairs', () => {
    const history = [user('1'), say('2'), user('3'), assistant(call('c1'))];
    const { messages } = repairSession(history, { maxContextTokens: 3, estimateTokens: () => 1 });
    expect(messages).toEqual([user('3'), assistant(call('c1')), tool(interrupted('c1'))]);
  });
});

describe('estimateHistoryTokens()', () => {
  it('counts only what follows the messages already counted, and everything when the count is past the end', () => {
    const history = [user('a'.repeat(40)), user('b'.repeat(80)), user('c'.repeat(4))];
    expect(estimateHistoryTokens(history)).toBe(10 + 20 + 1);
    // The first two are taken as counted (here on purpose at a different figure, to show they are not read).
    expect(estimateHistoryTokens(history, { count: 2, tokens: 100 })).toBe(101);
    expect(estimateHistoryTokens(history.slice(0, 1), { count: 2, tokens: 100 })).toBe(10);
  });

  it('lets truncateToContextWindow() cut as it would after counting every message itself', () => {
    const history = [
      user('one '.repeat(40)),
      { role: 'assistant', content: 'ok' } as ModelMessage,
      user('two '.repeat(40)),
      { role: 'assistant', content: 'ok' } as ModelMessage,
      user('three'),
    ];
    const known = { count: 4, tokens: estimateHistoryTokens(history.slice(0, 4)) };
    for (const maxContextTokens of [10, 45, 90, 1_000]) {
      expect(truncateToContextWindow(history, { maxContextTokens, knownTokens: known })).toEqual(truncateToContextWindow(history, { maxContextTokens }));
    }
  });
});
