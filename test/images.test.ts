import t, { type Test } from 'tap';
import { createBucket, uniqueBucketName } from './helpers/buckets.js';
import { download } from './helpers/download.js';
import { described, makeAvif, makeGif, makeJpeg, makePng, makeWebp, pixel, uploadBytes, variantRows } from './helpers/images.js';
import { startService, type TestService } from './helpers/service.js';

// Image transformations on download (CONTRACT section 16): what comes back for each option, on
// each route, with the validators, ranges and counting of any download.

const INVALID = 'Your input contains several errors!';

async function setup(t: Test, env: Record<string, string> = {}) {
  const service = await startService(t, { env });
  baseUrls.set(service, await service.listen());
  const owner = await service.newApp();
  const bucketName = uniqueBucketName('img');
  const bucketId = await createBucket(service, owner.token, { name: bucketName, openToRead: true });
  const put = (name: string, bytes: Buffer) => uploadBytes(service, owner.token, bucketId, name, bytes);
  return { service, owner, bucketName, bucketId, put };
}

const baseUrls = new Map<TestService, string>();

/** A download over a real socket: a download counts once its response has finished on the wire. */
async function get(service: TestService, url: string, headers: Record<string, string> = {}, method: 'GET' | 'HEAD' = 'GET') {
  const response = await download(baseUrls.get(service)!, url, { method, headers });
  return { statusCode: response.status, headers: response.headers, rawPayload: response.body, json: () => response.json as Record<string, any> };
}

async function metric(service: TestService, name: string, labels: string): Promise<number> {
  const text = (await service.app.inject({ method: 'GET', url: '/metrics' })).body;
  const line = text.split('\n').find((entry) => entry.startsWith(`${name}{${labels}}`));
  return line ? Number(line.split(' ').pop()) : 0;
}

t.test('sizes: w, h, fit, square, and never an enlargement', async (t) => {
  const { service, put } = await setup(t);
  const { path } = await put('landscape.jpg', await makeJpeg({ width: 400, height: 300 }));
  const cases: Array<[string, number, number]> = [
    ['w=100', 100, 75],
    ['h=60', 80, 60],
    ['w=100&h=100', 100, 75],
    ['W=100&H=100&FIT=cover', 100, 100],
    ['w=120&h=40&fit=cover', 120, 40],
    ['square=true&w=50', 50, 50],
    ['square=TRUE&h=64', 64, 64],
    ['square=true', 300, 300],
    ['w=1000', 400, 300],
    ['w=4096&h=4096', 400, 300],
    ['w=800&h=800&fit=cover', 300, 300],
    ['w=800&h=200&fit=cover', 400, 100],
  ];
  for (const [query, width, height] of cases) {
    const response = await get(service, `${path}?${query}`);
    t.equal(response.statusCode, 200, query);
    const image = await described(response.rawPayload);
    t.same([image.format, image.width, image.height], ['jpeg', width, height], `${query}: ${width}×${height}`);
    t.equal(response.headers['content-type'], 'image/jpeg');
    t.equal(Number(response.headers['content-length']), response.rawPayload.length);
  }
  const plain = await get(service, `${path}?fit=cover&square=false&format=origin`);
  t.equal(plain.headers.etag, `"${(await service.app.db.selectFrom('files').select('sha256').executeTakeFirstOrThrow()).sha256}"`, 'options that change nothing serve the file as stored');
});

t.test('upright by EXIF orientation, with no metadata left', async (t) => {
  const { service, put } = await setup(t);
  // Stored 200 wide and 100 high, tagged "turn 90° clockwise to view": upright it is 100 × 200.
  const stored = await makeJpeg({ width: 200, height: 100 }, { orientation: 6, gps: true });
  const original = await described(stored);
  t.equal(original.orientation, 6, 'the test image carries its orientation');
  t.ok(original.exif && original.exif.length > 0, 'and EXIF');
  const { path } = await put('camera.jpg', stored);

  const response = await get(service, `${path}?w=50`);
  const image = await described(response.rawPayload);
  t.same([image.width, image.height], [50, 100], 'upright: portrait');
  t.equal(image.orientation, undefined, 'no orientation tag left');
  t.equal(image.exif, undefined, 'no EXIF (no GPS)');
  t.notOk(response.rawPayload.includes(Buffer.from('test camera')), 'none of the metadata’s text');
  const webp = await described((await get(service, `${path}?format=webp`)).rawPayload);
  t.same([webp.format, webp.width, webp.height, webp.exif], ['webp', 100, 200, undefined], 're-encoded at full size, upright too');
});

t.test('alpha: kept by WebP and PNG, flattened on white for JPEG', async (t) => {
  const { service, put } = await setup(t);
  const { path } = await put('clear.png', await makePng({ width: 64, height: 64, channels: 4, fill: { r: 255, g: 0, b: 0, alpha: 0 } }));
  const webp = (await get(service, `${path}?w=32&format=webp`)).rawPayload;
  t.same([(await described(webp)).hasAlpha, (await pixel(webp, 5, 5))[3]], [true, 0], 'WebP keeps the transparency');
  const png = (await get(service, `${path}?w=32`)).rawPayload;
  t.same([(await described(png)).format, (await described(png)).hasAlpha], ['png', true], 'PNG (origin) keeps it');
  const jpeg = (await get(service, `${path}?w=32&format=jpeg`)).rawPayload;
  t.equal((await described(jpeg)).hasAlpha, false);
  t.ok((await pixel(jpeg, 5, 5)).every((channel) => channel > 245), 'JPEG: transparent became white');
});

t.test('formats: each asked one, with its type and the name’s extension; GIF, WebP and AVIF sources', async (t) => {
  const { service, put } = await setup(t);
  const { path } = await put('photo.png', await makePng({ width: 120, height: 80, fill: 'noise' }));
  const types = { webp: 'image/webp', avif: 'image/avif', jpeg: 'image/jpeg', png: 'image/png' } as const;
  const extensions = { webp: 'webp', avif: 'avif', jpeg: 'jpg', png: 'png' } as const;
  for (const format of ['webp', 'avif', 'jpeg', 'png'] as const) {
    const response = await get(service, `${path}?format=${format.toUpperCase()}&w=60`);
    t.equal(response.statusCode, 200, format);
    t.equal((await described(response.rawPayload)).format, format === 'avif' ? 'heif' : format, `${format}: the bytes are ${format}`);
    t.equal(response.headers['content-type'], types[format]);
    t.equal(response.headers['content-disposition'], `inline; filename=photo.${extensions[format]}`, 'the name follows the format');
    t.equal(response.headers['x-content-type-options'], 'nosniff');
    t.equal(response.headers['content-security-policy'], 'sandbox');
  }
  const attachment = await get(service, `${path}?format=webp&download=1&name=${encodeURIComponent('mine.png')}`);
  t.equal(attachment.headers['content-disposition'], 'attachment; filename=mine.webp', 'a suggested name follows the format too');

  const q10 = (await get(service, `${path}?format=jpeg&q=10`)).rawPayload.length;
  const q95 = (await get(service, `${path}?format=jpeg&q=95`)).rawPayload.length;
  t.ok(q10 < q95 / 2, `q changes the quality (${q10} against ${q95} bytes)`);

  const gif = await put('first-frame.gif', await makeGif({ width: 90, height: 60 }));
  const fromGif = await get(service, `${gif.path}?w=45`);
  t.same([(await described(fromGif.rawPayload)).format, fromGif.headers['content-type']], ['gif', 'image/gif'], 'a GIF stays a GIF');
  t.equal((await described(fromGif.rawPayload)).width, 45);
  const webp = await put('source.webp', await makeWebp({ width: 90, height: 60 }));
  t.same(await described((await get(service, `${webp.path}?h=30`)).rawPayload).then((image) => [image.format, image.height]), ['webp', 30]);
  const avif = await put('source.avif', await makeAvif({ width: 90, height: 60 }));
  t.same(await described((await get(service, `${avif.path}?h=30&format=png`)).rawPayload).then((image) => [image.format, image.height]), ['png', 30]);
});

t.test('format=auto: AVIF, else WebP, else the origin format, by Accept; Vary: Accept', async (t) => {
  const { service, put } = await setup(t);
  const { path } = await put('negotiated.jpg', await makeJpeg({ width: 100, height: 100 }));
  const cases: Array<[string | undefined, string]> = [
    ['image/avif,image/webp,image/apng,*/*;q=0.8', 'image/avif'],
    ['image/webp,*/*', 'image/webp'],
    ['image/avif;q=0, image/webp', 'image/webp'],
    ['*/*', 'image/jpeg'],
    ['image/png, image/*', 'image/jpeg'],
    [undefined, 'image/jpeg'],
  ];
  const etags = new Map<string, string>();
  for (const [accept, type] of cases) {
    const response = await get(service, `${path}?format=auto&w=50`, accept ? { accept } : {});
    t.equal(response.headers['content-type'], type, `Accept ${accept}`);
    t.equal(response.headers.vary, 'Accept');
    const etag = String(response.headers.etag);
    if (etags.has(type)) t.equal(etag, etags.get(type), 'one ETag per format served');
    etags.set(type, etag);
  }
  t.equal(new Set(etags.values()).size, 3, 'each format served has its own ETag');
  const explicit = await get(service, `${path}?format=webp&w=50`, { accept: 'image/avif' });
  t.equal(explicit.headers.vary, undefined, 'an explicit format does not vary');
});

t.test('every route serves the same variant; options are checked first, on every route, whatever the file', async (t) => {
  const { service, owner, put } = await setup(t);
  const { path, fileKey } = await put('routes.png', await makePng({ width: 300, height: 200, fill: 'noise' }));
  const secret = async (uses: number) =>
    (await service.app.inject({ method: 'GET', url: `/Secret/Generate?AccessToken=${owner.token}&Id=${fileKey}&MaxUseTimes=${uses}` })).json().Value as string;
  const sec = await secret(3);
  const routes = [path, `/Download/FromKey/${fileKey}`, `/download/fromkey/${fileKey}.png`, `/Download/FromSecret?sec=${encodeURIComponent(sec)}`];
  const join = (route: string, query: string) => `${route}${route.includes('?') ? '&' : '?'}${query}`;
  const answers = await Promise.all(routes.map((route) => get(service, join(route, 'w=150&format=webp'))));
  for (const [i, response] of answers.entries()) {
    t.equal(response.statusCode, 200, routes[i]);
    t.equal(response.headers['content-type'], 'image/webp');
    t.ok(response.rawPayload.equals(answers[0]!.rawPayload), `${routes[i]}: the same bytes`);
    t.equal(response.headers.etag, answers[0]!.headers.etag, 'and ETag');
  }
  t.equal(answers[3]!.headers['cache-control'], 'private, no-store', 'a secret’s download is not for shared caches');

  const bad = 'w=0&H=abc&fit=stretch&square=maybe&format=tiff&q=101';
  const items = [
    'The field w must be between 1 and 4096.',
    "The value 'abc' is not valid for h.",
    'The field fit must be one of inside, cover.',
    'The field square must be one of true, false.',
    'The field format must be one of origin, auto, webp, avif, jpeg, png.',
    'The field q must be between 1 and 100.',
  ];
  const { path: textPath } = await put('notes.txt', Buffer.from('not an image'));
  const oneUse = await secret(1);
  for (const route of [...routes, textPath, '/no-such-bucket/x.png', '/Download/FromKey/999999999', `/Download/FromSecret?sec=${encodeURIComponent(oneUse)}`]) {
    const response = await get(service, join(route, bad));
    t.equal(response.statusCode, 400, `${route}: 400`);
    t.same(response.json(), { Code: -10, Message: INVALID, Items: items }, 'every bad value, in the envelope');
  }
  t.equal((await get(service, join(routes[0]!, 'w=1&w=2'))).json().Items[0], 'The w field was given more than once.');
  t.equal((await get(service, `/Download/FromSecret?sec=${encodeURIComponent(oneUse)}&w=20`)).statusCode, 200, 'the refusals used none of the one-use secret');
  t.equal((await get(service, `/Download/FromSecret?sec=${encodeURIComponent(oneUse)}&w=20`)).statusCode, 404, 'its one GET did');
});

t.test('a variant is a download: 304, ranges, HEAD, DownloadTimes, one use of a secret per GET', async (t) => {
  const { service, owner, put } = await setup(t);
  const { path, fileKey } = await put('cached.jpg', await makeJpeg({ width: 500, height: 400, fill: 'noise' }));
  const whole = await get(service, `${path}?w=200`);
  const etag = String(whole.headers.etag);
  const sha256 = (await service.app.db.selectFrom('files').select('sha256').where('file_key', '=', fileKey).executeTakeFirstOrThrow()).sha256;
  t.match(etag, new RegExp(`^"${sha256}-[0-9a-f]{16}"$`), 'strong, from the sha256 and the transformation');
  t.equal(whole.headers['accept-ranges'], 'bytes');
  t.ok(whole.headers['last-modified']);
  const size = whole.rawPayload.length;

  const notModified = await get(service, `${path}?w=200`, { 'if-none-match': etag });
  t.same([notModified.statusCode, notModified.rawPayload.length, notModified.headers.etag], [304, 0, etag]);
  t.equal((await get(service, `${path}?w=201`, { 'if-none-match': etag })).statusCode, 200, 'another transformation, another tag');
  t.equal((await get(service, path, { 'if-none-match': etag })).statusCode, 200, 'the original has its own tag');

  const ranged = await get(service, `${path}?w=200`, { range: 'bytes=10-99' });
  t.same([ranged.statusCode, ranged.headers['content-range'], ranged.headers['content-length']], [206, `bytes 10-99/${size}`, '90']);
  t.ok(ranged.rawPayload.equals(whole.rawPayload.subarray(10, 100)), 'the bytes of the range');
  const tail = await get(service, `${path}?w=200`, { range: `bytes=${size - 5}-` });
  t.ok(tail.rawPayload.equals(whole.rawPayload.subarray(size - 5)));
  t.equal((await get(service, `${path}?w=200`, { range: `bytes=${size}-` })).statusCode, 416);
  const stale = await get(service, `${path}?w=200`, { range: 'bytes=0-9', 'if-range': '"other"' });
  t.same([stale.statusCode, stale.rawPayload.length], [200, size], 'If-Range that does not match: the whole variant');

  const head = await get(service, `${path}?w=200`, {}, 'HEAD');
  t.same([head.statusCode, head.headers['content-length'], head.rawPayload.length, head.headers.etag], [200, String(size), 0, etag]);
  const freshHead = await get(service, `${path}?w=77`, {}, 'HEAD');
  const fresh = await get(service, `${path}?w=77`);
  t.same([freshHead.headers['content-length'], freshHead.headers.etag], [String(fresh.rawPayload.length), fresh.headers.etag], 'HEAD of a variant not made yet has its length');

  // Counted: the first whole GET, the If-Range GET, the w=201 GET, the original, the w=77 GET; not 304, HEAD, the ranges from byte 10, 416.
  await service.app.downloadCounter.flush();
  const view = await service.app.inject({ method: 'GET', url: `/API/ViewOneFile?FileKey=${fileKey}` });
  t.equal(view.json().File.DownloadTimes, 5, 'completed GETs of variants count as downloads of the file');

  const sec = (await service.app.inject({ method: 'GET', url: `/Secret/Generate?AccessToken=${owner.token}&Id=${fileKey}&MaxUseTimes=2` })).json().Value as string;
  const bySecret = (query: string, headers: Record<string, string> = {}, method: 'GET' | 'HEAD' = 'GET') =>
    get(service, `/Download/FromSecret?sec=${encodeURIComponent(sec)}&${query}`, headers, method);
  t.equal((await bySecret('w=200', {}, 'HEAD')).statusCode, 200, 'HEAD only looks');
  t.equal((await bySecret('w=200', { range: 'bytes=0-9' })).statusCode, 206, 'a range takes a use');
  t.equal((await bySecret('w=200', { 'if-none-match': etag })).statusCode, 304, 'so does a GET answered 304');
  t.equal((await bySecret('w=200')).statusCode, 404, 'two uses, two GETs');
  const troubles = service.logs.map((line) => JSON.parse(line) as { level: number; msg: string }).filter((entry) => entry.level >= 40 && !entry.msg.startsWith('the web console is not built'));
  t.same(troubles.map((entry) => entry.msg), [], 'nothing logged a warning: each answer was sent once, and nothing else was read for it');
});

t.test('anything but a raster image is served as stored: SVG, a non-image named .png, an empty file', async (t) => {
  const { service, put } = await setup(t);
  const svg = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" width="100" height="100"><rect width="100" height="100"/></svg>');
  const fake = Buffer.from('%PDF-1.4 this is not a PNG at all, whatever its name says');
  const truncated = (await makePng({ width: 300, height: 300, fill: 'noise' })).subarray(0, 2000);
  for (const [name, bytes] of [['drawing.svg', svg], ['fake.png', fake], ['empty.png', Buffer.alloc(0)], ['truncated.png', truncated]] as const) {
    const { path, fileKey } = await put(name, bytes);
    const before = await metric(service, 'filestore_image_renders_total', 'outcome="rendered"');
    const response = await get(service, `${path}?w=50&format=webp`);
    t.equal(response.statusCode, 200, name);
    t.ok(response.rawPayload.equals(bytes), `${name}: the stored bytes, unchanged`);
    t.notMatch(String(response.headers['content-type']), /webp/, 'not called a WebP');
    t.equal(await metric(service, 'filestore_image_renders_total', 'outcome="rendered"'), before, 'nothing rendered');
    t.same(await variantRows(service, fileKey), [], 'nothing kept');
  }
});

t.test('IMAGE_TRANSFORMATIONS=off ignores the options', async (t) => {
  const { service, put } = await setup(t, { IMAGE_TRANSFORMATIONS: 'off' });
  const bytes = await makeJpeg({ width: 100, height: 80 });
  const { path } = await put('plain.jpg', bytes);
  for (const query of ['w=20', 'w=abc&format=tiff']) {
    const response = await get(service, `${path}?${query}`);
    t.equal(response.statusCode, 200, query);
    t.ok(response.rawPayload.equals(bytes), 'the file as stored');
  }
  t.notMatch((await service.app.inject({ method: 'GET', url: '/metrics' })).body, /filestore_image_renders_total\{/, 'no render ever');
});
