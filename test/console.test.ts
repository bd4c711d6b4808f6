import { readFile } from 'node:fs/promises';
import t from 'tap';
import { buildConsole, CONSOLE_TEST_ENV, openBrowser } from './helpers/browser.js';
import { startService, type TestService } from './helpers/service.js';

/** What a person does in the web console, in a real browser, checked against what the API then says. */

async function api(base: string, path: string, fields: Record<string, string | number>) {
  const response = await fetch(`${base}${path}?${new URLSearchParams(Object.entries(fields).map(([k, v]): [string, string] => [k, String(v)]))}`);
  return (await response.json()) as Record<string, any>;
}

/** Uploads through the multipart API, as another client of the bucket would. */
async function uploadThroughApi(base: string, token: string, bucketId: number, name: string, content: string | Buffer) {
  const form = new FormData();
  form.append('file', new Blob([content]), name);
  const query = new URLSearchParams({ AccessToken: token, BucketId: String(bucketId), AliveDays: '7' });
  const response = await fetch(`${base}/API/UploadFile?${query}`, { method: 'POST', body: form });
  const body = (await response.json()) as Record<string, any>;
  if (body.Code !== 0) throw new Error(`upload refused: ${body.Message}`);
  return body.FileKey as number;
}

let service: TestService;
let base: string;

t.before(async () => {
  const consoleDir = await buildConsole(t);
  service = await startService(t, { consoleDir, env: CONSOLE_TEST_ENV });
  base = await service.listen();
});

t.test('the console page itself: one request per asset, a strict CSP, nothing inline', async (t) => {
  const response = await fetch(`${base}/console`);
  t.equal(response.status, 200);
  t.match(response.headers.get('content-type'), /^text\/html/);
  const csp = response.headers.get('content-security-policy') ?? '';
  t.match(csp, /script-src 'self'(;|$)/, 'scripts from the service only');
  t.notMatch(csp, /unsafe-inline|unsafe-eval/, 'no inline script, no eval');
  t.match(csp, /connect-src 'self'/);
  const html = await response.text();
  t.notMatch(html, /<script(?![^>]*\bsrc=)[^>]*>/, 'no inline script element');
  t.notMatch(html, /\sstyle=|\son[a-z]+=/i, 'no inline style or handler');
  const script = /<script[^>]+src="([^"]+)"/.exec(html)?.[1];
  t.ok(script, 'a script file is referenced');
  const asset = await fetch(`${base}${script}`);
  t.equal(asset.status, 200);
  t.match(asset.headers.get('cache-control'), /immutable/, 'hashed assets are cached for good');
  t.match(asset.headers.get('content-security-policy'), /script-src 'self'/);
  const missing = await fetch(`${base}/console/assets/nothing-here.js`);
  t.equal(missing.status, 404);
  t.equal(((await missing.json()) as { Code: number }).Code, -1, 'a missing asset gets the envelope');
  t.equal((await fetch(`${base}/console/`)).status, 200, 'with a trailing slash too');
});

t.test('a person signs in, manages buckets and files, and signs out', async (t) => {
  const app = await service.newApp();
  const { page, problems, screenshot, context, byName } = await openBrowser(t, base);

  await t.test('a wrong secret is refused with the service’s message', async (t) => {
    await page.goto(`${base}/console`);
    await page.getByLabel('AppId', { exact: true }).fill(app.appId);
    await page.getByLabel('AppSecret', { exact: true }).fill('not-the-secret');
    await screenshot('01-sign-in');
    await byName('button', 'Sign in').click();
    await page.getByRole('alert').waitFor();
    t.equal(await page.getByRole('alert').innerText(), 'The AppId and AppSecret do not match any app.');
    t.ok(await byName('button', 'Sign in').isVisible(), 'still on the sign-in form');
  });

  await t.test('signing in shows the app’s buckets; the token is in sessionStorage only', async (t) => {
    await page.getByLabel('AppSecret', { exact: true }).fill(app.appSecret);
    await byName('button', 'Sign in').click();
    await page.getByRole('heading', { name: 'Buckets' }).waitFor();
    await page.getByText('No buckets yet').waitFor();
    t.pass('an empty app says so');
    const stored = (await page.evaluate('({ session: Object.keys(sessionStorage), local: Object.keys(localStorage), cookie: document.cookie })')) as { session: string[]; local: string[]; cookie: string };
    t.same(stored.local, [], 'nothing in localStorage');
    t.equal(stored.cookie, '', 'no cookie');
    t.equal(stored.session.length, 1, 'one session entry');
    t.notMatch(page.url(), new RegExp(app.appSecret), 'no secret in the address');
  });

  await t.test('creating a bucket: a refused name shows the Message, a good one is listed', async (t) => {
    await byName('button', 'New bucket').click();
    await page.getByLabel('Bucket name', { exact: true }).fill('console');
    await byName('button', 'Create').click();
    const refusal = page.getByRole('dialog').getByRole('alert');
    await refusal.waitFor();
    t.match(await refusal.innerText(), /^Your input contains several errors! .*console/, 'the envelope’s Message and Item');

    await page.getByLabel('Bucket name', { exact: true }).fill('holiday-photos');
    await page.getByLabel('Open to read', { exact: true }).check();
    await byName('button', 'Create').click();
    await byName('link', 'holiday-photos').waitFor();
    t.equal(await page.getByRole('status').innerText(), 'Successfully created your bucket!');
    const listed = await api(base, '/API/ViewMyBuckets', { AccessToken: app.token });
    t.match(listed.Buckets, [{ BucketName: 'holiday-photos', OpenToRead: true, OpenToUpload: false, FileCount: 0 }]);
  });

  await t.test('editing a bucket changes its flags', async (t) => {
    await byName('button', 'Edit holiday-photos').click();
    await page.getByLabel('Open to upload', { exact: true }).check();
    await byName('button', 'Save').click();
    // The creation's status is still shown until the edit is answered: wait for the edit's own.
    await page.getByRole('status').filter({ hasText: 'Successfully edited your bucket!' }).waitFor();
    const listed = await api(base, '/API/ViewMyBuckets', { AccessToken: app.token });
    t.match(listed.Buckets, [{ BucketName: 'holiday-photos', OpenToRead: true, OpenToUpload: true }]);
  });

  const bucketId = (await api(base, '/API/ViewMyBuckets', { AccessToken: app.token })).Buckets[0].BucketId as number;
  const hostileName = '<img src=x onerror=alert(1)>.txt';
  await uploadThroughApi(base, app.token, bucketId, 'notes.txt', 'Dear diary,\nthe console works.\n');
  await uploadThroughApi(base, app.token, bucketId, hostileName, 'just text');
  const pixel = await readFile(new URL('./fixtures/pixel.png', import.meta.url));
  await uploadThroughApi(base, app.token, bucketId, 'beach.png', pixel);

  await t.test('a bucket lists its files; names are text, never markup', async (t) => {
    await page.goto(`${base}/console`);
    await byName('link', 'holiday-photos').click();
    await byName('link', 'notes.txt').waitFor();
    const rows = page.getByRole('row');
    t.equal(await rows.count(), 4, 'a header row and three files');
    t.ok(await byName('link', hostileName).isVisible(), 'the hostile name is shown as it is');
    t.equal(await page.locator('table a img, table img[src="x"]').count(), 0, 'and made no element (the only images are the thumbnails beside the names)');
    const notes = page.getByRole('row').filter({ has: byName('link', 'notes.txt') });
    t.match(await notes.innerText(), /31 bytes/, 'size in human units');
    await screenshot('03-bucket-with-files');
  });

  await t.test('sorting and filtering', async (t) => {
    await byName('button', 'Name').click();
    const names = await page.locator('tbody td.name a').allInnerTexts();
    t.same(names, [hostileName, 'beach.png', 'notes.txt'].sort((a, b) => a.localeCompare(b, undefined, { sensitivity: 'base', numeric: true })));
    await page.getByLabel('Filter by name').fill('BEACH');
    t.same(await page.locator('tbody td.name a').allInnerTexts(), ['beach.png']);
    await page.getByLabel('Filter by name').fill('');
  });

  await t.test('the file’s link opens its download', async (t) => {
    const [opened] = await Promise.all([context.waitForEvent('page'), byName('link', 'notes.txt').click()]);
    await opened.waitForLoadState();
    t.equal(await opened.locator('body').innerText(), 'Dear diary,\nthe console works.\n');
    await opened.close();
  });

  await t.test('an image previews in the page', async (t) => {
    await page.getByRole('row').filter({ has: byName('link', 'beach.png') }).getByRole('button', { name: 'Preview' }).click();
    const image = page.getByRole('dialog').getByRole('img', { name: 'beach.png' });
    await image.waitFor();
    t.ok(await image.evaluate((element) => (element as unknown as { complete: boolean; naturalWidth: number }).naturalWidth === 1), 'the image loaded');
    await page.getByRole('dialog').getByRole('button', { name: 'Close' }).click();
  });

  await t.test('copy link puts the InternetPath on the clipboard', async (t) => {
    await page.getByRole('row').filter({ has: byName('link', 'notes.txt') }).getByRole('button', { name: 'Copy link' }).click();
    await page.getByRole('status').filter({ hasText: 'Copied the link of notes.txt.' }).waitFor();
    t.equal(await page.evaluate('navigator.clipboard.readText()'), `${base}/holiday-photos/notes.txt`);
  });

  await t.test('a share link from a download secret serves the file as many times as asked', async (t) => {
    await page.getByRole('row').filter({ has: byName('link', 'notes.txt') }).getByRole('button', { name: 'Share' }).click();
    await page.getByLabel('Number of downloads').fill('2');
    await byName('button', 'Make share link').click();
    const link = await page.getByLabel('Share link').inputValue();
    t.match(link, new RegExp(`^${base}/Download/FromSecret\\?sec=`));
    t.equal(await (await fetch(link)).text(), 'Dear diary,\nthe console works.\n');
    t.equal((await fetch(link)).status, 200);
    t.equal((await fetch(link)).status, 404, 'used up after two');
    await page.getByRole('dialog').getByRole('button', { name: 'Close' }).click();
  });

  await t.test('deleting a file asks first, then it is gone from the page and the API', async (t) => {
    const row = page.getByRole('row').filter({ has: byName('link', hostileName) });
    await row.getByRole('button', { name: 'Delete', exact: true }).click();
    const confirm = page.getByRole('dialog');
    await confirm.getByRole('button', { name: 'Cancel' }).click();
    t.ok(await byName('link', hostileName).isVisible(), 'cancel keeps it');
    await row.getByRole('button', { name: 'Delete', exact: true }).click();
    await confirm.getByRole('button', { name: 'Delete file' }).click();
    await byName('link', hostileName).waitFor({ state: 'detached' });
    t.equal(await page.getByRole('status').innerText(), 'Successfully deleted your file!');
    const files = await api(base, '/API/ViewAllFiles', { AccessToken: app.token, BucketId: bucketId });
    t.same(files.AllFiles.map((file: { RealFileName: string }) => file.RealFileName).sort(), ['beach.png', 'notes.txt']);
  });

  await t.test('in a bucket that is not open to read, the link opens through a one-use download secret', async (t) => {
    const edited = await fetch(`${base}/API/EditBucket`, {
      method: 'POST',
      body: new URLSearchParams({ AccessToken: app.token, BucketId: String(bucketId), NewBucketName: 'holiday-photos', OpenToRead: 'false', OpenToUpload: 'true' }),
    });
    t.equal(((await edited.json()) as { Code: number }).Code, 0);
    t.equal((await fetch(`${base}/holiday-photos/notes.txt`)).status, 404, 'the InternetPath is closed');
    await page.reload();
    const [opened] = await Promise.all([context.waitForEvent('page'), byName('link', 'notes.txt').click()]);
    await opened.waitForURL(/\/Download\/FromSecret\?sec=/);
    t.equal(await opened.locator('body').innerText(), 'Dear diary,\nthe console works.\n');
    t.equal((await fetch(opened.url())).status, 404, 'the secret was good for one download');
    await opened.close();
  });

  await t.test('a reload keeps the session and the page', async (t) => {
    await page.reload();
    await byName('link', 'notes.txt').waitFor();
    t.equal(await page.getByRole('heading', { level: 1 }).innerText(), 'holiday-photos');
  });

  await t.test('deleting a bucket asks first', async (t) => {
    await byName('link', 'All buckets').click();
    await screenshot('02-bucket-list');
    await byName('button', 'Delete holiday-photos').click();
    await page.getByRole('dialog').getByRole('button', { name: 'Delete bucket' }).click();
    await page.getByText('No buckets yet').waitFor();
    const listed = await api(base, '/API/ViewMyBuckets', { AccessToken: app.token });
    t.same(listed.Buckets, []);
  });

  await t.test('signing out forgets the token', async (t) => {
    await byName('button', 'Sign out').click();
    await byName('button', 'Sign in').waitFor();
    t.same(await page.evaluate('Object.keys(sessionStorage)'), []);
    await page.reload();
    await byName('button', 'Sign in').waitFor();
  });

  t.same(problems, [], 'no console error, page error, failed request or request to another origin');
});

t.test('on a phone, with 10,000 files and a token that must be renewed while in use', async (t) => {
  // The console's client (the SDK) renews a token when a quarter of its lifetime is left (at most a
  // minute ahead), its lifetime measured on the service's clock in whole seconds (so up to one less):
  // a token of 6 s is renewed by the console's first request after 4.5 s, before its DeadTime.
  const shortLived = await startService(t, { consoleDir: await buildConsole(t), env: { ...CONSOLE_TEST_ENV, TOKEN_LIFETIME_SECONDS: '6' } });
  const origin = await shortLived.listen();
  const app = await shortLived.newApp();
  const created = await fetch(`${origin}/API/CreateBucket`, {
    method: 'POST',
    body: new URLSearchParams({ AccessToken: app.token, BucketName: 'big-archive', OpenToRead: 'true', OpenToUpload: 'false' }),
  });
  const bucketId = ((await created.json()) as { BucketId: number }).BucketId;
  const uploaded = new Date();
  const rows = Array.from({ length: 10_000 }, (_, index) => ({
    bucket_id: bucketId,
    real_file_name: `scan-${String(index).padStart(5, '0')}.pdf`,
    file_extension: '.pdf',
    size_bytes: 1000 + index,
    upload_time: uploaded,
    alive_days: 30,
    expires_at: new Date(uploaded.getTime() + 30 * 86_400_000),
    storage_key: `listing-only-${index}`,
    sha256: '0'.repeat(64),
  }));
  for (let start = 0; start < rows.length; start += 2000) await shortLived.app.db.insertInto('files').values(rows.slice(start, start + 2000)).execute();

  const { page, problems, screenshot, byName } = await openBrowser(t, origin, { width: 390, height: 844 });
  await page.goto(`${origin}/console`);
  await page.getByLabel('AppId', { exact: true }).fill(app.appId);
  await page.getByLabel('AppSecret', { exact: true }).fill(app.appSecret);
  await screenshot('05-phone-sign-in', { fullPage: false });
  await byName('button', 'Sign in').click();
  await byName('link', 'big-archive').waitFor();
  const firstToken = (await page.evaluate('Object.values(sessionStorage)[0]')) as string;
  await screenshot('06-phone-bucket-list', { fullPage: false });

  await new Promise((resolve) => setTimeout(resolve, 4600));
  await byName('link', 'big-archive').click();
  await page.getByText('10000 file(s)').waitFor();
  t.equal(await page.locator('tbody tr').count(), 100, 'one page of rows at a time');
  t.equal(await page.getByText('Page 1 of 100').count(), 1);
  await byName('button', 'Name').click();
  t.equal(await page.locator('tbody td.name a').first().innerText(), 'scan-00000.pdf', 'sorted by name');
  await byName('button', 'Name').click();
  t.equal(await page.locator('tbody td.name a').first().innerText(), 'scan-09999.pdf', 'and the other way');
  await byName('button', 'Next page').click();
  t.equal(await page.locator('tbody td.name a').first().innerText(), 'scan-09899.pdf', 'the next page');
  await page.getByLabel('Filter by name').fill('scan-0420');
  await page.getByText('10 of 10000 file(s)').waitFor();
  t.same(
    await page.locator('tbody td.name a').allInnerTexts(),
    Array.from({ length: 10 }, (_, index) => `scan-0420${9 - index}.pdf`),
    'the filter keeps the sort',
  );
  await page.evaluate('scrollTo(0, 0)');
  await screenshot('07-phone-bucket-with-files', { fullPage: false });

  const renewedToken = (await page.evaluate('Object.values(sessionStorage)[0]')) as string;
  t.not(JSON.parse(renewedToken).token, JSON.parse(firstToken).token, 'the token was renewed before its DeadTime');
  t.same(problems, [], 'no console error, page error, failed request or request to another origin');
});
