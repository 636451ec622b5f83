import { describe, expect, it } from 'vitest';
import { MAX_FORMATTED_LENGTH, MAX_FORMATTED_NESTING, toTelegramHtml } from '../../src/channels/telegram-format.ts';

describe('toTelegramHtml()', () => {
  it("turns a model's Markdown into the HTML Telegram shows", () => {
    const markdown =
      '# Plan\n\nSome **bold**, *italic*, ~~old~~ and `a<b`.\n\n- one\n- two, see [docs](https://example.com/?a=1&b=2)\n\n1. first\n2. second\n\n```ts\nif (a < b) go();\n```\n\n> a quote';
    expect(toTelegramHtml(markdown)).toBe(
      [
        '<b>Plan</b>',
        '',
        'Some <b>bold</b>, <i>italic</i>, <s>old</s> and <code>a&lt;b</code>.',
        '',
        '• one',
        '• two, see <a href="https://example.com/?a=1&amp;b=2">docs</a>',
        '',
        '1. first',
        '2. second',
        '',
        '<pre><code class="language-ts">if (a &lt; b) go();</code></pre>',
        '',
        '<blockquote>a quote</blockquote>',
      ].join('\n'),
    );
  });

  it('escapes markup it was not asked for, and drops links that are not web or mail links', () => {
    expect(toTelegramHtml('<script>alert(1)</script>\n\nthen [click](javascript:alert(1)) & 5 > 3')).toBe(
      '&lt;script&gt;alert(1)&lt;/script&gt;\n\nthen click &amp; 5 &gt; 3',
    );
    expect(toTelegramHtml('| a | b |\n|---|---|\n| <1> | 2 |')).toBe('<pre>a | b\n&lt;1&gt; | 2</pre>');
  });
});

describe('toTelegramHtml() bounds its own work', () => {
  const tooDeep = `cannot format a reply for Telegram: its quotes, lists, emphasis or links nest deeper than ${MAX_FORMATTED_NESTING} levels, so it is sent as plain text`;

  it('formats quotes and lists nested as deep as it allows', () => {
    expect(toTelegramHtml(`${'>'.repeat(MAX_FORMATTED_NESTING)} deep`)).toBe(
      `${'<blockquote>'.repeat(MAX_FORMATTED_NESTING)}deep${'</blockquote>'.repeat(MAX_FORMATTED_NESTING)}`,
    );
    expect(toTelegramHtml('- one\n  - two\n    - three\n\n> a **bold** quote')).toBe(
      '• one\n  • two\n    • three\n\n<blockquote>a <b>bold</b> quote</blockquote>',
    );
  });

  // Each of these overflowed `marked`'s recursion ("Maximum call stack size exceeded").
  const deep: Record<string, string> = {
    'a few thousand nested quotes': `${'> '.repeat(2000)}deep`,
    'a few thousand quote marks without spaces': `${'>'.repeat(4000)} deep`,
    'a few thousand nested list markers': `${'- '.repeat(2000)}deep`,
    'a few thousand nested numbered items': `${'1. '.repeat(1300)}deep`,
    'a few thousand nested emphasis marks': `${'*'.repeat(2000)}deep${'*'.repeat(2000)}`,
    'nested strikethrough': `${'~~a '.repeat(1000)}deep${' a~~'.repeat(1000)}`,
  };
  for (const [name, markdown] of Object.entries(deep)) {
    it(`refuses ${name} with a reason, for the caller to send as plain text`, () => {
      expect(() => toTelegramHtml(markdown)).toThrow(tooDeep);
    });
  }

  it('refuses one level past the bound', () => {
    expect(() => toTelegramHtml(`${'>'.repeat(MAX_FORMATTED_NESTING + 1)} deep`)).toThrow(tooDeep);
  });

  it(`refuses a text longer than ${MAX_FORMATTED_LENGTH} characters`, () => {
    expect(() => toTelegramHtml('a'.repeat(MAX_FORMATTED_LENGTH + 1))).toThrow(
      `cannot format a reply of ${MAX_FORMATTED_LENGTH + 1} characters for Telegram: more than ${MAX_FORMATTED_LENGTH} are sent as plain text`,
    );
  });

  it('refuses the longest nested emphasis it takes at the bound (its time once grew with the square of the length)', () => {
    // 2,700 levels in 16 KiB took seconds before the bound; now the parse stops at the bound.
    const markdown = `${'*a '.repeat(2700)}b${' a*'.repeat(2700)}`;
    expect(markdown.length).toBeLessThanOrEqual(MAX_FORMATTED_LENGTH);
    expect(() => toTelegramHtml(markdown)).toThrow(tooDeep);
  });

  it('formats the next reply as usual after refusing one', () => {
    expect(() => toTelegramHtml(`${'>'.repeat(100)} deep`)).toThrow(tooDeep);
    expect(toTelegramHtml('> **fine**')).toBe('<blockquote><b>fine</b></blockquote>');
  });
});

describe('toTelegramHtml() and nested lists', () => {
  it('puts a nested list on lines of its own under its item, indented', () => {
    expect(toTelegramHtml('1. one\n   - two\n2. three')).toBe('1. one\n  • two\n2. three');
  });
});
