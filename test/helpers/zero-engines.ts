/**
 * Engines that never touch ONNX Runtime, for tests of the model server's plumbing: every recognizer
 * returns zero vectors of 128 dimensions, every detector finds no face. `onDetect` sees each image a
 * detector is given (a test that counts or sizes detections).
 */
import type { EngineFactory } from '../../src/model-server/registry.js';
import type { FaceDetector, NativeImage, Recognizer } from '../../src/model-server/engines.js';

export function zeroEngines(onDetect?: (img: NativeImage) => void): EngineFactory {
  return {
    async recognizer(name) {
      const rec: Recognizer = {
        name,
        dims: 128,
        input: { width: 4, height: 4, layout: 'nchw', channel_order: 'rgb', preprocess: 'uint8_truncate' },
        embed: async (_b, n) => Array.from({ length: n }, () => new Float32Array(128)),
      };
      return rec;
    },
    async detector(name) {
      const d: FaceDetector = { name, detect: async (img) => (onDetect?.(img), []) };
      return d;
    },
    syntheticImage: () => ({ width: 8, height: 8, channels: 3, data: Buffer.alloc(192) }),
  };
}
