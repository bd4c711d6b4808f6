#!/usr/bin/env node
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { createBucket, editBucket, listBuckets, removeBucket } from './commands/buckets.js';
import { download } from './commands/download.js';
import { listFiles, removeFiles, share, showFile } from './commands/files.js';
import { login } from './commands/login.js';
import { upload } from './commands/upload.js';
import { reportError, UsageError, type Io } from './output.js';
import { openSession } from './session.js';
import { terminalIo } from './terminal.js';

/** Exit statuses: 0 success, 1 a failure (the service refused, or could not be reached), 2 bad usage, 130 interrupted. */
const EXIT = { ok: 0, failure: 1, usage: 2, interrupted: 130 } as const;

const integer = (name: string, minimum: number, maximum: number) => (value: string) => {
  if (!/^\d+$/.test(value) || Number(value) < minimum || Number(value) > maximum) throw new InvalidArgumentError(`${name} must be a whole number from ${minimum} to ${maximum}.`);
  return Number(value);
};
const bool = (value: string | undefined) => {
  const lower = (value ?? 'true').toLowerCase();
  if (lower !== 'true' && lower !== 'false') throw new InvalidArgumentError('true or false.');
  return lower === 'true';
};

export async function main(argv: string[], io: Io, signal: AbortSignal): Promise<number> {
  let status: number = EXIT.ok;
  const asJson = argv.includes('--json');
  const session = () => openSession(io, signal);
  const run =
    <A extends unknown[]>(action: (...args: A) => Promise<boolean | void>) =>
    async (...args: A) => {
      if ((await action(...args)) === false) status = EXIT.failure;
    };
  const jsonOption = () => new Option('--json', 'machine-readable output on stdout');

  const program = new Command('filestore')
    .description('Buckets and files of a bucket file storage service.\nLog in once with `filestore login URL APPID`; FILESTORE_URL, FILESTORE_APP_ID and FILESTORE_APP_SECRET override the saved login.')
    .version('0.1.0')
    .showHelpAfterError('(add --help for usage)')
    .configureOutput({ writeOut: (text) => io.out.write(text), writeErr: (text) => io.err.write(text) })
    .exitOverride();

  program
    .command('login')
    .description('Check an app’s credentials and keep them (the AppSecret is asked for, read from stdin, or taken from FILESTORE_APP_SECRET)')
    .argument('<url>', 'the service, e.g. https://files.example.com')
    .argument('<appId>', 'the AppId')
    .action(run((url: string, appId: string) => login(io, url, appId, signal)));

  program
    .command('buckets')
    .description('List your buckets')
    .addOption(jsonOption())
    .action(run(async (options: { json?: boolean }) => listBuckets(io, await session(), Boolean(options.json))));

  const bucket = program.command('bucket').description('Create, edit or delete a bucket');
  bucket
    .command('create')
    .description('Create a bucket')
    .argument('<name>', '5 to 25 of A-Z a-z 0-9 . _ -')
    .option('--public-read [bool]', 'anyone may download its files', bool, false)
    .option('--public-upload [bool]', 'any app may upload into it', bool, false)
    .addOption(jsonOption())
    .action(run(async (name: string, options: { publicRead: boolean; publicUpload: boolean; json?: boolean }) => createBucket(io, await session(), name, options, Boolean(options.json))));
  bucket
    .command('edit')
    .description('Rename a bucket or change its flags; what is not given stays')
    .argument('<name>', 'the bucket')
    .option('--name <new>', 'its new name')
    .option('--public-read [bool]', 'anyone may download its files', bool)
    .option('--public-upload [bool]', 'any app may upload into it', bool)
    .addOption(jsonOption())
    .action(run(async (name: string, options: { name?: string; publicRead?: boolean; publicUpload?: boolean; json?: boolean }) => editBucket(io, await session(), name, options, Boolean(options.json))));
  bucket
    .command('rm')
    .description('Delete a bucket with all its files')
    .argument('<name>', 'the bucket')
    .option('-y, --yes', 'do not ask')
    .addOption(jsonOption())
    .action(run(async (name: string, options: { yes?: boolean; json?: boolean }) => removeBucket(io, await session(), name, Boolean(options.yes), Boolean(options.json))));

  program
    .command('ls')
    .description('List a bucket’s files (yours by name, or another app’s open bucket by its BucketId)')
    .argument('<bucket>', 'the bucket')
    .addOption(jsonOption())
    .action(run(async (name: string, options: { json?: boolean }) => listFiles(io, await session(), name, Boolean(options.json))));

  program
    .command('upload')
    .description('Upload files, resumably: after Ctrl-C, the same command goes on where it stopped')
    .argument('<bucket>', 'the bucket')
    .argument('<paths...>', 'files, or folders with --recursive')
    .option('--days <n>', 'days the files are kept (1 to 18250)', integer('--days', 1, 18250), 30)
    .option('-r, --recursive', 'upload the files in folders, at any depth')
    .option('--concurrency <n>', 'files uploaded at once (1 to 32)', integer('--concurrency', 1, 32), 2)
    .addOption(jsonOption())
    .action(
      run(async (name: string, paths: string[], options: { days: number; recursive?: boolean; concurrency: number; json?: boolean }) =>
        upload(io, await session(), name, paths, { days: options.days, recursive: Boolean(options.recursive), concurrency: options.concurrency, json: Boolean(options.json) }),
      ),
    );

  program
    .command('download')
    .description('Download a file; a run that was interrupted continues the partial file')
    .argument('<file>', 'FILEKEY, or BUCKET/NAME')
    .option('-o, --output <path>', 'a file, a folder, or - for stdout (default: the current folder)')
    .option('-f, --force', 'replace a file that exists')
    .addOption(jsonOption())
    .action(run(async (target: string, options: { output?: string; force?: boolean; json?: boolean }) => download(io, await session(), target, { output: options.output, force: Boolean(options.force), json: Boolean(options.json) })));

  program
    .command('share')
    .description('Print a link that downloads a file, for a number of downloads, whatever its bucket’s flags')
    .argument('<filekey>', 'the file')
    .option('--uses <n>', 'downloads the link allows (1 to 1000000)', integer('--uses', 1, 1_000_000), 1)
    .addOption(jsonOption())
    .action(run(async (key: string, options: { uses: number; json?: boolean }) => share(io, await session(), key, options.uses, Boolean(options.json))));

  program
    .command('rm')
    .description('Delete files')
    .argument('<filekeys...>', 'the files')
    .addOption(jsonOption())
    .action(run(async (keys: string[], options: { json?: boolean }) => removeFiles(io, await session(), keys, Boolean(options.json))));

  program
    .command('info')
    .description('Show a file')
    .argument('<filekey>', 'the file')
    .addOption(jsonOption())
    .action(run(async (key: string, options: { json?: boolean }) => showFile(io, await session(), key, Boolean(options.json))));

  try {
    await program.parseAsync(argv, { from: 'user' });
    return status;
  } catch (error) {
    if (error instanceof CommanderError) {
      // --help and --version end here too, with their own 0.
      return error.exitCode === 0 ? EXIT.ok : EXIT.usage;
    }
    if (signal.aborted) {
      if (!asJson) io.err.write('\nInterrupted. Run the same command again to resume.\n');
      return EXIT.interrupted;
    }
    reportError(io, error, asJson);
    return error instanceof UsageError ? EXIT.usage : EXIT.failure;
  }
}

const controller = new AbortController();
process.once('SIGINT', () => controller.abort());
process.once('SIGTERM', () => controller.abort());
process.exitCode = await main(process.argv.slice(2), terminalIo(), controller.signal);
