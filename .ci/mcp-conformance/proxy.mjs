// A loopback proxy that adds a bearer token to every request: the conformance suite sends none,
// and taskhandle's /mcp always asks for one. Everything else (Host and Origin included) passes
// through as sent. Usage: node proxy.mjs <listen-port> <target-url>, token in MCP_TOKEN; port 0
// takes a free one. Prints the proxy's base URL once it listens.
import http from 'node:http';

const [port, target] = process.argv.slice(2);
const upstream = new URL(target);
const token = process.env.MCP_TOKEN;
if (!port || !target || !token) {
  console.error('usage: MCP_TOKEN=... node proxy.mjs <listen-port> <target-url>');
  process.exit(2);
}

const server = http.createServer((req, res) => {
  const forward = http.request(
    {
      hostname: upstream.hostname,
      port: upstream.port,
      method: req.method,
      path: req.url,
      headers: { ...req.headers, authorization: `Bearer ${token}` },
    },
    (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    },
  );
  forward.on('error', () => {
    if (!res.headersSent) res.writeHead(502);
    res.end();
  });
  res.on('close', () => forward.destroy());
  req.pipe(forward);
});
server.listen(Number(port), '127.0.0.1', () => {
  console.log(`http://127.0.0.1:${server.address().port}`);
});
