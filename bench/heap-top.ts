import { readFileSync } from 'node:fs';

/** Self size by constructor in a heap snapshot: `npx tsx bench/heap-top.ts file.heapsnapshot [n]`. */
const [file, count = '30'] = process.argv.slice(2);
const snapshot = JSON.parse(readFileSync(file!, 'utf8'));
const fields: string[] = snapshot.snapshot.meta.node_fields;
const types: string[] = snapshot.snapshot.meta.node_types[0];
const width = fields.length;
const [typeAt, nameAt, sizeAt] = ['type', 'name', 'self_size'].map((f) => fields.indexOf(f));
const sizes = new Map<string, [number, number]>();
const nodes: number[] = snapshot.nodes;
for (let i = 0; i < nodes.length; i += width) {
  const type = types[nodes[i + typeAt!]!]!;
  const name =
    type === 'object' || type === 'closure'
      ? `${type}:${snapshot.strings[nodes[i + nameAt!]!]}`
      : type;
  const entry = sizes.get(name) ?? [0, 0];
  entry[0] += nodes[i + sizeAt!]!;
  entry[1]++;
  sizes.set(name, entry);
}
for (const [name, [size, n]] of [...sizes]
  .sort((a, b) => b[1][0] - a[1][0])
  .slice(0, Number(count))) {
  console.log(`${(size / 1024).toFixed(0).padStart(8)} KiB ${String(n).padStart(8)}  ${name}`);
}
