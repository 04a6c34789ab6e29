/** Entry point of `facecompute gateway`. Built by its issue; until then it refuses to start. */
export async function run(_args: string[]): Promise<number> {
  process.stderr.write('facecompute gateway: not built yet\n');
  return 1;
}
