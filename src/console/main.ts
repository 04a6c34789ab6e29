/** Entry point of `facecompute console`. Built by its issue; until then it refuses to start. */
export async function run(_args: string[]): Promise<number> {
  process.stderr.write('facecompute console: not built yet\n');
  return 1;
}
