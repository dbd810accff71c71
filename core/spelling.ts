// "Did you mean …?": the nearest known name to a misspelt one, for messages and quick fixes.

/**
 * The candidate nearest to `word` (case-insensitively) if it is within `limit` edits, else undefined.
 * The default limit grows with the word: short names tolerate two typos, long ones a third of their length.
 */
export function closestName(word: string, candidates: Iterable<string>, limit = Math.max(2, Math.floor(word.length / 3))): string | undefined {
  const lower = word.toLowerCase();
  let best: string | undefined;
  let bound = limit;
  for (const candidate of candidates) {
    if (candidate === '' || Math.abs(candidate.length - word.length) > bound) continue;
    const distance = editDistance(lower, candidate.toLowerCase(), bound);
    if (distance <= bound) {
      best = candidate;
      // Only a strictly nearer candidate may replace this one.
      bound = distance - 1;
      if (bound < 0) break;
    }
  }
  return best;
}

/** Levenshtein distance, or `bound + 1` as soon as it is known to exceed `bound`. */
export function editDistance(a: string, b: string, bound = Infinity): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    let rowMin = i;
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
      if (current[j] < rowMin) rowMin = current[j];
    }
    if (rowMin > bound) return bound + 1;
    previous = current;
  }
  return previous[b.length];
}
