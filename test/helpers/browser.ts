import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type BrowserContext, type Locator, type Page } from 'playwright-core';
import type { Test } from 'tap';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** Debian's chromium (`apt-get install chromium`, done by .ci/run). */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
/** Where the tests leave what the browser showed, to look at (not committed). */
export const SCREENSHOTS = path.join(ROOT, 'test', 'screenshots');

/** Builds the console from its current source into a folder of the test's own, as `npm run build` would. */
export async function buildConsole(t: Test): Promise<string> {
  const outDir = await mkdtemp(path.join(tmpdir(), 'filestore-console-'));
  t.teardown(() => rm(outDir, { recursive: true, force: true }));
  const { build } = await import('vite');
  await build({ configFile: path.join(ROOT, 'console', 'vite.config.ts'), logLevel: 'warn', build: { outDir, emptyOutDir: true } });
  return outDir;
}

/**
 * Settings of a service that a browser test clicks through: no load shedding, since a browser, a
 * build and the in-process embedded database on a shared machine can stall the event loop past
 * its threshold, and these tests are about the console, not about shedding (test/protection does that).
 */
export const CONSOLE_TEST_ENV = { MAX_EVENT_LOOP_DELAY_MS: '0' };

export interface BrowserRun {
  context: BrowserContext;
  page: Page;
  /** Console errors, page errors, failed requests and requests to other origins, as they happened. */
  problems: string[];
  /** Saves what `page` (the first page unless given) shows; the whole page unless `fullPage` is false. */
  screenshot(name: string, options?: { page?: Page; fullPage?: boolean }): Promise<void>;
  /** The element of `role` on the first page whose accessible name is exactly `name`. */
  byName(role: Parameters<Page['getByRole']>[0], name: string): Locator;
  /** Opens the console and signs in with the AppId and AppSecret fields and the Sign in button. */
  signIn(app: { appId: string; appSecret: string }): Promise<void>;
}

/** A fresh chromium profile whose pages may only talk to `origin`; everything that goes wrong is recorded. */
export async function openBrowser(t: Test, origin: string, viewport = { width: 1280, height: 800 }): Promise<BrowserRun> {
  const profile = await mkdtemp(path.join(tmpdir(), 'filestore-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  t.teardown(async () => {
    await context.close();
    await rm(profile, { recursive: true, force: true });
  });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin });

  const problems: string[] = [];
  const watch = (page: Page) => {
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(`console error: ${message.text()}`);
    });
    page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
    page.on('requestfailed', (request) => {
      // A paused upload aborts its PATCH on purpose; a page closed by the test aborts its media loads.
      if (request.failure()?.errorText !== 'net::ERR_ABORTED') problems.push(`request failed: ${request.method()} ${request.url()} ${request.failure()?.errorText}`);
    });
    page.on('request', (request) => {
      const url = new URL(request.url());
      if (url.origin !== origin && url.protocol !== 'about:' && url.protocol !== 'data:') problems.push(`request to another origin: ${request.url()}`);
      // Tokens travel in the Authorization header: a URL is kept in logs and histories.
      if (url.searchParams.has('AccessToken')) problems.push(`an AccessToken in a URL: ${request.method()} ${url.pathname}`);
    });
    page.on('response', (response) => {
      // The API answers refusals with HTTP 200; a status of 400 or more is a broken page or asset.
      if (response.status() >= 400 && !response.url().includes('/Download/FromSecret')) problems.push(`HTTP ${response.status()}: ${response.url()}`);
    });
  };
  context.on('page', watch);
  const page = context.pages()[0] ?? (await context.newPage());
  watch(page);
  const byName: BrowserRun['byName'] = (role, name) => page.getByRole(role, { name, exact: true });

  await mkdir(SCREENSHOTS, { recursive: true });
  return {
    context,
    page,
    problems,
    screenshot: async (name, { page: shown = page, fullPage = true } = {}) => {
      await shown.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage });
    },
    byName,
    signIn: async ({ appId, appSecret }) => {
      await page.goto(`${origin}/console`);
      await page.getByLabel('AppId', { exact: true }).fill(appId);
      await page.getByLabel('AppSecret', { exact: true }).fill(appSecret);
      await byName('button', 'Sign in').click();
    },
  };
}
