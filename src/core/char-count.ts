/**
 * Length limits count characters as people see them in a name, not UTF-16 code units: the spec's
 * "string 1-255" (2.4) holds 255 emoji, which JavaScript's `length` counts as 510. PostgreSQL's
 * varchar(n) and char_length count the same way, so a value that passes fits such a column.
 */

/** The number of Unicode code points in `text` (`[...text].length` without the array); a lone surrogate counts as one. */
export function charCount(text: string): number {
  let count = text.length;
  for (let i = 0; i < text.length - 1; i++) {
    const unit = text.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdbff) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        count--;
        i++;
      }
    }
  }
  return count;
}
