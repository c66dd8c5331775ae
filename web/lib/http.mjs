// Small node:http helpers for the demo: JSON replies, JSON bodies, Server-Sent Events.

export class HttpError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

export function sendJson(res, status, body) {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    'cache-control': 'no-store',
  });
  res.end(text);
}

export function sendError(res, err) {
  const status = err instanceof HttpError ? err.status : 500;
  if (res.headersSent) {
    // An SSE stream already started: the error becomes its last event.
    sseSend(res, 'error', { status, message: err.message });
    res.end();
    return;
  }
  sendJson(res, status, { error: err.message });
}

const kDefaultMaxBody = 64 * 1024;

export async function readJson(req, maxBody = kDefaultMaxBody) {
  let size = 0;
  const chunks = [];
  for await (const chunk of req) {
    size += chunk.length;
    if (size > maxBody) throw new HttpError(413, `request body above ${maxBody} bytes`);
    chunks.push(chunk);
  }
  if (size === 0) return {};
  try {
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new Error();
    return body;
  } catch {
    throw new HttpError(400, 'request body is not a JSON object: send e.g. {"prompt": "hi"}');
  }
}

// Starts an event stream on `res` (idempotent) and disables Nagle so small batches leave now.
export function sseStart(res) {
  if (res.headersSent) return;
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-store',
    connection: 'keep-alive',
  });
  res.socket?.setNoDelay(true);
  res.write(': edgellm\n\n');
}

export function sseSend(res, event, data) {
  if (res.destroyed || res.writableEnded) return;  // the client went away
  sseStart(res);
  res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
}
