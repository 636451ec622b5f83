/**
 * A queue one side pushes to and one reader takes from as an async iterable: reading waits for
 * the next item, and ends once the queue is closed and what was pushed before is read.
 * @example
 * const queue = new PushQueue<string>();
 * queue.push('a');
 * queue.close();
 * for await (const item of queue) console.log(item); // "a"
 */
export class PushQueue<Item> implements AsyncIterable<Item> {
  readonly #items: Item[] = [];
  #closed = false;
  #wake: (() => void) | undefined;

  /** Adds an item. */
  push(item: Item): void {
    this.#items.push(item);
    this.#wake?.();
  }

  /** Ends the queue: its reader gets what is in it, then stops. */
  close(): void {
    this.#closed = true;
    this.#wake?.();
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<Item> {
    for (;;) {
      if (this.#items.length > 0) {
        yield this.#items.shift() as Item;
        continue;
      }
      if (this.#closed) return;
      await new Promise<void>((resolve) => (this.#wake = resolve));
      this.#wake = undefined;
    }
  }
}
