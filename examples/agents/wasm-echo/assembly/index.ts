// A Loom code agent in AssemblyScript, on the core wasm ABI of docs/code-agents.md
// (protocol loom.code-agent/1). Build it with:
//   npx asc examples/agents/wasm-echo/assembly/index.ts -o examples/agents/wasm-echo/echo.wasm --runtime stub --use abort=
// It answers "echo: <message>", and "read <path>" with what the file_read tool returns: a host
// call that Loom runs through the tool runner, so the agent's [capabilities] decide.

import { pack, quote, stringField, unpack } from "./json";

@external("loom", "host_call")
declare function host_call(pointer: usize, length: i32): i64;

/** Loom writes the request (and host call results) into memory it asks for here. */
export function loom_alloc(size: i32): usize {
  return heap.alloc(<usize>size);
}

/** One message in, one reply out. */
export function loom_handle(pointer: usize, length: i32): i64 {
  const request = String.UTF8.decodeUnsafe(pointer, <usize>length);
  const message = stringField(request, "message");
  if (message.startsWith("read ")) {
    const call = pack('{"call":"tool","name":"file_read","input":{"path":' + quote(message.substr(5)) + "}}");
    const result = unpack(host_call(<usize>(call >>> 32), <i32>(call & 0xffffffff)));
    return pack('{"text":' + quote(result) + "}");
  }
  return pack('{"text":' + quote("echo: " + message) + "}");
}
