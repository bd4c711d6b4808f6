/**
 * Requests that Node's HTTP parser refuses before any operation sees them: each is answered with
 * the envelope, and its Items say what was wrong with the request, on a real socket and from curl.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import t from 'tap';
import { rawRequest } from './helpers/hostile.js';
import { setupResumable } from './helpers/resumable.js';

const run = promisify(execFile);
const VALIDATION = 'Your input contains several errors!';

const LINE_BREAK =
  "A header line could not be read: a header's value may not contain a line break, and each line must end with CR LF (base64 in Upload-Metadata must not wrap).";
const BAD_HEADER_LINE =
  "A header line could not be read: each must be a name (letters, digits and !#$%&'*+-.^_`|~), a colon, and a value without control characters or line breaks (base64 in Upload-Metadata must not wrap).";
const BAD_REQUEST_LINE = 'The request line could not be read: it must be a method, a path without spaces or control characters, and HTTP/1.1, ending with CR LF.';
const BAD_CONTENT_LENGTH = 'The Content-Length header could not be read: it must be one whole number, given once, and never with Transfer-Encoding.';
const BAD_TRANSFER_ENCODING = 'The Transfer-Encoding header could not be read: only chunked is accepted, as the last coding, and never with Content-Length.';

/** Over 57 bytes: base64 (GNU coreutils) wraps its output at 76 characters. */
const LONG_NAME = 'holiday video of the whole family at the lake, summer 2026.mp4';

/** What `$(printf %s "$1" | base64<filter>)` gives in a shell: the value as a recipe would build it. */
async function shellBase64(value: string, filter = ''): Promise<string> {
  const { stdout } = await run('sh', ['-c', `printf %s "$1" | base64${filter}`, 'sh', value]);
  // $(...) drops the trailing newline, never the ones inside.
  return stdout.replace(/\n$/, '');
}

/** A creation POST sent by curl; resolves with the status and the body. */
async function curlCreate(endpoint: string, token: string, uploadMetadata: string): Promise<{ status: number; body: string }> {
  const { stdout } = await run('curl', [
    '-s',
    '-X',
    'POST',
    endpoint,
    '-H',
    'Tus-Resumable: 1.0.0',
    '-H',
    `Authorization: Bearer ${token}`,
    '-H',
    'Upload-Length: 5',
    '-H',
    `Upload-Metadata: ${uploadMetadata}`,
    '-w',
    '\n%{http_code}',
  ]);
  const cut = stdout.lastIndexOf('\n');
  return { status: Number(stdout.slice(cut + 1)), body: stdout.slice(0, cut) };
}

t.test('curl with a wrapped base64 in Upload-Metadata is told the header has a line break; unwrapped, the upload is created', async (t) => {
  const s = await setupResumable(t);
  const wrapped = await shellBase64(LONG_NAME);
  t.match(wrapped, /\n/, 'base64 wraps the name');
  const rest = `BucketId ${Buffer.from(String(s.bucketId)).toString('base64')},AliveDays ${Buffer.from('1').toString('base64')}`;

  const refused = await curlCreate(s.endpoint, s.token, `filename ${wrapped},${rest}`);
  t.equal(refused.status, 400);
  t.same(JSON.parse(refused.body), { Code: -10, Message: VALIDATION, Items: [LINE_BREAK] });

  const unwrapped = await shellBase64(LONG_NAME, " | tr -d '\\n'");
  t.equal(Buffer.from(unwrapped, 'base64').toString(), LONG_NAME);
  const created = await curlCreate(s.endpoint, s.token, `filename ${unwrapped},${rest}`);
  t.equal(created.status, 201, created.body);
});

t.test('a request the HTTP parser refuses is answered with what was wrong with it', async (t) => {
  const s = await setupResumable(t);
  const wrappedCrLf = Buffer.from(LONG_NAME).toString('base64').replace(/(.{76})/, '$1\r\n');
  const cases: Array<[string, string, number, string]> = [
    ['a value wrapped with a bare LF', `POST /API/ResumableUpload HTTP/1.1\r\nHost: x\r\nUpload-Metadata: filename ${Buffer.from(LONG_NAME).toString('base64').replace(/(.{76})/, '$1\n')}\r\n\r\n`, 400, LINE_BREAK],
    ['lines ending in a bare LF', 'GET /health HTTP/1.1\r\nHost: x\nAccept: */*\r\n\r\n', 400, LINE_BREAK],
    ['a CR inside a value', 'GET /health HTTP/1.1\r\nHost: x\r\nX-Note: a\rb\r\n\r\n', 400, LINE_BREAK],
    ['a value wrapped with CR LF', `POST /API/ResumableUpload HTTP/1.1\r\nHost: x\r\nUpload-Metadata: filename ${wrappedCrLf}\r\n\r\n`, 400, BAD_HEADER_LINE],
    ['a folded header line', 'GET /health HTTP/1.1\r\nHost: x\r\nX-Note: a\r\n b\r\n\r\n', 400, BAD_HEADER_LINE],
    ['a space in a header name', 'GET /health HTTP/1.1\r\nHost: x\r\nBad Header: y\r\n\r\n', 400, BAD_HEADER_LINE],
    ['a NUL in a header value', 'GET /health HTTP/1.1\r\nHost: x\r\nX-Note: a\0b\r\n\r\n', 400, BAD_HEADER_LINE],
    ['a space in the path', 'GET /API/View All HTTP/1.1\r\nHost: x\r\n\r\n', 400, BAD_REQUEST_LINE],
    ['a garbage request line', 'HELLO THERE\r\n\r\n', 400, BAD_REQUEST_LINE],
    ['an unknown HTTP version', 'GET /health HTTP/9.9\r\nHost: x\r\n\r\n', 400, BAD_REQUEST_LINE],
    ['a Content-Length that is not a number', 'POST /API/AccessToken HTTP/1.1\r\nHost: x\r\nContent-Length: ten\r\n\r\n', 400, BAD_CONTENT_LENGTH],
    ['two Content-Lengths', 'POST /API/AccessToken HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab', 400, BAD_CONTENT_LENGTH],
    ['Content-Length with Transfer-Encoding', 'POST /API/AccessToken HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n', 400, BAD_TRANSFER_ENCODING],
    ['headers over the limit', `GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(64 * 1024)}\r\n\r\n`, 431, 'The request headers are larger than the service accepts.'],
  ];
  for (const [name, bytes, status, item] of cases) {
    const answer = await rawRequest(s.base, bytes);
    t.equal(answer.status, status, `${name}: status`);
    t.same(answer.body, { Code: -10, Message: VALIDATION, Items: [item] }, `${name}: the envelope says what was wrong`);
  }
  // Still serving: nothing above reached an operation or upset the process.
  t.equal((await fetch(`${s.base}/health`)).status, 200);
});
