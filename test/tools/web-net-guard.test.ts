import { describe, expect, it } from 'vitest';
import { blockedAddressReason, namesExplicitly, pinnedLookup } from '../../src/tools/builtin/net-guard.ts';

describe('blockedAddressReason()', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['::1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['10.20.30.40', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.0.1', 'private'],
    ['fd12::1', 'private'],
    ['169.254.0.1', 'link-local'],
    ['fe80::1', 'link-local'],
    ['0.0.0.0', 'unspecified'],
    ['::', 'unspecified'],
    ['169.254.169.254', 'cloud metadata'],
    ['fd00:ec2:0:0::254', 'cloud metadata'],
    ['100.64.1.2', 'private'],
    ['198.18.0.1', 'private'],
    ['224.0.0.1', 'reserved'],
    ['255.255.255.255', 'reserved'],
    ['fec0::1', 'private'],
    ['ff02::1', 'reserved'],
    // IPv4 carried in IPv6: compatible, translated, NAT64, 6to4.
    ['::7f00:1', 'loopback'],
    ['::ffff:0:7f00:1', 'loopback'],
    ['64:ff9b::7f00:1', 'loopback'],
    ['64:ff9b::a9fe:a9fe', 'cloud metadata'],
    ['2002:7f00:1::1', 'loopback'],
    ['2002:c0a8:101::1', 'private'],
  ])('refuses %s as %s', (address, reason) => {
    expect(blockedAddressReason(address)).toBe(reason);
  });

  it.each(['8.8.8.8', '172.32.0.1', '100.128.0.1', '2606:4700:4700::1111', '::ffff:8.8.8.8', '64:ff9b::808:808', '2002:808:808::1'])(
    'allows the public address %s',
    (address) => {
      expect(blockedAddressReason(address)).toBeUndefined();
    },
  );
});

describe('namesExplicitly()', () => {
  it('counts a grant whose host has no wildcard, with or without a port, and no other', () => {
    expect(namesExplicitly([{ kind: 'net_connect', pattern: '127.0.0.1' }], '127.0.0.1', 80)).toBe(true);
    expect(namesExplicitly([{ kind: 'net_connect', pattern: '127.0.0.1:*' }], '127.0.0.1', 80)).toBe(true);
    expect(namesExplicitly([{ kind: 'net_connect', pattern: '127.0.0.1:8080' }], '127.0.0.1', 80)).toBe(false);
    expect(namesExplicitly([{ kind: 'net_connect', pattern: '[::1]' }], '[::1]', 80)).toBe(true);
    expect(namesExplicitly([{ kind: 'net_connect', pattern: '*' }], '127.0.0.1', 80)).toBe(false);
    expect(namesExplicitly([{ kind: 'file_read', pattern: '127.0.0.1' }], '127.0.0.1', 80)).toBe(false);
  });
});

describe('pinnedLookup()', () => {
  it('answers with the vetted addresses whatever host name it is asked for, so a rebinding DNS answer is never used', () => {
    const lookup = pinnedLookup([{ address: '93.184.216.34', family: 4 }]);
    const answers: unknown[] = [];
    lookup('rebind.example', { all: true }, (_error, address) => answers.push(address));
    lookup('rebind.example', {}, (_error, address, family) => answers.push([address, family]));
    expect(answers).toEqual([[{ address: '93.184.216.34', family: 4 }], ['93.184.216.34', 4]]);
  });
});
