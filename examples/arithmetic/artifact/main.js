// Arithmetic word-problem solver.
// Reads one task as JSON on stdin ({ "id", "question", ... }), works the problem out step
// by step and prints the steps, then "Answer: N" on the last line.
// (Model-written artifact for the rollout-queue demo: see ../README.md for where it is wrong.)

let input = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => {
  input += chunk;
});
process.stdin.on('end', () => {
  const task = JSON.parse(input);
  const answer = solve(task.question);
  console.log(`Answer: ${answer}`);
});

function step(text) {
  console.log(text);
}

// Sanity check on intermediate quantities: a count of things can never go negative.
function invariant(condition, message) {
  if (!condition) {
    console.error(`invariant failed: ${message}`);
    process.abort();
  }
}

function solve(question) {
  const q = question.trim();
  let m;

  // "X has A things and buys B more bags of C things."
  if ((m = q.match(/has (\d+) (\w+) and buys (\d+) more bags of (\d+) \w+/))) {
    const [, start, item, bags, perBag] = m.map(Number);
    const bought = bags * perBag;
    step(`Bought: ${bags} bags × ${perBag} = ${bought} ${m[2]}`);
    step(`Total: ${start} + ${bought} = ${start + bought}`);
    return start + bought;
  }

  // "A library had A books. It lent out B books on ... and C books on ..."
  if ((m = q.match(/had (\d+) books\. It lent out (\d+) books on \w+ and (\d+) books/))) {
    const [, had, first, second] = m.map(Number);
    step(`Lent out: ${first} + ${second} = ${first + second}`);
    step(`Left: ${had} - ${first + second} = ${had - first - second}`);
    return had - first - second;
  }

  // Sharing equally: "X has A things and shares them equally among B friends."
  if (/each friend/.test(q)) {
    m = q.match(/has (\d+) \w+ and shares them equally among (\d+) friends/);
    const total = Number(m[1]);
    const friends = Number(m[2]);
    step(`Each friend: ${total} ÷ ${friends} = ${total / friends}`);
    return total / friends;
  }

  // "A baker makes A trays of B cookies and sells C cookies."
  if ((m = q.match(/makes (\d+) trays of (\d+) cookies and sells (\d+) cookies/))) {
    const [, trays, perTray, sold] = m.map(Number);
    const baked = trays * perTray;
    step(`Baked: ${trays} × ${perTray} = ${baked}`);
    step(`Left: ${baked} - ${sold} = ${baked - sold}`);
    return baked - sold;
  }

  // Two people pick, then split equally into baskets.
  if ((m = q.match(/picks (\d+) strawberries .*picks (\d+) strawberries\. They split them equally into (\d+) baskets/))) {
    const [, a, b, baskets] = m.map(Number);
    step(`Together: ${a} + ${b} = ${a + b}`);
    step(`Per basket: ${a + b} ÷ ${baskets} = ${(a + b) / baskets}`);
    return (a + b) / baskets;
  }

  // Change from a bill.
  if ((m = q.match(/costs (\d+) dollars\. \w+ buys (\d+) \w+ and pays with a (\d+) dollar bill/))) {
    const [, price, count, bill] = m.map(Number);
    step(`Cost: ${count} × ${price} = ${count * price}`);
    step(`Change: ${bill} - ${count * price} = ${bill - count * price}`);
    return bill - count * price;
  }

  // Distance = speed × time, two legs.
  if ((m = q.match(/travels (\d+) miles per hour for (\d+) hours and then (\d+) miles per hour for (\d+) hours/))) {
    const [, v1, t1, v2, t2] = m.map(Number);
    step(`First leg: ${v1} × ${t1} = ${v1 * t1}`);
    step(`Second leg: ${v2} × ${t2} = ${v2 * t2}`);
    step(`Total: ${v1 * t1} + ${v2 * t2} = ${v1 * t1 + v2 * t2}`);
    return v1 * t1 + v2 * t2;
  }

  // "A has N things. B has D fewer/more things than A. ... together?"
  if ((m = q.match(/has (\d+) (\w+)\. (\w+) has (\d+) (fewer|more) \w+ than \w+\. How many \w+ do they have together/))) {
    const first = Number(m[1]);
    const diff = Number(m[4]);
    const second = m[5] === 'fewer' ? first - diff : first + diff;
    step(`${m[3]}: ${first} ${m[5] === 'fewer' ? '-' : '+'} ${diff} = ${second}`);
    step(`Together: ${first} + ${second} = ${first + second}`);
    return first + second;
  }

  // "A has N things. B has twice as many things as A. B gives away G things."
  if ((m = q.match(/has (\d+) \w+\. (\w+) has (.+?) as many \w+ as \w+\. \w+ gives away (\d+)/))) {
    const factors = { twice: 2, 'three times': 3, 'four times': 4 };
    const base = Number(m[1]);
    const factor = factors[m[3]];
    const has = base * factor;
    const gives = Number(m[4]);
    step(`${m[2]} has ${m[3]} × ${base} = ${has}`);
    step(`After giving away: ${has} - ${gives} = ${has - gives}`);
    return has - gives;
  }

  // "X packs N eggs into boxes of S. How many full boxes?" Fill boxes until nothing is left.
  if ((m = q.match(/packs (\d+) \w+ into boxes of (\d+)/))) {
    const size = Number(m[2]);
    let left = Number(m[1]);
    let boxes = 0;
    while (left !== 0) {
      left -= size;
      boxes += 1;
    }
    step(`Boxes: ${m[1]} ÷ ${size} = ${boxes}`);
    return boxes;
  }

  // Stock: take the sales out of the stock first, then add the delivery.
  if ((m = q.match(/had (\d+) (\w+)\. It received a delivery of (\d+) \w+ on \w+ and sold (\d+) \w+/))) {
    const [, stock, , delivered, sold] = m.map(Number);
    let shirts = stock - sold;
    invariant(shirts >= 0, `stock went negative (${shirts})`);
    step(`After sales: ${stock} - ${sold} = ${shirts}`);
    shirts += delivered;
    step(`After delivery: + ${delivered} = ${shirts}`);
    return shirts;
  }

  // Unknown shape: best guess is to add everything up.
  const numbers = (q.match(/\d+/g) || []).map(Number);
  const sum = numbers.reduce((a, b) => a + b, 0);
  step(`Adding up the numbers: ${numbers.join(' + ')} = ${sum}`);
  return sum;
}
