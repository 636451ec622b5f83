import { describe, expect, it } from 'vitest';
import { CapabilitySchema, isGranted, patternProblem } from '../../src/capabilities/index.ts';
import { ManifestCapabilitiesSchema, parseManifest } from '../../src/manifest/index.ts';
import { ManifestError } from '../../src/errors/index.ts';

const HOST_EXPECTED = 'expected a host such as "api.openai.com" or "*.example.com:443"';

describe('patternProblem() for network patterns', () => {
  it.each([
    ['[::1', '(unclosed "[")'],
    ['[::1]x', '(unexpected "x" after "]")'],
    ['api.openai.com:99999', '(port "99999" is not a number from 1 to 65535 or "*")'],
    ['api.openai.com:https', '(port "https" is not a number from 1 to 65535 or "*")'],
    ['api.openai.com:', '(port "" is not a number from 1 to 65535 or "*")'],
    [':443', '(empty host)'],
    ['[]:443', '(empty host)'],
    ['.', '(empty host)'],
    ['10.0.0.0/8', '(CIDR ranges are not supported; list the hosts or addresses, or "*" for any)'],
    ['[fd00::]/8', '(CIDR ranges are not supported'],
    ['https://api.openai.com', '(a URL; write the host alone, e.g. "api.openai.com")'],
    ['api.openai.com/v1', '("/" has no place in a host; write the host alone)'],
    ['api openai.com', '(host "api openai.com" holds " ", which no host name holds)'],
    ['münchen.de', '(host "münchen.de" holds "ü"; write international names in punycode ("xn--…"))'],
    ['[example.com]:443', '("example.com" in brackets is not an IPv6 address)'],
    ['fe80::1%eth0', '("fe80::1%eth0" is not an IPv6 address)'],
  ])('refuses %j saying %s', (pattern, reason) => {
    const problem = patternProblem('net_connect', pattern);
    expect(problem).toContain(`${HOST_EXPECTED}, got ${JSON.stringify(pattern)} `);
    expect(problem).toContain(reason);
  });

  it('gives the whole message for an unclosed bracket', () => {
    expect(patternProblem('net_connect', '[::1')).toBe(`${HOST_EXPECTED}, got "[::1" (unclosed "[")`);
  });

  it.each([
    '*',
    'api.openai.com',
    'API.OpenAI.com.',
    '*.example.com:443',
    'api.*.com',
    'localhost:*',
    '127.0.0.1:8080',
    '[::1]',
    '[::1]:443',
    '::1',
    '[fd00:*]:443',
    'my_host-1',
  ])('accepts %j', (pattern) => {
    expect(patternProblem('net_connect', pattern)).toBeUndefined();
  });

  it('matches nothing with a pattern it refuses, so a stored bad pattern grants nothing', () => {
    expect(isGranted([{ kind: 'net_connect', pattern: 'api.openai.com/v1' }], { kind: 'net_connect', pattern: 'api.openai.com:443' })).toBe(false);
  });
});

describe('patternProblem() for file patterns', () => {
  it.each([
    ['data/*', 'expected an absolute path or one starting with "*", such as "/data/*", got "data/*"'],
    ['~/notes/*', 'expected an absolute path or one starting with "*", such as "/data/*", got "~/notes/*"'],
    ['/data/*/../etc/passwd', 'expected no ".." after a segment holding "*" (that "*" may span several folders), got "/data/*/../etc/passwd"'],
  ])('refuses %j', (pattern, message) => {
    expect(patternProblem('file_read', pattern)).toBe(message);
    expect(patternProblem('file_write', pattern)).toBe(message);
  });

  it.each(['/data/*', '*', '*.log', '/data/../srv/*', '/'])('accepts %j', (pattern) => {
    expect(patternProblem('file_read', pattern)).toBeUndefined();
  });
});

describe('patternProblem() for shell patterns', () => {
  it.each([
    ["git commit -m 'oops", `got "git commit -m 'oops" ("'" at position 15 is an unclosed quote)`],
    ['ls | wc -l', `got "ls | wc -l" ("|" at position 4 is a pipe; quote it ('…') to match it literally)`],
    ['echo $HOME', '"$H" at position 6 is a shell expansion'],
    ['ls ?', '"?" at position 4 is no wildcard in a shell pattern (only "*" and "**" are)'],
    ['ls \\', '"\\" at position 4 is a trailing escape with nothing to escape)'],
    ['   ', 'got "   " (no words)'],
  ])('refuses %j', (pattern, reason) => {
    const problem = patternProblem('shell_exec', pattern);
    expect(problem).toMatch(/^expected a command pattern such as "git status" or "git \*\*", got /);
    expect(problem).toContain(reason);
  });

  it.each(['*', 'git **', 'git status', 'cat /ws/*', "git commit -m 'fix bug'", "grep 'a|b' **"])('accepts %j', (pattern) => {
    expect(patternProblem('shell_exec', pattern)).toBeUndefined();
  });
});

describe('patternProblem() for every kind', () => {
  const kinds = ['file_read', 'net_connect', 'tool_invoke', 'llm_query', 'agent_message', 'memory_write', 'shell_exec', 'env_read', 'econ_transfer'] as const;

  it.each(kinds)('refuses an empty %s pattern', (kind) => {
    expect(patternProblem(kind, '')).toBe('expected a non-empty pattern');
  });

  it.each(kinds)('refuses a %s pattern holding a control character', (kind) => {
    expect(patternProblem(kind, '*\u0000')).toBe('expected a pattern without control characters, got "*\\u0000" ("\\u0000" at position 2)');
    expect(patternProblem(kind, 'a\tb')).toContain('("\\t" at position 2)');
    expect(patternProblem(kind, '*\u007f')).toContain('at position 2');
  });

  it('accepts any other non-empty name for the kinds that name things', () => {
    expect(patternProblem('tool_invoke', 'web_*')).toBeUndefined();
    expect(patternProblem('llm_query', 'anthropic/*')).toBeUndefined();
    expect(patternProblem('memory_read', 'self.*')).toBeUndefined();
  });
});

describe('CapabilitySchema checks patterns as the manifest does', () => {
  it('CapabilitySchema refuses a malformed pattern with the problem at "pattern"', () => {
    const result = CapabilitySchema.safeParse({ kind: 'net_connect', pattern: '[::1' });
    expect(result.success).toBe(false);
    expect(result.error?.issues).toEqual([expect.objectContaining({ path: ['pattern'], message: `${HOST_EXPECTED}, got "[::1" (unclosed "[")` })]);
  });

  it.each([
    { kind: 'file_write', pattern: 'out/*' },
    { kind: 'shell_exec', pattern: 'ls | wc' },
    { kind: 'env_read', pattern: 'HOME\n' },
    { kind: 'tool_invoke', pattern: '' },
  ])('CapabilitySchema refuses %j', (input) => {
    expect(CapabilitySchema.safeParse(input).success).toBe(false);
  });
});

describe('[capabilities] patterns at manifest load', () => {
  function refusal(capabilities: string): string {
    try {
      parseManifest(`name = "a"\n[capabilities]\n${capabilities}\n`, { source: 'a.toml' });
    } catch (error) {
      expect(error).toBeInstanceOf(ManifestError);
      return (error as ManifestError).message;
    }
    throw new Error('expected the manifest to be refused');
  }

  it('names the entry of a malformed network pattern', () => {
    expect(refusal('network = ["api.openai.com", "[::1"]')).toBe(
      `cannot load manifest "a.toml": [capabilities].network[1]: ${HOST_EXPECTED}, got "[::1" (unclosed "[")`,
    );
  });

  it('names the entry of a network pattern holding a NUL', () => {
    expect(refusal('network = ["\\u0000"]')).toBe(
      'cannot load manifest "a.toml": [capabilities].network[0]: expected a pattern without control characters, got "\\u0000" ("\\u0000" at position 1)',
    );
  });

  it('names the entry of a malformed file pattern', () => {
    expect(refusal('file_write = ["out/*"]')).toBe(
      'cannot load manifest "a.toml": [capabilities].file_write[0]: expected an absolute path or one starting with "*", such as "/data/*", got "out/*"',
    );
  });

  it('names the entry of a shell pattern that does not split', () => {
    expect(refusal(`shell = ["git **", "ls | wc"]`)).toMatch(
      /^cannot load manifest "a\.toml": \[capabilities\]\.shell\[1\]: expected a command pattern .*"\|" at position 4 is a pipe/,
    );
  });

  it('names the entry of an empty tool pattern', () => {
    expect(refusal('tools = [""]')).toBe('cannot load manifest "a.toml": [capabilities].tools[0]: expected a non-empty pattern');
  });

  it('accepts the patterns of every kind written well', () => {
    const block = ManifestCapabilitiesSchema.parse({
      tools: ['*'],
      network: ['*.wikipedia.org', 'api.openai.com:443', '[::1]:8080'],
      shell: ['git **', 'cat /ws/*', '*'],
      file_read: ['/data/*', '*'],
      file_write: ['/out/*'],
      memory_write: ['self.*'],
    });
    expect(block.shell).toEqual(['git **', 'cat /ws/*', '*']);
  });
});
