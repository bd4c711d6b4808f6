import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { buildConsole, CONSOLE_TEST_ENV, openBrowser } from './helpers/browser.js';
import { startService } from './helpers/service.js';

/** Uploads through the console: resumable (tus), several at once, paused and resumed, retried. */

const sha256 = (bytes: Buffer | ArrayBuffer) => createHash('sha256').update(Buffer.from(bytes as ArrayBuffer)).digest('hex');

t.test('a person uploads files, pauses and resumes one, and retries a refused one', async (t) => {
  const service = await startService(t, { consoleDir: await buildConsole(t), env: CONSOLE_TEST_ENV });
  const base = await service.listen();
  const app = await service.newApp();
  const created = await fetch(`${base}/API/CreateBucket`, {
    method: 'POST',
    body: new URLSearchParams({ AccessToken: app.token, BucketName: 'field-recordings', OpenToRead: 'true', OpenToUpload: 'false' }),
  });
  const bucketId = ((await created.json()) as { BucketId: number }).BucketId;
  const listFiles = async () => {
    const response = await fetch(`${base}/API/ViewAllFiles?${new URLSearchParams({ AccessToken: app.token, BucketId: String(bucketId) })}`);
    return ((await response.json()) as { AllFiles: { FileKey: number; RealFileName: string; JFileSize: number; AliveDays: number; InternetPath: string }[] }).AllFiles;
  };

  const { page, context, problems, screenshot, byName, signIn } = await openBrowser(t, base);
  await signIn(app);
  await byName('link', 'field-recordings').click();
  await page.getByText('No files yet').waitFor();

  // A slow link, so that an upload is seen in progress and can be paused halfway.
  const network = await context.newCDPSession(page);
  await network.send('Network.enable');
  await network.send('Network.emulateNetworkConditions', { offline: false, latency: 20, downloadThroughput: -1, uploadThroughput: 4 * 1024 * 1024 });

  const big = randomBytes(24 * 1024 * 1024);
  const small = Buffer.from('Wind over the harbour, 06:10.\n');
  await page.getByLabel('Keep for (days)').fill('3');
  // Files on disk, as a person picks them (the browser reads them itself, nothing is copied through the driver).
  const folder = await mkdtemp(path.join(tmpdir(), 'filestore-picked-'));
  t.teardown(() => rm(folder, { recursive: true, force: true }));
  await writeFile(path.join(folder, 'harbour-notes.txt'), small);
  await writeFile(path.join(folder, 'harbour-dawn.wav'), big);
  await page.getByLabel('Choose files', { exact: true }).setInputFiles([path.join(folder, 'harbour-notes.txt'), path.join(folder, 'harbour-dawn.wav')]);

  await t.test('each file has a progress bar; the large one is paused halfway and resumed', async (t) => {
    const bigProgress = byName('progressbar', 'Upload of harbour-dawn.wav');
    // Polled from here: a predicate run in the page would need eval, which the console's CSP forbids.
    const sent = async () => Number((await bigProgress.getAttribute('value')) ?? 0);
    while ((await sent()) === 0) await new Promise((resolve) => setTimeout(resolve, 50));
    t.ok((await sent()) < big.length / 2, 'the bar moves while the bytes go');
    while ((await sent()) < big.length / 5) await new Promise((resolve) => setTimeout(resolve, 50));
    await screenshot('04-upload-in-progress');
    await byName('button', 'Pause harbour-dawn.wav').click();
    await page.getByText(/Paused at \d+%/).waitFor();
    const pausedAt = Number(await bigProgress.getAttribute('value'));
    t.ok(pausedAt > 0 && pausedAt < big.length, 'paused partway');
    t.notOk((await listFiles()).some((file) => file.RealFileName === 'harbour-dawn.wav'), 'a paused upload is not a file yet');
    await page.setViewportSize({ width: 390, height: 844 });
    await screenshot('08-phone-upload-paused', { fullPage: false });
    await page.setViewportSize({ width: 1280, height: 800 });

    await network.send('Network.emulateNetworkConditions', { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: -1 });
    await byName('button', 'Resume harbour-dawn.wav').click();
    await page.locator('li.upload.done').filter({ hasText: 'harbour-dawn.wav' }).waitFor({ timeout: 60_000 });
    await page.locator('li.upload.done').filter({ hasText: 'harbour-notes.txt' }).waitFor();
    t.equal(await byName('progressbar', 'Upload of harbour-dawn.wav').getAttribute('value'), String(big.length), 'the bar is full');
  });

  await t.test('the uploaded files are listed, whole, kept for the days chosen', async (t) => {
    await byName('link', 'harbour-dawn.wav').waitFor();
    await byName('link', 'harbour-notes.txt').waitFor();
    const files = await listFiles();
    t.same(files.map((file) => [file.RealFileName, file.JFileSize, file.AliveDays]).sort(), [
      ['harbour-dawn.wav', big.length, 3],
      ['harbour-notes.txt', small.length, 3],
    ]);
    const bigFile = files.find((file) => file.RealFileName === 'harbour-dawn.wav')!;
    t.equal(sha256(await (await fetch(bigFile.InternetPath)).arrayBuffer()), sha256(big), 'the bytes back are the bytes sent');
    await screenshot('03b-bucket-after-upload');
  });

  await t.test('a refused upload shows the Message and can be retried', async (t) => {
    await byName('button', 'Dismiss harbour-notes.txt').click();
    await byName('button', 'Dismiss harbour-dawn.wav').click();
    t.equal(await page.locator('li.upload').count(), 0, 'finished uploads are dismissed');
    await page.getByLabel('Choose files', { exact: true }).setInputFiles([{ name: 'harbour-notes.txt', mimeType: 'text/plain', buffer: Buffer.from('second take\n') }]);
    const refused = page.locator('li.upload.failed').filter({ hasText: 'harbour-notes.txt' });
    await refused.waitFor();
    t.match(await refused.innerText(), /There already exists a file with that name\./);

    const old = (await listFiles()).find((file) => file.RealFileName === 'harbour-notes.txt')!;
    await fetch(`${base}/API/DeleteFile`, { method: 'POST', body: new URLSearchParams({ AccessToken: app.token, FileKey: String(old.FileKey) }) });
    await byName('button', 'Retry harbour-notes.txt').click();
    await page.locator('li.upload.done').filter({ hasText: 'harbour-notes.txt' }).waitFor();
    const again = (await listFiles()).find((file) => file.RealFileName === 'harbour-notes.txt')!;
    t.equal(await (await fetch(again.InternetPath)).text(), 'second take\n');
  });

  // The refused creation answers 409 by design (and the browser logs it). So may the first PATCH
  // after Resume, when the paused one is still being wound up on the service (the upload is held,
  // or its offset has moved since the HEAD): tus clients read the offset again and go on, and the
  // file above came back whole. Anything else is a problem.
  const expected = [
    /^HTTP 409: .*\/API\/ResumableUpload$/,
    /^HTTP 409: .*\/API\/ResumableUpload\/[0-9a-f]{32}$/,
    /^console error: Failed to load resource: .* 409 \(Conflict\)$/,
  ];
  t.same(
    problems.filter((problem) => !expected.some((pattern) => pattern.test(problem))),
    [],
    'no console error, page error, failed request or request to another origin',
  );
});
