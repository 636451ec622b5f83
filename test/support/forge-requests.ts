/** A sandbox tool that doubles `n`, as a forge request (its one test case passes). */
export const DOUBLE_IT = {
  name: 'double_it',
  description: 'Doubles a number',
  inputSchema: { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] },
  outputSchema: { type: 'object', properties: { n: { type: 'number' } } },
  implementation: { mode: 'sandbox', code: 'function execute(input) { return { n: input.n * 2 }; }', allowlist: [] },
  testCases: [{ input: { n: 2 }, expectedOutput: { n: 4 } }],
};

/** A judge's approving verdict, as a scripted model step. */
export const APPROVE = { text: JSON.stringify({ approved: true, confidence: 0.9, issues: [] }) };
