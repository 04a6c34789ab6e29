/**
 * Loads the N-API addon built from crates/facecompute-node. The rest of the code imports the typed
 * wrappers beside this file (image.ts, compare.ts, detect.ts), never the addon directly, so that
 * native errors are always turned into ServiceErrors in one place.
 */
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { PACKAGE_ROOT } from '../package-root.js';
import type * as Binding from '../../index.js';

const require = createRequire(import.meta.url);

/**
 * The objects the addon exports for its `#[napi(string_enum)]`s (crates/facecompute-node/src/types.rs),
 * variant name to value. index.d.ts types each set as the union of its values (built with
 * `--no-const-enum`, so that TypeScript code passes plain strings) and declares no object, so the
 * objects are typed here, from those generated unions.
 */
interface BindingEnums {
  DistanceMetric: Readonly<Record<string, Binding.DistanceMetric>>;
  Normalization: Readonly<Record<string, Binding.Normalization>>;
  ChannelOrder: Readonly<Record<string, Binding.ChannelOrder>>;
  Interpolation: Readonly<Record<string, Binding.Interpolation>>;
  TensorLayout: Readonly<Record<string, Binding.TensorLayout>>;
  Preprocess: Readonly<Record<string, Binding.Preprocess>>;
  Letterbox: Readonly<Record<string, Binding.Letterbox>>;
  RetinafaceVariant: Readonly<Record<string, Binding.RetinafaceVariant>>;
  MtcnnFlavor: Readonly<Record<string, Binding.MtcnnFlavor>>;
  ImageFormat: Readonly<Record<string, Binding.ImageFormat>>;
}

// The generated loader lives at the package root (index.js, typed by index.d.ts), both for the
// sources and for the build under dist/.
export const native: typeof Binding & BindingEnums = require(join(PACKAGE_ROOT, 'index.js'));
