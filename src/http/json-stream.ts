import { Readable } from 'node:stream';

/**
 * The text of `JSON.stringify({ ...head, [arrayName]: <every item of every page>, ...tail })`,
 * byte for byte, written a page at a time as the client reads it: a long list is never one string
 * (or one array) in memory. The first page is awaited before this resolves, so a failure to start
 * is still answered with the envelope; a later one can only cut the response short.
 */
export async function streamJsonObject<T>(
  head: Record<string, unknown>,
  arrayName: string,
  pages: AsyncIterator<readonly T[]>,
  tail: Record<string, unknown>,
): Promise<Readable> {
  const opening = JSON.stringify(head).slice(0, -1);
  const closing = JSON.stringify(tail).slice(1);
  const first = await pages.next();
  async function* text(): AsyncGenerator<string> {
    yield `${opening}${opening.length > 1 ? ',' : ''}${JSON.stringify(arrayName)}:[`;
    let written = 0;
    for (let page = first; !page.done; page = await pages.next()) {
      if (page.value.length === 0) continue;
      const items = page.value.map((item) => JSON.stringify(item)).join(',');
      yield written === 0 ? items : `,${items}`;
      written += page.value.length;
    }
    yield `]${closing.length > 1 ? ',' : ''}${closing}`;
  }
  // Closing the stream early (the client went away) ends the generator, which ends the pages.
  return Readable.from(text(), { objectMode: false });
}
