/**
 * PNet in horizontal bands, so that a large image's first pyramid level does not take gigabytes.
 *
 * Why: PNet is fully convolutional, and ONNX Runtime holds every intermediate of a run (and its CPU
 * arena keeps the largest run's memory for good). A 40-megapixel image's first level is 14 MP; run
 * whole, one `mtcnn` detection took 11 GB of resident memory and the second 19 GB. Run in bands of at
 * most BAND_INPUT_PIXELS it takes about what the pyramid itself does.
 *
 * Why the result is the same, bit for bit: output row j of PNet depends on input rows [2j, 2j + 12)
 * only (3x3 conv, 2x2 stride-2 pool, 3x3 conv, 3x3 conv, 1x1 convs; no padding except the pool's at
 * the level's bottom edge). A band of input rows [2a, 2b + 10) therefore gives output rows [a, b)
 * exactly: it starts on an even row, so the pool's windows line up with the whole level's, and its
 * conv-1 output has an even number of rows, so the pool pads nothing. The last band runs to the
 * level's bottom, where the pool pads as it does for the whole level. Every output cell is the same
 * dot product over the same inputs; test/mtcnn-pnet-bands.test.ts checks the outputs are identical
 * with both libraries' graphs.
 */

/** Largest PNet input (width x height) run at once: ~1 MP keeps a run's intermediates near 100 MB. */
export const BAND_INPUT_PIXELS = 1 << 20;

/** Input rows a PNet output row needs beyond the two it advances by. */
const HALO_ROWS = 10;

export interface PnetBand {
  /** First input row of the band (even). */
  inRow: number;
  /** Input rows in the band. */
  inRows: number;
  /** First output row it gives. */
  outRow: number;
}

/** Output rows of PNet on `height` input rows: conv 3x3, pool 2/2 with ceil, conv 3x3, conv 3x3. */
export function pnetOutputRows(height: number): number {
  return Math.max(0, Math.ceil((height - 2) / 2) - 4);
}

/**
 * The bands covering a level of `height` x `width`: one band (the whole level) when it is within
 * `maxPixels`, else bands of as many output rows as fit (at least one).
 */
export function pnetBands(height: number, width: number, maxPixels = BAND_INPUT_PIXELS): PnetBand[] {
  const total = pnetOutputRows(height);
  if (height * width <= maxPixels || total <= 1) return [{ inRow: 0, inRows: height, outRow: 0 }];
  const perBand = Math.max(1, Math.floor((Math.floor(maxPixels / width) - HALO_ROWS) / 2));
  const bands: PnetBand[] = [];
  for (let a = 0; a < total; a += perBand) {
    const b = a + perBand;
    // The last band runs to the bottom, so that the pool pads there as it does on the whole level.
    const end = b >= total ? height : 2 * b + HALO_ROWS;
    bands.push({ inRow: 2 * a, inRows: end - 2 * a, outRow: a });
    if (b >= total) break;
  }
  return bands;
}

/** Rows [row, row + rows) of every channel of an NCHW tensor with N = 1. */
export function sliceRows(data: Float32Array, channels: number, height: number, width: number, row: number, rows: number): Float32Array {
  if (row === 0 && rows === height) return data;
  const out = new Float32Array(channels * rows * width);
  for (let c = 0; c < channels; c++) {
    const from = (c * height + row) * width;
    out.set(data.subarray(from, from + rows * width), c * rows * width);
  }
  return out;
}

/** Writes a band's output (NCHW, N = 1, `rows` rows) into the level's, starting at output row `row`. */
export function putRows(into: Float32Array, height: number, band: Float32Array, channels: number, rows: number, width: number, row: number): void {
  for (let c = 0; c < channels; c++) {
    into.set(band.subarray(c * rows * width, (c + 1) * rows * width), (c * height + row) * width);
  }
}
