/** Entry point of `facecompute mcp`. Built by its issue; until then it refuses to start. */
export async function run(_args: string[]): Promise<number> {
  process.stderr.write('facecompute mcp: not built yet\n');
  return 1;
}
