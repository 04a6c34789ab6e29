/**
 * A test-only reference of retina-face's detect_faces decoding (retinaface/RetinaFace.py and
 * commons/postprocess.py), applied to the converted model's raw outputs. It is the executable spec the
 * native decoder must match; the parity test checks it against retina-face's own result.
 */

export interface RawStride {
  stride: number;
  /** NHWC [1, H, W, 4]: bg a0, bg a1, face a0, face a1 */
  cls: Float32Array;
  /** NHWC [1, H, W, 8] */
  bbox: Float32Array;
  /** NHWC [1, H, W, 20] */
  landmark: Float32Array;
  height: number;
  width: number;
}

export interface Detection {
  score: number;
  /** x1, y1, x2, y2 truncated to integers, as retina-face's astype(int) */
  facial_area: [number, number, number, number];
  /** right_eye, left_eye, nose, mouth_right, mouth_left */
  landmarks: [number, number][];
  box: [number, number, number, number];
}

const BASE_ANCHORS: Record<number, [number, number, number, number][]> = {
  32: [[-248, -248, 263, 263], [-120, -120, 135, 135]],
  16: [[-56, -56, 71, 71], [-24, -24, 39, 39]],
  8: [[-8, -8, 23, 23], [0, 0, 15, 15]],
};

export const LANDMARK_NAMES = ['right_eye', 'left_eye', 'nose', 'mouth_right', 'mouth_left'] as const;

export function decodeRetinaFace(strides: RawStride[], imgH: number, imgW: number, threshold = 0.9, nmsThreshold = 0.4): Detection[] {
  const cands: Detection[] = [];
  const f = Math.fround;
  for (const s of strides) {
    const A = 2;
    for (let h = 0; h < s.height; h++) {
      for (let w = 0; w < s.width; w++) {
        const pos = h * s.width + w;
        for (let a = 0; a < A; a++) {
          const score = s.cls[pos * 4 + A + a]!;
          if (!(score >= threshold)) continue;
          const base = BASE_ANCHORS[s.stride]![a]!;
          const ax1 = base[0] + w * s.stride;
          const ay1 = base[1] + h * s.stride;
          const ax2 = base[2] + w * s.stride;
          const ay2 = base[3] + h * s.stride;
          // The +1 pixel convention of the MXNet original.
          const bw = ax2 - ax1 + 1;
          const bh = ay2 - ay1 + 1;
          const cx = ax1 + 0.5 * (bw - 1);
          const cy = ay1 + 0.5 * (bh - 1);
          const d = s.bbox.subarray(pos * 8 + a * 4, pos * 8 + a * 4 + 4);
          const pcx = d[0]! * bw + cx;
          const pcy = d[1]! * bh + cy;
          const pw = Math.exp(d[2]!) * bw;
          const ph = Math.exp(d[3]!) * bh;
          const clip = (v: number, hi: number) => Math.max(Math.min(v, hi), 0);
          const box: [number, number, number, number] = [
            clip(pcx - 0.5 * (pw - 1), imgW - 1),
            clip(pcy - 0.5 * (ph - 1), imgH - 1),
            clip(pcx + 0.5 * (pw - 1), imgW - 1),
            clip(pcy + 0.5 * (ph - 1), imgH - 1),
          ];
          const l = s.landmark.subarray(pos * 20 + a * 10, pos * 20 + a * 10 + 10);
          const landmarks: [number, number][] = [];
          for (let k = 0; k < 5; k++) landmarks.push([f(l[2 * k]! * bw + cx), f(l[2 * k + 1]! * bh + cy)]);
          // retina-face stacks boxes with the score as float32 before NMS.
          const b32 = box.map(f) as [number, number, number, number];
          cands.push({ score, box: b32, facial_area: b32.map(Math.trunc) as [number, number, number, number], landmarks });
        }
      }
    }
  }
  cands.sort((p, q) => q.score - p.score);
  const keep: Detection[] = [];
  const suppressed = new Array<boolean>(cands.length).fill(false);
  for (let i = 0; i < cands.length; i++) {
    if (suppressed[i]) continue;
    const bi = cands[i]!.box;
    keep.push(cands[i]!);
    const ai = (bi[2] - bi[0] + 1) * (bi[3] - bi[1] + 1);
    for (let j = i + 1; j < cands.length; j++) {
      if (suppressed[j]) continue;
      const bj = cands[j]!.box;
      const aj = (bj[2] - bj[0] + 1) * (bj[3] - bj[1] + 1);
      const iw = Math.max(0, Math.min(bi[2], bj[2]) - Math.max(bi[0], bj[0]) + 1);
      const ih = Math.max(0, Math.min(bi[3], bj[3]) - Math.max(bi[1], bj[1]) + 1);
      const inter = iw * ih;
      if (inter / (ai + aj - inter) >= nmsThreshold) suppressed[j] = true;
    }
  }
  return keep;
}
