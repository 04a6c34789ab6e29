/**
 * The decoded pixels one request may bring (FACECOMPUTE_MAX_REQUEST_PIXELS), summed over its images
 * as each is resolved, from its header (probeImage: no pixel is decoded). A request over it is
 * refused `413 too_many_pixels` before anything is forwarded: 16 flat 40-megapixel PNGs are a 2 MB
 * body that a model server would decode to 1.9 GB.
 */
import { ServiceError } from '../../errors/index.js';

export class PixelBudget {
  private used = 0;

  constructor(readonly limit: number) {}

  /** Counts `pixels` of the image `field`; throws once the request's images pass the limit. */
  add(pixels: number, field: string): void {
    this.used += pixels;
    if (this.used > this.limit) {
      throw new ServiceError('too_many_pixels', `the images of this request decode to ${this.used} pixels with ${field}, more than the limit of ${this.limit} per request (limits.max_request_pixels)`);
    }
  }

  get total(): number {
    return this.used;
  }
}
