// The load generator of the http-turn benchmark, in a process of its own so that the figures are
// the daemon's: `node bench/http-load.ts <base url> <chats> <concurrency>` posts that many SSE
// chats, each slot on its own agent (`chat-<slot>`), and prints one JSON line of what it saw.
import { performance } from 'node:perf_hooks';

const [url, chatsText, concurrencyText] = process.argv.slice(2);
const chats = Number(chatsText);
const concurrency = Number(concurrencyText);
if (url === undefined || !Number.isInteger(chats) || !Number.isInteger(concurrency)) {
  console.error('usage: node bench/http-load.ts <base url> <chats> <concurrency>');
  process.exit(2);
}

const durations: number[] = [];
let errors = 0;
let next = 0;
async function worker(slot: number): Promise<void> {
  while (next < chats) {
    next += 1;
    const started = performance.now();
    try {
      const response = await fetch(`${url}/api/agents/chat-${slot}/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
        body: JSON.stringify({ message: 'hello' }),
      });
      const body = await response.text();
      if (!response.ok || !body.includes('event: run-finish')) errors += 1;
    } catch {
      errors += 1;
    }
    durations.push(performance.now() - started);
  }
}
const started = performance.now();
await Promise.all(Array.from({ length: concurrency }, (_, slot) => worker(slot)));
console.log(JSON.stringify({ durations, errors, elapsedMs: performance.now() - started }));
