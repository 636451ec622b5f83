import { describe, expect, it } from 'vitest';
import { toTelegramHtml } from '../../src/channels/telegram-format.ts';

describe('toTelegramHtml()', () => {
  it('turns a model\'s Markdown into the HTML Telegram shows', () => {
    const markdown = '# Plan\n\nSome **bold**, *italic*, ~~old~~ and `a<b`.\n\n- one\n- two, see [docs](https://example.com/?a=1&b=2)\n\n1. first\n2. second\n\n```ts\nif (a < b) go();\n```\n\n> a quote';
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
    expect(toTelegramHtml('<script>alert(1)</script>\n\nthen [click](javascript:alert(1)) & 5 > 3')).toBe('&lt;script&gt;alert(1)&lt;/script&gt;\n\nthen click &amp; 5 &gt; 3');
    expect(toTelegramHtml('| a | b |\n|---|---|\n| <1> | 2 |')).toBe('<pre>a | b\n&lt;1&gt; | 2</pre>');
  });
});
