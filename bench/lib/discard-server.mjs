// The roofline of an HTTP upload on this machine: an endpoint that only reads the request body and
// discards it, answering a two-byte JSON. bench/suites/compare.ts posts the same bytes here as to
// /compare, in the same run. Listens on 127.0.0.1:$PORT.
import { createServer } from 'node:http';

const server = createServer((req, res) => {
  let bytes = 0;
  req.on('data', (chunk) => (bytes += chunk.length));
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'application/json', 'x-bytes': String(bytes) });
    res.end('{}');
  });
});
server.keepAliveTimeout = 60_000;
server.listen(Number(process.env.PORT), '127.0.0.1');
