/**
 * Summary of a V8 CPU profile (`node --cpu-prof`) of the service's main thread: self time by
 * where the code comes from (service code, a package, Node.js internals, the embedded database's
 * WebAssembly, garbage collection, idle) and the functions that take most of it.
 */
import { readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { profileDir, resultsDir } from './paths.js';
import type { DatabaseKind } from './service.js';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

interface ProfileSummary {
  totalMs: number;
  categories: Array<{ name: string; ms: number; share: number }>;
  functions: Array<{ name: string; where: string; category: string; ms: number; share: number }>;
}

function category(frame: ProfileNode['callFrame']): string {
  const { functionName, url } = frame;
  if (!url) {
    if (functionName === '(idle)') return 'idle (waiting for I/O)';
    if (functionName === '(garbage collector)') return 'garbage collection';
    if (functionName === '(program)') return 'V8 / native (program)';
    return 'native';
  }
  if (url.startsWith('node:')) return 'Node.js internals';
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1]!;
  if (/\/dist\/(src|plugins|db)\//.test(url)) return 'service code';
  return 'other';
}

function where(frame: ProfileNode['callFrame']): string {
  if (!frame.url) return '';
  const short = frame.url.replace(/^file:\/\//, '').replace(/^.*node_modules\//, '').replace(/^.*\/dist\//, 'dist/');
  return `${short}:${frame.lineNumber + 1}`;
}

async function summarizeProfile(file: string, top = 15): Promise<ProfileSummary> {
  const profile = JSON.parse(await readFile(file, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const selfUs = new Map<number, number>();
  profile.samples.forEach((id, i) => selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
  let total = 0;
  const categories = new Map<string, number>();
  const functions = new Map<string, { name: string; where: string; category: string; us: number }>();
  for (const [id, us] of selfUs) {
    const node = byId.get(id);
    if (!node || node.callFrame.functionName === '(root)') continue;
    total += us;
    const cat = category(node.callFrame);
    categories.set(cat, (categories.get(cat) ?? 0) + us);
    const name = node.callFrame.functionName || '(anonymous)';
    const key = `${name}@${where(node.callFrame)}`;
    const entry = functions.get(key) ?? { name, where: where(node.callFrame), category: cat, us: 0 };
    entry.us += us;
    functions.set(key, entry);
  }
  return {
    totalMs: total / 1000,
    categories: [...categories]
      .sort((a, b) => b[1] - a[1])
      .map(([name, us]) => ({ name, ms: us / 1000, share: us / total })),
    functions: [...functions.values()]
      .filter((entry) => !entry.category.startsWith('idle'))
      .sort((a, b) => b.us - a.us)
      .slice(0, top)
      .map((entry) => ({ name: entry.name, where: entry.where, category: entry.category, ms: entry.us / 1000, share: entry.us / total })),
  };
}

function profileMarkdown(title: string, summary: ProfileSummary): string {
  const pct = (share: number) => `${(share * 100).toFixed(1)} %`;
  return [
    `### ${title}`,
    '',
    `Main-thread samples: ${(summary.totalMs / 1000).toFixed(1)} s.`,
    '',
    '| Where | Self time | Share |',
    '|---|---:|---:|',
    ...summary.categories.map((c) => `| ${c.name} | ${c.ms.toFixed(0)} ms | ${pct(c.share)} |`),
    '',
    '| Function | Location | Self time | Share |',
    '|---|---|---:|---:|',
    ...summary.functions.map((f) => `| ${f.name} | ${f.where || f.category} | ${f.ms.toFixed(0)} ms | ${pct(f.share)} |`),
    '',
  ].join('\n');
}

/** After the service stopped: its profile's summary in bench/results/profile-<db>.md, and the top of it in the log. */
export async function reportProfile(db: DatabaseKind, log: (line: string) => void): Promise<void> {
  const dir = path.join(profileDir, `service-${db}`);
  // CPU.<date>.<time>.<pid>.<thread id>.<n>.cpuprofile: thread 0 is the main thread.
  const name = (await readdir(dir).catch(() => [])).find((file) => /^CPU\.\d+\.\d+\.\d+\.0\.\d+\.cpuprofile$/.test(file));
  if (!name) {
    log(`no CPU profile of the main thread was written for ${db}`);
    return;
  }
  const summary = await summarizeProfile(path.join(dir, name));
  const markdown = profileMarkdown(`Service CPU profile (${db})`, summary);
  await writeFile(path.join(resultsDir, `profile-${db}.md`), markdown);
  log(`CPU profile (${db}), self time of the main thread:`);
  for (const c of summary.categories.slice(0, 10)) log(`    ${(c.share * 100).toFixed(1).padStart(5)} %  ${c.name}`);
  log(`  top functions:`);
  for (const f of summary.functions.slice(0, 10)) log(`    ${(f.share * 100).toFixed(1).padStart(5)} %  ${f.name}  ${f.where || f.category}`);
  log(`  full summary: bench/results/profile-${db}.md, profile: bench/results/profiles/service-${db}/${name}`);
}
