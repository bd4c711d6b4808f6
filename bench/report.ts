/** The results as a terminal table, a markdown page and an SVG bar chart of the ratios; and writing them out. */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { formatValue } from './format.js';
import { docsDir, resultsDir } from './paths.js';
import type { BenchResults, MemoryResult } from './results.js';

const ratioText = (value: number) => (Number.isFinite(value) ? value.toFixed(2) : '—');
const mb = (bytes: number) => `${(bytes / 1e6).toFixed(0)} MB`;
const cores = (value: number | undefined) => (value === undefined || !Number.isFinite(value) ? '' : value.toFixed(2));

function rowTitle(c: { title: string; db?: string }): string {
  return c.db ? `${c.title} [${c.db}]` : c.title;
}

interface Row {
  cells: string[];
}

function tableRows(results: BenchResults): { head: string[]; rows: Row[] } {
  const head = ['Case', 'Service', 'Baseline', 'Ratio', 'Target', 'Result'];
  const rows: Row[] = results.comparisons.map((c) => ({
    cells: [
      rowTitle(c) + (c.note ? ` (${c.note})` : ''),
      formatValue(c.subject.median, c.subject.unit),
      `${c.baseline.variant}: ${formatValue(c.baseline.median, c.baseline.unit)}`,
      ratioText(c.ratio),
      c.target === undefined ? '(info)' : `≥ ${c.target.toFixed(2)}`,
      c.pass === undefined ? '' : c.pass ? 'pass' : 'MISS',
    ],
  }));
  for (const m of results.memory) {
    rows.push({
      cells: [rowTitle(m), mb(m.peakBytes), `when ready: ${mb(m.idleBytes)}${databaseBeside(m)}`, '', `< ${mb(m.limitBytes)}`, m.pass ? 'pass' : 'MISS'],
    });
  }
  return { head, rows };
}

/** The database server's processes, reported beside the service's own memory. */
function databaseBeside(m: MemoryResult): string {
  return m.database ? `; database server beside it: ${mb(m.database.bytes)} in ${m.database.processes} processes` : '';
}

export function terminalReport(results: BenchResults): string {
  const { head, rows } = tableRows(results);
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r.cells[i]!.length)));
  const line = (cells: string[]) => cells.map((cell, i) => (i >= 3 ? cell.padStart(widths[i]!) : cell.padEnd(widths[i]!))).join('  ');
  const out = [line(head), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map((r) => line(r.cells)), ''];
  out.push('Correctness:');
  for (const check of results.checks) out.push(`  ${check.ok ? 'ok  ' : 'FAIL'}  ${rowTitle({ title: check.name, db: check.db })}: ${check.detail}`);
  for (const finding of results.findings) out.push('', `${finding.title}:`, `  ${finding.text}`);
  for (const skip of new Set(results.skipped)) out.push(`skipped: ${skip}`);
  out.push('', busyNote(results));
  return out.join('\n');
}

function busyNote(results: BenchResults): string {
  const { loadBefore, loadAfter, machine } = results;
  const busy = Math.min(loadBefore, loadAfter) > machine.cores * 0.5;
  return (
    `Load average (1 min) ${loadBefore.toFixed(2)} before, ${loadAfter.toFixed(2)} after, on ${machine.cores} cores` +
    (busy ? ': the machine was busy with other work during this run; absolute numbers are noisy, ratios less so.' : '.')
  );
}

function markdownReport(results: BenchResults, svgName?: string): string {
  const { head, rows } = tableRows(results);
  const m = results.machine;
  const lines = [
    `Run of ${results.startedAt} (${results.mode} mode, ${results.seconds.toFixed(0)} s): \`${results.command}\``,
    '',
    `Machine: ${m.cpu}, ${m.cores} cores, ${m.memory} memory; Node.js ${m.node}; ${m.os}; disk ${m.disk}; nginx: ${m.nginx}` +
      `${m.postgres ? `; ${m.postgres}` : ''}.`,
    '',
    busyNote(results),
    '',
    `| ${head.join(' | ')} |`,
    `|${head.map((_, i) => (i >= 3 ? '---:' : '---')).join('|')}|`,
    ...rows.map((r) => `| ${r.cells.join(' | ')} |`),
    '',
    ...(svgName ? [`![Ratios to the baselines](${svgName})`, ''] : []),
    '**Correctness**',
    '',
    ...results.checks.map((c) => `- ${c.ok ? '✅' : '❌'} ${rowTitle({ title: c.name, db: c.db })}: ${c.detail}`),
    ...results.memory.map((x) => `- ${rowTitle(x)}: ${x.detail}${databaseBeside(x)}`),
    '',
    ...results.findings.flatMap((f) => [`**${f.title}.** ${f.text}`, '']),
    ...[...new Set(results.skipped)].map((s) => `- skipped: ${s}`),
    ...(results.skipped.length ? [''] : []),
    '<details><summary>Every measurement: medians of the runs; CPU in cores (1 = one core busy) of the server (and of its main thread alone), the database server (PostgreSQL) and the bench client</summary>',
    '',
    '| Case | Who | Median | Runs | Server CPU | its main thread | Database CPU | Client CPU |',
    '|---|---|---:|---|---:|---:|---:|---:|',
    ...results.metrics.map(
      (x) =>
        `| ${x.caseId} | ${x.variant} | ${formatValue(x.median, x.unit)}${x.extra ? ` (${x.extra})` : ''} | ` +
        `${x.samples.map((s) => formatValue(s, '').trim()).join(', ')} | ${cores(x.cores)} | ${cores(x.mainCores)} | ${cores(x.dbCores)} | ${cores(x.clientCores)} |`,
    ),
    '',
    '</details>',
    '',
  ];
  return lines.join('\n');
}

// ---------------------------------------------------------------------------------------------
// SVG

const escapeXml = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

/** A horizontal bar per ratio with its target marked; then peak RSS against its limit. */
function svgChart(results: BenchResults): string {
  const width = 1120;
  const labelWidth = 560;
  const barLeft = labelWidth + 10;
  const barWidth = width - barLeft - 190;
  const rowHeight = 22;
  const ratios = results.comparisons;
  const maxRatio = Math.max(1.2, ...ratios.map((c) => (Number.isFinite(c.ratio) ? Math.min(c.ratio, 3) : 0)));
  const scale = Math.ceil(maxRatio * 5) / 5;
  const x = (ratio: number) => barLeft + (Math.min(ratio, scale) / scale) * barWidth;
  const parts: string[] = [];
  // Grid lines go under the bars: collected apart, emitted first.
  const grid: string[] = [];
  let y = 30;
  parts.push(
    `<text x="${width / 2}" y="${y}" text-anchor="middle" font-size="16" font-weight="bold">Service ÷ baseline, same machine, same run (${escapeXml(results.mode)} mode, ${escapeXml(results.startedAt.slice(0, 10))})</text>`,
  );
  y += 14;
  parts.push(
    `<text x="${width / 2}" y="${y + 6}" text-anchor="middle" font-size="11" fill="#555">green: meets its target (dashed line) · red: misses it · grey: shown for information</text>`,
  );
  y += 16;
  const m = results.machine;
  const busy = Math.min(results.loadBefore, results.loadAfter) > m.cores * 0.5;
  parts.push(
    `<text x="${width / 2}" y="${y + 6}" text-anchor="middle" font-size="11" fill="${busy ? '#b15b00' : '#555'}">` +
      escapeXml(`${m.cpu}, ${m.cores} cores, Node.js ${m.node}; load average ${results.loadBefore.toFixed(1)}${busy ? ' — measured while other work ran on the machine' : ''}`) +
      '</text>',
  );
  y += 20;
  const axisTop = y;
  let lastCase = '';
  for (const c of ratios) {
    if (c.caseId !== lastCase) {
      y += 6;
      lastCase = c.caseId;
    }
    const colour = c.pass === undefined ? '#9aa5b1' : c.pass ? '#2e9d57' : '#d64545';
    const label = `${rowTitle(c)} vs ${c.baseline.variant}`;
    parts.push(`<text x="${labelWidth}" y="${y + 15}" text-anchor="end" font-size="12">${escapeXml(label)}</text>`);
    if (Number.isFinite(c.ratio)) {
      parts.push(`<rect x="${barLeft}" y="${y + 4}" width="${(x(c.ratio) - barLeft).toFixed(1)}" height="${rowHeight - 8}" fill="${colour}"/>`);
      parts.push(`<text x="${(x(c.ratio) + 4).toFixed(1)}" y="${y + 15}" font-size="11">${ratioText(c.ratio)}${c.ratio > scale ? ' ▶' : ''}</text>`);
    }
    if (c.target !== undefined) {
      const tx = x(c.target).toFixed(1);
      parts.push(`<line x1="${tx}" x2="${tx}" y1="${y + 1}" y2="${y + rowHeight - 1}" stroke="#222" stroke-width="2" stroke-dasharray="3,2"/>`);
    }
    y += rowHeight;
  }
  // Axis: 0, 0.2, … scale, with the parity line at 1.
  for (let tick = 0; tick <= scale + 1e-9; tick += 0.2) {
    const tx = x(tick).toFixed(1);
    const major = Math.abs(tick - 1) < 1e-9;
    grid.push(`<line x1="${tx}" x2="${tx}" y1="${axisTop}" y2="${y}" stroke="${major ? '#666' : '#ddd'}" stroke-width="1"/>`);
    grid.push(`<text x="${tx}" y="${y + 14}" text-anchor="middle" font-size="10" fill="#555">${tick.toFixed(1)}</text>`);
  }
  y += 34;
  if (results.memory.length > 0) {
    const limit = results.memory[0]!.limitBytes;
    const memScale = Math.max(limit * 1.5, ...results.memory.map((m) => (Number.isFinite(m.peakBytes) ? m.peakBytes : 0))) * 1.05;
    const mx = (bytes: number) => barLeft + (bytes / memScale) * barWidth;
    parts.push(`<text x="${labelWidth}" y="${y}" text-anchor="end" font-size="13" font-weight="bold">Peak RSS (VmHWM), MB</text>`);
    y += 8;
    const top = y;
    for (const m of results.memory) {
      parts.push(`<text x="${labelWidth}" y="${y + 15}" text-anchor="end" font-size="12">${escapeXml(rowTitle(m))}</text>`);
      parts.push(`<rect x="${barLeft}" y="${y + 4}" width="${(mx(m.peakBytes) - barLeft).toFixed(1)}" height="${rowHeight - 8}" fill="${m.pass ? '#2e9d57' : '#d64545'}"/>`);
      parts.push(`<rect x="${barLeft}" y="${y + 4}" width="${(mx(m.idleBytes) - barLeft).toFixed(1)}" height="${rowHeight - 8}" fill="#000" fill-opacity="0.18"/>`);
      parts.push(`<text x="${(mx(m.peakBytes) + 4).toFixed(1)}" y="${y + 15}" font-size="11">${mb(m.peakBytes)} (ready: ${mb(m.idleBytes)})</text>`);
      y += rowHeight;
    }
    const lx = mx(limit).toFixed(1);
    parts.push(`<line x1="${lx}" x2="${lx}" y1="${top}" y2="${y}" stroke="#222" stroke-width="2" stroke-dasharray="3,2"/>`);
    parts.push(`<text x="${lx}" y="${y + 14}" text-anchor="middle" font-size="10" fill="#555">limit ${mb(limit)}</text>`);
    y += 30;
  }
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${y}" viewBox="0 0 ${width} ${y}" font-family="Helvetica, Arial, sans-serif">`,
    `<rect width="100%" height="100%" fill="#fff"/>`,
    ...grid,
    ...parts,
    '</svg>',
    '',
  ].join('\n');
}

const START = '<!-- bench:results:start -->';
const END = '<!-- bench:results:end -->';

/** Replaces the results section of docs/benchmarks.md (between its markers) with this run. */
async function writeDocs(docPath: string, svgPath: string, results: BenchResults, svgName: string): Promise<void> {
  const doc = await readFile(docPath, 'utf8');
  const start = doc.indexOf(START);
  const end = doc.indexOf(END);
  if (start < 0 || end < start) throw new Error(`${docPath} has no ${START} … ${END} section`);
  const section = `${START}\n\n${markdownReport(results, svgName)}\n${END}`;
  await writeFile(docPath, doc.slice(0, start) + section + doc.slice(end + END.length));
  await writeFile(svgPath, svgChart(results));
}

/** Every run: bench/results/latest.json (every sample), latest.svg and latest.md; returns the path of latest.md. */
export async function saveResults(results: BenchResults): Promise<string> {
  await mkdir(resultsDir, { recursive: true });
  await writeFile(path.join(resultsDir, 'latest.json'), JSON.stringify(results, null, 2));
  await writeFile(path.join(resultsDir, 'latest.svg'), svgChart(results));
  await writeFile(path.join(resultsDir, 'latest.md'), `# Benchmark results\n\n${markdownReport(results, 'latest.svg')}`);
  return path.join(resultsDir, 'latest.md');
}

/** --write-docs: the results section of docs/benchmarks.md and docs/benchmarks.svg. */
export function copyToDocs(results: BenchResults): Promise<void> {
  return writeDocs(path.join(docsDir, 'benchmarks.md'), path.join(docsDir, 'benchmarks.svg'), results, 'benchmarks.svg');
}
