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
  if (s.code() === OPEN_BRACKET) {
    const out: (string | undefined)[] = [];
    s.pos++;
    s.ws();
    if (s.code() === CLOSE_BRACKET) return out;
    for (;;) {
      s.ws();
      if (s.code() === OPEN_BRACE) out.push(s.objectId());
      else {
        s.skipValue();
        out.push(undefined);
      }
      s.ws();
      if (s.text.charCodeAt(s.pos++) === CLOSE_BRACKET) return out;
    }
  }
  return s.code() === OPEN_BRACE ? s.objectId() : undefined;
}

// Character codes the scanner compares against (charCodeAt: no one-character strings per step).
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;

function isWs(c: number): boolean {
  return c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;
}

class Scanner {
  pos = 0;
  constructor(readonly text: string) {}

  /** Code of the character at the cursor; NaN past the end. */
  code(): number {
    return this.text.charCodeAt(this.pos);
  }

  ws(): void {
    while (isWs(this.text.charCodeAt(this.pos))) this.pos++;
  }

  /** At '{': skips the object, returning the raw text of its last "id" member. */
  objectId(): string | undefined {
    let id: string | undefined;
    this.pos++; // {
    this.ws();
    if (this.code() === CLOSE_BRACE) {
      this.pos++;
      return undefined;
    }
    for (;;) {
      this.ws();
      const keyStart = this.pos;
      this.skipString();
      const isId = this.isIdKey(keyStart, this.pos);
      this.ws();
      this.pos++; // :
      this.ws();
      const valueStart = this.pos;
      this.skipValue();
      if (isId) id = this.text.slice(valueStart, this.pos);
      this.ws();
      if (this.text.charCodeAt(this.pos++) === CLOSE_BRACE) return id;
    }
  }

  /** Whether the key string at [start, end) (quotes included) decodes to "id". */
  isIdKey(start: number, end: number): boolean {
    if (end - start === 4 && this.text.startsWith('"id"', start)) return true;
    // An escaped spelling ("\u0069d") decodes to id too, as JSON.parse reads it.
    for (let i = start + 1; i < end - 1; i++) {
      if (this.text.charCodeAt(i) === BACKSLASH) return JSON.parse(this.text.slice(start, end)) === 'id';
    }
    return false;
  }

  /** At '"': moves past the closing quote. */
  skipString(): void {
    const text = this.text;
    let from = this.pos + 1;
    for (;;) {
      const q = text.indexOf('"', from);
      if (q < 0) {
        this.pos = text.length;
        return;
      }
      // The quote closes the string unless an odd number of backslashes precede it.
      let b = q - 1;
      while (b >= from && text.charCodeAt(b) === BACKSLASH) b--;
      if ((q - 1 - b) % 2 === 0) {
        this.pos = q + 1;
        return;
      }
      from = q + 1;
    }
  }

  skipValue(): void {
    const c = this.code();
    if (c === QUOTE) {
      this.skipString();
      return;
    }
    const text = this.text;
    if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      // Nested containers: track depth, skipping strings (which may hold brackets).
      let depth = 0;
      do {
        const ch = text.charCodeAt(this.pos);
        if (ch === QUOTE) {
          this.skipString();
          continue;
        }
        if (ch === OPEN_BRACE || ch === OPEN_BRACKET) depth++;
        else if (ch === CLOSE_BRACE || ch === CLOSE_BRACKET) depth--;
        this.pos++;
      } while (depth > 0 && this.pos < text.length);
      return;
    }
    // number, true, false, null
    for (;;) {
      const ch = text.charCodeAt(this.pos);
      if (Number.isNaN(ch) || ch === COMMA || ch === CLOSE_BRACE || ch === CLOSE_BRACKET || isWs(ch)) return;
      this.pos++;
    }
  }
}
