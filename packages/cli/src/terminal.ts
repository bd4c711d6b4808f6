import { createInterface } from 'node:readline';
import type { Io } from './output.js';

/** Reads a line from the terminal without echoing it (the AppSecret). */
function hiddenLine(prompt: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const input = process.stdin;
    process.stderr.write(prompt);
    input.setRawMode(true);
    input.resume();
    let typed = '';
    const onData = (chunk: Buffer) => {
      for (const char of chunk.toString('utf8')) {
        if (char === '\r' || char === '\n') return done();
        if (char === '\u0003') return done(new Error('Interrupted.'));
        if (char === '\u007f') typed = typed.slice(0, -1);
        else typed += char;
      }
    };
    const done = (error?: Error) => {
      input.off('data', onData);
      input.setRawMode(false);
      input.pause();
      process.stderr.write('\n');
      if (error) reject(error);
      else resolve(typed);
    };
    input.on('data', onData);
  });
}

/** The first line of a piped stdin. */
async function pipedLine(): Promise<string> {
  const lines = createInterface({ input: process.stdin });
  for await (const text of lines) {
    lines.close();
    return text.trim();
  }
  return '';
}

/** The process's own streams and environment; questions only when stdin and stderr are a terminal. */
export function terminalIo(): Io {
  const interactive = Boolean(process.stdin.isTTY && process.stderr.isTTY);
  return {
    out: process.stdout,
    err: process.stderr,
    env: process.env,
    readSecret: (prompt) => (process.stdin.isTTY ? hiddenLine(prompt) : pipedLine()),
    ...(interactive
      ? {
          confirm: async (question: string) => {
            const lines = createInterface({ input: process.stdin, output: process.stderr });
            const answer = await new Promise<string>((resolve) => lines.question(question, resolve));
            lines.close();
            return /^y(es)?$/i.test(answer.trim());
          },
        }
      : {}),
  };
}
