/** Numbers, units and sizes as the bench prints them. */
import { KiB, MiB } from './load.js';

export const fmt = (value: number, digits = 0) =>
  Number.isFinite(value) ? value.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits }) : '—';

export function formatValue(value: number, unit: string): string {
  const digits = value >= 100 ? 0 : value >= 10 ? 1 : 2;
  return `${fmt(value, digits)} ${unit}`;
}

export const sizeLabel = (bytes: number) => (bytes >= 1024 * MiB ? `${bytes / (1024 * MiB)} GiB` : bytes >= MiB ? `${bytes / MiB} MiB` : `${bytes / KiB} KiB`);
