/**
 * What a filtering stage keeps of its input, built in order, and optionally a column of values
 * beside the kept elements (contact policy's reservations, coupling's slot options). Nothing is
 * allocated for the elements while every one is kept, and then the result is the input itself; the
 * column is sized once and cut to what was kept. Most decisions reject few of their hundreds of
 * offers at a stage, and an array grown by push allocates about 2.4 times its final size on the way
 * (docs/performance.md, "The twentieth session").
 */
export class Subsequence<T, C = never> {
  private kept: T[] | null = null;
  private beside: C[] | null = null;
  private count = 0;

  constructor(private readonly source: readonly T[]) {}

  /**
   * `source[index]` is kept, with `value` in the column beside it when the stage keeps one (then
   * every kept element has its value). Every index is kept or dropped, in increasing order.
   */
  keep(index: number, value?: C): void {
    this.kept?.push(this.source[index]);
    if (value !== undefined) (this.beside ??= new Array<C>(this.source.length))[this.count] = value;
    this.count++;
  }

  /** `source[index]` is left out. */
  drop(index: number): void {
    this.kept ??= this.source.slice(0, index);
  }

  /** The kept elements in order: `source` itself when none was dropped. */
  result(): readonly T[] {
    return this.kept ?? this.source;
  }

  /** The values kept beside the kept elements, in the same order. */
  column(): C[] {
    const column = this.beside ?? [];
    column.length = this.count;
    return column;
  }
}
