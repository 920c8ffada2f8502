/**
 * What a filtering stage keeps of its input, built in order. Nothing is allocated while every
 * element is kept, and then the result is the input itself: most decisions reject few of their
 * hundreds of offers at a stage, and an array grown by push allocates about 2.4 times its final
 * size on the way (docs/performance.md, "The twentieth session").
 */
export class Subsequence<T> {
  private kept: T[] | null = null;

  constructor(private readonly source: readonly T[]) {}

  /** `source[index]` is kept. Every index is kept or dropped, in increasing order. */
  keep(index: number): void {
    this.kept?.push(this.source[index]);
  }

  /** `source[index]` is left out. */
  drop(index: number): void {
    this.kept ??= this.source.slice(0, index);
  }

  /** The kept elements in order: `source` itself when none was dropped. */
  result(): readonly T[] {
    return this.kept ?? this.source;
  }
}

