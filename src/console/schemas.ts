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
