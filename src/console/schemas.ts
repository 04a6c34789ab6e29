/** JSON schemas of the console API (contract §7); Fastify validates bodies and serialises answers with them. */

const freeCalls = {
  type: 'object',
  required: ['total', 'used', 'remaining'],
  properties: { total: { type: 'integer' }, used: { type: 'integer' }, remaining: { type: 'integer' } },
} as const;

export const accountSchema = {
  type: 'object',
  required: ['id', 'tier', 'email', 'email_verified', 'status', 'free_calls', 'created_at'],
  properties: {
    id: { type: 'string' },
    tier: { type: 'string', enum: ['anonymous', 'account', 'card'] },
    email: { type: ['string', 'null'] },
    email_verified: { type: 'boolean' },
    status: { type: 'string', enum: ['active', 'disabled'] },
    free_calls: freeCalls,
    created_at: { type: 'string' },
  },
} as const;

export const credentialsBody = {
  type: 'object',
  required: ['email', 'password'],
  additionalProperties: false,
  properties: { email: { type: 'string', maxLength: 254 }, password: { type: 'string', maxLength: 256 } },
} as const;

export const cardBody = {
  type: 'object',
  required: ['payment_method'],
  additionalProperties: false,
  properties: { payment_method: { type: 'string', maxLength: 255 } },
} as const;

export const verifyEmailBody = {
  type: 'object',
  required: ['token'],
  additionalProperties: false,
  properties: { token: { type: 'string', maxLength: 200 } },
} as const;

export const keyNameBody = {
  type: 'object',
  required: ['name'],
  additionalProperties: false,
  properties: { name: { type: 'string', maxLength: 100 } },
} as const;

export const emptyBody = { type: 'object', additionalProperties: false, properties: {} } as const;

export const keyIdParams = {
  type: 'object',
  required: ['id'],
  properties: { id: { type: 'string', maxLength: 64 } },
} as const;

export const sessionAnswer = {
  type: 'object',
  required: ['account', 'session_token'],
  properties: { account: accountSchema, session_token: { type: 'string' } },
} as const;

export const accountAnswer = { type: 'object', required: ['account'], properties: { account: accountSchema } } as const;

export const createdKeyAnswer = {
  type: 'object',
  required: ['id', 'name', 'prefix', 'key', 'created_at'],
  properties: { id: { type: 'string' }, name: { type: 'string' }, prefix: { type: 'string' }, key: { type: 'string' }, created_at: { type: 'string' } },
} as const;

const nullableString = { type: ['string', 'null'] } as const;

export const keyListAnswer = {
  type: 'object',
  required: ['keys'],
  properties: {
    keys: {
      type: 'array',
      items: {
        type: 'object',
        required: ['id', 'name', 'prefix', 'created_at', 'last_used_at', 'revoked_at'],
        properties: { id: { type: 'string' }, name: { type: 'string' }, prefix: { type: 'string' }, created_at: { type: 'string' }, last_used_at: nullableString, revoked_at: nullableString },
      },
    },
  },
} as const;

const usageCounts = {
  charged: { type: 'integer' },
  refunded: { type: 'integer' },
  refused: { type: 'integer' },
  free: { type: 'integer' },
  total: { type: 'integer' },
} as const;
const countsRequired = ['charged', 'refunded', 'refused', 'free', 'total'] as const;

/** GET /api/usage (beyond contract §7's table): src/accounts/usage/report.ts's UsageReport, and the account. */
export const usageAnswer = {
  type: 'object',
  required: ['account', 'usage'],
  properties: {
    account: accountSchema,
    usage: {
      type: 'object',
      required: ['from', 'to', 'days', 'totals', 'by_key', 'by_route', 'recent'],
      properties: {
        from: { type: 'string' },
        to: { type: 'string' },
        days: { type: 'array', items: { type: 'object', required: ['day', ...countsRequired], properties: { day: { type: 'string' }, ...usageCounts } } },
        totals: { type: 'object', required: countsRequired, properties: usageCounts },
        by_key: {
          type: 'array',
          items: {
            type: 'object',
            required: ['key_id', 'name', 'prefix', 'kind', 'revoked', ...countsRequired],
            properties: { key_id: { type: 'string' }, name: nullableString, prefix: nullableString, kind: { type: ['string', 'null'] }, revoked: { type: 'boolean' }, ...usageCounts },
          },
        },
        by_route: { type: 'array', items: { type: 'object', required: ['route', ...countsRequired], properties: { route: { type: 'string' }, ...usageCounts } } },
        recent: {
          type: 'array',
          items: {
            type: 'object',
            required: ['at', 'key_id', 'key_name', 'surface', 'route', 'status', 'error', 'outcome', 'duration_ms', 'request_id'],
            properties: {
              at: { type: 'string' },
              key_id: nullableString,
              key_name: nullableString,
              surface: { type: 'string' },
              route: { type: 'string' },
              status: { type: 'integer' },
              error: nullableString,
              outcome: { type: 'string' },
              duration_ms: { type: 'number' },
              request_id: { type: 'string' },
            },
          },
        },
      },
    },
  },
} as const;
