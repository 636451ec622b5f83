import { describe, expect, it } from 'vitest';
import { recoverJsonRpcId } from '../../src/mcp/jsonrpc-message-reader.ts';

/** The start and end of an oversized message, as the bounded reader keeps them. */
const cut = (before: string, after: string): [string, string] => [`${before}${'x'.repeat(100)}`, `${'x'.repeat(100)}${after}`];

describe('recoverJsonRpcId(): the id and kind of a message known only by its start and end', () => {
  it('reads a response written id last, as the TypeScript SDK writes it', () => {
    expect(recoverJsonRpcId(...cut('{"result":{"content":[{"type":"text","text":"', '"}]},"jsonrpc":"2.0","id":7}'))).toEqual({ id: 7, kind: 'response' });
  });

  it('reads a response and a request written id first, as other SDKs write them', () => {
    expect(recoverJsonRpcId(...cut('{"jsonrpc":"2.0","id":3,"result":{"text":"', '"}}'))).toEqual({ id: 3, kind: 'response' });
    expect(recoverJsonRpcId(...cut('{"jsonrpc":"2.0","id":"s-1","method":"sampling/createMessage","params":{"x":"', '"}}'))).toEqual({
      id: 's-1',
      kind: 'request',
    });
  });

  it('answers null and unknown for a text that is not a JSON-RPC object', () => {
    expect(recoverJsonRpcId(...cut('not json ', ' at all'))).toEqual({ id: null, kind: 'unknown' });
  });
});
