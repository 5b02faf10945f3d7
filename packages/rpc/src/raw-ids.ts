// Source text of request ids, so numeric ids are echoed exactly as given (geth echoes the raw
// bytes): JSON.parse turns 12345678901234567890 into 12345678901234567000 and 1.0 into 1.
// Runs only on text JSON.parse has already accepted, so it can assume valid JSON.

/**
 * For a single request object: its raw "id" text (undefined if absent or not an object).
 * For a batch: one entry per element. The last "id" member wins, as in JSON.parse.
 */
export function rawIds(text: string): string | undefined | (string | undefined)[] {
  const s = new Scanner(text);
  s.ws();
  if (s.peek() === '[') {
    const out: (string | undefined)[] = [];
    s.pos++;
    s.ws();
    if (s.peek() === ']') return out;
    for (;;) {
      s.ws();
      out.push(s.peek() === '{' ? s.objectId() : (s.skipValue(), undefined));
      s.ws();
      if (s.text[s.pos++] === ']') return out;
    }
  }
  return s.peek() === '{' ? s.objectId() : undefined;
}

class Scanner {
  pos = 0;
  constructor(readonly text: string) {}

  peek(): string | undefined {
    return this.text[this.pos];
  }

  ws(): void {
    while (this.pos < this.text.length && ' \t\n\r'.includes(this.text[this.pos]!)) this.pos++;
  }

  /** At '{': skips the object, returning the raw text of its last "id" member. */
  objectId(): string | undefined {
    let id: string | undefined;
    this.pos++; // {
    this.ws();
    if (this.peek() === '}') {
      this.pos++;
      return undefined;
    }
    for (;;) {
      this.ws();
      const keyStart = this.pos;
      this.skipString();
      const rawKey = this.text.slice(keyStart, this.pos);
      const key = rawKey.includes('\\') ? (JSON.parse(rawKey) as string) : rawKey.slice(1, -1);
      this.ws();
      this.pos++; // :
      this.ws();
      const valueStart = this.pos;
      this.skipValue();
      if (key === 'id') id = this.text.slice(valueStart, this.pos);
      this.ws();
      if (this.text[this.pos++] === '}') return id;
    }
  }

  skipString(): void {
    this.pos++; // opening quote
    for (;;) {
      const c = this.text[this.pos++];
      if (c === '\\') this.pos++;
      else if (c === '"' || c === undefined) return;
    }
  }

  skipValue(): void {
    const c = this.peek();
    if (c === '"') return this.skipString();
    if (c === '{' || c === '[') {
      // Nested containers: track depth, skipping strings (which may hold brackets).
      let depth = 0;
      do {
        const ch = this.text[this.pos];
        if (ch === '"') {
          this.skipString();
          continue;
        }
        if (ch === '{' || ch === '[') depth++;
        else if (ch === '}' || ch === ']') depth--;
        this.pos++;
      } while (depth > 0 && this.pos < this.text.length);
      return;
    }
    // number, true, false, null
    while (this.pos < this.text.length && !',}] \t\n\r'.includes(this.text[this.pos]!)) this.pos++;
  }
}
