/** Where a run writes: its results and profiles, and the docs that --write-docs updates. */
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** dist/bench → the repository. */
const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const resultsDir = path.join(repoRoot, 'bench', 'results');
export const profileDir = path.join(resultsDir, 'profiles');
export const docsDir = path.join(repoRoot, 'docs');
