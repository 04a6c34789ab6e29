/**
 * Every intermediate of our `mtcnn` / `fastmtcnn` detection of one image, in the layout of
 * tools/reference/mtcnn_stages.py's dump of DeepFace's, to find the first stage where the two differ
 * (tools/reference/mtcnn_stages_compare.py compares them, and can feed DeepFace's inputs to our
 * networks to tell a network's float32 difference from ours).
 *
 *   node --import tsx tools/parity/mtcnn-stages.ts --detector mtcnn IMAGE OUT_DIR
 *
 * OUT_DIR gets index.json (name -> dtype, shape, file) and one raw little-endian file per array.
 * Same decode, border, native stages and ONNX graphs as the pipeline (src/model-server/detectors/mtcnn.ts).
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import ort from 'onnxruntime-node';
import { loadConfig } from '../../src/config/index.js';
import { imageOps } from '../../src/model-server/adapters.js';
import { mtcnnAfterPnet, mtcnnAfterRnet, mtcnnFaces } from '../../src/native/faces.js';
import type { MtcnnFlavor, NativeTensor } from '../../src/native/types.js';
import { mtcnnPyramid } from '../../test/helpers/mtcnn-pyramid.js';
import { sessionOptions } from '../../src/model-server/models/ort-options.js';
import { mtcnnGraphs } from '../../test/helpers/mtcnn-graphs.js';

type Arr = { dtype: 'f32' | 'f64' | 'u8'; shape: number[]; data: Float32Array | Float64Array | Uint8Array };

async function main(): Promise<void> {
  const { values, positionals } = parseArgs({ options: { detector: { type: 'string', default: 'mtcnn' }, onnx: { type: 'string' } }, allowPositionals: true });
  const [image, outDir] = positionals;
  if (!image || !outDir) throw new Error('usage: mtcnn-stages.ts --detector mtcnn|fastmtcnn IMAGE OUT_DIR');
  const flavor = values.detector as MtcnnFlavor;
  const dir = values.onnx ?? mtcnnGraphs(flavor);
  if (!dir) throw new Error(`no ONNX graphs for ${flavor} in the models cache (bootstrap converts them)`);
  const opts = sessionOptions({ intraOpThreads: 1, interOpThreads: 1, provider: 'cpu' });
  const [pnet, rnet, onet] = await Promise.all(['pnet', 'rnet', 'onet'].map((n) => ort.InferenceSession.create(join(dir, `${n}.onnx`), opts)));
  const run = async (s: ort.InferenceSession, data: Float32Array, dims: number[]): Promise<Record<string, NativeTensor>> => {
    const out = await s.run({ [s.inputNames[0] as string]: new ort.Tensor('float32', data, dims) });
    return Object.fromEntries(Object.entries(out).map(([k, t]) => [k, { data: t.data as Float32Array, dims: [...t.dims] }]));
  };
  const arrays: Record<string, Arr> = {};
  const put = (name: string, dtype: Arr['dtype'], shape: number[], data: Arr['data']) => (arrays[name] = { dtype, shape, data });
  const ops = imageOps(loadConfig({ FACECOMPUTE_LOG_LEVEL: 'silent' }));
  const img = await ops.decode(readFileSync(image));
  put('decoded', 'u8', [img.height, img.width, 3], new Uint8Array(img.data.buffer, img.data.byteOffset, img.data.length));
  const { image: bordered } = await ops.border(img);
  const levels = await mtcnnPyramid(bordered, flavor);
  const pout = [];
  for (const [k, l] of levels.entries()) {
    put(`level${k}`, 'f32', [1, 3, l.height, l.width], l.tensor);
    put(`scale${k}`, 'f64', [], new Float64Array([l.scale]));
    const o = await run(pnet!, l.tensor, [1, 3, l.height, l.width]);
    put(`pnet${k}_reg`, 'f32', o['reg']!.dims, o['reg']!.data);
    put(`pnet${k}_prob`, 'f32', o['prob']!.dims, o['prob']!.data);
    pout.push({ scale: l.scale, reg: o['reg']!, prob: o['prob']! });
  }
  const r = await mtcnnAfterPnet(bordered, flavor, pout);
  const nr = r.boxes.length / 5;
  put('pnet_boxes', 'f64', [nr, 5], r.boxes);
  put('rnet_in', 'f32', [nr, 3, 24, 24], r.crops);
  const ro = await run(rnet!, r.crops, [nr, 3, 24, 24]);
  put('rnet_reg', 'f32', ro['reg']!.dims, ro['reg']!.data);
  put('rnet_prob', 'f32', ro['prob']!.dims, ro['prob']!.data);
  const o = await mtcnnAfterRnet(bordered, flavor, r.boxes, ro['reg']!, ro['prob']!);
  const no = o.boxes.length / 5;
  put('rnet_boxes', 'f64', [no, 5], o.boxes);
  put('onet_in', 'f32', [no, 3, 48, 48], o.crops);
  const oo = await run(onet!, o.crops, [no, 3, 48, 48]);
  for (const k of ['reg', 'landmarks', 'prob']) put(`onet_${k}`, 'f32', oo[k]!.dims, oo[k]!.data);
  const faces = await mtcnnFaces(flavor, bordered.width, bordered.height, o.boxes, oo['reg']!, oo['landmarks']!, oo['prob']!);
  put('faces', 'f64', [faces.length, 5], new Float64Array(faces.flatMap((f) => [...(f.raw_box ?? []), f.confidence])));
  put('faces_int', 'f64', [faces.length, 4], new Float64Array(faces.flatMap((f) => [f.x, f.y, f.w, f.h])));
  mkdirSync(outDir, { recursive: true });
  const index: Record<string, unknown> = {};
  for (const [name, a] of Object.entries(arrays)) {
    writeFileSync(join(outDir, `${name}.bin`), new Uint8Array(a.data.buffer, a.data.byteOffset, a.data.byteLength));
    index[name] = { dtype: a.dtype, shape: a.shape, file: `${name}.bin` };
  }
  writeFileSync(join(outDir, 'index.json'), JSON.stringify({ flavor, image, onnx: dir, arrays: index }, null, 1));
  process.stderr.write(`wrote ${outDir}: ${Object.keys(arrays).length} arrays, ${faces.length} faces\n`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
