import { defineConfig } from 'vitest/config';

/**
 * Two projects, each in a group of its own (`sequence.groupOrder`), so that they never run at the
 * same time: the suite, and the official MCP conformance legs. The legs start a suite process and, on the client leg, a Loom client process
 * per scenario (two at a time, see test/mcp/conformance-runner.ts); run beside the rest of the
 * suite on a 2-core machine, they and it starved each other of CPU.
 */
const CONFORMANCE = ['test/mcp/conformance-client.test.ts', 'test/mcp/conformance-server.test.ts'];

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 30_000,
    projects: [
      {
        extends: true,
        test: { name: 'loom', include: ['src/**/*.test.ts', 'test/**/*.test.ts'], exclude: CONFORMANCE, sequence: { groupOrder: 0 } },
      },
      {
        extends: true,
        test: { name: 'conformance', include: CONFORMANCE, fileParallelism: false, sequence: { groupOrder: 1 } },
      },
    ],
  },
});
