import { describe, expect, it } from 'vitest';
import { ConfigSchema } from '../../src/config/index.ts';

describe('[people] in config.toml', () => {
  it('refuses a [people] entry naming a channel that is not configured, or a user twice', () => {
    const result = ConfigSchema.safeParse({
      channels: [{ name: 'hooks', kind: 'webhook', agent: 'helper', secret_env: 'HOOK_SECRET', reply_url: 'http://127.0.0.1:9/' }],
      people: { ada: ['hooks:u-ada', 'telegram:42'], bob: ['hooks:u-ada'] },
    });
    expect(result.success).toBe(false);
    expect(result.error?.issues.map((issue) => [issue.path.join('.'), issue.message])).toEqual([
      ['people.ada.1', 'no [[channels]] entry is named "telegram" (configured: hooks)'],
      ['people.bob.0', '"hooks:u-ada" is already ada; a platform user is one person'],
    ]);
  });
});
