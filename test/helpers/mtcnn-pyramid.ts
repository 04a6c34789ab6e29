/** Every pyramid level of an image, as the MTCNN detector walks them (mtcnnPyramidLevels), in one list. */
import { mtcnnPyramidLevels } from '../../src/native/faces.js';
import type { MtcnnFlavor, MtcnnLevel, NativeImage } from '../../src/native/types.js';

export async function mtcnnPyramid(image: NativeImage, flavour: MtcnnFlavor): Promise<MtcnnLevel[]> {
  const levels: MtcnnLevel[] = [];
  for await (const level of mtcnnPyramidLevels(image, flavour)) levels.push(level);
  return levels;
}
