#!/usr/bin/env node
// Writes the arithmetic demo's tasks: 240 seeded word problems, one JSON object per line.
//
//   node examples/arithmetic/generate-tasks.mjs            # writes examples/arithmetic/tasks.jsonl
//   node examples/arithmetic/generate-tasks.mjs out.jsonl  # writes out.jsonl instead
//
// Deterministic: its own PRNG (mulberry32, seed 42), no Date, no Math.random, so every run
// writes the same bytes and the committed tasks.jsonl can be checked against it.
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const SEED = 42;
export const TASK_COUNT = 240;

/** mulberry32: a tiny 32-bit PRNG; returns floats in [0, 1). */
function mulberry32(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const rand = mulberry32(SEED);
/** Integer in [lo, hi]. */
const int = (lo, hi) => lo + Math.floor(rand() * (hi - lo + 1));
const pick = (items) => items[Math.floor(rand() * items.length)];
const chance = (p) => rand() < p;

const PEOPLE = [
  ['Maya', 'she', 'her'], ['Omar', 'he', 'his'], ['Lena', 'she', 'her'], ['Sam', 'he', 'his'],
  ['Priya', 'she', 'her'], ['Diego', 'he', 'his'], ['Aiko', 'she', 'her'], ['Tom', 'he', 'his'],
  ['Zara', 'she', 'her'], ['Kwame', 'he', 'his'],
];
const COUNTABLES = ['apples', 'marbles', 'stickers', 'pencils', 'cards', 'shells', 'stamps', 'beads'];
const person = () => pick(PEOPLE);
function twoPeople() {
  const a = person();
  let b = person();
  while (b[0] === a[0]) b = person();
  return [a, b];
}

// Each template returns [question, answer]; answers are whole numbers >= 0.
const TEMPLATES = [
  {
    name: 'bags',
    weight: 14,
    make() {
      const [name, he] = person();
      const item = pick(COUNTABLES);
      const a = int(2, 40);
      const b = int(2, 9);
      if (chance(0.12)) {
        return [`${name} has ${a} ${item} and buys ${b} more bags of a dozen ${item}. How many ${item} does ${he} have?`, a + b * 12];
      }
      const c = int(2, 12);
      return [`${name} has ${a} ${item} and buys ${b} more bags of ${c} ${item}. How many ${item} does ${he} have?`, a + b * c];
    },
  },
  {
    name: 'library',
    weight: 12,
    make() {
      const b = int(5, 40);
      const c = int(5, 40);
      const a = b + c + int(0, 60);
      return [`A library had ${a} books. It lent out ${b} books on Monday and ${c} books on Tuesday. How many books are left?`, a - b - c];
    },
  },
  {
    name: 'share',
    weight: 12,
    make() {
      const [name] = person();
      const item = pick(COUNTABLES);
      const friends = int(2, 9);
      const each = int(2, 15);
      const verb = chance(0.18) ? 'splits them evenly between' : 'shares them equally among';
      return [`${name} has ${friends * each} ${item} and ${verb} ${friends} friends. How many ${item} does each friend get?`, each];
    },
  },
  {
    name: 'bakery',
    weight: 12,
    make() {
      const trays = int(2, 9);
      if (chance(0.12)) {
        const sold = int(1, trays * 12);
        return [`A baker makes ${trays} trays of a dozen cookies and sells ${sold} cookies. How many cookies are left?`, trays * 12 - sold];
      }
      const per = int(4, 15);
      const sold = int(1, trays * per);
      return [`A baker makes ${trays} trays of ${per} cookies and sells ${sold} cookies. How many cookies are left?`, trays * per - sold];
    },
  },
  {
    name: 'baskets',
    weight: 10,
    make() {
      const [name, , his] = person();
      const baskets = int(2, 8);
      const total = baskets * int(3, 12);
      const a = int(1, total - 1);
      return [
        `${name} picks ${a} strawberries and ${his} brother picks ${total - a} strawberries. They split them equally into ${baskets} baskets. How many strawberries are in each basket?`,
        total / baskets,
      ];
    },
  },
  {
    name: 'change',
    weight: 12,
    make() {
      const [name, he] = person();
      const price = int(2, 12);
      const count = int(2, 8);
      const bill = pick([20, 50, 100].filter((b) => b >= price * count));
      return [`A notebook costs ${price} dollars. ${name} buys ${count} notebooks and pays with a ${bill} dollar bill. How much change does ${he} get?`, bill - price * count];
    },
  },
  {
    name: 'trip',
    weight: 10,
    make() {
      const v1 = 5 * int(6, 16);
      const t1 = int(1, 5);
      const v2 = 5 * int(6, 16);
      const t2 = int(1, 5);
      const unit = chance(0.25) ? ['kilometres an hour', 'kilometres'] : ['miles per hour', 'miles'];
      return [`A train travels ${v1} ${unit[0]} for ${t1} hours and then ${v2} ${unit[0]} for ${t2} hours. How many ${unit[1]} does it travel in total?`, v1 * t1 + v2 * t2];
    },
  },
  {
    name: 'compare',
    weight: 8,
    make() {
      const [[a], [b]] = twoPeople();
      const item = pick(COUNTABLES);
      const has = int(10, 60);
      const diff = int(1, has - 1);
      if (chance(0.5)) return [`${a} has ${has} ${item}. ${b} has ${diff} fewer ${item} than ${a}. How many ${item} do they have together?`, has + has - diff];
      return [`${a} has ${has} ${item}. ${b} has ${diff} more ${item} than ${a}. How many ${item} do they have together?`, has + has + diff];
    },
  },
  {
    name: 'multiple',
    weight: 8,
    make() {
      const [[a], [b]] = twoPeople();
      const item = pick(COUNTABLES);
      const base = 2 * int(3, 20);
      const [phrase, factor] = pick([['twice', 2], ['three times', 3], ['four times', 4], ['half', 0.5]]);
      const has = base * factor;
      const gives = int(1, has - 1);
      return [`${a} has ${base} ${item}. ${b} has ${phrase} as many ${item} as ${a}. ${b} gives away ${gives} ${item}. How many ${item} does ${b} have now?`, has - gives];
    },
  },
  {
    name: 'boxes',
    weight: 3,
    make() {
      const [name, he] = person();
      const size = int(3, 12);
      const full = int(2, 15);
      const left = chance(0.4) ? int(1, size - 1) : 0;
      return [`${name} packs ${size * full + left} eggs into boxes of ${size}. How many full boxes can ${he} fill?`, full];
    },
  },
  {
    name: 'shop',
    weight: 8,
    make() {
      const stock = int(20, 80);
      const delivered = int(10, 60);
      const sold = chance(0.3) ? int(stock + 1, stock + delivered) : int(1, stock);
      return [`A shop had ${stock} shirts. It received a delivery of ${delivered} shirts on Monday and sold ${sold} shirts on Tuesday. How many shirts does it have now?`, stock + delivered - sold];
    },
  },
];

function pickTemplate() {
  const total = TEMPLATES.reduce((sum, t) => sum + t.weight, 0);
  let roll = rand() * total;
  for (const template of TEMPLATES) {
    roll -= template.weight;
    if (roll < 0) return template;
  }
  return TEMPLATES[TEMPLATES.length - 1];
}

/** The tasks, in order: `{ id, question, answer }`. */
export function generateTasks(count = TASK_COUNT) {
  const tasks = [];
  for (let i = 1; i <= count; i++) {
    const [question, answer] = pickTemplate().make();
    tasks.push({ id: `arith-${String(i).padStart(4, '0')}`, question, answer });
  }
  return tasks;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const out = process.argv[2] ?? fileURLToPath(new URL('./tasks.jsonl', import.meta.url));
  const tasks = generateTasks();
  writeFileSync(out, tasks.map((task) => JSON.stringify(task)).join('\n') + '\n');
  console.log(`wrote ${tasks.length} tasks to ${out}`);
}
