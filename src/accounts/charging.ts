/**
 * Fair credits: which answers consume a free call (contract §7: one call is one accepted compute
 * request). A call is reserved atomically before the work starts (AccountsPort.consume, so N
 * parallel calls against M credits still succeed exactly min(N, M) times) and settled by the answer:
 * it stays consumed only when compute ran, that is a 2xx or a `422 no_face_detected` (the detectors
 * ran over the image and found nothing). Every other answer gives it back: the caller's mistakes
 * refused before compute (4xx validation, 401, 402, 404, 413, 429), capacity refusals (503) and our
 * own failures (5xx), as well as a request whose caller went away before it was answered. One 5xx
 * is kept: `502 upstream_lost`, a request whose model server stopped while computing it. That is
 * presumed to be its input's doing (a refund would let one credit crash model servers without end),
 * and it is also a strike against the account (src/service/limits/strikes.ts). A remote
 * URL fetched whole that is not an image (`422 url_not_image`) is kept too: the fetch was work done
 * for the caller, and a refund made fetching free (any URL, any number of times).
 */
import type { ErrorCode } from '../errors/index.js';

export function consumesCall(status: number, code: ErrorCode | null | undefined): boolean {
  return (status >= 200 && status < 300) || code === 'no_face_detected' || code === 'upstream_lost' || code === 'url_not_image';
}
