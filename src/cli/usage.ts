/**
 * `facecompute help`: every command and subcommand. test/docs.test.ts checks that each
 * `facecompute <command> <subcommand>` the documentation uses is listed here.
 */
export const USAGE = `usage: facecompute <command>

  serve          gateway, MCP endpoint, console and a local model-server child, with embedded defaults
  gateway        the REST gateway alone
  mcp            the MCP endpoint alone
  console        the accounts console alone
  model-server   the internal model server alone
  models         list                  every model and detector, installed or not, and its source
                 fetch <name>...|all   download from its sources in order (sha256-checked), then convert
                 where                 the models cache directory every command uses
                 convert <name>        convert installed weights to ONNX in the cache
                 verify [name]         re-hash the weights and load each ONNX file
                 prepare               convert everything whose weights are present
  bench          run the benchmarks (see bench/)
  debug          haar-windows <image> [--no-align] [--against <opencv.json>]
                                       the opencv detector's raw windows before grouping
  help           this text
`;
