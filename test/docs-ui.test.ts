import t from 'tap';
import { CONSOLE_TEST_ENV, openBrowser } from './helpers/browser.js';
import { startService } from './helpers/service.js';

/** /docs in a real browser: the aliases folded away, and "Try it out" with a token given once to Authorize. */

t.test('a developer authorizes /docs with a token and tries operations out', async (t) => {
  const service = await startService(t, { env: CONSOLE_TEST_ENV });
  const base = await service.listen();
  const app = await service.newApp();
  const { page, problems, screenshot } = await openBrowser(t, base);

  await page.goto(`${base}/docs`);
  const viewMyBuckets = page.locator('#operations-Buckets-ViewMyBuckets');
  await viewMyBuckets.waitFor();
  const aliases = page.locator('#operations-tag-Try_aliases');
  await aliases.waitFor();
  t.equal(await page.locator('#operations-Try_aliases-ViewMyBucketsTry').count(), 0, 'the Try aliases start folded');
  t.equal(await aliases.getAttribute('data-is-open'), 'false');
  await screenshot('docs-01-list');

  await page.getByRole('button', { name: 'Authorize', exact: true }).first().click();
  const scheme = page.locator('.modal-ux form').filter({ hasText: 'AccessToken (http, Bearer)' });
  await scheme.locator('input').fill(app.token);
  await scheme.getByRole('button', { name: 'Apply credentials' }).click();
  await scheme.getByRole('button', { name: 'Close', exact: true }).click();

  const execute = async (operation: ReturnType<typeof page.locator>) => {
    await operation.locator('.opblock-summary').first().click();
    await operation.getByRole('button', { name: 'Try it out' }).click();
    await operation.getByRole('button', { name: 'Execute' }).click();
    const body = operation.locator('.live-responses-table .response-col_description pre').first();
    await body.waitFor();
    return JSON.parse(await body.innerText()) as Record<string, unknown>;
  };
  t.match(await execute(viewMyBuckets), { Code: 0, AppId: app.appId, Buckets: [] }, 'the token from Authorize is sent');

  // The example body creates a bucket: the example is one a person can send as it is.
  const created = await execute(page.locator('#operations-Buckets-CreateBucket'));
  t.match(created, { Code: 0, Message: 'Successfully created your bucket!', BucketId: Number });
  await screenshot('docs-02-created');

  await page.reload();
  const again = page.locator('#operations-Buckets-ViewMyBuckets');
  await again.waitFor();
  t.match(await execute(again), { Code: 0, Buckets: [{ BucketName: 'holiday-photos' }] }, 'the token is held across a reload');
  t.same(problems, [], 'no console error, failed request or request to another origin');
});
