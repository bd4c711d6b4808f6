/**
 * Reads the elements of one array of a streamed JSON object as they arrive (ViewAllFiles sends its
 * AllFiles a page at a time): each element is parsed on its own, never the whole text at once.
 * The rest of the object (Code, Message, the other fields) is kept, with the array left empty.
 */
export class ArrayScanner<T> {
  #depth = 0;
  #inString = false;
  #escape = false;
  /** The text so far of a string at depth 1 (a key, or a value), and where it began in this chunk. */
  #stringParts: string[] | undefined;
  #stringStart = 0;
  /** The last string at depth 1: the key of the value that follows it. */
  #key: string | undefined;
  #inArray = false;
  #inElement = false;
  #element: string[] = [];
  #rest: string[] = [];

  constructor(private readonly arrayName: string) {}

  /** The elements that this piece of text completes. */
  push(text: string): T[] {
    const out: T[] = [];
    let start = 0;
    const keep = (end: number) => {
      if (end > start) (this.#inElement ? this.#element : this.#rest).push(text.slice(start, end));
      start = end;
    };
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (this.#inString) {
        if (this.#escape) this.#escape = false;
        else if (c === 0x5c) this.#escape = true;
        else if (c === 0x22) {
          this.#inString = false;
          if (this.#stringParts) {
            this.#stringParts.push(text.slice(this.#stringStart, i + 1));
            this.#key = JSON.parse(this.#stringParts.join('')) as string;
            this.#stringParts = undefined;
          }
        }
        continue;
      }
      switch (c) {
        case 0x22: // "
          this.#inString = true;
          if (this.#depth === 1) {
            this.#stringParts = [];
            this.#stringStart = i;
          }
          break;
        case 0x7b: // {
        case 0x5b: // [
          if (this.#inArray && this.#depth === 2) {
            keep(i);
            this.#inElement = true;
          }
          this.#depth++;
          if (c === 0x5b && this.#depth === 2 && this.#key === this.arrayName) this.#inArray = true;
          break;
        case 0x7d: // }
        case 0x5d: // ]
          this.#depth--;
          if (this.#inElement && this.#depth === 2) {
            keep(i + 1);
            this.#inElement = false;
            out.push(JSON.parse(this.#element.join('')) as T);
            this.#element = [];
          } else if (this.#inArray && this.#depth === 1) {
            this.#inArray = false;
          }
          break;
        case 0x2c: // , between elements: left out, so the rest keeps an empty array
          if (this.#inArray && this.#depth === 2) {
            keep(i);
            start = i + 1;
          }
          break;
      }
    }
    if (this.#stringParts) {
      this.#stringParts.push(text.slice(this.#stringStart));
      this.#stringStart = 0;
    }
    keep(text.length);
    return out;
  }

  /** The object without the array's elements, once the whole text is in. */
  rest(): unknown {
    return JSON.parse(this.#rest.join(''));
  }
}
