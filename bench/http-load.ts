// The load generator of the http-turn benchmark, in a process of its own so that the figures are
// the daemon's: `node bench/http-load.ts <base url> <chats> <concurrency>` posts that many SSE
// chats, each slot on its own agent (`chat-<slot>`), and prints one JSON line of what it saw.
// It speaks through node:http with a connection per slot kept alive, the lightest client Node
// has, so that it takes as little as it can of the cores it shares with the server it loads.
import { Agent, request } from 'node:http';
import { performance } from 'node:perf_hooks';

const [url, chatsText, concurrencyText] = process.argv.slice(2);
const chats = Number(chatsText);
const concurrency = Number(concurrencyText);
if (url === undefined || !Number.isInteger(chats) || !Number.isInteger(concurrency)) {
  console.error('usage: node bench/http-load.ts <base url> <chats> <concurrency>');
  process.exit(2);
}

const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
const body = JSON.stringify({ message: 'hello' });

/** One chat: its status and the whole SSE body. */
function chat(slot: number): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const outgoing = request(
      `${url}/api/agents/chat-${slot}/messages`,
      { method: 'POST', agent, headers: { 'content-type': 'application/json', accept: 'text/event-stream', 'content-length': Buffer.byteLength(body) } },
      (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (text += chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, text }));
        response.on('error', reject);
      },
    );
    outgoing.on('error', reject);
    outgoing.end(body);
  });
}

const durations: number[] = [];
let errors = 0;
let next = 0;
async function worker(slot: number): Promise<void> {
  while (next < chats) {
    next += 1;
    const started = performance.now();
    try {
      const { status, text } = await chat(slot);
      if (status !== 200 || !text.includes('event: run-finish')) errors += 1;
    } catch {
      errors += 1;
    }
    durations.push(performance.now() - started);
  }
}
const started = performance.now();
const cpuBefore = process.cpuUsage();
await Promise.all(Array.from({ length: concurrency }, (_, slot) => worker(slot)));
const cpu = process.cpuUsage(cpuBefore);
agent.destroy();
console.log(JSON.stringify({ durations, errors, elapsedMs: performance.now() - started, cpuMs: (cpu.user + cpu.system) / 1000 }));
