// Types of what scripts/build.mjs exports, for the tests that check its single-copy rule.
import type { BuildOptions, Metafile, Plugin } from 'esbuild';

export const buildOptions: BuildOptions & { plugins: Plugin[] };
export const buildEntries: Array<BuildOptions & { outfile: string }>;
export function duplicatePackages(metafile: Metafile): string[];
