import t from 'tap';
import { buildConsole, CONSOLE_TEST_ENV, openBrowser } from './helpers/browser.js';
import { startService } from './helpers/service.js';

/** Previews in the page: text, audio and video files are shown in a dialog without leaving the bucket. */

/** A real WAV file: `seconds` of silence, 8 kHz, 8-bit mono. */
function silentWav(seconds: number): Buffer {
  const samples = 8000 * seconds;
  const header = Buffer.alloc(44);
  header.write('RIFF', 0);
  header.writeUInt32LE(36 + samples, 4);
  header.write('WAVEfmt ', 8);
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(1, 20); // PCM
  header.writeUInt16LE(1, 22); // mono
  header.writeUInt32LE(8000, 24);
  header.writeUInt32LE(8000, 28);
  header.writeUInt16LE(1, 32);
  header.writeUInt16LE(8, 34);
  header.write('data', 36);
  header.writeUInt32LE(samples, 40);
  return Buffer.concat([header, Buffer.alloc(samples, 128)]);
}

/** A real one-page PDF that says `words`, its cross-reference table at the right offsets. */
function onePagePdf(words: string): Buffer {
  const stream = `BT /F1 24 Tf 72 700 Td (${words}) Tj ET`;
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>',
    `<< /Length ${stream.length} >>\nstream\n${stream}\nendstream`,
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>',
  ];
  let pdf = '%PDF-1.4\n';
  const offsets = objects.map((object, index) => {
    const offset = pdf.length;
    pdf += `${index + 1} 0 obj\n${object}\nendobj\n`;
    return offset;
  });
  const xref = pdf.length;
  pdf += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${offsets.map((offset) => `${String(offset).padStart(10, '0')} 00000 n \n`).join('')}`;
  pdf += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(pdf, 'latin1');
}

t.test('text, audio and video files preview in the page', async (t) => {
  const service = await startService(t, { consoleDir: await buildConsole(t), env: CONSOLE_TEST_ENV });
  const base = await service.listen();
  const app = await service.newApp();
  const auth = { Authorization: `Bearer ${app.token}` };
  const created = await fetch(`${base}/API/CreateBucket`, { method: 'POST', headers: auth, body: new URLSearchParams({ BucketName: 'preview-shelf', OpenToRead: 'false', OpenToUpload: 'false' }) });
  const bucketId = ((await created.json()) as { BucketId: number }).BucketId;
  const upload = async (name: string, content: Buffer | string) => {
    const form = new FormData();
    form.append('file', new Blob([content]), name);
    const response = await fetch(`${base}/API/UploadFile?${new URLSearchParams({ BucketId: String(bucketId), AliveDays: '7' })}`, { method: 'POST', headers: auth, body: form });
    t.equal(((await response.json()) as { Code: number }).Code, 0, `${name} uploaded`);
  };
  await upload('minutes.txt', 'Minutes of the meeting\n1. Previews work.\n');
  await upload('silence.wav', silentWav(2));
  // Not a playable film: the test checks the player is shown and fetches the file, not the codec.
  await upload('clip.webm', 'not really a film');
  await upload('agenda.pdf', onePagePdf('Agenda for Tuesday'));

  const { page, context, problems, screenshot, byName, signIn } = await openBrowser(t, base);
  await signIn(app);
  await byName('link', 'preview-shelf').click();
  const preview = (name: string) => page.getByRole('row').filter({ has: byName('link', name) }).getByRole('button', { name: 'Preview', exact: true }).click();
  const dialog = page.getByRole('dialog');

  await t.test('text: the file’s words in the dialog', async (t) => {
    await preview('minutes.txt');
    await dialog.locator('pre').waitFor();
    t.equal(await dialog.locator('pre').innerText(), 'Minutes of the meeting\n1. Previews work.\n', 'the text shown is the file’s');
    t.equal(await dialog.getByRole('heading').innerText(), 'minutes.txt', 'under the file’s name');
    await screenshot('12-preview-text', { fullPage: false });
    await dialog.getByRole('button', { name: 'Close', exact: true }).click();
    await dialog.waitFor({ state: 'detached' });
  });

  await t.test('audio: a player that has read the file', async (t) => {
    await preview('silence.wav');
    const audio = dialog.locator('audio');
    await audio.waitFor();
    // Polled from here: waitForFunction would need eval, which the console's CSP forbids.
    const duration = () => audio.evaluate((element) => (element as unknown as { duration: number }).duration);
    for (let tries = 0; tries < 100 && !(await duration()); tries++) await new Promise((resolve) => setTimeout(resolve, 50));
    t.equal(await duration(), 2, 'the player knows the file is two seconds long');
    t.ok(await audio.evaluate((element) => (element as unknown as { controls: boolean }).controls), 'with controls');
    await screenshot('13-preview-audio', { fullPage: false });
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'detached' });
  });

  await t.test('video: a player that fetches the file', async (t) => {
    const [request] = await Promise.all([page.waitForRequest((sent) => new URL(sent.url()).pathname.endsWith('/clip.webm') || sent.url().includes('/Download/')), preview('clip.webm')]);
    const video = dialog.locator('video');
    await video.waitFor();
    t.ok(await video.evaluate((element) => (element as unknown as { controls: boolean }).controls), 'with controls');
    t.equal(await video.getAttribute('src'), request.url(), 'the player loads the file’s download');
    await dialog.getByRole('button', { name: 'Close', exact: true }).click();
    await dialog.waitFor({ state: 'detached' });
  });

  t.same(problems, [], 'no console error, page error, failed request or request to another origin');

  // A PDF is shown by the browser's own viewer, which runs only in a tab of its own: the console's
  // CSP (no frames, no plugins) and the download's `sandbox` keep it out of the console's page.
  await t.test('PDF: the dialog offers it in a tab of its own, where the browser’s viewer shows it', async (t) => {
    await preview('agenda.pdf');
    await dialog.getByText('PDF viewer').waitFor();
    const [tab] = await Promise.all([context.waitForEvent('page'), dialog.getByRole('link', { name: 'Open in a new tab', exact: true }).click()]);
    const viewer = tab.waitForRequest((request) => request.url().startsWith('chrome-extension://'));
    const response = await tab.waitForEvent('response', (answer) => answer.url().includes('/Download/'));
    t.equal(response.status(), 200, 'the tab loads the file’s download');
    // The browser hands a PDF's stream to its viewer and reports no headers for it: asked again here.
    const headers = Object.fromEntries((await fetch(response.url())).headers);
    t.equal(headers['content-type'], 'application/pdf', 'sent as a PDF');
    t.match(headers['content-disposition'], /^inline/, 'to be shown, not saved');
    t.ok(await viewer, 'the browser’s PDF viewer takes it');
    await tab.waitForLoadState();
    await new Promise((resolve) => setTimeout(resolve, 1000));
    await screenshot('14-pdf-in-its-tab', { page: tab, fullPage: false });
    await tab.close();
  });
});
