// Completion latency inside a rule expression of sync/config.json, as the server's completion handler computes it.
import { performance } from 'node:perf_hooks';
import { JsonFile } from '../core/json';
import { completion } from '../server/features/completion';
import type { AppWorkspace } from '../server/workspace';

export async function completionP95(workspace: AppWorkspace, syncFile: string): Promise<number> {
  const app = workspace.appOf(syncFile)!;
  const original = app.model.files.get(syncFile)!;
  const marker = '"%%user.id"';
  const text = original.text.replace(marker, '"%%user."');
  const file = new JsonFile(original.path, original.relPath, text);
  const position = file.positionAt(text.indexOf('"%%user."') + '"%%user.'.length);
  const samples: number[] = [];
  for (let i = 0; i < 600; i++) {
    const start = performance.now();
    const list = completion(app, file, position);
    samples.push(performance.now() - start);
    if (i === 0 && !list.items.some((item) => item.label.includes('custom_data'))) throw new Error('completion did not offer %%user members');
  }
  const sorted = samples.slice(100).sort((a, b) => a - b);
  return sorted[Math.ceil(0.95 * sorted.length) - 1];
}
