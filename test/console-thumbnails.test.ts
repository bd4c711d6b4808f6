import tap, { type Test } from 'tap';
import sharp from 'sharp';
import { buildConsole, CONSOLE_TEST_ENV, openBrowser, type BrowserRun } from './helpers/browser.js';
import { startService } from './helpers/service.js';

/** The console's file list shows image files with a thumbnail made by the service, and previews a screen-sized variant. */

/** A picture worth looking at in a screenshot, drawn as SVG and encoded by sharp. */
function picture(width: number, height: number, colours: [string, string], shape: string): Promise<Buffer> {
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}">
    <defs><linearGradient id="g" x1="0" y1="0" x2="0" y2="1"><stop offset="0" stop-color="${colours[0]}"/><stop offset="1" stop-color="${colours[1]}"/></linearGradient></defs>
    <rect width="100%" height="100%" fill="url(#g)"/>${shape}</svg>`;
  return sharp(Buffer.from(svg)).toBuffer();
}

/** One build of the console for both tests: it takes seconds. */
let built: Promise<string> | undefined;

async function setup(t: Test, viewport?: { width: number; height: number }) {
  built ??= buildConsole(tap);
  const service = await startService(t, { consoleDir: await built, env: CONSOLE_TEST_ENV });
  const base = await service.listen();
  const app = await service.newApp();
  const auth = { Authorization: `Bearer ${app.token}` };
  const bucket = async (name: string, openToRead: boolean) => {
    const created = await fetch(`${base}/API/CreateBucket`, { method: 'POST', headers: auth, body: new URLSearchParams({ BucketName: name, OpenToRead: String(openToRead), OpenToUpload: 'false' }) });
    return ((await created.json()) as { BucketId: number }).BucketId;
  };
  const upload = async (bucketId: number, name: string, content: Buffer | string) => {
    const form = new FormData();
    form.append('file', new Blob([content]), name);
    const response = await fetch(`${base}/API/UploadFile?${new URLSearchParams({ BucketId: String(bucketId), AliveDays: '7' })}`, { method: 'POST', headers: auth, body: form });
    t.equal(((await response.json()) as { Code: number }).Code, 0, `${name} uploaded`);
  };
  const images = {
    'sunset over the bay.jpg': await sharp(await picture(3000, 2000, ['#ff9a3c', '#6a2c70'], '<circle cx="1500" cy="1250" r="420" fill="#ffd56b"/><rect y="1400" width="3000" height="600" fill="#1f3a5f"/>')).jpeg({ quality: 85 }).toBuffer(),
    'forest.png': await sharp(await picture(1200, 1600, ['#a8e063', '#2d6a4f'], '<polygon points="600,150 250,1300 950,1300" fill="#1b4332"/><rect x="560" y="1300" width="80" height="200" fill="#6b4226"/>')).png().toBuffer(),
    'logo.webp': await sharp(await picture(800, 800, ['#e0f2fe', '#60a5fa'], '<circle cx="400" cy="400" r="260" fill="none" stroke="#1e3a8a" stroke-width="60"/>')).webp().toBuffer(),
  };
  return { service, base, app, bucket, upload, images, browser: await openBrowser(t, base, viewport) };
}

/** The thumbnails of the shown rows, once every one has loaded or failed. */
async function thumbnails(browser: BrowserRun, count: number) {
  const images = browser.page.locator('td.name .thumb img');
  for (let tries = 0; tries < 200; tries++) {
    const loaded = await images.evaluateAll((all) => all.filter((image) => (image as unknown as { complete: boolean }).complete).length);
    if (loaded >= count) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return images.evaluateAll((all) =>
    all.map((element) => {
      const image = element as unknown as { src: string; naturalWidth: number; naturalHeight: number; closest(selector: string): { querySelector(selector: string): { textContent: string } | null } | null };
      return { name: image.closest('td')?.querySelector('a')?.textContent ?? '', src: image.src, width: image.naturalWidth, height: image.naturalHeight };
    }),
  );
}

tap.test('a bucket’s image files have thumbnails from the service, and the preview is screen-sized', async (t) => {
  const { bucket, upload, images, browser, app } = await setup(t);
  const gallery = await bucket('holiday-gallery', true);
  for (const [name, bytes] of Object.entries(images)) await upload(gallery, name, bytes);
  await upload(gallery, 'notes.txt', 'Pack the camera.\n');
  await upload(gallery, 'not-a-picture.png', 'these bytes are no image, whatever the name says');
  const { page, byName, signIn, screenshot, problems } = browser;
  const served: Array<{ url: string; type: string | undefined }> = [];
  page.on('response', (response) => {
    if (new URL(response.url()).searchParams.has('square')) served.push({ url: response.url(), type: response.headers()['content-type'] });
  });
  await signIn(app);
  await byName('link', 'holiday-gallery').click();
  await byName('link', 'forest.png').waitFor();

  const shown = await thumbnails(browser, 3);
  t.same(shown.map((thumb) => thumb.name).sort(), ['forest.png', 'logo.webp', 'sunset over the bay.jpg'], 'a thumbnail beside each image, none beside the text file; the one that is no image shows none');
  for (const thumb of shown) {
    const url = new URL(thumb.src);
    t.same([url.searchParams.get('square'), url.searchParams.get('w'), url.searchParams.get('format')], ['true', '40', 'auto'], `${thumb.name}: a 40 px square, in the browser's best format`);
    t.same([thumb.width, thumb.height], [40, 40], `${thumb.name}: and that is what arrived`);
  }
  const ofImages = served.filter((answer) => !answer.url.includes('not-a-picture'));
  t.same([...new Set(ofImages.map((answer) => answer.type))], ['image/avif'], 'chromium takes AVIF, so that is what came');
  t.same(served.filter((answer) => answer.url.includes('not-a-picture')).map((answer) => answer.type), ['image/png'], 'the file that is no image came as stored, and showed nothing');
  t.equal(await page.locator('td.name .thumb').count(), 4, 'the file that only claims to be a PNG got a place, left empty');
  t.ok(await byName('link', 'sunset over the bay.jpg').isVisible(), 'each link is still named by its file');
  await screenshot('30-thumbnails-laptop', { fullPage: false });

  const preview = page.getByRole('row').filter({ has: byName('link', 'sunset over the bay.jpg') }).getByRole('button', { name: 'Preview', exact: true });
  await preview.click();
  const shownImage = page.getByRole('dialog').locator('img');
  await shownImage.waitFor();
  await shownImage.evaluate((element) => (element as unknown as { decode(): Promise<void> }).decode());
  const { src, width, height } = await shownImage.evaluate((element) => {
    const image = element as unknown as { src: string; naturalWidth: number; naturalHeight: number };
    return { src: image.src, width: image.naturalWidth, height: image.naturalHeight };
  });
  const screen = await page.evaluate(() => {
    const { width, height } = (globalThis as unknown as { screen: { width: number; height: number } }).screen;
    return { width, height };
  });
  const { width: screenWidth, height: screenHeight } = screen;
  const asked = new URL(src).searchParams;
  t.same([asked.get('w'), asked.get('h'), asked.get('format')], [String(screenWidth), String(screenHeight), 'auto'], 'the preview asks for the screen’s size');
  t.ok(width <= screenWidth && height <= screenHeight && width < 3000, `a ${width} × ${height} variant of the 3000 × 2000 photograph`);
  t.equal(Math.round((width / height) * 100), 150, 'its aspect kept');
  await screenshot('31-preview-screen-sized', { fullPage: false });
  await page.keyboard.press('Escape');

  // A private bucket: thumbnails come through download secrets, asked for as rows come into view.
  const vault = await bucket('private-vault', false);
  await upload(vault, 'forest.png', images['forest.png']);
  await byName('link', 'All buckets').click();
  await byName('link', 'private-vault').click();
  await byName('link', 'forest.png').waitFor();
  const secret = await thumbnails(browser, 1);
  t.equal(secret.length, 1);
  t.match(secret[0]!.src, /\/Download\/FromSecret\?sec=.+&square=true&w=40&format=auto$/, 'through a secret');
  t.same([secret[0]!.width, secret[0]!.height], [40, 40]);
  t.same(problems, [], 'no console error, page error, failed request or request to another origin');
});

tap.test('thumbnails on a phone', async (t) => {
  const { bucket, upload, images, browser, app } = await setup(t, { width: 390, height: 844 });
  // Rows come into view as the list scrolls; their thumbnails are asked for then.
  const gallery = await bucket('phone-gallery', true);
  for (const [name, bytes] of Object.entries(images)) await upload(gallery, name, bytes);
  await upload(gallery, 'packing list.txt', 'Camera, charger, hat.\n');
  await browser.signIn(app);
  await browser.byName('link', 'phone-gallery').click();
  await browser.byName('link', 'forest.png').waitFor();
  const first = await thumbnails(browser, 1);
  t.ok(first.length >= 1 && first.length < 3, `only the rows in view have asked for theirs (${first.length})`);
  await browser.page.locator('tbody tr').last().scrollIntoViewIfNeeded();
  const shown = await thumbnails(browser, 3);
  await browser.screenshot('32-thumbnails-phone', { fullPage: false });
  t.equal(shown.filter((thumb) => thumb.width === 40 && thumb.height === 40).length, 3, 'scrolled, each image row has its thumbnail');
  t.same(browser.problems, []);
});
