// A loopback proxy in front of the fixture agent for the A2A conformance kit, which sends no
// credentials: it adds a bearer token (A2A_TOKEN) to every request and passes Host through, so
// the agent card names the proxy's address and the kit's calls come back through it.
//
// With --unique-message-ids it also makes each SendMessage's messageId unique (a suffix
// `~<n>` keeps the kit's prefix): the kit sends different messages under one messageId, which
// taskhandle reads as the same message sent again (docs/a2a.md, "The conformance kit").
//
// Usage: A2A_TOKEN=... node proxy.mjs <listen-port> <target-url> [--unique-message-ids]
// Port 0 takes a free one. Prints the proxy's base URL once it listens.
import http from 'node:http';

const [port, target, flag] = process.argv.slice(2);
const token = process.env.A2A_TOKEN;
if (!port || !target || !token || (flag && flag !== '--unique-message-ids')) {
  console.error(
    'usage: A2A_TOKEN=... node proxy.mjs <listen-port> <target-url> [--unique-message-ids]',
  );
  process.exit(2);
}
const upstream = new URL(target);
const unique = flag === '--unique-message-ids';
let sent = 0;

/** The body with its message's id made unique, when it is a JSON-RPC send; else as it came. */
function rewritten(body) {
  let request;
  try {
    request = JSON.parse(body.toString('utf8'));
  } catch {
    return body;
  }
  const message = request?.params?.message;
  if (!/^Send(Streaming)?Message$/.test(request?.method) || typeof message !== 'object' || !message)
    return body;
  for (const key of ['messageId', 'message_id'])
    if (typeof message[key] === 'string') message[key] = `${message[key]}~${++sent}`;
  return Buffer.from(JSON.stringify(request));
}

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (chunk) => chunks.push(chunk));
  req.on('end', () => {
    const raw = Buffer.concat(chunks);
    const body = unique && req.method === 'POST' ? rewritten(raw) : raw;
    const headers = { ...req.headers, authorization: `Bearer ${token}` };
    delete headers['transfer-encoding'];
    if (req.method !== 'GET' && req.method !== 'HEAD') headers['content-length'] = body.length;
    const forward = http.request(
      {
        hostname: upstream.hostname,
        port: upstream.port,
        method: req.method,
        path: req.url,
        headers,
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
    forward.end(body);
  });
});
server.listen(Number(port), '127.0.0.1', () => {
  console.log(`http://127.0.0.1:${server.address().port}`);
});
