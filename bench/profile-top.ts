import { readFileSync } from 'node:fs';

/**
 * Prints where a `--cpu-prof` profile spent its time: the top functions by self time, and the
 * top files (packages) by self time. `npx tsx bench/profile-top.ts file.cpuprofile [n]`
 */
interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}
const [file, count = '25'] = process.argv.slice(2);
const profile = JSON.parse(readFileSync(file!, 'utf8')) as {
  nodes: Node[];
  samples: number[];
  timeDeltas: number[];
};
const self = new Map<number, number>();
profile.samples.forEach((id, i) => {
  // The first sample's delta runs from the profile's start to that sample: in a window profile
  // (bench/window-profile.ts) that is mostly the inspector's own `Profiler.start` returning
  // (a native `dispatch`), so it is no function's time.
  if (i === 0) return;
  self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
});
const total = [...self.values()].reduce((a, b) => a + b, 0);
const byFunction = new Map<string, number>();
const byFile = new Map<string, number>();
for (const node of profile.nodes) {
  const t = self.get(node.id) ?? 0;
  const url = node.callFrame.url
    .replace(/^file:\/\/.*?node_modules\//, '')
    .replace(/^file:\/\/.*?\/src\//, 'src/');
  const key = `${node.callFrame.functionName || '(anonymous)'} ${url}:${node.callFrame.lineNumber + 1}`;
  byFunction.set(key, (byFunction.get(key) ?? 0) + t);
  const pkg = url.startsWith('src/')
    ? url
    : url
        .split('/')
        .slice(0, url.startsWith('@') ? 2 : 1)
        .join('/') || node.callFrame.functionName;
  byFile.set(pkg, (byFile.get(pkg) ?? 0) + t);
}
const show = (title: string, map: Map<string, number>) => {
  console.log(`\n${title}`);
  for (const [key, t] of [...map].sort((a, b) => b[1] - a[1]).slice(0, Number(count)))
    console.log(`${((100 * t) / total).toFixed(1).padStart(5)}%  ${key}`);
};
show('self time by function', byFunction);
show('self time by package or file', byFile);

// Inclusive (total) time: a function and everything it called.
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const inclusive = new Map<string, number>();
const visit = (id: number, onStack: Set<string>): number => {
  const node = byId.get(id)!;
  let t = self.get(id) ?? 0;
  const url = node.callFrame.url
    .replace(/^file:\/\/.*?node_modules\//, '')
    .replace(/^file:\/\/.*?\/src\//, 'src/');
  const key = `${node.callFrame.functionName || '(anonymous)'} ${url}:${node.callFrame.lineNumber + 1}`;
  const fresh = !onStack.has(key);
  if (fresh) onStack.add(key);
  for (const child of node.children ?? []) t += visit(child, onStack);
  if (fresh) {
    onStack.delete(key);
    inclusive.set(key, (inclusive.get(key) ?? 0) + t);
  }
  return t;
};
visit(profile.nodes[0]!.id, new Set());
show('total time by function (with what it called)', inclusive);
