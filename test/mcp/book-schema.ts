/** `book`'s input, exactly as the server publishes it. */
export const BOOK_SCHEMA = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  type: 'object',
  $defs: { date: { type: 'string', pattern: '^\\d{4}-\\d{2}-\\d{2}$' } },
  properties: {
    room: { oneOf: [{ const: 'small' }, { const: 'large' }] },
    day: { $ref: '#/$defs/date' },
    people: { type: 'integer', minimum: 1 },
  },
  required: ['room', 'day'],
  if: { properties: { room: { const: 'large' } } },
  then: { required: ['people'] },
  additionalProperties: false,
} as const;
