import t from 'tap';
import { ERROR_STATUS, ServiceError, fromNative } from '../src/errors/index.js';

t.test('contract §5 statuses', async (t) => {
  t.equal(ERROR_STATUS.invalid_request, 400);
  t.equal(ERROR_STATUS.missing_api_key, 401);
  t.equal(ERROR_STATUS.insufficient_credits, 402);
  t.equal(ERROR_STATUS.too_many_pixels, 413);
  t.equal(ERROR_STATUS.no_face_detected, 422);
  t.equal(ERROR_STATUS.rate_limited, 429);
  t.equal(ERROR_STATUS.upstream_failed, 502);
  t.equal(ERROR_STATUS.queue_full, 503);
  t.equal(ERROR_STATUS.upstream_timeout, 504);
});

t.test('ServiceError renders the ErrorResponse body', async (t) => {
  const e = new ServiceError('invalid_image', 'not an image', { cause: new Error('/secret/path') });
  t.equal(e.status, 400);
  t.same(e.toBody(), { error: 'invalid_image', detail: 'not an image' });
  t.notMatch(JSON.stringify(e.toBody()), /secret/);
});

t.test('native errors keep their code; unknown ones become internal_error', async (t) => {
  // The binding's errors carry the stable code as `code` and the detail as the message (guard.rs).
  t.same(fromNative(Object.assign(new Error('100000x100000 exceeds 40000000'), { code: 'too_many_pixels' })).toBody(), {
    error: 'too_many_pixels',
    detail: '100000x100000 exceeds 40000000',
  });
  const odd = fromNative(new Error('segfault at /usr/lib/x.so'));
  t.equal(odd.code, 'internal_error');
  t.notMatch(odd.detail, /usr/);
  // napi's own argument errors carry a napi status as `code`: a bug on our side, never shown.
  const napiErr = fromNative(Object.assign(new Error('value `"x"` does not match any variant of enum `DistanceMetric`'), { code: 'InvalidArg' }));
  t.equal(napiErr.code, 'internal_error');
  t.notMatch(napiErr.detail, /DistanceMetric/);
});
