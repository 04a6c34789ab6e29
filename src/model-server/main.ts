/** Entry point of `facecompute model-server`. Built by its issue; until then it refuses to start. */
export async function run(_args: string[]): Promise<number> {
  process.stderr.write('facecompute model-server: not built yet\n');
  return 1;
}
