import type { Locator, Page } from 'playwright-core';
import t from 'tap';
import { buildConsole, CONSOLE_TEST_ENV, openBrowser } from './helpers/browser.js';
import { startService } from './helpers/service.js';

/** The console without a mouse (Tab, Enter, Space only), and files dropped on it. */

// What the functions run in the page use; the tests are type-checked without the DOM's types.
declare const document: { activeElement: unknown };
declare function getComputedStyle(element: unknown): { outlineStyle: string; outlineWidth: string };
declare class DataTransfer {
  items: { add(file: File): void };
}

/** Presses Tab until `target` has the focus; fails if it is not reached within `limit` presses. */
async function tabTo(page: Page, target: Locator, limit = 25): Promise<number> {
  for (let presses = 1; presses <= limit; presses++) {
    await page.keyboard.press('Tab');
    if (await target.evaluate((element) => element === document.activeElement)) return presses;
  }
  throw new Error(`not reached by ${limit} presses of Tab`);
}

/** Whether the focused element is drawn as focused: matches :focus-visible and has an outline. */
const focusShown = (target: Locator) =>
  target.evaluate((element) => element.matches(':focus-visible') && getComputedStyle(element).outlineStyle !== 'none' && getComputedStyle(element).outlineWidth !== '0px');

t.test('keyboard only: sign in, open a bucket, choose files; and a drop uploads', async (t) => {
  const service = await startService(t, { consoleDir: await buildConsole(t), env: CONSOLE_TEST_ENV });
  const base = await service.listen();
  const app = await service.newApp();
  const created = await fetch(`${base}/API/CreateBucket`, {
    method: 'POST',
    body: new URLSearchParams({ AccessToken: app.token, BucketName: 'keyboard-notes', OpenToRead: 'true', OpenToUpload: 'false' }),
  });
  t.equal(((await created.json()) as { Code: number }).Code, 0);
  const listed = async () => {
    const buckets = (await (await fetch(`${base}/API/ViewMyBuckets`, { headers: { Authorization: `Bearer ${app.token}` } })).json()) as { Buckets: { BucketId: number }[] };
    const answer = await fetch(`${base}/API/ViewAllFiles?BucketId=${buckets.Buckets[0].BucketId}`, { headers: { Authorization: `Bearer ${app.token}` } });
    return ((await answer.json()) as { AllFiles: { RealFileName: string; InternetPath: string }[] }).AllFiles;
  };

  const { page, problems, screenshot, byName } = await openBrowser(t, base);
  await page.goto(`${base}/console`);

  await t.test('sign in with Tab, typing and Enter', async (t) => {
    const appId = page.getByLabel('AppId', { exact: true });
    await tabTo(page, appId);
    t.ok(await focusShown(appId), 'the AppId field shows its focus');
    await page.keyboard.type(app.appId);
    await page.keyboard.press('Tab');
    const appSecret = page.getByLabel('AppSecret', { exact: true });
    t.ok(await appSecret.evaluate((element) => element === document.activeElement), 'Tab goes on to AppSecret');
    await page.keyboard.type(app.appSecret);
    await page.keyboard.press('Tab');
    const signIn = byName('button', 'Sign in');
    t.ok(await signIn.evaluate((element) => element === document.activeElement), 'then to Sign in');
    t.ok(await focusShown(signIn), 'the button shows its focus');
    await screenshot('09-keyboard-sign-in', { fullPage: false });
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Buckets', exact: true }).waitFor();
  });

  await t.test('open the bucket with Tab and Enter', async (t) => {
    const link = byName('link', 'keyboard-notes');
    await tabTo(page, link);
    t.ok(await focusShown(link), 'the bucket link shows its focus');
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'keyboard-notes', level: 1 }).waitFor();
    await page.getByText('No files yet').waitFor();
  });

  await t.test('Space on Choose files opens the picker; the chosen file uploads', async (t) => {
    // Playwright intercepts the picker only once a listener exists, and switches that on
    // asynchronously: listening before the focus moves leaves it time to be on when Space comes.
    const picked = page.waitForEvent('filechooser', { timeout: 60_000 });
    const choose = page.getByLabel('Choose files', { exact: true });
    await tabTo(page, choose);
    t.ok(await focusShown(choose), 'the file input shows its focus');
    await screenshot('10-keyboard-choose-files', { fullPage: false });
    await page.keyboard.press('Space');
    const chooser = await picked;
    t.ok(chooser.isMultiple(), 'several files may be chosen');
    await chooser.setFiles([{ name: 'typed.txt', mimeType: 'text/plain', buffer: Buffer.from('typed without a mouse\n') }]);
    await page.locator('li.upload.done').filter({ hasText: 'typed.txt' }).waitFor();
    await byName('link', 'typed.txt').waitFor();
    const file = (await listed()).find((stored) => stored.RealFileName === 'typed.txt');
    t.equal(await (await fetch(file!.InternetPath)).text(), 'typed without a mouse\n', 'the bytes back are the bytes chosen');
  });

  await t.test('a file dropped on the drop zone uploads and is listed', async (t) => {
    const dataTransfer = await page.evaluateHandle(() => {
      const transfer = new DataTransfer();
      transfer.items.add(new File(['dropped in\n'], 'dropped.txt', { type: 'text/plain' }));
      return transfer;
    });
    const zone = page.locator('.dropzone');
    await zone.dispatchEvent('dragenter', { dataTransfer });
    await zone.dispatchEvent('dragover', { dataTransfer });
    await zone.dispatchEvent('drop', { dataTransfer });
    await page.locator('li.upload.done').filter({ hasText: 'dropped.txt' }).waitFor();
    await byName('link', 'dropped.txt').waitFor();
    const file = (await listed()).find((stored) => stored.RealFileName === 'dropped.txt');
    t.equal(await (await fetch(file!.InternetPath)).text(), 'dropped in\n', 'the bytes back are the bytes dropped');
    t.notOk(await zone.evaluate((element) => element.classList.contains('dragging')), 'the zone is no longer highlighted');
    await screenshot('11-dropped-file-listed', { fullPage: false });
  });

  t.same(problems, [], 'no console error, page error, failed request or request to another origin');
});
