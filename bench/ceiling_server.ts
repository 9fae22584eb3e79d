/**
 * The ceiling: a bare node:http server answering every request with a small JSON body, the
 * most any Node HTTP server can do on this core with this load generator.
 */
import { createServer } from 'node:http';

const body = JSON.stringify({ result: 'success', msg: '', id: 42 });
const port = Number(process.argv[2]);
createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  });
}).listen(port, '127.0.0.1', () => process.stdout.write('ready\n'));
